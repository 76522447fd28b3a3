package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/internal/batch"
	"github.com/fsmgen/fsmgen/runtime/internal/dbsqlc"
	"github.com/fsmgen/fsmgen/runtime/internal/pgstore"
)

// Recorded is what a recorded transition left behind.
type Recorded struct {
	// RowVersion is the run's row version after the transition: pass it to
	// the next Record.
	RowVersion int64
	// At is when the transition was logged, by the database's clock; zero
	// when AlreadyApplied.
	At time.Time
	// NextRunAt is when the run is next due after the transition: for a
	// state the engine runs at once, the time it became due (a run that
	// goes from one such state to the next stays due from the first); for
	// a state that waits, its first timer. It is zero when the state waits
	// without a timer, when the run finished, and when AlreadyApplied.
	NextRunAt time.Time
	// AlreadyApplied reports that this very transition (same run, row
	// version, event and payload) had been recorded by an earlier call whose
	// acknowledgement was lost; nothing was written this time.
	AlreadyApplied bool
}

// Record records transition t of run runID as one atomic change: the run
// moves from t.From to t.To only if it still is in t.From at rowVersion (the
// version the caller read), and the log row (states before and after, event,
// payload as JSON, attempt) is written in the same statement, in one round
// trip. Before writing, the transition is checked against the registered
// table of t.Machine and t.Version.
//
// A caller whose read is stale gets runtime.ErrConflict and nothing is written. A
// retry of a transition that was committed although its caller never heard
// back (same run, row version, event and payload) is recognised and reported
// as Recorded{AlreadyApplied: true}, not as a conflict. A transition to a
// terminal state also stores a result record built from t (see Finish to
// give one).
//
// The same statement sets when the run is next due, from the registered
// definition of the state entered, as every transition does whoever records
// it (this, RecordTx, Finish, a Recorder, the engine): at once in a state
// whose handler the engine runs, at its first timer, counted from the entry,
// in a state that waits, and never in a state that waits without a timer
// or in a terminal state; a timer of the state left no longer counts.
// Workers find a run made due here by polling; the run's lease, if a worker
// holds one, is left as it is, and that worker's own write is refused.
func (s *Store) Record(ctx context.Context, runID string, rowVersion int64, t runtime.Transition) (Recorded, error) {
	return s.record(ctx, nil, "record", runID, rowVersion, t, nil, false)
}

// RecordTx is Record inside the caller's transaction, so that the transition
// commits or rolls back with the caller's own writes (an Emit, a LogStep, a
// row of the caller's tables). After an error the transaction is unusable
// only if the database raised it; runtime.ErrConflict leaves it usable.
func (s *Store) RecordTx(ctx context.Context, tx pgx.Tx, runID string, rowVersion int64, t runtime.Transition) (Recorded, error) {
	return s.record(ctx, tx, "record", runID, rowVersion, t, nil, false)
}

// Finish records t, which must lead to a terminal state, together with the
// run's final result, in the same single statement as Record. Status,
// RunID and Attempt of res are filled in by the store, Outcome from t when
// empty, and DurationMS, when zero, from the database's clock.
func (s *Store) Finish(ctx context.Context, runID string, rowVersion int64, t runtime.Transition, res runtime.Result) (Recorded, error) {
	return s.record(ctx, nil, "finish", runID, rowVersion, t, &res, true)
}

// FinishTx is Finish inside the caller's transaction.
func (s *Store) FinishTx(ctx context.Context, tx pgx.Tx, runID string, rowVersion int64, t runtime.Transition, res runtime.Result) (Recorded, error) {
	return s.record(ctx, tx, "finish", runID, rowVersion, t, &res, true)
}

