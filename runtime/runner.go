package runtime

import (
	"context"
	"encoding/json"
	"time"
)

// Runner runs machines durably: start a run, fire an event on it, cancel
// it, read it and wait for it. *engine.Engine implements it; the typed
// handle of a generated machine (its Runs function) is built on it, so
// that generated code needs no engine import.
type Runner interface {
	// Start starts a run idempotently by (type, idempotency key).
	Start(ctx context.Context, req StartRequest) (Started, error)
	// Signal fires e on the run, checked against its state and guards.
	Signal(ctx context.Context, runID string, e Event) (Run, error)
	// Cancel fires the machine's cancel event on behalf of userID.
	Cancel(ctx context.Context, runID, userID string) (Run, error)
	// Get reads the run.
	Get(ctx context.Context, runID string) (Run, error)
	// Wait waits until the run is terminal, or ctx is done.
	Wait(ctx context.Context, runID string) (Run, error)
	// List returns the runs that f selects, at most f.Limit (100 when
	// zero). The engine lists them oldest first from its tables; another
	// backend says in its documentation in which order, and how soon a
	// transition shows in its list.
	List(ctx context.Context, f Filter) ([]Run, error)
}

// Filter selects runs for Runner.List. Zero fields select every run.
type Filter struct {
	// Type is the machine's type.
	Type string
	// States selects runs in any of these states (for a run of a parallel
	// machine, its configuration string).
	States []string
	// Status is the generic status of the run's state.
	Status Status
	// TenantID is the tenant that owns the run.
	TenantID string
	// IdempotencyKey is the key the run was started with: with Type, it
	// selects at most one run.
	IdempotencyKey string
	// Limit caps the number of runs: 100 when zero, at most 10000.
	Limit int
}

// Owner says whom a run belongs to: TenantID is required, UserID (a UUID)
// is the user who may cancel it, CorrelationID (a UUID) traces the request
// that started it and is generated when empty.
type Owner struct {
	TenantID      string
	UserID        string
	CorrelationID string
}

// StartRequest says which run to start.
type StartRequest struct {
	// Type and Version name the machine's definition; for the engine, a
	// zero Version is the latest it has registered.
	Type    string
	Version int
	// IdempotencyKey identifies the command: one run per (Type, key).
	IdempotencyKey string
	Owner
	// Input is the run's input and Policy the execution policy it runs
	// under; both are encoded to JSON (a json.RawMessage is taken as is)
	// and may be nil. A restart keeps the first attempt's input and
	// replaces the policy snapshot when a new one is given.
	Input  any
	Policy any
	// ResolvePolicy, when set and Policy is nil, resolves the policy
	// snapshot of a run about to be created or restarted. It is called
	// after the idempotency check, so a run that has the key and has not
	// failed (cached, running, cancelled) is returned without it: a policy
	// engine that is down cannot refuse a cached result. Its error refuses
	// the start and writes nothing.
	ResolvePolicy func(ctx context.Context) (json.RawMessage, error)
	// Enter, when set, runs in the transaction that creates or restarts
	// the run, after the run is written and before the commit, with the
	// transaction in ctx and the run as written: the entry actions of the
	// states it starts in (see Starter). It is not called for a run that
	// had the key and is returned as it is. Its error refuses the start
	// and writes nothing.
	Enter func(ctx context.Context, run Run) error
}

// Started is what a start did and the run it did it to.
type Started struct {
	Run     Run
	Outcome StartOutcome
	// ETA, for StartRunning only, is when the run's current attempt is
	// expected to finish: its start plus the median duration of the last
	// 100 succeeded runs of its type. Zero when no run of the type has
	// succeeded yet.
	ETA time.Time
}

// StartOutcome says which branch a start took.
type StartOutcome string

// The branches of a start, selected by the run that has the same (type,
// idempotency key), if any.
const (
	// StartCreated: no run had the key; a new one was created in the
	// initial state, attempt 1.
	StartCreated StartOutcome = "created"
	// StartCached: the run had succeeded; it is returned with its result,
	// and nothing runs again.
	StartCached StartOutcome = "cached"
	// StartRunning: the run is under way; it is returned with an ETA and
	// no duplicate is created.
	StartRunning StartOutcome = "running"
	// StartRestarted: the run had failed; the same run was reset to the
	// initial state with attempt + 1.
	StartRestarted StartOutcome = "restarted"
	// StartCancelled: the run was cancelled; a cancellation is final, so
	// it is returned as it is and nothing runs again. Use a new key to run
	// the command anew.
	StartCancelled StartOutcome = "cancelled"
)
