package engine

import (
	"context"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// signallable refuses, with runtime.ErrNotCallerEvent, an event that
// callers may not send to run in its state: one that its machine's rule
// gives to a handler or to the engine (runtime.Definition.CallerRefusal),
// or the completion event of one of its children.
func (e *Engine) signallable(ctx context.Context, r *registered, run store.Run, name string) error {
	if why := r.def.CallerRefusal(run.State, name); why != "" {
		return runtime.RefuseCaller(run.Type, run.Version, run.State, name, why)
	}
	child, err := e.es.ChildEventNamed(ctx, run.ID, name)
	if err != nil {
		return err
	}
	if child {
		return runtime.RefuseCaller(run.Type, run.Version, run.State, name, "fired by the engine when a child run finishes")
	}
	return nil
}
