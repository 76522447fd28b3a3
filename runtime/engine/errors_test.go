package engine_test

import (
	"context"
	"errors"
	"testing"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
	"github.com/fsmgen/fsmgen/runtime/store"
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
			"store: get run " + missing + ": run not found: no rows in result set", store.ErrRunNotFound},
		{"signal with a malformed id", second(e.Signal(ctx, "x", event("Approve"))),
			`store: get run x: malformed run id: run id "x" is not a UUID`, store.ErrInvalidID},
		{"wait for a malformed id", second(e.Wait(ctx, "x")),
			`store: get run x: malformed run id: run id "x" is not a UUID`, store.ErrInvalidID},
		{"resume of a run that is not parked", e.Resume(ctx, run.ID),
			"store: resume run " + run.ID + ": conflict: the run moved since it was read: the run is not parked", store.ErrConflict},
		{"start of an unregistered type", second(e.Start(ctx, store.StartParams{Type: "nope", IdempotencyKey: "k", TenantID: "t"})),
			"engine: start nope/k: definition not registered with this engine: nope v0", engine.ErrNotRegistered},
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
