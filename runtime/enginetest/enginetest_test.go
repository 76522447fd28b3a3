package enginetest_test

import (
	"context"
	"testing"
	"time"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/enginetest"
	"github.com/fsmgen/fsmgen/runtime/fsmtest"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestAbandonClaimLeavesALeaseTheNextClaimCharges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := fsmtest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	st := store.New(pgtest.NewPool(t), store.WithClock(clk.Now))
	def := runtime.Definition{Type: "job", Version: 1, Initial: "QUEUED",
		States:      []runtime.StateSpec{{Name: "QUEUED", Initial: true}, {Name: "DONE", Status: runtime.StatusSucceeded}},
		Events:      []runtime.EventSpec{{Name: "Finish"}},
		Transitions: []runtime.TransitionSpec{{From: "QUEUED", To: "DONE", Event: "Finish"}}}
	if err := st.Register(ctx, def); err != nil {
		t.Fatal(err)
	}
	res, err := st.Start(ctx, runtime.StartRequest{Type: "job", Version: 1, IdempotencyKey: "k", Owner: runtime.Owner{TenantID: "t"}})
	if err != nil {
		t.Fatal(err)
	}
	run, err := enginetest.AbandonClaim(ctx, st, "dead-1", res.Run.ID, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if run.Lease.Owner != "dead-1" || run.Lease.Epoch != 1 || run.StepAttempt != 1 {
		t.Errorf("claimed run: owner %q, epoch %d, step attempt %d; want dead-1, 1, 1", run.Lease.Owner, run.Lease.Epoch, run.StepAttempt)
	}
	// While the lease lives, nobody else claims the run.
	if _, err := enginetest.AbandonClaim(ctx, st, "dead-2", res.Run.ID, time.Second); err == nil {
		t.Error("a second claim while the lease lives succeeded")
	}
	// Once it expired, the next claim charges the interrupted try.
	clk.Advance(2 * time.Second)
	run, err = enginetest.AbandonClaim(ctx, st, "dead-2", res.Run.ID, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if run.Lease.Owner != "dead-2" || run.Lease.Epoch != 2 || run.StepAttempt != 2 {
		t.Errorf("claimed again: owner %q, epoch %d, step attempt %d; want dead-2, 2, 2", run.Lease.Owner, run.Lease.Epoch, run.StepAttempt)
	}
}
