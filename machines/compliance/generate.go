// Package compliance is the NYC Application Compliance workflow, which
// enforces the NYC Fair Chance Housing Act (FCHA) state machine on a rental
// application: prequalification, conditional offer, background check
// authorization (a signal awaited for 7 days), background check,
// individualized assessment, and the decision.
//
// The state machine is declared in fcha.fsm; its generated package is fcha.
// Workflow runs it on the PostgreSQL engine (runtime/engine): the handlers
// of its driven states call the services of Adapters (local adapters in
// compliance/local) through activities (runtime/activity) with the specification's
// retry policies, their results cached by idempotency key and marked
// consumed in the transaction of the transition that uses them; every
// handler logs the specification's evidence as evidence.<kind> steps, and the
// evidence trigger (runtime/evidence, enabled by Register) chains them
// with the run's creation and transitions. StartWorkflow is idempotent by
// application id; SendSignal delivers the authorization and refuses a late
// one with ErrSignalRefused; GetWorkflow, Query and ExecuteWorkflowSync are
// the specification's queries and synchronous execution. Driver gives the same
// handlers to another engine (contrib/temporal).
//
// An activity is retried by its own policy only: when it gives up, its
// state is not tried again (runtime.ErrNoRetry) but fires
// RetriesExhausted, and the run ends FAILED, status failed, with the
// error's code and message in its Execution (ErrorCode, Error);
// ExecuteWorkflowSync then returns ErrWorkflowFailed. Concurrent calls of
// an activity with one idempotency key execute it once (see
// runtime/activity).
package compliance

//go:generate go tool fsmgen fcha.fsm
