package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/internal/dbsqlc"
	"github.com/fsmgen/fsmgen/runtime/internal/diag"
	"github.com/fsmgen/fsmgen/runtime/internal/pgstore"
)

// maxStartRounds bounds the insert-or-read loop of Start; each round ends
// only because another caller changed the row in between.
const maxStartRounds = 16

// Start starts a run idempotently, with the branches of the platform's
// contract, selected by the state of the run that has the same (Type,
// IdempotencyKey), if any:
//
//   - none: insert a run in the initial state, attempt 1 (StartCreated);
//   - succeeded: return it with its cached result, run nothing (StartCached);
//   - non-terminal: return its id, state and an ETA (StartRunning);
//   - failed: reset the same row to the initial state with attempt_no + 1
//     (StartRestarted), following the Version given;
//   - cancelled: return it as it is, run nothing (StartCancelled).
//
// It is correct under any number of concurrent callers with the same key:
// the unique (type, key) index decides who inserts (INSERT ... ON CONFLICT
// DO NOTHING, then a read), and the row version decides who restarts a
// failed run; every other caller sees the run the winner made.
//
// A created or restarted run is scheduled as its initial state is entered
// (see Record): due at once for a state with a handler, at its first timer
// for a state that waits, and never for one that waits without a timer,
// which only an event moves.
//
// A created or restarted run is announced on NotifyChannel, with its type,
// by the statement that writes it: idle workers listening there claim it at
// once, and the start costs one commit.
func (s *Store) Start(ctx context.Context, p runtime.StartRequest) (runtime.Started, error) {
	return s.start(ctx, p, nil)
}

// start is Start, and StartExternal when x is not nil.
func (s *Store) start(ctx context.Context, p runtime.StartRequest, x *external) (runtime.Started, error) {
	op := fmt.Sprintf("start %s/%s", diag.Short(p.Type), diag.Short(p.IdempotencyKey))
	fail := func(err error) (runtime.Started, error) { return runtime.Started{}, pgstore.RunErr(op, "", err) }
	if p.Type == "" || p.IdempotencyKey == "" || p.TenantID == "" {
		return fail(fmt.Errorf("%w: type, idempotency key and tenant id are required", runtime.ErrInvalidInput))
	}
	for _, f := range [...]struct{ what, v string }{{"type", p.Type}, {"idempotency key", p.IdempotencyKey}, {"tenant id", p.TenantID}} {
		if err := s.db().CheckText(f.what, f.v); err != nil {
			return fail(err)
		}
	}
	var userID, corrID pgtype.UUID
	var err error
	if p.UserID != "" {
		if userID, err = pgstore.ParseUUID("user id", p.UserID); err != nil {
			return fail(fmt.Errorf("%w: %w", runtime.ErrInvalidInput, err))
		}
	}
	if p.CorrelationID != "" {
		if corrID, err = pgstore.ParseUUID("correlation id", p.CorrelationID); err != nil {
			return fail(fmt.Errorf("%w: %w", runtime.ErrInvalidInput, err))
		}
	}
	input, err := s.db().EncodeJSON("input", p.Input)
	if err != nil {
		return fail(err)
	}
	d, err := s.db().Definition(ctx, p.Type, p.Version)
	if err != nil {
		return fail(err)
	}
	if p.Policy == nil && p.ResolvePolicy != nil && x == nil {
		got, err := s.db().Queries(nil).GetRunByKey(ctx, dbsqlc.GetRunByKeyParams{WorkflowType: p.Type, IdempotencyKey: p.IdempotencyKey})
		switch {
		case err == nil:
			res, done, err := existingStart(got)
			if err != nil {
				return runtime.Started{}, pgstore.RunErr(op, res.Run.ID, err)
			}
			if done {
				return res, nil
			}
		case !errors.Is(err, pgx.ErrNoRows):
			return fail(pgstore.Translate(err))
		}
		snap, err := p.ResolvePolicy(ctx)
		if err != nil {
			return fail(err)
		}
		p.Policy = snap
	}
	policy, err := s.db().EncodeJSON("policy snapshot", p.Policy)
	if err != nil {
		return fail(err)
	}

	if p.Enter == nil && x == nil {
		return s.startIn(ctx, nil, op, p, d, policy, input, userID, corrID, nil)
	}
	// The entry actions run in the transaction of the write that creates
	// or restarts the run: one of its own, where the statement alone would
	// do. So does the start of an external run, whose restart only its
	// executor's transactions may write.
	var res runtime.Started
	err = pgx.BeginFunc(ctx, s.db().Pool(), func(tx pgx.Tx) error {
		if x != nil {
			if err := s.db().Queries(tx).ActForExecutor(ctx, x.Executor); err != nil {
				return pgstore.RunErr(op, x.ID, pgstore.Translate(err))
			}
		}
		var err error
		res, err = s.startIn(ctx, tx, op, p, d, policy, input, userID, corrID, x)
		return err
	})
	if err != nil {
		return runtime.Started{}, err
	}
	return res, nil
}

