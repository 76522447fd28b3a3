package engine_test

import (
	"context"
	"errors"
	"testing"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
)

// external marks event name of d as one callers may signal.
func external(d runtime.Definition, name string) runtime.Definition {
	for i := range d.Events {
		if d.Events[i].Name == name {
			d.Events[i].External = true
		}
	}
	return d
}

// TestSignalRefusesInternalEvents: the events the engine fires itself (a
// timer's, an exhausted state's, a child's completion) cannot be forged
// with Signal, unless the machine declares a timer or exhaustion event
// external.
func TestSignalRefusesInternalEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("timer", func(t *testing.T) {
		t.Parallel()
		v := newEnv(t)
		e := v.engine(t, engine.Config{}, approvalDriver())
		run := v.start(t, e, "approval", "k")
		runDue(t, e, 1) // in AWAIT
		_, err := e.Signal(ctx, run.ID, event("Timeout"))
		want := "engine: signal Timeout run " + run.ID + ": event fired by the engine: Timeout is the timer of AWAIT; declare it external to signal it"
		if !errors.Is(err, engine.ErrInternalEvent) || err.Error() != want {
			t.Errorf("Signal(Timeout): %v\nwant %s", err, want)
		}
		if got := v.get(t, run.ID); got.State != "AWAIT" {
			t.Errorf("run moved to %s", got.State)
		}
	})

	t.Run("external timer", func(t *testing.T) {
		t.Parallel()
		v := newEnv(t)
		d := approvalDriver()
		d.def = external(d.def, "Timeout")
		e := v.engine(t, engine.Config{}, d)
		run := v.start(t, e, "approval", "k")
		runDue(t, e, 1)
		got, err := e.Signal(ctx, run.ID, event("Timeout"))
		if err != nil || got.State != "EXPIRED" {
			t.Errorf("Signal(Timeout) of an external timer: %s, %v", got.State, err)
		}
	})

	t.Run("exhaustion", func(t *testing.T) {
		t.Parallel()
		v := newEnv(t)
		d := &driver{def: jobDef("job", &runtime.RetryPolicy{MaxAttempts: 2}, "GiveUp"), guards: ownerGuard()}
		e := v.engine(t, engine.Config{}, d)
		run := v.start(t, e, "job", "k")
		if _, err := e.Signal(ctx, run.ID, event("Begin")); err != nil {
			t.Fatal(err)
		}
		_, err := e.Signal(ctx, run.ID, event("GiveUp"))
		want := "engine: signal GiveUp run " + run.ID + ": event fired by the engine: GiveUp is fired when the tries of WORKING are used up; declare it external to signal it"
		if !errors.Is(err, engine.ErrInternalEvent) || err.Error() != want {
			t.Errorf("Signal(GiveUp): %v\nwant %s", err, want)
		}
		d2 := &driver{def: external(jobDef("job2", &runtime.RetryPolicy{MaxAttempts: 2}, "GiveUp"), "GiveUp"), guards: ownerGuard()}
		if err := e.Register(ctx, d2); err != nil {
			t.Fatal(err)
		}
		run2 := v.start(t, e, "job2", "k")
		if _, err := e.Signal(ctx, run2.ID, event("Begin")); err != nil {
			t.Fatal(err)
		}
		if got, err := e.Signal(ctx, run2.ID, event("GiveUp")); err != nil || got.State != "FAILED" {
			t.Errorf("Signal(GiveUp) of an external event: %s, %v", got.State, err)
		}
	})

	t.Run("child completion", func(t *testing.T) {
		t.Parallel()
		v := newEnv(t)
		pd, kid := childDrivers()
		e := v.engine(t, engine.Config{}, pd, kid)
		run := v.start(t, e, "parent", "p")
		runDue(t, e, 1) // P_START -> P_WAIT, the child started
		_, err := e.Signal(ctx, run.ID, event("KidDone", "childRunID", "x", "status", "succeeded"))
		want := "engine: signal KidDone run " + run.ID + ": event fired by the engine: KidDone is fired when a child run finishes"
		if !errors.Is(err, engine.ErrInternalEvent) || err.Error() != want {
			t.Errorf("Signal(KidDone): %v\nwant %s", err, want)
		}
		if got := v.get(t, run.ID); got.State != "P_WAIT" {
			t.Fatalf("parent moved to %s", got.State)
		}
		runDue(t, e, 1) // the child finishes
		runDue(t, e, 1) // the parent gets its event
		if got := v.get(t, run.ID); got.State != "P_DONE" {
			t.Errorf("parent in %s", got.State)
		}
	})
}

// childDrivers returns a parent machine that starts a kid and waits in
// P_WAIT for KidDone, and the kid machine.
func childDrivers() (*driver, *driver) {
	wait := running("P_WAIT")
	wait.Wait = true
	parent := def("parent",
		[]runtime.StateSpec{running("P_START"), wait, final("P_DONE", runtime.StatusSucceeded), final("P_FAILED", runtime.StatusFailed)},
		[]string{"P_START", "Spawned", "P_WAIT"},
		[]string{"P_WAIT", "KidDone", "P_DONE", "KidSucceeded"},
		[]string{"P_WAIT", "KidDone", "P_FAILED"},
	)
	for i := range parent.Events {
		if parent.Events[i].Name == "KidDone" {
			parent.Events[i].Fields = []runtime.FieldSpec{{Name: "childRunID", Type: "string"}, {Name: "status", Type: "string"}, {Name: "outcome", Type: "string"}}
		}
	}
	pd := &driver{def: parent, guards: map[string]func(ev) bool{"KidSucceeded": func(e ev) bool { return e.data["status"] == "succeeded" }},
		handlers: map[string]handler{"P_START": func(_ context.Context, run *runtime.Run) (runtime.Event, error) {
			if err := engine.StartChild(run, engine.Child{Type: "kid", Input: map[string]int{"n": 7}, Event: "KidDone"}); err != nil {
				return nil, err
			}
			return event("Spawned"), nil
		}}}
	kidDef := def("kid", []runtime.StateSpec{running("K1"), final("KEND", runtime.StatusSucceeded)}, []string{"K1", "Next", "KEND"})
	kidDef.States[1].Outcome = "solved"
	kid := &driver{def: kidDef, handlers: map[string]handler{"K1": constant(event("Next"))}}
	return pd, kid
}
