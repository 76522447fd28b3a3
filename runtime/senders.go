package runtime

import (
	"errors"
	"fmt"
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
	n := d.names()
	if i, ok := n.eventAt(event); ok && d.Events[i].External {
		return ""
	}
	if by := n.firedBy(event); by != "" {
		return by
	}
	// The handler of an active leaf with a row on event returns it: the
	// first such row in table order.
	first := -1
	for _, leaf := range d.Configuration(state) {
		if i, ok := n.stateAt(leaf); ok && !d.States[i].Wait {
			n.rowsFrom(leaf, event, func(i int) bool {
				if first < 0 || i < first {
					first = i
				}
				return false
			})
		}
	}
	if first >= 0 {
		return "returned by the handler of " + d.Transitions[first].From
	}
	var handlers []string
	seen := map[string]bool{}
	waits := false
	n.rowsOn(event, func(i int) bool {
		t := &d.Transitions[i]
		if from, leaf := n.stateAt(t.From); !leaf || d.States[from].Wait {
			// A row on a parallel state is a wait state's: no handler
			// of its own returns its event.
			waits = true
			return false
		}
		if !seen[t.From] {
			seen[t.From] = true
			handlers = append(handlers, t.From)
		}
		return true
	})
	if waits || len(handlers) == 0 {
		return ""
	}
	if len(handlers) == 1 {
		return "returned by the handler of " + handlers[0]
	}
	return "returned by the handlers of " + strings.Join(handlers[:len(handlers)-1], ", ") + " and " + handlers[len(handlers)-1]
}
