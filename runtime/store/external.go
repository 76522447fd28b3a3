package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/internal/dbsqlc"
	"github.com/fsmgen/fsmgen/runtime/internal/diag"
	"github.com/fsmgen/fsmgen/runtime/internal/pgstore"
)

// External is a run that another runtime executes (a workflow of
// contrib/temporal) and that the store records, so that its log, its
// evidence (runtime/evidence), its outbox, the activity cache and the reads
// (Get, History, Execution, the console, fsmctl) are those of a run of the
// engine. StartExternal records its start, RecordExternal each of its
// transitions.
//
// The database keeps such a run from the engine (db/migrations
// 0018_executor.sql): it is never due, so no engine claims it or fires its
// timers, whatever types the engine registered; and every update of it
// outside StartExternal and RecordExternal for its executor (an engine's
// Signal, Cancel or Resume, Store.Record, an upgrade) fails with
// runtime.ErrOtherExecutor and writes nothing.
type External struct {
	// Executor names the runtime that executes the run ("temporal"). A run
	// is recorded for one executor, fixed when it is created.
	Executor string
	// ID is the run's id there, a UUID, and its id here.
	ID string
	// Attempt is the run's attempt there, from 1: a failed run that its
	// executor starts again is the same run with the next attempt, as
	// Start restarts one.
	Attempt int
}

// external is an External checked, with its id parsed.
type external struct {
	External
	id pgtype.UUID
}

// checked checks x for op.
func (x External) checked(s *Store, op string) (*external, error) {
	if x.Executor == "" || x.Attempt < 1 {
		return nil, pgstore.RunErr(op, x.ID, fmt.Errorf("%w: an external run needs an executor and an attempt from 1, got %q and %d", runtime.ErrInvalidInput, x.Executor, x.Attempt))
	}
	if err := s.db().CheckText("executor", x.Executor); err != nil {
		return nil, pgstore.RunErr(op, x.ID, err)
	}
	id, err := pgstore.ParseRunID(op, x.ID)
	if err != nil {
		return nil, err
	}
	return &external{External: x, id: id}, nil
}

// belongs checks that the stored run r is x's: its id, its executor and
// its attempt.
func (x *external) belongs(r dbsqlc.WorkflowRun) error {
	if r.ID != x.id || r.Executor.String != x.Executor {
		executor := "this database's engine"
		if r.Executor.Valid {
			executor = diag.Quote(r.Executor.String)
		}
		return fmt.Errorf("%w: run %s of %s/%s is executed by %s, not by %s as run %s",
			runtime.ErrOtherExecutor, pgstore.UUIDString(r.ID), diag.Short(r.WorkflowType), diag.Short(r.IdempotencyKey), executor, diag.Quote(x.Executor), x.ID)
	}
	return nil
}

// existing returns the branch StartExternal takes for got, the run that
// has the key, given res, Start's branch: done for the same attempt, which
// is recorded already (with the outcome of the write that recorded it);
// Start's restart for a failed run one attempt behind; runtime.ErrConflict
// for any other attempt.
func (x *external) existing(got dbsqlc.GetRunByKeyRow, res runtime.Started) (runtime.Started, bool, error) {
	if err := x.belongs(got.WorkflowRun); err != nil {
		return res, false, err
	}
	switch at := int(got.WorkflowRun.AttemptNo); {
	case at == x.Attempt:
		res.Outcome = runtime.StartCreated
		if at > 1 {
			res.Outcome = runtime.StartRestarted
		}
		return res, true, nil
	case at+1 == x.Attempt && res.Run.Status == runtime.StatusFailed:
		return res, false, nil
	default:
		return res, false, fmt.Errorf("%w: the run is %s in %s at attempt %d, the start is of attempt %d",
			runtime.ErrConflict, res.Run.Status, res.Run.State, at, x.Attempt)
	}
}

// StartExternal records the start of attempt x.Attempt of run x.ID, which
// x.Executor executes, as Start would start it (p: its type, registered
// version, key, owner, input and policy snapshot; p.ResolvePolicy is not
// called): a run in its initial state, with its creation in the log (and
// in the evidence chain of a type that records one), or, for an attempt
// after the first, the failed run of the previous attempt reset to its
// initial state. Its id is x.ID.
//
// It is idempotent: a start of an attempt already recorded writes nothing
// and returns the run as it is, with the outcome of the call that recorded
// it (runtime.StartCreated for attempt 1, runtime.StartRestarted after).
// The key of a run of the engine or of another executor fails with
// runtime.ErrOtherExecutor; an attempt that is neither the run's nor the
// one after its failure, with runtime.ErrConflict.
func (s *Store) StartExternal(ctx context.Context, x External, p runtime.StartRequest) (runtime.Started, error) {
	cx, err := x.checked(s, fmt.Sprintf("start %s/%s", diag.Short(p.Type), diag.Short(p.IdempotencyKey)))
	if err != nil {
		return runtime.Started{}, err
	}
	return s.start(ctx, p, cx)
}

