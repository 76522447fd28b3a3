package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/internal/dbsqlc"
	"github.com/fsmgen/fsmgen/runtime/internal/pgstore"
)

// Execution is a run with its state history and the ids of its evidence
// records, read in one statement with the view workflow_executions
// (machines/compliance gives it the names of its WorkflowExecution).
type Execution struct {
	runtime.Run
	// StateHistory lists the run's transitions in order.
	StateHistory []StateChange
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

// ExecutionFilter selects executions as the compliance workflow's
// query({workflowName, status, organizationId}) does: by type, status and
// tenant; an empty field matches every run.
type ExecutionFilter struct {
	Type     string
	Status   runtime.Status
	TenantID string
	// Limit caps the number of executions, 100 when zero, at most 10000.
	Limit int
}

// Executions returns the executions that match f, oldest first (in
// (created_at, id) order). The database serves a filter on type, tenant
// and status, or on type and tenant, from the index
// workflow_runs_query_idx.
func (s *Store) Executions(ctx context.Context, f ExecutionFilter) ([]Execution, error) {
	p := dbsqlc.QueryExecutionsParams{
		WorkflowType: pgtype.Text{String: f.Type, Valid: f.Type != ""},
		Status:       pgtype.Text{String: string(f.Status), Valid: f.Status != ""},
		TenantID:     pgtype.Text{String: f.TenantID, Valid: f.TenantID != ""},
		MaxRows:      100,
	}
	switch {
	case f.Limit < 0 || f.Limit > 10000:
		return nil, pgstore.RunErr("query executions", "", fmt.Errorf("%w: limit %d, want 0..10000", runtime.ErrInvalidInput, f.Limit))
	case f.Limit > 0:
		p.MaxRows = int32(f.Limit)
	}
	rows, err := s.db().Queries(nil).QueryExecutions(ctx, p)
	if err != nil {
		return nil, pgstore.RunErr("query executions", "", pgstore.Translate(err))
	}
	out := make([]Execution, 0, len(rows))
	for _, r := range rows {
		x, err := executionFromRow(dbsqlc.GetExecutionRow(r))
		if err != nil {
			return nil, pgstore.RunErr("query executions", x.ID, err)
		}
		out = append(out, x)
	}
	return out, nil
}

// Execution returns run runID as an Execution; runtime.ErrRunNotFound when there
// is none.
func (s *Store) Execution(ctx context.Context, runID string) (Execution, error) {
	id, err := pgstore.ParseRunID("get execution", runID)
	if err != nil {
		return Execution{}, err
	}
	row, err := s.db().Queries(nil).GetExecution(ctx, id)
	if err != nil {
		return Execution{}, pgstore.RunErr("get execution", runID, pgstore.Translate(err))
	}
	x, err := executionFromRow(row)
	if err != nil {
		return x, pgstore.RunErr("get execution", runID, err)
	}
	return x, nil
}

func executionFromRow(r dbsqlc.GetExecutionRow) (Execution, error) {
	run, err := pgstore.RunFromRow(r.WorkflowRun)
	x := Execution{Run: run, StateHistory: []StateChange{}, EvidenceIDs: r.EvidenceIds}
	if err != nil {
		return x, err
	}
	if err := json.Unmarshal(r.StateHistory, &x.StateHistory); err != nil {
		return x, fmt.Errorf("%w: state history: %w", runtime.ErrPayload, err)
	}
	return x, nil
}
