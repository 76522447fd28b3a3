package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Runner is what the typed handle of a generated machine (its Runs
// function) needs of a durable engine: start a run, fire an event on it,
// cancel it, read it and wait for it, all in plain runtime terms so that
// generated code needs no engine import. *engine.Engine implements it.
type Runner interface {
	// StartRun starts a run idempotently by (type, idempotency key).
	StartRun(ctx context.Context, req StartRequest) (RunInfo, error)
	// SignalRun fires e on the run, checked against its state and guards.
	SignalRun(ctx context.Context, runID string, e Event) (RunInfo, error)
	// CancelRun fires the machine's cancel event on behalf of userID.
	CancelRun(ctx context.Context, runID, userID string) (RunInfo, error)
	// GetRun reads the run.
	GetRun(ctx context.Context, runID string) (RunInfo, error)
	// WaitRun waits until the run is terminal, or ctx is done.
	WaitRun(ctx context.Context, runID string) (RunInfo, error)
}

// Owner says whom a run belongs to: TenantID is required, UserID (a UUID)
// is the user who may cancel it, CorrelationID (a UUID) traces the request
// that started it and is generated when empty.
type Owner struct {
	TenantID      string
	UserID        string
	CorrelationID string
}

// StartRequest says which run StartRun starts.
type StartRequest struct {
	// Type and Version name the machine's definition; a zero Version is the
	// latest the engine has registered.
	Type    string
	Version int
	// IdempotencyKey identifies the command: one run per (Type, key).
	IdempotencyKey string
	Owner
	// Input is the run's input, encoded to JSON.
	Input any
}

// StartOutcome says which branch a start took.
type StartOutcome string

// The branches of a start.
const (
	// StartCreated: a new run, attempt 1.
	StartCreated StartOutcome = "created"
	// StartCached: the run had succeeded; its result is returned.
	StartCached StartOutcome = "cached"
	// StartRunning: the run is under way; ETA says when it should end.
	StartRunning StartOutcome = "running"
	// StartRestarted: the run had failed and starts again, attempt + 1.
	StartRestarted StartOutcome = "restarted"
	// StartCancelled: the run was cancelled; a cancellation is final.
	StartCancelled StartOutcome = "cancelled"
)

// RunInfo is a run as a Runner reports it.
type RunInfo struct {
	ID string
	// Type and Version name the definition the run follows.
	Type    string
	Version int
	// IdempotencyKey is the key the run was started with.
	IdempotencyKey string
	// State is the name of the current state, Status its generic status.
	State  string
	Status Status
	// Attempt starts at 1 and grows when a failed run is started again.
	Attempt int
	Owner
	// Input is the JSON input the run was started with.
	Input json.RawMessage
	// Result is the result record, set once the run is terminal.
	Result *RunResult
	// Times by the database's clock. NextRunAt is when the run is due for
	// a worker (its handler, a retry or a timer): a run that went on from
	// one state with a handler to the next stays due from when it first
	// became due, so it may be before UpdatedAt; zero when the run waits
	// for an event or has ended.
	CreatedAt, UpdatedAt, FinishedAt, NextRunAt time.Time
	// ParkedAt is set while the run is parked for an operator, with the
	// last error's code and message.
	ParkedAt      time.Time
	LastErrorCode string
	LastError     string
	// Start is the branch StartRun took, and ETA, for StartRunning, when the
	// run is expected to end; both are zero for the other calls.
	Start StartOutcome
	ETA   time.Time
}

// Terminal reports whether the run is in a terminal state.
func (r RunInfo) Terminal() bool { return r.Status.Terminal() }

// RunResult is the result record a run stores with its terminal
// transition.
type RunResult struct {
	Status      Status
	Outcome     string
	Output      json.RawMessage
	CostUSD     float64
	DurationMS  int64
	ErrorCode   string
	ErrorDetail string
}

// ErrOtherMachine is matched by errors.Is when a typed handle is given the
// id of a run of another machine.
var ErrOtherMachine = errors.New("run of another machine")