// ExternalStep is a sub-step a handler logged, for the log of the run at the
// state its transition leaves.
type ExternalStep struct {
	Name    string
	Payload any
}

// ExternalMessage is a message a handler emitted, for the outbox.
type ExternalMessage struct {
	Topic   string
	Payload any
}

// ExternalEffects are the writes of a handler that go with the transition its
// event made, in the transition's transaction: all of them with it, or
// none.
type ExternalEffects struct {
	// Steps are logged before the transition, at the state it leaves, as
	// LogStepTx logs them; a step named "evidence.<kind>" is in the
	// evidence chain of a type that records one.
	Steps []ExternalStep
	// Messages go to the outbox after the transition, as EmitTx writes
	// them: a relay publishes each once, with the id of its row.
	Messages []ExternalMessage
	// InTx, when not nil, is called last, in the transaction, with the
	// transition recorded (activity.ExecuteInRun's consumption of a cached
	// result); its error rolls everything back.
	InTx func(ctx context.Context, tx pgx.Tx, rec Recorded) error
}

// errApplied rolls back the writes of a transition found recorded.
var errApplied = errors.New("the transition is recorded already")

// RecordExternal records transition t of run x.ID, which x.Executor
// executes, with its effects fx, in one transaction: the steps, the
// transition (Record's statement, or Finish's with res when res is not
// nil), the messages, then fx.InTx. rowVersion is the run's row version
// before t: the version StartExternal returned, plus one for each
// transition recorded since.
//
// It is idempotent by row version: a transition recorded already (same
// run, row version, event and payload), by a call whose acknowledgement
// was lost, is reported as Recorded{AlreadyApplied: true}, and nothing of
// its effects is written again: its messages keep the ids they got. A
// transition that does not follow the run as recorded (another row
// version or state, another transition at that row version) fails with
// runtime.ErrConflict; one of another attempt of the run, with
// runtime.ErrConflict too; a run of the engine or of another executor,
// with runtime.ErrOtherExecutor. Nothing is written then.
func (s *Store) RecordExternal(ctx context.Context, x External, rowVersion int64, t runtime.Transition, fx ExternalEffects, res *runtime.Result) (Recorded, error) {
	op := "record " + diag.Short(t.Event)
	cx, err := x.checked(s, op)
	if err != nil {
		return Recorded{}, err
	}
	fail := func(err error) (Recorded, error) { return Recorded{}, pgstore.RunErr(op, x.ID, err) }
	var rec Recorded
	err = pgx.BeginFunc(ctx, s.db().Pool(), func(tx pgx.Tx) error {
		q := s.db().Queries(tx)
		if err := q.ActForExecutor(ctx, x.Executor); err != nil {
			return pgstore.Translate(err)
		}
		r, err := q.GetRun(ctx, cx.id)
		if err != nil {
			return pgstore.Translate(err)
		}
		if err := cx.belongs(r); err != nil {
			return err
		}
		if int(r.AttemptNo) != x.Attempt {
			return fmt.Errorf("%w: the run is at attempt %d, the transition is of attempt %d", runtime.ErrConflict, r.AttemptNo, x.Attempt)
		}
		if r.RowVersion == rowVersion {
			// Where the transition follows: its steps first. Anywhere
			// else, the transition alone tells recorded from conflict.
			for _, st := range fx.Steps {
				if _, err := s.logStep(ctx, tx, x.ID, st.Name, st.Payload); err != nil {
					return err
				}
			}
		}
		rec, err = s.record(ctx, tx, op, x.ID, rowVersion, t, res, res != nil)
		if err != nil {
			return err
		}
		if rec.AlreadyApplied {
			return errApplied
		}
		for _, m := range fx.Messages {
			if _, err := s.emit(ctx, tx, x.ID, m.Topic, m.Payload); err != nil {
				return err
			}
		}
		if fx.InTx != nil {
			return fx.InTx(ctx, tx, rec)
		}
		return nil
	})
	switch {
	case errors.Is(err, errApplied):
		return rec, nil
	case err != nil:
		var re *runtime.RunError
		if errors.As(err, &re) {
			return Recorded{}, err
		}
		return fail(err)
	}
	return rec, nil
}
