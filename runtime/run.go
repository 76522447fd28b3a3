package runtime

import (
	"encoding/json"
	"fmt"
	"time"
)

// Run is a run of a machine: one row of workflow_runs as the store reads
// it, what the engine's Start, Signal, Cancel, Get and Wait return, and
// what a state handler is told about the run it works on. Times are by
// the database's clock; a zero time or string means unset.
type Run struct {
	// ID is the run's UUID in its canonical text form.
	ID string
	// Type and Version name the machine definition the run follows.
	Type    string
	Version int
	// IdempotencyKey is the key the run was started with: one run per
	// (Type, key).
	IdempotencyKey string
	// State is the name of the current state (rebuild a generated machine
	// with its ParseState function); Status is that state's generic status.
	State  string
	Status Status
	// Attempt is the run's attempt number, starting at 1; it grows when a
	// failed run is started again with the same key.
	Attempt int
	// StepAttempt counts the tries of the current state's handler, starting
	// at 1; it grows with each retry and starts again in the next state.
	StepAttempt int
	// Owner is whom the run belongs to.
	Owner
	// Input is the JSON input the run was started with; nil when none.
	Input json.RawMessage
	// Policy is the snapshot of the execution policy the run was started
	// under, as the policy engine returned it; nil when none.
	Policy json.RawMessage
	// Result is the result record, stored with the transition to a final
	// state; nil until then.
	Result *Result
	// CreatedAt is when the run was created, UpdatedAt when it last
	// changed, StartedAt when its current attempt started and FinishedAt
	// when it reached a terminal state (zero until then).
	CreatedAt, UpdatedAt, StartedAt, FinishedAt time.Time
	// NextRunAt is when the run is due for a worker (its handler, a retry
	// or a timer): a run that went on from one state with a handler to the
	// next stays due from when it first became due, so it may be before
	// UpdatedAt; zero when the run waits for an event or has ended.
	NextRunAt time.Time
	// ParkedAt is set while the run is parked for an operator: its
	// retries gave up and its state names no event for that.
	// LastErrorCode and LastError describe the last failed try of the
	// current state; empty after a change of state.
	ParkedAt      time.Time
	LastErrorCode string
	LastError     string
	// ParentID is the run that waits for this one, ParentEvent the event
	// fired on it when this run finishes; empty unless the run is a child.
	ParentID    string
	ParentEvent string
	// RowVersion grows by one at every state change; a write fenced by it
	// (store.Store.Record) is refused when the run moved since it was read.
	RowVersion int64
	// Lease is the worker's claim on the run; zero when no worker holds it.
	Lease Lease
	// History holds, for a run of a nested machine, the records of its
	// history pseudostates: each history's name (HistorySpec.Name) mapped
	// to the state it recorded when its composite was last exited, the
	// child of the composite for a shallow history, the leaf for a deep
	// one. It is nil until one records. The statement that records a
	// transition updates it, so it survives a crash; a Driver's Fire and
	// Settle restore a machine's history memory from it before firing.
	History map[string]string
	// TimerAnchors holds, for a run of a nested machine, when each active
	// state with timers (its leaf and the composites above it) was
	// entered, and the durations of its timers: a state that a transition
	// neither exits nor enters keeps its anchor. A state with timers and no
	// anchor (one of the run's first configuration, before a transition
	// writes its anchor, or after an upgrade to another version) counts
	// from UpdatedAt. Nil for a flat machine's run, whose timers count from
	// UpdatedAt.
	TimerAnchors map[string]TimerAnchor

	// TryKey, Events and Effects are set only when the engine calls a
	// handler (or a function of a workflow it calls like one); they are
	// zero in a run read from the store.

	// TryKey identifies this call of the handler, unique among all calls of
	// all handlers of all runs, retries and interrupted tries included: a
	// handler's side effects (a payment, a message to another system) can
	// be made idempotent on it. The engine sets it as
	// "<run id>/<lease epoch>/<row version>".
	TryKey string
	// Events are the events recorded in this attempt of the run, oldest
	// first; the last one is the event that entered the current state.
	Events []Event
	// Effects collects what the handler does besides choosing its event.
	Effects Effects
}

// Terminal reports whether the run is in a terminal state.
func (r Run) Terminal() bool { return r.Status.Terminal() }

// TimerAnchor is when a run entered a state with timers, by the
// database's clock, and the durations of the state's timers, in the
// order of its Timers: a timer is due at At plus its duration. A negative
// duration marks a timer that fired while the run stayed in the state (it
// fires once per entry).
type TimerAnchor struct {
	At    time.Time
	After []time.Duration
}

// Lease is a worker's claim on a run: the worker's id, the epoch the
// claim produced (one more at every claim of the run) and when it
// expires, by the database's clock.
type Lease struct {
	Owner     string
	Epoch     int64
	ExpiresAt time.Time
}

