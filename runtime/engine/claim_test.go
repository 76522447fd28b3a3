package engine_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
	"github.com/fsmgen/fsmgen/runtime/fsmtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// TestHandlersSeeTheAttemptsEvents: the events a claim brings with the run
// are those of its current attempt, in order, with their payloads, in a
// new session after a signal, and none from an earlier attempt after a
// restart.
func TestHandlersSeeTheAttemptsEvents(t *testing.T) {
	t.Parallel()
	clk := fsmtest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	v := newEnv(t, store.WithClock(clk.Now))
	var (
		mu   sync.Mutex
		seen []string
	)
	saw := func(state string, next runtime.Event) handler {
		return func(_ context.Context, run *runtime.Run) (runtime.Event, error) {
			mu.Lock()
			defer mu.Unlock()
			names := []string{}
			for _, e := range run.Events {
				x := e.(ev)
				names = append(names, fmt.Sprintf("%s %v", x.name, x.data))
			}
			seen = append(seen, fmt.Sprintf("attempt %d %s: %v", run.Attempt, state, names))
			return next, nil
		}
	}
	d := &driver{def: approvalDef(), handlers: map[string]handler{
		"QUEUED": saw("QUEUED", event("Begin")), "FINISHING": saw("FINISHING", event("Finish")),
	}}
	e := v.engine(t, engine.Config{}, d)
	ctx := context.Background()

	run := v.start(t, e, "approval", "k")
	runDue(t, e, 1) // QUEUED -> AWAIT
	clk.Advance(7 * 24 * time.Hour)
	runDue(t, e, 1) // the timer: AWAIT -> EXPIRED, failed
	if got := v.get(t, run.ID); got.State != "EXPIRED" {
		t.Fatalf("run in %s, want EXPIRED", got.State)
	}
	res, err := e.Start(ctx, runtime.StartRequest{Type: "approval", IdempotencyKey: "k", Owner: runtime.Owner{TenantID: "t1", UserID: alice}})
	if err != nil || res.Outcome != runtime.StartRestarted {
		t.Fatalf("Start again: %v, %v", res.Outcome, err)
	}
	runDue(t, e, 1) // attempt 2: QUEUED -> AWAIT
	if _, err := e.Signal(ctx, run.ID, event("Approve", "by", "ops")); err != nil {
		t.Fatal(err)
	}
	runDue(t, e, 1) // FINISHING -> DONE, in a session of its own
	want := []string{
		"attempt 1 QUEUED: []",
		"attempt 2 QUEUED: []",
		"attempt 2 FINISHING: [Begin map[] Approve map[by:ops]]",
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("events the handlers saw (-want +got):\n%s", diff)
	}
}

// TestPollsWithoutNotifications: with notifications off, an idle worker
// still picks a new run up, by polling at the default interval for that.
// The store's start does announce the run, but nobody listens.
func TestPollsWithoutNotifications(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	called := make(chan string, 8)
	d := chainDriver("chain")
	next := d.handlers["S1"]
	d.handlers["S1"] = func(ctx context.Context, run *runtime.Run) (runtime.Event, error) {
		called <- run.ID
		return next(ctx, run)
	}
	e := v.engine(t, engine.Config{DisableNotify: true}, d)
	work(t, e)
	run := v.start(t, e, "chain", "k")
	select {
	case id := <-called:
		if id != run.ID {
			t.Errorf("handler called for run %s, want %s", id, run.ID)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the run was not picked up in 30s")
	}
	if got := wait(t, e, run.ID, 30*time.Second); got.State != "END" {
		t.Errorf("run in %s", got.State)
	}
}
