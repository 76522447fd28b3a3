// Package storehook hands the engine's store operations
// (runtime/internal/enginestore) the internals of a *store.Store that they
// are built on, without making those internals part of package store's API.
// Package store sets Of when it is initialised.
package storehook

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/internal/dbsqlc"
)

// Internals are the parts of a store that the engine's operations use. Run
// and Result are runtime.Run and runtime.Result.
type Internals[Run, Result any] struct {
	Pool    *pgxpool.Pool
	Queries *dbsqlc.Queries
	// Now is the value of the queries' now parameter: NULL (the database's
	// clock) unless the store has a clock of its own.
	Now func() pgtype.Timestamptz
	// RunFromRow converts a row of workflow_runs.
	RunFromRow func(dbsqlc.WorkflowRun) (Run, error)
	// TransitionParams checks a transition against its registered
	// definition and builds the statement that records it; it reports
	// whether the target state is terminal.
	TransitionParams func(ctx context.Context, id pgtype.UUID, rowVersion int64, t runtime.Transition, res *Result) (dbsqlc.AdvanceRunParams, bool, error)
	// InitialDelay is when a run of (typ, version) that starts is first
	// due, as Start schedules it: NULL for an initial state that waits
	// without a timer, else the delay in microseconds.
	InitialDelay func(ctx context.Context, typ string, version int) (pgtype.Int8, error)
	// ParseRunID parses a run id, failing with the store's error for op.
	ParseRunID func(op, id string) (pgtype.UUID, error)
	// EncodeJSON encodes a payload for a JSONB column; what names it in
	// errors.
	EncodeJSON func(what string, v any) ([]byte, error)
	// CheckText checks a name or key against the store's limits and what
	// PostgreSQL's text type can hold; what names it in errors.
	CheckText func(what, v string) error
	// RawJSON maps an empty or null JSONB value to nil.
	RawJSON func([]byte) json.RawMessage
}

// Of returns the internals of st, a *store.Store, as an
// Internals[runtime.Run, runtime.Result]. Package store sets it.
var Of func(st any) any
