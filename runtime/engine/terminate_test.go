package engine_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/db"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/admin"
	"github.com/fsmgen/fsmgen/runtime/engine"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// TestTerminateWhileHandlerRuns: an operator terminates a run whose handler
// a worker is running; the worker's transition, its step, its message and
// its enqueued run are refused when the handler returns, and later signals
// find the run finished.
func TestTerminateWhileHandlerRuns(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	started, release := make(chan string, 1), make(chan struct{})
	d := &driver{def: jobDef("job", nil, ""), guards: ownerGuard(), handlers: map[string]handler{
		"QUEUED": constant(event("Begin")),
		"WORKING": func(ctx context.Context, run *runtime.Run) (runtime.Event, error) {
			run.Effects.LogStep("half_done", map[string]int{"n": 1})
			run.Effects.Emit("job.finished", map[string]string{"id": run.ID})
			run.Effects.Enqueue("job", "follow-up", nil)
			started <- run.ID
			<-release
			return event("Finish"), nil
		},
	}}
	// No heartbeat before the handler returns: it learns at its transition.
	e := v.engine(t, engine.Config{Lease: time.Hour, Heartbeat: 30 * time.Minute, PollInterval: 10 * time.Millisecond}, d)
	run := v.start(t, e, "job", "k")
	driven := make(chan error, 1)
	go func() { _, err := e.Drive(context.Background(), run.ID); driven <- err }()
	<-started

	ctx := context.Background()
	op := admin.New(store.New(pgtest.RolePool(t, v.dsn, db.RoleOperator)))
	got, err := op.Terminate(ctx, run.ID, admin.TerminateOptions{Reason: "stuck", By: "oncall"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Run.State != "WORKING" || got.Run.Status != runtime.StatusCancelled || got.Run.Result == nil ||
		got.Run.Result.ErrorCode != "TERMINATED" || got.Run.Result.ErrorDetail != "terminated by oncall: stuck" || got.Run.Lease.Owner != "" {
		t.Errorf("terminated run = %s %s %+v lease %q", got.Run.State, got.Run.Status, got.Run.Result, got.Run.Lease.Owner)
	}
	close(release)
	if err := <-driven; !errors.Is(err, runtime.ErrLeaseLost) {
		t.Errorf("Drive after the terminate: %v, want ErrLeaseLost", err)
	}
	want := []string{"created start ->QUEUED", "transition Begin QUEUED->WORKING", "terminated terminate WORKING->WORKING"}
	if diff := cmp.Diff(want, v.moves(t, run.ID)); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
	if out, err := v.st.Outbox(ctx, run.ID); err != nil || len(out) != 0 {
		t.Errorf("outbox = %v, %v: the refused transition's message was written", out, err)
	}
	if runs, err := v.st.List(ctx, store.Filter{Filter: runtime.Filter{Type: "job"}}); err != nil || len(runs) != 1 {
		t.Errorf("%d runs (%v): the refused transition's enqueued run was written", len(runs), err)
	}
	_, err = e.Signal(ctx, run.ID, event("Finish"))
	if !errors.Is(err, runtime.ErrRunFinished) {
		t.Errorf("Signal of a terminated run: %v, want ErrRunFinished", err)
	}
	if err := pgtest.CheckInvariants(ctx, v.owner); err != nil {
		t.Error(err)
	}
}
