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

// waitIn makes state of d a wait state, whose events callers send.
func waitIn(d runtime.Definition, state string) runtime.Definition {
	for i := range d.States {
		if d.States[i].Name == state {
			d.States[i].Wait = true
		}
	}
	return d
}

// TestSignalRefusesInternalEvents: the events the engine fires itself (a
// timer's, an exhausted state's, a child's completion) cannot be forged
// with Signal, unless the machine declares a timer or exhaustion event
// external. QUEUED waits here, so that callers send Begin.
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
		want := "engine: signal Timeout run " + run.ID + ": callers may not send the event: approval v1 in state AWAIT: Timeout is fired by the timer of AWAIT; declare it external to let callers send it"
		if !errors.Is(err, runtime.ErrNotCallerEvent) || err.Error() != want {
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
		d := &driver{def: waitIn(jobDef("job", &runtime.RetryPolicy{MaxAttempts: 2}, "GiveUp"), "QUEUED"), guards: ownerGuard()}
		e := v.engine(t, engine.Config{}, d)
		run := v.start(t, e, "job", "k")
		if _, err := e.Signal(ctx, run.ID, event("Begin")); err != nil {
			t.Fatal(err)
		}
		_, err := e.Signal(ctx, run.ID, event("GiveUp"))
		want := "engine: signal GiveUp run " + run.ID + ": callers may not send the event: job v1 in state WORKING: GiveUp is fired by the engine when the tries of WORKING are used up; declare it external to let callers send it"
		if !errors.Is(err, runtime.ErrNotCallerEvent) || err.Error() != want {
			t.Errorf("Signal(GiveUp): %v\nwant %s", err, want)
		}
		d2 := &driver{def: waitIn(external(jobDef("job2", &runtime.RetryPolicy{MaxAttempts: 2}, "GiveUp"), "GiveUp"), "QUEUED"), guards: ownerGuard()}
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
		want := "engine: signal KidDone run " + run.ID + ": callers may not send the event: parent v1 in state P_WAIT: KidDone is fired by the engine when a child run finishes"
		if !errors.Is(err, runtime.ErrNotCallerEvent) || err.Error() != want {
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
			if err := runtime.StartChild(run, runtime.Child{Type: "kid", Input: map[string]int{"n": 7}, Event: "KidDone"}); err != nil {
				return nil, err
			}
			return event("Spawned"), nil
		}}}
	kidDef := def("kid", []runtime.StateSpec{running("K1"), final("KEND", runtime.StatusSucceeded)}, []string{"K1", "Next", "KEND"})
	kidDef.States[1].Outcome = "solved"
	kid := &driver{def: kidDef, handlers: map[string]handler{"K1": constant(event("Next"))}}
	return pd, kid
}

// TestSignalRefusesHandlerEvents: a caller cannot fire the event a driven
// state's handler returns, pre-empting the handler; it is refused with
// runtime.ErrNotCallerEvent, naming the machine, the state, the event and
// who sends it, and the run stays. A wait state's events are callers', an
// event declared external is a caller's in every state, and the owner's
// Cancel works from a driven state.
func TestSignalRefusesHandlerEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	v := newEnv(t)
	d := approvalDriver()
	d.def.Transitions = append(d.def.Transitions,
		runtime.TransitionSpec{From: "QUEUED", Event: "Cancel", To: "EXPIRED", Guard: "UserOwnsRun"})
	d.def.Events = append(d.def.Events, runtime.EventSpec{Name: "Cancel", Fields: []runtime.FieldSpec{{Name: "userID", Type: "string"}}})
	d.def.Guards = append(d.def.Guards, "UserOwnsRun")
	d.def.Cancel = "Cancel"
	d.guards = ownerGuard()
	e := v.engine(t, engine.Config{}, d)

	run := v.start(t, e, "approval", "k")
	for _, c := range []struct{ event, want string }{
		{"Begin", "Begin is returned by the handler of QUEUED"},
		{"Finish", "Finish is returned by the handler of FINISHING"},
	} {
		_, err := e.Signal(ctx, run.ID, event(c.event))
		want := "engine: signal " + c.event + " run " + run.ID + ": callers may not send the event: approval v1 in state QUEUED: " + c.want + "; declare it external to let callers send it"
		if !errors.Is(err, runtime.ErrNotCallerEvent) || err.Error() != want {
			t.Errorf("Signal(%s) in QUEUED: %v\nwant %s", c.event, err, want)
		}
	}
	if got := v.get(t, run.ID); got.State != "QUEUED" {
		t.Fatalf("run moved to %s", got.State)
	}
	runDue(t, e, 1) // QUEUED's handler returns Begin: AWAIT
	_, err := e.Signal(ctx, run.ID, event("Finish"))
	want := "engine: signal Finish run " + run.ID + ": callers may not send the event: approval v1 in state AWAIT: Finish is returned by the handler of FINISHING; declare it external to let callers send it"
	if !errors.Is(err, runtime.ErrNotCallerEvent) || err.Error() != want {
		t.Errorf("Signal(Finish) in AWAIT: %v\nwant %s", err, want)
	}
	if got, err := e.Signal(ctx, run.ID, event("Approve")); err != nil || got.State != "FINISHING" {
		t.Fatalf("Signal(Approve) in AWAIT, a wait state's event: %s, %v", got.State, err)
	}

	// Declared external, the handler's event is a caller's too.
	ext := approvalDriver()
	ext.def = external(ext.def, "Begin")
	ext.def.Type, ext.def.Machine = "approval_ext", "approval_ext"
	if err := e.Register(ctx, ext); err != nil {
		t.Fatal(err)
	}
	run2 := v.start(t, e, "approval_ext", "k")
	if got, err := e.Signal(ctx, run2.ID, event("Begin")); err != nil || got.State != "AWAIT" {
		t.Errorf("Signal(Begin) of an external event in QUEUED: %s, %v", got.State, err)
	}

	// The owner cancels from the driven state QUEUED.
	run3 := v.start(t, e, "approval", "k3")
	if got, err := e.Cancel(ctx, run3.ID, alice); err != nil || got.State != "EXPIRED" {
		t.Errorf("Cancel in QUEUED: %s, %v", got.State, err)
	}
}
