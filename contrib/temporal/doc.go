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
//     state's OnExhausted event is fired, or the workflow fails;
//   - a state that waits listens on the signal channel SignalName for
//     events (Signal sends one) and starts a workflow timer per timer of the
//     state (FCHA's seven days in CONDITIONAL_OFFER); an event the state
//     does not accept is refused and logged, and the run keeps waiting;
//   - a terminal state ends the workflow with a Result.
//
// Every transition is an event in Temporal's history (the activity's
// completion, the signal, the timer) and in the workflow's own history,
// which the query QueryName returns (QueryState types its state).
//
// Handlers run with run.Effects nil: the runtime's effects (log steps,
// outbox, evidence) are the PostgreSQL engine's; on Temporal the history is
// the record.
package temporal
