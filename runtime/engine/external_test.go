package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// A run that another runtime executes, recorded in the engine's database
// in a state with a handler, is not the engine's, though the engine
// registered its type and works: the engine drives its own run of the type
// to the end and never claims, signals, cancels or resumes the other.
func TestEngineLeavesExternalRunsAlone(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	handled := make(chan string, 8)
	def := jobDef("job", nil, "")
	for i := range def.Events {
		def.Events[i].External = def.Events[i].Name == "Finish" // callers may send it
	}
	d := &driver{def: def, guards: ownerGuard(), handlers: map[string]handler{
		"QUEUED": func(_ context.Context, run *runtime.Run) (runtime.Event, error) {
			handled <- run.ID
			return event("Begin"), nil
		},
		"WORKING": func(_ context.Context, run *runtime.Run) (runtime.Event, error) {
			handled <- run.ID
			return event("Finish"), nil
		},
	}}
	e := v.engine(t, engine.Config{Lease: time.Hour, PollInterval: 10 * time.Millisecond}, d)
	ctx := context.Background()
	x := store.External{Executor: "temporal", ID: "5f0c6e1e-7d3a-5b9e-9a51-0c2f2a1d4e01", Attempt: 1}
	if _, err := v.st.StartExternal(ctx, x, runtime.StartRequest{Type: "job", Version: 1, IdempotencyKey: "elsewhere", Owner: runtime.Owner{TenantID: "t1", UserID: alice}}); err != nil {
		t.Fatal(err)
	}
	begin := runtime.Transition{Machine: "job", Version: 1, From: "QUEUED", To: "WORKING", Event: "Begin", Status: runtime.StatusRunning}
	if _, err := v.st.RecordExternal(ctx, x, 1, begin, store.ExternalEffects{}, nil); err != nil {
		t.Fatal(err)
	}
	before := v.moves(t, x.ID)

	own := v.start(t, e, "job", "here")
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- e.Work(wctx) }()
	if _, err := e.Wait(ctx, own.ID); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	close(handled)
	for id := range handled {
		if id != own.ID {
			t.Errorf("the engine handled run %s", id)
		}
	}
	runDue(t, e, 0)

	const refusal = "run 5f0c6e1e-7d3a-5b9e-9a51-0c2f2a1d4e01 of job/v1 is executed by temporal: only a recorder of that executor writes it"
	if _, err := e.Signal(ctx, x.ID, event("Finish")); !errors.Is(err, runtime.ErrOtherExecutor) || !strings.Contains(err.Error(), refusal) {
		t.Errorf("signal: %v", err)
	}
	if _, err := e.Cancel(ctx, x.ID, alice); !errors.Is(err, runtime.ErrOtherExecutor) || !strings.Contains(err.Error(), refusal) {
		t.Errorf("cancel: %v", err)
	}
	if diff := cmp.Diff(before, v.moves(t, x.ID)); diff != "" {
		t.Errorf("the external run's log changed (-before +after):\n%s", diff)
	}
	run := v.get(t, x.ID)
	if run.State != "WORKING" || run.RowVersion != 2 || !run.NextRunAt.IsZero() || run.Lease.Owner != "" || run.Lease.Epoch != 0 {
		t.Errorf("external run: %s v%d, due %v, lease %+v", run.State, run.RowVersion, run.NextRunAt, run.Lease)
	}
}
