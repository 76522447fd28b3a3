package store

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/puddle/v2"

	"github.com/fsmgen/fsmgen/db"
	"github.com/fsmgen/fsmgen/runtime"
)

// The sentinel errors of the store. Every error a Store method returns about a
// run is a *RunError naming the run and wrapping one of these (or a context
// error), so that errors.Is(err, store.ErrConflict) and errors.As(err,
// &runErr) both work.
var (
	// ErrRunNotFound: no run has the given id.
	ErrRunNotFound = errors.New("run not found")
	// ErrInvalidID: a run id is not a UUID.
	ErrInvalidID = errors.New("malformed run id")
	// ErrInvalidInput: a parameter is missing or malformed (an empty
	// idempotency key, a user id that is not a UUID, a result for a
	// non-terminal state, ...).
	ErrInvalidInput = errors.New("invalid input")
	// ErrPayload: a payload, input or output does not encode to JSON, or a
	// stored one does not decode into the value given.
	ErrPayload = errors.New("bad payload")
	// ErrConflict: the run is no longer in the state and row version the
	// caller read; another writer moved it first. Reload the run and decide
	// again.
	ErrConflict = errors.New("conflict: the run moved since it was read")
	// ErrTransitionRefused: the transition is not in the registered table of
	// the run's type and version; raised by the store before it writes, and
	// by the database's trigger for any writer.
	ErrTransitionRefused = errors.New("transition refused")
	// ErrLogImmutable: an UPDATE, DELETE or TRUNCATE of the step log.
	ErrLogImmutable = errors.New("the step log is append-only")
	// ErrRunImmutable: a change of a run's identity, attempt or definition
	// version outside the reset of a failed run; status or row_version set
	// by hand; a result or finished_at on a run in a running state.
	ErrRunImmutable = errors.New("immutable run field")
	// ErrUnlogged: a change of a run's state without its log row, or a log
	// row of a change of state that did not happen; raised by the database
	// for SQL that writes one without the other.
	ErrUnlogged = errors.New("state change and log row do not match")
	// ErrDefinitionImmutable: an UPDATE or DELETE of a registered
	// definition, or rows added to its states or transitions.
	ErrDefinitionImmutable = errors.New("registered definitions are immutable")
	// ErrUnknownDefinition: no definition of that type and version is
	// registered.
	ErrUnknownDefinition = errors.New("unknown definition")
	// ErrInvalidDefinition: a definition given to Register fails
	// runtime.Definition.Validate.
	ErrInvalidDefinition = errors.New("invalid definition")
	// ErrDefinitionConflict: the (type, version) is registered already with a
	// different state or transition table. Bump the version.
	ErrDefinitionConflict = errors.New("registered definition differs")
	// ErrDefinitionMismatch: the run follows another type or version than
	// the definition or transition given for it.
	ErrDefinitionMismatch = errors.New("run follows another definition")
	// ErrUnknownState: the run's stored state is not a state of its
	// definition.
	ErrUnknownState = errors.New("unknown state")
	// ErrRunFinished: the run is succeeded, failed or cancelled; its log
	// and outbox take no more rows (LogStep, Emit), and it can be neither
	// signalled nor cancelled.
	ErrRunFinished = errors.New("run is finished")
	// ErrLeaseLost: a fenced write of a worker whose lease on the run has
	// expired or was taken over by another claim (the lease epoch moved on).
	// Nothing was written; the worker must stop working on the run.
	ErrLeaseLost = errors.New("lease lost")
	// ErrOutcomeUnknown: the caller's context ended after its transition
	// was handed to a group commit (see WithGroupCommit) and before that
	// commit was over: the transition may be recorded, or not. Recording it
	// again tells: Record reports a recorded one as AlreadyApplied, a
	// fenced write gets ErrConflict or ErrLeaseLost. It comes with the
	// context's error.
	ErrOutcomeUnknown = errors.New("outcome unknown: the transition was sent and may be recorded")
	// ErrClosed: the pool the store uses is closed.
	ErrClosed = errors.New("store's pool is closed")
)

// RunError is the error type of the store: what was done (Op), to which run
// (RunID, empty when no run was known yet), and what went wrong (Err, which
// wraps a sentinel). It is runtime.RunError, with Component "store".
type RunError = runtime.RunError

func runErr(op, id string, err error) error {
	return &RunError{Component: "store", Op: op, RunID: id, Err: err}
}

// Translate maps an error from a query on the runtime's tables, including one
// the caller sent itself, to the store's sentinels: the SQLSTATEs of the
// schema's triggers become ErrTransitionRefused, ErrLogImmutable,
// ErrRunImmutable, ErrDefinitionImmutable and ErrUnlogged, a foreign-key violation against
// workflow_definitions becomes ErrUnknownDefinition, one against the
// registered moves (db.ConstraintMove) ErrTransitionRefused, a second log row
// of the same change of state (db.ConstraintLoggedChange) ErrUnlogged, pgx.ErrNoRows becomes
// ErrRunNotFound and a closed pool ErrClosed. The original error stays in the
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
			return fmt.Errorf("%w: %w", ErrTransitionRefused, err)
		case db.SQLStateLogImmutable:
			return fmt.Errorf("%w: %w", ErrLogImmutable, err)
		case db.SQLStateRunImmutable:
			return fmt.Errorf("%w: %w", ErrRunImmutable, err)
		case db.SQLStateDefinitionImmutable:
			return fmt.Errorf("%w: %w", ErrDefinitionImmutable, err)
		case db.SQLStateUnlogged:
			return fmt.Errorf("%w: %w", ErrUnlogged, err)
		case "23503": // foreign_key_violation
			if pgErr.TableName == "workflow_runs" && pgErr.ConstraintName == "workflow_runs_workflow_type_definition_version_fkey" {
				return fmt.Errorf("%w: %w", ErrUnknownDefinition, err)
			}
			if pgErr.TableName == "workflow_runs" && pgErr.ConstraintName == db.ConstraintMove {
				// The key names the type, version, from, to and status.
				return fmt.Errorf("%w: the registered table has no such move (%s): %w", ErrTransitionRefused, pgErr.Detail, err)
			}
		case "23505": // unique_violation
			if pgErr.ConstraintName == db.ConstraintLoggedChange {
				// The key names the run and the row version.
				return fmt.Errorf("%w: a change of state is logged already at that row version (%s): %w", ErrUnlogged, pgErr.Detail, err)
			}
		}
	case errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("%w: %w", ErrRunNotFound, err)
	case errors.Is(err, puddle.ErrClosedPool):
		return fmt.Errorf("%w: %w", ErrClosed, err)
	}
	return err
}
