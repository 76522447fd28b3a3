package runtime

import (
	"fmt"
	"time"
)

// Status is the generic status of a run, the only terminal vocabulary the
// runtime knows. Business outcomes ("hit", "approved", ...) travel beside it.
type Status string

// The generic statuses.
const (
	StatusRunning   Status = "running"
	StatusSucceeded Status = "succeeded"
	StatusFailed    Status = "failed"
	StatusCancelled Status = "cancelled"
)

// Terminal reports whether s is one of the terminal statuses.
func (s Status) Terminal() bool {
	return s == StatusSucceeded || s == StatusFailed || s == StatusCancelled
}

// Definition is a machine's definition as data: what fsmgen generated from a
// .fsm file, in a form the runtime can register, check transitions against,
// and draw. A generated package exposes its Definition through a function;
// callers must not modify the slices it holds.
type Definition struct {
	// Machine is the machine's Go name and Doc its doc comment.
	Machine string
	Doc     string
	// Type is the persisted type name and Version the definition version.
	Type    string
	Version int
	// Initial is the name of the initial state.
	Initial string
	// States, Events and Guards are in declaration order.
	States []StateSpec
	Events []EventSpec
	Guards []string
	// Transitions holds one row per (from, event, guard) in the order the
	// machine tries them: a FROM list or * is expanded to one row per state.
	Transitions []TransitionSpec
	// Cancel names the machine's cancel event, the one a run's owner fires to
	// cancel it; empty when the machine declares none.
	Cancel string
	// Upgrades say how the runs of older versions move to this one, one
	// per older version the machine upgrades from. They are not part of
	// the definition's identity: adding one to a registered version is no
	// conflict.
	Upgrades []Upgrade `json:",omitempty"`
}

// StateSpec describes one state.
type StateSpec struct {
	Name    string
	Initial bool
	// Status is StatusRunning for a non-terminal state.
	Status Status
	// Outcome is the business outcome a terminal state declares, if any.
	Outcome string
	// Wait marks a state that waits for an external event or a timer: the
	// runtime parks runs there instead of calling a handler.
	Wait bool
	// Retry is the state's retry policy, nil when the state declares none.
	Retry *RetryPolicy
	// OnExhausted names the event fired, with an empty payload, when the
	// state's retry policy gives up; the last error's code and detail go to
	// the run's result. Empty when the state names none: the run is then
	// parked with its error for an operator.
	OnExhausted string
	// Timers fire events after the run has spent a duration in the state.
	Timers []Timer
}

// Terminal reports whether the state is terminal.
func (s StateSpec) Terminal() bool { return s.Status.Terminal() }

// EventSpec describes one event and its payload fields.
type EventSpec struct {
	Name   string
	Fields []FieldSpec
	// External marks an event that callers may send in every state, even
	// one the engine fires itself (a timer's or exhaustion event) or a
	// driven state's handler returns (see Definition.CallerRefusal).
	External bool
}

// FieldSpec is one payload field: its JSON name and its Go type as written
// in the generated code.
type FieldSpec struct {
	Name string
	Type string
}

// TransitionSpec is one row of the transition table.
type TransitionSpec struct {
	From, To, Event string
	// Guard names the guard that must admit the event, empty when the row is
	// unguarded; Negated inverts it.
	Guard   string
	Negated bool
	// Outcome is the business outcome the row declares for a terminal target.
	Outcome string
}

// Timer says that Event fires once a run has been in a state for After.
type Timer struct {
	After time.Duration
	Event string
}

// State returns the state named name.
func (d *Definition) State(name string) (StateSpec, bool) {
	for _, s := range d.States {
		if s.Name == name {
			return s, true
		}
	}
	return StateSpec{}, false
}

// Allows reports whether the table has a row from one state to another on
// the given event, whatever its guard.
func (d *Definition) Allows(from, event, to string) bool {
	for _, t := range d.Transitions {
		if t.From == from && t.Event == event && t.To == to {
			return true
		}
	}
	return false
}

// Validate checks the definition's internal consistency: one initial state,
// every transition naming declared states and events, no row leaving a
// terminal state. Generated definitions always pass; it guards hand-built ones.
func (d *Definition) Validate() error {
	if d.Type == "" {
		return fmt.Errorf("definition of %q: empty type name", d.Machine)
	}
	if d.Version < 1 {
		return fmt.Errorf("definition %s: version %d, want >= 1", d.Type, d.Version)
	}
	states := make(map[string]StateSpec, len(d.States))
	initial := 0
	for _, s := range d.States {
		if _, dup := states[s.Name]; dup {
			return fmt.Errorf("definition %s v%d: duplicate state %s", d.Type, d.Version, s.Name)
		}
		states[s.Name] = s
		if s.Initial {
			initial++
		}
	}
	if initial != 1 || !states[d.Initial].Initial {
		return fmt.Errorf("definition %s v%d: want exactly one initial state named by Initial, have %d", d.Type, d.Version, initial)
	}
	events := make(map[string]bool, len(d.Events))
	for _, e := range d.Events {
		events[e.Name] = true
	}
	if d.Cancel != "" && !events[d.Cancel] {
		return fmt.Errorf("definition %s v%d: unknown cancel event %s", d.Type, d.Version, d.Cancel)
	}
	for _, t := range d.Transitions {
		from, ok := states[t.From]
		if !ok {
			return fmt.Errorf("definition %s v%d: transition from unknown state %s", d.Type, d.Version, t.From)
		}
		if _, ok := states[t.To]; !ok {
			return fmt.Errorf("definition %s v%d: transition to unknown state %s", d.Type, d.Version, t.To)
		}
		if !events[t.Event] {
			return fmt.Errorf("definition %s v%d: transition on unknown event %s", d.Type, d.Version, t.Event)
		}
		if from.Terminal() {
			return fmt.Errorf("definition %s v%d: transition out of terminal state %s", d.Type, d.Version, t.From)
		}
	}
	return nil
}
