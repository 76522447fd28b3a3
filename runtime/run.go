package runtime

import (
	"encoding/json"
	"time"
)

// Run is what a state handler is told about the run it is working on.
type Run struct {
	// ID identifies the run.
	ID string
	// Type and Version name the machine definition the run follows.
	Type    string
	Version int
	// IdempotencyKey is the key the run was started with.
	IdempotencyKey string
	// Attempt is the run's attempt number, starting at 1; it grows when a
	// FAILED run is started again with the same key.
	Attempt int
	// StepAttempt counts the tries of the current state's handler, starting
	// at 1; it grows with each retry and starts again in the next state.
	StepAttempt int
	// TryKey identifies this call of the handler, unique among all calls of
	// all handlers of all runs, retries and interrupted tries included: a
	// handler's side effects (a payment, a message to another system) can
	// be made idempotent on it. The engine sets it as
	// "<run id>/<lease epoch>/<row version>"; it is empty when the handler
	// is called outside the engine.
	TryKey string
	// TenantID and UserID identify who the run belongs to.
	TenantID string
	UserID   string
	// CorrelationID traces the request that started the run.
	CorrelationID string
	// Input is the JSON input the run was started with.
	Input json.RawMessage
	// Policy is the snapshot of the execution policy the run was started
	// under, as the policy engine returned it.
	Policy json.RawMessage
	// Events are the events recorded in this attempt of the run, oldest
	// first; the last one is the event that entered the current state.
	Events []Event
	// StartedAt is when the run (this attempt) started, by the database's clock.
	StartedAt time.Time
	// Effects collects what the handler does besides choosing its event.
	// It is nil when the handler is called outside the engine.
	Effects Effects
}

// Effects are the side effects a handler asks of the runtime. They are
// written in the same transaction as the transition the handler returns,
// and discarded if that transition is not recorded (the run was cancelled,
// the worker lost its lease, the handler failed).
type Effects interface {
	// LogStep records an observable sub-step in the run's log.
	LogStep(name string, payload any)
	// Emit writes a domain event to the outbox.
	Emit(topic string, payload any)
	// Enqueue starts a run of another machine type in the background,
	// idempotently by key, without waiting for it.
	Enqueue(workflowType, idempotencyKey string, input any)
	// SetResult sets the output and cost of the run's result record, stored
	// with the transition to a final state.
	SetResult(output any, costUSD float64)
	// SetError sets the error code and detail of the run's result record,
	// for a handler that chooses a failure event itself.
	SetError(code, detail string)
}

// Last returns the most recent event of type E recorded in the run.
func Last[E Event](run *Run) (E, bool) {
	for i := len(run.Events) - 1; i >= 0; i-- {
		if e, ok := run.Events[i].(E); ok {
			return e, true
		}
	}
	var zero E
	return zero, false
}
