package pgstore

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/puddle/v2"

	"github.com/fsmgen/fsmgen/db"
	"github.com/fsmgen/fsmgen/runtime"
)

// RunErr is the store's error about run id: what was done (op) and what
// went wrong (err).
func RunErr(op, id string, err error) error {
	return &runtime.RunError{Component: "store", Op: op, RunID: id, Err: err}
}

// Translate maps an error from a query on the runtime's tables, including one
// the caller sent itself, to the store's sentinels: the SQLSTATEs of the
// schema's triggers become runtime.ErrTransitionRefused, runtime.ErrLogImmutable,
// runtime.ErrRunImmutable, runtime.ErrDefinitionImmutable, runtime.ErrUnlogged and runtime.ErrOtherExecutor, a foreign-key violation against
// workflow_definitions becomes runtime.ErrUnknownDefinition, one against the
// registered moves (db.ConstraintMove) runtime.ErrTransitionRefused, a second log row
// of the same change of state (db.ConstraintLoggedChange) runtime.ErrUnlogged, pgx.ErrNoRows becomes
// runtime.ErrRunNotFound and a closed pool runtime.ErrClosed. The original error stays in the
// chain. Other errors are returned unchanged.
func Translate(err error) error {
	if err == nil {
		return nil
	}
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr):
		switch pgErr.Code {
		case db.SQLStateTransitionRefused:
			return fmt.Errorf("%w: %w", runtime.ErrTransitionRefused, err)
		case db.SQLStateLogImmutable:
			return fmt.Errorf("%w: %w", runtime.ErrLogImmutable, err)
		case db.SQLStateRunImmutable:
			return fmt.Errorf("%w: %w", runtime.ErrRunImmutable, err)
		case db.SQLStateDefinitionImmutable:
			return fmt.Errorf("%w: %w", runtime.ErrDefinitionImmutable, err)
		case db.SQLStateUnlogged:
			return fmt.Errorf("%w: %w", runtime.ErrUnlogged, err)
		case db.SQLStateOtherExecutor:
			return fmt.Errorf("%w: %w", runtime.ErrOtherExecutor, err)
		case "23503": // foreign_key_violation
			if pgErr.TableName == "workflow_runs" && pgErr.ConstraintName == "workflow_runs_workflow_type_definition_version_fkey" {
				return fmt.Errorf("%w: %w", runtime.ErrUnknownDefinition, err)
			}
			if pgErr.TableName == "workflow_runs" && pgErr.ConstraintName == db.ConstraintMove {
				// The key names the type, version, from, to and status.
				return fmt.Errorf("%w: the registered table has no such move (%s): %w", runtime.ErrTransitionRefused, pgErr.Detail, err)
			}
		case "23505": // unique_violation
			if pgErr.ConstraintName == db.ConstraintLoggedChange {
				// The key names the run and the row version.
				return fmt.Errorf("%w: a change of state is logged already at that row version (%s): %w", runtime.ErrUnlogged, pgErr.Detail, err)
			}
		}
	case errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("%w: %w", runtime.ErrRunNotFound, err)
	case errors.Is(err, puddle.ErrClosedPool):
		return fmt.Errorf("%w: %w", runtime.ErrClosed, err)
	}
	return err
}
