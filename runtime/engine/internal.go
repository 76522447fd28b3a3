package engine

import (
	"slices"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/internal/enginestore"
)

// signallable refuses, with runtime.ErrNotCallerEvent, an event that
// callers may not send to run in its state: one that its machine's rule
// gives to a handler or to the engine (runtime.Definition.CallerRefusal),
// or, when childEvent (read with the run, see enginestore.ReadForEvent),
// the completion event of one of its children.
func signallable(r *registered, run runtime.Run, name string, childEvent bool) error {
	if why := r.def.CallerRefusal(run.State, name); why != "" {
		return runtime.RefuseCaller(run.Type, run.Version, run.State, name, why)
	}
	if childEvent {
		return runtime.RefuseCaller(run.Type, run.Version, run.State, name, "fired by the engine when a child run finishes")
	}
	return nil
}

// guarded returns the states, of every definition registered, whose rows
// on the event eventOf names for the definition have guards: where firing
// that event may call a guard, which may read the run's events
// (runtime.Run.Events). Signal and Cancel read those events with the run
// only when it is in one of them.
func (e *Engine) guarded(eventOf func(runtime.Definition) string) []enginestore.KindState {
	e.mu.RLock()
	defer e.mu.RUnlock()
	var out []enginestore.KindState
	for k, r := range e.kinds {
		name := eventOf(r.def)
		for _, t := range r.def.Transitions {
			if t.Guard == "" || t.Event != name {
				continue
			}
			out = append(out, enginestore.KindState{Kind: k, State: t.From})
			if _, leaf := r.def.State(t.From); !leaf {
				// A row on a parallel state: a run is in one of its
				// leaves (ReadRunForEvent compares each leaf of a
				// configuration).
				for _, s := range r.def.States {
					if slices.Contains(r.def.Ancestors(s.Name), t.From) {
						out = append(out, enginestore.KindState{Kind: k, State: s.Name})
					}
				}
			}
		}
	}
	return out
}