func (s *Store) record(ctx context.Context, tx pgx.Tx, op, runID string, rowVersion int64, t runtime.Transition, res *runtime.Result, mustFinish bool) (Recorded, error) {
	if t.Actions != nil && tx == nil {
		// The actions run in the transaction of the transition, before it
		// commits: one of its own, where the statement alone would do.
		var rec Recorded
		err := pgx.BeginFunc(ctx, s.db().Pool(), func(tx pgx.Tx) error {
			var err error
			rec, err = s.record(ctx, tx, op, runID, rowVersion, t, res, mustFinish)
			return err
		})
		if err != nil {
			return Recorded{}, err
		}
		return rec, nil
	}
	id, err := pgstore.ParseRunID(op, runID)
	if err != nil {
		return Recorded{}, err
	}
	fail := func(err error) (Recorded, error) { return Recorded{}, pgstore.RunErr(op, runID, err) }
	p, finish, err := s.db().TransitionParams(ctx, id, rowVersion, t, res)
	if err != nil {
		return fail(err)
	}
	if mustFinish && !finish {
		return fail(fmt.Errorf("%w: a result goes with a terminal state, and %s is not", runtime.ErrInvalidInput, t.To))
	}
	// Unfenced, outside the engine: the lease stays as it is (a worker
	// holding it finds its own write refused); the schedule is the state's.
	q := s.db().Queries(tx)
	var row dbsqlc.AdvanceRunRow
	var busy bool
	if tx == nil && s.db().Batch() != nil && batch.Fits(p) {
		r, out := s.db().Batch().Do(ctx, p, func() pgstore.AdvanceResult {
			row, err := q.AdvanceRun(ctx, p)
			return pgstore.AdvanceResult{Row: row, Err: err}
		})
		switch out {
		case batch.Withdrawn:
			return fail(ctx.Err())
		case batch.Unknown:
			return fail(fmt.Errorf("%w: %w", runtime.ErrOutcomeUnknown, ctx.Err()))
		}
		row, err, busy = r.Row, r.Err, r.Busy
	}
	if tx != nil || s.db().Batch() == nil || !batch.Fits(p) || busy {
		// Alone: in the caller's transaction, or waiting for the lock
		// that another transaction holds on the run.
		row, err = q.AdvanceRun(ctx, p)
	}
	if err == nil {
		if t.Actions != nil {
			if err := t.Actions(WithTx(ctx, tx)); err != nil {
				return fail(err)
			}
		}
		return Recorded{RowVersion: row.RowVersion, At: row.UpdatedAt.Time, NextRunAt: row.NextRunAt.Time}, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return fail(pgstore.Translate(err))
	}
	// Nothing moved: find out why.
	out, err := q.TransitionOutcome(ctx, dbsqlc.TransitionOutcomeParams{
		RowVersion: rowVersion, FromState: t.From, ToState: t.To, Event: t.Event, Payload: p.Payload, ID: id,
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return fail(runtime.ErrRunNotFound)
	}
	if err != nil {
		return fail(pgstore.Translate(err))
	}
	if out.Applied {
		return Recorded{RowVersion: rowVersion + 1, AlreadyApplied: true}, nil
	}
	if out.WorkflowType != t.Machine || int(out.DefinitionVersion) != t.Version {
		return fail(fmt.Errorf("%w: the run is %s v%d, the transition is for %s v%d",
			runtime.ErrDefinitionMismatch, out.WorkflowType, out.DefinitionVersion, t.Machine, t.Version))
	}
	return fail(fmt.Errorf("%w: expected %s at row version %d, the run is in %s at row version %d",
		runtime.ErrConflict, t.From, rowVersion, out.CurrentState, out.RowVersion))
}

// Recorder is a runtime.Recorder bound to one run: hand it to a generated
// machine (WithRecorder) and every transition the machine makes is recorded
// first, and applied in memory only if recording succeeded. It tracks the
// run's row version across calls, so a machine rebuilt from a loaded run
// keeps writing where it read. A Recorder is safe for concurrent use, though
// a machine is normally driven by one goroutine.
type Recorder struct {
	s     *Store
	runID string

	mu         sync.Mutex
	rowVersion int64
	result     *runtime.Result
}

var _ runtime.Recorder = (*Recorder)(nil)

// Recorder returns a Recorder for run, starting from the row version run
// was read at.
func (s *Store) Recorder(run runtime.Run) *Recorder {
	return &Recorder{s: s, runID: run.ID, rowVersion: run.RowVersion}
}

// Record implements runtime.Recorder with Store.Record (or Store.Finish,
// when a result was set and t leads to a terminal state).
func (r *Recorder) Record(ctx context.Context, t runtime.Transition) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec, err := r.s.record(ctx, nil, "record", r.runID, r.rowVersion, t, r.result, false)
	if err != nil {
		return err
	}
	r.rowVersion = rec.RowVersion
	return nil
}

// SetResult sets the result stored with the next transition to a terminal
// state that goes through this recorder. Without it, such a transition
// stores a result with the state's status, the outcome and the duration.
func (r *Recorder) SetResult(res runtime.Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.result = &res
}

// RunID returns the id of the recorder's run.
func (r *Recorder) RunID() string { return r.runID }

// RowVersion returns the run's row version after the last transition this
// recorder recorded.
func (r *Recorder) RowVersion() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rowVersion
}
