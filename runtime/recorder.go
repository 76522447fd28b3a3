package runtime

import "context"

// Transition describes one transition about to be applied to a machine. A
// machine hands it to its [Recorder] before it changes its own state.
type Transition struct {
	// Machine is the persisted type name, Version the definition version.
	Machine string
	Version int
	// From and To are state names, in their persisted form: for a run in
	// a parallel state, its configuration (Definition.Configuration).
	// A step that moves several regions is one Transition: each region's
	// move is the change of its position, and what it exited and entered
	// is in Exited and Entered, region by region.
	From, To string
	// Event is the event's name and Payload the event value itself, a struct
	// that encodes to JSON.
	Event   string
	Payload any
	// Status is the generic status of the target state: StatusRunning unless
	// To is terminal.
	Status Status
	// Outcome is the business outcome the transition declares, if any.
	Outcome string
	// Exited names the states (leaves and composites) the transition
	// exits, innermost first, and Entered those it enters, outermost
	// first, ending at To. A generated machine fills them in for every
	// transition of a nested machine; they are empty in a flat one.
	Exited, Entered []string
	// Actions, when not nil, runs the transition's exit actions
	// (innermost first) then its entry actions (outermost first). A
	// Recorder calls it inside the write of the transition, after the
	// transition is known to apply and before it commits; an error
	// aborts the write, nothing of it is kept, and Record returns the
	// error (wrapped or as is). A Recorder that writes to Postgres passes
	// the transaction in the context Actions receives (see store.Tx). A
	// Recorder calls Actions at most once per successful Record.
	Actions func(ctx context.Context) error
}

// Recorder persists transitions. A generated machine calls Record before it
// applies a transition and applies it only if Record returned nil, so the
// in-memory state never runs ahead of what was recorded.
//
// A Recorder must call [Transition.Actions], when set, as part of the
// write: see its documentation.
type Recorder interface {
	Record(ctx context.Context, t Transition) error
}

// RecorderFunc adapts a function to the Recorder interface.
type RecorderFunc func(ctx context.Context, t Transition) error

// Record calls f(ctx, t).
func (f RecorderFunc) Record(ctx context.Context, t Transition) error { return f(ctx, t) }
