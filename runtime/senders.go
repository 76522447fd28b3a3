package runtime

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrNotCallerEvent is matched by errors.Is when a caller (a Signal, a
// typed handle's method, an operator's fsmctl runs signal) sends an event
// that callers may not send to the run in its state; the error that wraps
// it names the machine, the state, the event and who sends it. See
// Definition.CallerRefusal for the rule.
var ErrNotCallerEvent = errors.New("callers may not send the event")

// CallerRefusal says who sends event to a run in state when callers may
// not, as "returned by the handler of CHARGING", "fired by the timer of
// AWAIT" or "fired by the engine when the tries of WORKING are used up",
// followed by "; declare it external to let callers send it"; it returns
// "" when callers may send it. The rule, one for every machine:
//
//   - an event declared external (EventSpec.External) and the machine's
//     cancel event (Definition.Cancel, fired by its owner) are callers'
//     events, in every state;
//   - a timer's event and a retry policy's OnExhausted event are the
//     engine's, in every state;
//   - the events of a driven state's rows (a non-terminal state that does
//     not wait) are its handler's: a caller cannot pre-empt the handler;
//   - the events of a wait state's rows are callers'; an event that no
//     wait state has a row on is a handler's in every state.
//
// An event callers may send is still checked by the run's table and guards.
// The engine also fires the completion events of a run's children (see
// runtime.StartChild), which it refuses from callers on its own; an event
// that is not the machine's, or that no row uses, is left to the table.
func (d *Definition) CallerRefusal(state, event string) string {
	if why := d.sender(state, event); why != "" {
		return why + "; declare it external to let callers send it"
	}
	return ""
}

// RefuseCaller returns the error that refuses a caller's event: it wraps
// ErrNotCallerEvent and names the machine (typ, version), the run's state,
// the event and who sends it (why, as CallerRefusal says).
func RefuseCaller(typ string, version int, state, event, why string) error {
	return fmt.Errorf("%w: %s v%d in state %s: %s is %s", ErrNotCallerEvent, typ, version, state, event, why)
}

// sender is CallerRefusal without its hint.
func (d *Definition) sender(state, event string) string {
	if event == d.Cancel {
		return ""
	}
	for _, e := range d.Events {
		if e.Name == event && e.External {
			return ""
		}
	}
	for _, s := range d.States {
		for _, t := range s.Timers {
			if t.Event == event {
				return "fired by the timer of " + s.Name
			}
		}
		if s.OnExhausted == event {
			return "fired by the engine when the tries of " + s.Name + " are used up"
		}
	}
	for _, c := range d.Composites {
		for _, t := range c.Timers {
			if t.Event == event {
				return "fired by the timer of " + c.Name
			}
		}
	}
	var handlers []string
	waits := false
	active := d.Configuration(state)
	for _, t := range d.Transitions {
		if t.Event != event {
			continue
		}
		from, leaf := d.State(t.From)
		switch {
		case !leaf || from.Wait:
			// A row on a parallel state is a wait state's: no handler
			// of its own returns its event.
			waits = true
		case slices.Contains(active, t.From):
			return "returned by the handler of " + t.From
		default:
			if !slices.Contains(handlers, t.From) {
				handlers = append(handlers, t.From)
			}
		}
	}
	if waits || len(handlers) == 0 {
		return ""
	}
	if len(handlers) == 1 {
		return "returned by the handler of " + handlers[0]
	}
	return "returned by the handlers of " + strings.Join(handlers[:len(handlers)-1], ", ") + " and " + handlers[len(handlers)-1]
}
