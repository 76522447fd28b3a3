package store

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/internal/dbsqlc"
)

// Run is a run as stored: one row of workflow_runs.
type Run struct {
	// ID is the run's UUID in its canonical text form.
	ID string
	// Type and Version name the definition the run follows.
	Type    string
	Version int
	// State is the name of the current state: rebuild a generated machine
	// with its Parse function. Status is that state's generic status.
	State  string
	Status runtime.Status
	// RowVersion grows by one at every state change; Record takes the one
	// the caller read, to refuse a stale write.
	RowVersion int64
	// Attempt starts at 1 and grows when a failed run is started again.
	Attempt        int
	TenantID       string
	UserID         string // empty when the run has none
	CorrelationID  string
	IdempotencyKey string
	// Input is the JSON input the run was started with, PolicySnapshot the
	// policy it runs under; nil when absent.
	Input          json.RawMessage
	PolicySnapshot json.RawMessage
	// Result is the final result, set with the terminal transition.
	Result *Result
	// Times from the database's clock. FinishedAt is zero until the run
	// reaches a terminal state; AttemptStartedAt is when the current attempt
	// began.
	CreatedAt        time.Time
	UpdatedAt        time.Time
	AttemptStartedAt time.Time
	FinishedAt       time.Time
	// The worker's lease and schedule; zero values when unset.
	LeaseOwner     string
	LeaseExpiresAt time.Time
	LeaseEpoch     int64
	// NextRunAt is when the run is due: claimed by a worker once it has
	// passed. A run that went from one state with a handler to the next
	// stays due from the first.
	NextRunAt time.Time
	// StepAttempt counts the tries of the current state's handler, from 1;
	// LastErrorCode and LastError describe the last failed try, empty after
	// a change of state.
	StepAttempt   int
	LastErrorCode string
	LastError     string
	// ParkedAt is set while the run is parked: its retries gave up and its
	// state names no event for that; zero otherwise.
	ParkedAt time.Time
	// ParentID is the run that waits for this one, ParentEvent the event
	// fired on it when this run finishes; empty unless the run is a child.
	ParentID    string
	ParentEvent string
}

// Terminal reports whether the run is in a terminal state.
func (r Run) Terminal() bool { return r.Status.Terminal() }

// Runtime returns what a state handler is told about the run.
func (r Run) Runtime() runtime.Run {
	return runtime.Run{
		ID: r.ID, Type: r.Type, Version: r.Version, IdempotencyKey: r.IdempotencyKey,
		Attempt: r.Attempt, StepAttempt: max(r.StepAttempt, 1), TenantID: r.TenantID, UserID: r.UserID,
		CorrelationID: r.CorrelationID, Input: r.Input, Policy: r.PolicySnapshot, StartedAt: r.AttemptStartedAt,
	}
}

// Result is a run's final result record, stored as JSON in
// workflow_runs.result with the terminal transition. The JSON field names are
// those of the platform's WorkflowResult.
type Result struct {
	// Status is the generic status of the terminal state; Outcome the
	// business outcome (from the transition when left empty).
	Status  runtime.Status `json:"status"`
	Outcome string         `json:"outcome,omitempty"`
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

func runFromRow(r dbsqlc.WorkflowRun) (Run, error) {
	run := Run{
		ID:               uuidString(r.ID),
		Type:             r.WorkflowType,
		Version:          int(r.DefinitionVersion),
		State:            r.CurrentState,
		Status:           runtime.Status(r.Status),
		RowVersion:       r.RowVersion,
		Attempt:          int(r.AttemptNo),
		TenantID:         r.TenantID,
		UserID:           uuidString(r.UserID),
		CorrelationID:    uuidString(r.CorrelationID),
		IdempotencyKey:   r.IdempotencyKey,
		Input:            rawJSON(r.Input),
		PolicySnapshot:   rawJSON(r.PolicySnapshot),
		CreatedAt:        r.CreatedAt.Time,
		UpdatedAt:        r.UpdatedAt.Time,
		AttemptStartedAt: r.AttemptStartedAt.Time,
		FinishedAt:       r.FinishedAt.Time,
		LeaseOwner:       r.LeaseOwner.String,
		LeaseExpiresAt:   r.LeaseExpiresAt.Time,
		LeaseEpoch:       r.LeaseEpoch,
		NextRunAt:        r.NextRunAt.Time,
		StepAttempt:      int(r.StepAttempt),
		LastErrorCode:    r.LastErrorCode.String,
		LastError:        r.LastError.String,
		ParkedAt:         r.ParkedAt.Time,
		ParentID:         uuidString(r.ParentRunID),
		ParentEvent:      r.ParentEvent.String,
	}
	if len(r.Result) > 0 {
		var res Result
		if err := json.Unmarshal(r.Result, &res); err != nil {
			return run, fmt.Errorf("%w: stored result does not decode: %w", ErrPayload, err)
		}
		if string(res.Output) == "null" {
			res.Output = nil
		}
		run.Result = &res
	}
	return run, nil
}

func rawJSON(b []byte) json.RawMessage {
	if len(b) == 0 || string(b) == "null" {
		return nil
	}
	return json.RawMessage(b)
}

func uuidString(u pgtype.UUID) string {
	if !u.Valid {
		return ""
	}
	return u.String()
}

// parseUUID parses a UUID; what names the parameter in the error.
func parseUUID(what, s string) (pgtype.UUID, error) {
	var u pgtype.UUID
	if err := u.Scan(s); err != nil {
		return u, fmt.Errorf("%s %s is not a UUID", what, quote(s))
	}
	return u, nil
}

func parseRunID(op, id string) (pgtype.UUID, error) {
	u, err := parseUUID("run id", id)
	if err != nil {
		return u, runErr(op, short(id), fmt.Errorf("%w: %w", ErrInvalidID, err))
	}
	return u, nil
}

// marshalJSON encodes v for a JSONB column: nil stays NULL, a
// json.RawMessage must already be valid JSON.
func marshalJSON(what string, v any) ([]byte, error) {
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
