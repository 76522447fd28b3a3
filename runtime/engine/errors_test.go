package engine_test

import (
	"context"
	"errors"
	"testing"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
	"github.com/fsmgen/fsmgen/runtime/linearchain/instance"
)

// TestErrorMessages: errors name one component, the operation and the run.
func TestErrorMessages(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	e := v.engine(t, engine.Config{}, approvalDriver())
	ctx := context.Background()
	const missing = "00000000-0000-4000-8000-000000000000"
	run := v.start(t, e, "approval", "k")
	tests := []struct {
		name     string
		err      error
		want     string
		sentinel error
	}{
		{"signal of an unknown run", second(e.Signal(ctx, missing, event("Approve"))),
			"store: get run " + missing + ": run not found: no rows in result set", runtime.ErrRunNotFound},
		{"signal with a malformed id", second(e.Signal(ctx, "x", event("Approve"))),
			`store: get run x: malformed run id: run id "x" is not a UUID`, runtime.ErrInvalidID},
		{"wait for a malformed id", second(e.Wait(ctx, "x")),
			`store: get run x: malformed run id: run id "x" is not a UUID`, runtime.ErrInvalidID},
		{"resume of a run that is not parked", e.Resume(ctx, run.ID),
			"store: resume run " + run.ID + ": conflict: the run moved since it was read: the run is not parked", runtime.ErrConflict},
		{"start of an unregistered type", second(e.Start(ctx, runtime.StartRequest{Type: "nope", IdempotencyKey: "k", Owner: runtime.Owner{TenantID: "t"}})),
			"engine: start nope/k: definition not registered with this engine: nope v0", runtime.ErrNotRegistered},
		{"signal of an event the state does not take", second(e.Signal(ctx, run.ID, event("Nope"))),
			"engine: signal Nope run " + run.ID + ": approval: illegal transition: state QUEUED has no transition on event Nope", nil},
		{"signal of an event a handler returns", second(e.Signal(ctx, run.ID, event("Finish"))),
			"engine: signal Finish run " + run.ID + ": callers may not send the event: approval v1 in state QUEUED: Finish is returned by the handler of FINISHING; declare it external to let callers send it", runtime.ErrNotCallerEvent},
	}
	for _, tc := range tests {
		if tc.err == nil || tc.err.Error() != tc.want {
			t.Errorf("%s: %v\nwant %s", tc.name, tc.err, tc.want)
		}
		if tc.sentinel != nil && !errors.Is(tc.err, tc.sentinel) {
			t.Errorf("%s: %v does not match %v", tc.name, tc.err, tc.sentinel)
		}
	}
}

func second[T any](_ T, err error) error { return err }

// TestSentinelsShared: an error of the store and one of the engine about
// the same thing match the same sentinel of package runtime, and a
// generated machine's ParseState matches the store's unknown state.
func TestSentinelsShared(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	e := v.engine(t, engine.Config{}, approvalDriver())
	ctx := context.Background()
	run := v.start(t, e, "approval", "k")
	runDue(t, e, 1)
	if _, err := e.Signal(ctx, run.ID, event("Approve")); err != nil {
		t.Fatal(err)
	}
	runDue(t, e, 1)

	// A finished run: the engine's Signal and Cancel, the store's LogStep
	// and Emit.
	def := approvalDef()
	unknown := def.Clone()
	unknown.States = nil
	for _, s := range def.States {
		if s.Name != "DONE" {
			unknown.States = append(unknown.States, s)
		}
	}
	_, _, loadErr := v.st.Load(ctx, run.ID, unknown)
	_, parseErr := instance.ParseState("NOPE")
	for _, tc := range []struct {
		name     string
		err      error
		sentinel error
	}{
		{"engine signal", second(e.Signal(ctx, run.ID, event("Approve"))), runtime.ErrRunFinished},
		{"engine cancel", second(e.Cancel(ctx, run.ID, "")), runtime.ErrRunFinished},
		{"store log step", second(v.st.LogStep(ctx, run.ID, "late", nil)), runtime.ErrRunFinished},
		{"store emit", second(v.st.Emit(ctx, run.ID, "topic", nil)), runtime.ErrRunFinished},
		{"store load", loadErr, runtime.ErrUnknownState},
		{"generated ParseState", parseErr, runtime.ErrUnknownState},
	} {
		if !errors.Is(tc.err, tc.sentinel) {
			t.Errorf("%s: %v does not match %v", tc.name, tc.err, tc.sentinel)
		}
	}
	if err := second(e.Signal(ctx, run.ID, event("Approve"))); err.Error() != "engine: signal Approve run "+run.ID+": run is finished: it is succeeded in DONE" {
		t.Errorf("signal of a finished run: %v", err)
	}
}
