package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/internal/dbsqlc"
)

// Execution is a run as seed 003's WorkflowExecution describes it, read
// from the view workflow_executions in one statement: the run's columns
// under the seed's names, its state history and the ids of its evidence
// records.
type Execution struct {
	// ID and RunID are the run's id; WorkflowID is its idempotency key.
	ID, WorkflowID, RunID string
	// WorkflowName is the run's type and WorkflowVersion its definition
	// version.
	WorkflowName    string
	WorkflowVersion int
	Status          runtime.Status
	Input           json.RawMessage
	// Output, Outcome, Error and ErrorCode come from the run's result: nil
	// and empty until it has one. Error is the message of the run's error
	// (the result's error detail), ErrorCode its code.
	Output    json.RawMessage
	Outcome   string
	Error     string
	ErrorCode string
	// CurrentStep is the run's state.
	CurrentStep string
	// StateHistory lists the run's transitions in order.
	StateHistory []StateChange
	// ActorID is the run's user ("" for none), OrganizationID its tenant.
	ActorID        string
	OrganizationID string
	// StartedAt is when the run was created; CompletedAt when it finished,
	// zero while it runs.
	StartedAt   time.Time
	CompletedAt time.Time
	// Attempt is the run's attempt number.
	Attempt int
	// EvidenceIDs are the ids of the run's evidence records in chain order
	// (runtime/evidence), empty when its type records none.
	EvidenceIDs []int64
}

// StateChange is one transition of an Execution's history.
type StateChange struct {
	From  string    `json:"from"`
	To    string    `json:"to"`
	Event string    `json:"event"`
	At    time.Time `json:"at"`
}

// ExecutionFilter selects executions as seed 003's
// query({workflowName, status, organizationId}) does; an empty field
// matches every run.
type ExecutionFilter struct {
	WorkflowName   string
	Status         runtime.Status
	OrganizationID string
	// Limit caps the number of executions, 100 when zero, at most 10000.
	Limit int
}

// Executions returns the executions that match f, oldest first (in
// (started_at, id) order). The database serves a filter on workflow name,
// organization and status, or on workflow name and organization, from the
// index workflow_runs_query_idx.
func (s *Store) Executions(ctx context.Context, f ExecutionFilter) ([]Execution, error) {
	p := dbsqlc.QueryExecutionsParams{
		WorkflowName:   pgtype.Text{String: f.WorkflowName, Valid: f.WorkflowName != ""},
		Status:         pgtype.Text{String: string(f.Status), Valid: f.Status != ""},
		OrganizationID: pgtype.Text{String: f.OrganizationID, Valid: f.OrganizationID != ""},
		MaxRows:        100,
	}
	switch {
	case f.Limit < 0 || f.Limit > 10000:
		return nil, runErr("query executions", "", fmt.Errorf("%w: limit %d, want 0..10000", ErrInvalidInput, f.Limit))
	case f.Limit > 0:
		p.MaxRows = int32(f.Limit)
	}
	rows, err := s.q.QueryExecutions(ctx, p)
	if err != nil {
		return nil, runErr("query executions", "", Translate(err))
	}
	out := make([]Execution, 0, len(rows))
	for _, r := range rows {
		x, err := executionFromRow(r)
		if err != nil {
			return nil, runErr("query executions", x.ID, err)
		}
		out = append(out, x)
	}
	return out, nil
}

// Execution returns run runID as an Execution; ErrRunNotFound when there
// is none.
func (s *Store) Execution(ctx context.Context, runID string) (Execution, error) {
	id, err := parseRunID("get execution", runID)
	if err != nil {
		return Execution{}, err
	}
	row, err := s.q.GetExecution(ctx, id)
	if err != nil {
		return Execution{}, runErr("get execution", runID, Translate(err))
	}
	x, err := executionFromRow(row)
	if err != nil {
		return x, runErr("get execution", runID, err)
	}
	return x, nil
}

func executionFromRow(r dbsqlc.WorkflowExecution) (Execution, error) {
	x := Execution{
		ID: uuidString(r.ID), WorkflowID: r.WorkflowID, RunID: uuidString(r.RunID),
		WorkflowName: r.WorkflowName, WorkflowVersion: int(r.WorkflowVersion), Status: runtime.Status(r.Status),
		Input: json.RawMessage(r.Input), Outcome: r.Outcome, Error: r.Error, ErrorCode: r.ErrorCode, CurrentStep: r.CurrentStep,
		ActorID: uuidString(r.ActorID), OrganizationID: r.OrganizationID,
		StartedAt: r.StartedAt.Time, CompletedAt: r.CompletedAt.Time, Attempt: int(r.AttemptNo),
		EvidenceIDs: r.EvidenceIds, StateHistory: []StateChange{},
	}
	if len(r.Output) > 0 {
		x.Output = json.RawMessage(r.Output)
	}
	if err := json.Unmarshal(r.StateHistory, &x.StateHistory); err != nil {
		return x, fmt.Errorf("%w: state history: %w", ErrPayload, err)
	}
	return x, nil
}
