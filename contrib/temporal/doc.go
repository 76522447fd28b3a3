// Package temporal runs fsmgen-generated machines as Temporal workflows,
// with the Go SDK: the engine to grow into when one PostgreSQL is no longer
// enough.
//
// Register(w, driver) registers, for a machine's runtime.Driver (the
// generated NewDriver with the workflow's handlers and guards), one
// workflow named by the machine's type and one activity, Type+".handle".
// The workflow holds the run's state and enforces the machine's table:
//
//   - a state with a handler runs it as the activity, with the state's retry
//     policy as the activity's (initial interval, coefficient, maximum
//     interval, maximum attempts, non-retryable codes as error types); the
//     event it returns is fired through the generated machine, guards
//     included, inside the workflow; when the tries are used up, the
//     state's OnExhausted event is fired (the Result then carries the
//     error's code and message), or the workflow fails; a handler error
//     matching runtime.ErrNoRetry is not tried again;
//   - a state that waits listens on the signal channel SignalName for
//     events (Signal sends one) and starts a workflow timer per timer of the
//     state (FCHA's seven days in CONDITIONAL_OFFER); an event the state
//     does not accept, or one that only the workflow fires (a timer's), is
//     refused and logged in the snapshot's Refused, and the run keeps
//     waiting;
//   - a terminal state ends the workflow with a Result.
//
// # Sending an event with an answer
//
// A signal is fire-and-forget: its sender is not told that the run
// refused it. Send is the typed send: it fires the event as the update
// UpdateName, whose validator checks it against the run's current state
// (the machine's table and guards, and not an event only the workflow
// fires) before anything is written to the history, as the PostgreSQL
// engine's Signal does. A refused event is a *RefusedError matching
// runtime.ErrSignalRefused, the error machines/compliance reports for a late
// authorization (compliance.ErrSignalRefused is that error), and the
// cause's sentinel: runtime.ErrRunFinished, runtime.ErrIllegalTransition,
// runtime.ErrGuardRejected, runtime.ErrNotCallerEvent or
// runtime.ErrUnknownEvent. An accepted event moves the run before Send
// returns the run's Snapshot. Sent while a driven state's handler runs, an
// external event the state accepts cancels that activity, whose event is dropped,
// as the PostgreSQL engine refuses a handler's transition after a signal.
//
// Every transition is an event in Temporal's history (the activity's
// completion, the signal, the timer) and in the workflow's own history,
// which the query QueryName returns (QueryState types its state).
//
// Handlers run with run.Effects nil: the runtime's effects (log steps,
// outbox, evidence) are the PostgreSQL engine's; on Temporal the history is
// the record.
package temporal
