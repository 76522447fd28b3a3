package engine

import (
	"context"
	"fmt"

	"github.com/fsmgen/fsmgen/runtime"
)

// internalEvents maps the events of def that the engine fires itself, as a
// state's timer or when a state's tries are used up, to a description of
// that; events declared external are left out.
func internalEvents(def runtime.Definition) map[string]string {
	ext := map[string]bool{}
	for _, ev := range def.Events {
		ext[ev.Name] = ev.External
	}
	out := map[string]string{}
	for _, st := range def.States {
		for _, t := range st.Timers {
			if _, seen := out[t.Event]; !seen && !ext[t.Event] {
				out[t.Event] = "the timer of " + st.Name
			}
		}
		if ev := st.OnExhausted; ev != "" && !ext[ev] {
			if _, seen := out[ev]; !seen {
				out[ev] = "fired when the tries of " + st.Name + " are used up"
			}
		}
	}
	return out
}

// signallable refuses, with ErrInternalEvent, an event that only the
// engine fires on the run: one of its children's completion events, or a
// timer or exhaustion event of its machine that is not external.
func (e *Engine) signallable(ctx context.Context, r *registered, runID, name string) error {
	if why, ok := r.internal[name]; ok {
		return fmt.Errorf("%w: %s is %s; declare it external to signal it", ErrInternalEvent, name, why)
	}
	child, err := e.es.ChildEventNamed(ctx, runID, name)
	if err != nil {
		return err
	}
	if child {
		return fmt.Errorf("%w: %s is fired when a child run finishes", ErrInternalEvent, name)
	}
	return nil
}