// startIn creates, restarts or returns the run of p's key, as Start
// describes (StartExternal when x is not nil), in tx when not nil; it
// calls p.Enter, when set, in tx after creating or restarting the run.
func (s *Store) startIn(ctx context.Context, tx pgx.Tx, op string, p runtime.StartRequest, d *pgstore.Definition, policy, input []byte, userID, corrID pgtype.UUID, x *external) (runtime.Started, error) {
	fail := func(err error) (runtime.Started, error) { return runtime.Started{}, pgstore.RunErr(op, "", err) }
	q := s.db().Queries(tx)
	entered := func(res runtime.Started) (runtime.Started, error) {
		if p.Enter != nil {
			if err := p.Enter(WithTx(ctx, tx), res.Run); err != nil {
				return runtime.Started{}, pgstore.RunErr(op, res.Run.ID, err)
			}
		}
		return res, nil
	}
	ins := dbsqlc.InsertRunParams{
		WorkflowType: p.Type, InitialState: d.Def.Initial, NextDelayUs: d.InitialDelay(), TenantID: p.TenantID,
		UserID: userID, CorrelationID: corrID, IdempotencyKey: p.IdempotencyKey,
		PolicySnapshot: policy, DefinitionVersion: int32(p.Version), Input: input,
	}
	if tp := TraceParent(ctx); tp != "" {
		ins.TraceParent = pgtype.Text{String: tp, Valid: true}
	}
	if x != nil {
		ins.ID, ins.AttemptNo, ins.Executor = x.id, pgtype.Int4{Int32: int32(x.Attempt), Valid: true}, pgtype.Text{String: x.Executor, Valid: true}
		ins.NextDelayUs = pgtype.Int8{} // never due here
	}
	for range maxStartRounds {
		ins.Now = s.db().Now()
		row, err := q.InsertRun(ctx, ins)
		if err == nil {
			run, err := pgstore.RunFromRow(dbsqlc.WorkflowRun(row))
			if err != nil {
				return runtime.Started{}, pgstore.RunErr(op, run.ID, err)
			}
			out := runtime.StartCreated
			if x != nil && x.Attempt > 1 {
				out = runtime.StartRestarted // the attempt's first record
			}
			return entered(runtime.Started{Outcome: out, Run: run})
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return fail(pgstore.Translate(err))
		}

		got, err := q.GetRunByKey(ctx, dbsqlc.GetRunByKeyParams{WorkflowType: p.Type, IdempotencyKey: p.IdempotencyKey})
		if errors.Is(err, pgx.ErrNoRows) {
			continue // gone between the insert and the read: insert again
		}
		if err != nil {
			return fail(pgstore.Translate(err))
		}
		res, done, err := existingStart(got)
		if err == nil && x != nil {
			res, done, err = x.existing(got, res)
		}
		if err != nil {
			return runtime.Started{}, pgstore.RunErr(op, res.Run.ID, err)
		}
		if done {
			return res, nil
		}
		run := res.Run
		switch run.Status {
		case runtime.StatusFailed:
			moved, err := q.RestartRun(ctx, dbsqlc.RestartRunParams{
				InitialState: d.Def.Initial, NextDelayUs: ins.NextDelayUs, DefinitionVersion: int32(p.Version), PolicySnapshot: policy,
				Now: s.db().Now(), ID: got.WorkflowRun.ID, RowVersion: run.RowVersion, FromState: run.State,
			})
			if errors.Is(err, pgx.ErrNoRows) {
				continue // another caller restarted it first: read it again
			}
			if err != nil {
				return runtime.Started{}, pgstore.RunErr(op, run.ID, pgstore.Translate(err))
			}
			run, err := pgstore.RunFromRow(dbsqlc.WorkflowRun(moved))
			if err != nil {
				return runtime.Started{}, pgstore.RunErr(op, run.ID, err)
			}
			return entered(runtime.Started{Outcome: runtime.StartRestarted, Run: run})
		default:
			return runtime.Started{}, pgstore.RunErr(op, run.ID, fmt.Errorf("%w: stored status %q", runtime.ErrUnknownState, run.Status))
		}
	}
	return fail(fmt.Errorf("%w: the run changed under %d consecutive reads", runtime.ErrConflict, maxStartRounds))
}

// existingStart returns the branch Start takes for got, the run that has
// the key: done for StartCached, StartRunning and StartCancelled; not done, with the run,
// for a failed run, which Start restarts.
func existingStart(got dbsqlc.GetRunByKeyRow) (runtime.Started, bool, error) {
	run, err := pgstore.RunFromRow(got.WorkflowRun)
	if err != nil {
		return runtime.Started{Run: run}, false, err
	}
	switch run.Status {
	case runtime.StatusSucceeded:
		return runtime.Started{Outcome: runtime.StartCached, Run: run}, true, nil
	case runtime.StatusCancelled:
		return runtime.Started{Outcome: runtime.StartCancelled, Run: run}, true, nil
	case runtime.StatusRunning:
		res := runtime.Started{Outcome: runtime.StartRunning, Run: run}
		if got.MedianSeconds >= 0 {
			res.ETA = run.StartedAt.Add(time.Duration(got.MedianSeconds * float64(time.Second)))
		}
		return res, true, nil
	}
	return runtime.Started{Run: run}, false, nil
}