// Result is a run's result record, stored as JSON in workflow_runs.result
// with the transition to a final state. Its JSON field names are those of
// the platform's WorkflowResult, and every tool that prints a result
// (fsmctl's -json, the console's API) prints this shape.
type Result struct {
	// Status is the generic status of the terminal state; Outcome the
	// business outcome (from the transition when left empty).
	Status  Status `json:"status"`
	Outcome string `json:"outcome,omitempty"`
	// Output is the workflow-specific output, any JSON.
	Output json.RawMessage `json:"output,omitempty"`
	// RunID and Attempt are filled in by the store.
	RunID   string  `json:"workflow_run_id"`
	Attempt int     `json:"attempt_no"`
	CostUSD float64 `json:"cost_usd"`
	// DurationMS is the attempt's duration; when left zero, the store
	// computes it with the database's clock from the attempt's start.
	DurationMS int64 `json:"duration_ms"`
	// ErrorCode and ErrorDetail describe a failure; invalid UTF-8 and NUL
	// bytes in them are stored as U+FFFD.
	ErrorCode   string `json:"error_code,omitempty"`
	ErrorDetail string `json:"error_detail,omitempty"`
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

// Child describes a child run for StartChild.
type Child struct {
	// Type is the child's machine type; the engine starts the latest
	// version registered in the database.
	Type string
	// IdempotencyKey identifies the child; default "<parent id>/<type>/<attempt>".
	IdempotencyKey string
	// Input is the child's input, encoded to JSON.
	Input any
	// Event is the parent's event fired when the child reaches a terminal
	// state. Its payload is built from the child's outcome: the event's
	// fields named childRunID, childType, state, status, outcome, output,
	// costUSD, errorCode and errorDetail are filled in, others left zero.
	Event string
}

// ChildEnd is how a child run ended, as its parent's event (Child.Event)
// tells it.
type ChildEnd struct {
	RunID, Type, State string
	Status             Status
	// Result is the child's result record; nil when it has none.
	Result *Result
}

// Payload returns the JSON payload of the parent's event named event, an
// event of def: its fields named childRunID, childType, state, status,
// outcome, output, costUSD, errorCode and errorDetail filled in from the
// child's end, others left out.
func (c ChildEnd) Payload(def *Definition, event string) ([]byte, error) {
	facts := map[string]any{"childRunID": c.RunID, "childType": c.Type, "state": c.State, "status": string(c.Status)}
	if r := c.Result; r != nil {
		facts["outcome"], facts["costUSD"], facts["errorCode"], facts["errorDetail"] = r.Outcome, r.CostUSD, r.ErrorCode, r.ErrorDetail
		if len(r.Output) > 0 {
			facts["output"] = r.Output
		}
	}
	payload := map[string]any{}
	for _, e := range def.Events {
		if e.Name != event {
			continue
		}
		for _, f := range e.Fields {
			if v, ok := facts[f.Name]; ok {
				payload[f.Name] = v
			}
		}
	}
	return json.Marshal(payload)
}

// EncodeJSON encodes v, named what in its error, as a run's input, policy
// snapshot or payload is stored (Run.Input, Run.Policy): nil stays nil (no
// value), a json.RawMessage is kept as it is when it is valid JSON, any
// other value is encoded with encoding/json. Its errors match ErrPayload.
// The PostgreSQL store and contrib/temporal's Runner encode with it.
func EncodeJSON(what string, v any) (json.RawMessage, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		if x == nil {
			return nil, nil
		}
		if !json.Valid(x) {
			return nil, fmt.Errorf("%w: %s is not valid JSON", ErrPayload, what)
		}
		return x, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %s of type %T does not encode to JSON: %w", ErrPayload, what, v, err)
	}
	return b, nil
}

// StartChild asks the backend that runs the calling handler to start a
// child run with the transition the handler returns, and to fire c.Event
// on the parent when the child finishes. The handler then returns an event
// leading to a state that waits: the parent waits there until the child
// ends. If the parent's transition is not recorded, no child is started.
// It fails with ErrNoEngine when run.Effects cannot start children (a run
// not driven by a backend), and with ErrInvalidInput without a type or an
// event.
func StartChild(run *Run, c Child) error {
	f, ok := run.Effects.(interface{ StartChild(Child) error })
	if !ok {
		return fmt.Errorf("start child %s: %w", c.Type, ErrNoEngine)
	}
	if c.Type == "" || c.Event == "" {
		return fmt.Errorf("start child: %w: a child needs a type and an event", ErrInvalidInput)
	}
	if c.IdempotencyKey == "" {
		c.IdempotencyKey = fmt.Sprintf("%s/%s/%d", run.ID, c.Type, run.Attempt)
	}
	return f.StartChild(c)
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
