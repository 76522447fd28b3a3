// Package subscription is a machine that never ends, on the engine: a
// customer's subscription moves between ACTIVE, PAST_DUE and PAUSED for as
// long as the customer keeps it, and its run never finishes.
//
// The state machine is declared in subscription.fsm; its generated package
// is subscription/ (see subscription/README.md for its diagram). Billing
// implements its one driven state, CHARGING, on a Charger (the payment
// provider); every other state waits, for a timer (RenewalDue after 30 days
// in ACTIVE, GraceExpired after 14 days in PAST_DUE) or for a signal
// (CardUpdated, Pause, Resume). The test drives a subscription on
// runtime/engine against a real PostgreSQL, twice round every row.
//
// What a machine without final states means on the engine:
//
//   - a run is never terminal: its status stays running and it stores no
//     result record; store.Start with the same idempotency key answers
//     Running with the same run, and no ETA (no run of the type ever
//     succeeds);
//   - Engine.Wait waits for a run to finish, so on such a run it returns
//     only when its context is done, with the context's error; read the run
//     with store.Get, or use Drive, which returns when the run waits;
//   - Engine.Cancel needs a transition to a cancelled state; without one it
//     fails with runtime.ErrNoCancelEvent and the run goes on;
//   - between events and timers the run waits in the database, claimed by no
//     worker, so a run that never ends costs nothing while it waits;
//   - it has one attempt, whose events all stay in runtime.Run.Events: a
//     handler that looks back finds the whole life of the subscription.
package subscription
