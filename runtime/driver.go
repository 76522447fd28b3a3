package runtime

import "context"

// Event is what the runtime knows of an event of a generated machine: its
// name. Every generated event type implements it; its payload is the value
// itself, encoded as JSON.
type Event interface {
	EventName() string
}

// Driver connects a generated machine, with a workflow's handlers and
// guards, to the engine that drives runs durably. Every generated package
// provides one through NewDriver; the engine never imports a machine.
type Driver interface {
	// Definition returns the machine's definition.
	Definition() Definition
	// Handle calls the handler of the state named state and returns the
	// event it chose. For a final state or one that waits it returns an
	// error matched by errors.Is(err, ErrNotDriven).
	Handle(ctx context.Context, run *Run, state string) (Event, error)
	// Decode rebuilds the event named name from its JSON payload.
	Decode(name string, payload []byte) (Event, error)
	// Fire applies e to a machine of run in the state named state, with the
	// workflow's guards for run, recording through rec before applying. A
	// refused event returns a *TransitionError.
	Fire(ctx context.Context, run *Run, state string, e Event, rec Recorder) error
}

// Settler is implemented by the Driver of a machine with eventless or
// completion rows (TransitionSpec.Event empty). The engine calls Settle
// when it claims a run whose leaf, or a composite above it, has such rows,
// before it fires a timer or calls a handler: a run whose worker died
// between the transition that entered the leaf and the eventless moves
// that follow it takes them then.
type Settler interface {
	// Settle takes the eventless and completion rows enabled in the
	// machine of run in the leaf named state, with the workflow's guards
	// for run and its history restored from run.History, recording each
	// move through rec before applying it, as Fire does after an event's
	// transition. It records nothing when no such row is enabled.
	Settle(ctx context.Context, run *Run, state string, rec Recorder) error
}

// Starter is implemented by the Driver of a machine whose first states
// have entry actions (Definition.StartActions). The engine calls Enter in
// the transaction that creates or restarts a run, after the run is written
// and before it commits, so the actions run once per attempt of the run,
// outermost first, with the transaction in ctx (see engine.Tx); an error
// rolls the start back and Start returns it.
type Starter interface {
	// Enter runs the entry actions of the states run starts in, with the
	// workflow's actions for run.
	Enter(ctx context.Context, run *Run) error
}
