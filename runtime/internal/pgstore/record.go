package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/internal/batch"
	"github.com/fsmgen/fsmgen/runtime/internal/dbsqlc"
	"github.com/fsmgen/fsmgen/runtime/internal/diag"
	"github.com/fsmgen/fsmgen/runtime/internal/pgerr"
)

// TransitionParams checks t against its registered definition and builds
// the statement that records it: the move, its log row, the schedule of the
// state entered (see EntryDelay) and, when the target is terminal, the
// result record (the outcome of res, else of the row, else of the state).
// It reports whether the target is terminal. Callers set the lease fence.
// Every transition, whoever records it (Record, RecordTx, Finish, a
// Recorder, the engine), goes through here, so that the run's timers and
// due time are always those of the state it enters.
func (db *DB) TransitionParams(ctx context.Context, id pgtype.UUID, rowVersion int64, t runtime.Transition, res *runtime.Result) (dbsqlc.AdvanceRunParams, bool, error) {
	d, err := db.Definition(ctx, t.Machine, t.Version)
	if err != nil {
		return dbsqlc.AdvanceRunParams{}, false, err
	}
	if why := d.Refusal(t.From, t.Event, t.To); why != "" {
		return dbsqlc.AdvanceRunParams{}, false, refused(t, why)
	}
	payload, err := db.EncodeJSON("payload of "+t.Event, t.Payload)
	if err != nil {
		return dbsqlc.AdvanceRunParams{}, false, err
	}
	p := dbsqlc.AdvanceRunParams{
		Event: t.Event, FromState: t.From, ToState: t.To, Payload: payload, Now: db.Now(),
		ID: id, RowVersion: rowVersion, WorkflowType: t.Machine, DefinitionVersion: int32(t.Version),
	}
	to, ok := d.States[t.To]
	if !ok {
		to, _ = d.Def.StateOf(t.To) // a configuration
	}
	p.ToStatus = string(StatusOf(to))
	if !StatusOf(to).Terminal() {
		p.NextDelayUs = EntryDelay(to)
	}
	if d.Nest != nil {
		if err := d.checkNested(t); err != nil {
			return dbsqlc.AdvanceRunParams{}, false, err
		}
		if err := d.nestedParams(&p, t, to); err != nil {
			return dbsqlc.AdvanceRunParams{}, false, err
		}
	}
	if !StatusOf(to).Terminal() {
		return p, false, nil
	}
	p.Finish = true
	p.ResultStatus = string(StatusOf(to))
	outcome := t.Outcome
	if outcome == "" {
		outcome = to.Outcome
	}
	if res != nil {
		if res.Outcome != "" {
			outcome = res.Outcome
		}
		if len(res.Output) > 0 {
			if p.Output, err = db.EncodeJSON("result output", res.Output); err != nil {
				return dbsqlc.AdvanceRunParams{}, false, err
			}
		}
		p.CostUsd = res.CostUSD
		p.DurationMs = pgtype.Int8{Int64: res.DurationMS, Valid: res.DurationMS != 0}
		p.ErrorCode = pgtype.Text{String: diag.Sanitize(res.ErrorCode), Valid: res.ErrorCode != ""}
		p.ErrorDetail = pgtype.Text{String: diag.Sanitize(res.ErrorDetail), Valid: res.ErrorDetail != ""}
	}
	if err := db.CheckText("outcome", outcome); err != nil {
		return dbsqlc.AdvanceRunParams{}, false, err
	}
	p.Outcome = pgtype.Text{String: outcome, Valid: outcome != ""}
	return p, true, nil
}

// EntryDelay is when a run that just entered st is next due, from the
// moment it entered: at once for a state whose handler the engine runs;
// after the shortest of its timers for a state that waits; never (NULL)
// for a state that waits without a timer, which only an event moves. A
// terminal state clears the schedule in the statement itself. A run due at
// once that was already due keeps its due time (the statement sees to it).
func EntryDelay(st runtime.StateSpec) pgtype.Int8 {
	if !st.Wait {
		return pgtype.Int8{Int64: 0, Valid: true}
	}
	next, ok := st.FirstTimer()
	if !ok {
		return pgtype.Int8{}
	}
	return pgtype.Int8{Int64: max(next, 0).Microseconds(), Valid: true}
}

// AdvanceResult is what one transition of a group commit gave:
// pgx.ErrNoRows when the run did not move.
type AdvanceResult struct {
	Row dbsqlc.AdvanceRunRow
	Err error
	// Busy: another transaction holds the run's row; the caller writes
	// the transition alone.
	Busy bool
}

// groupCommitTimeout bounds the statement of a group commit, whose
// callers wait for it whatever their contexts say.
const groupCommitTimeout = 30 * time.Second

// advanceBatch writes the transitions of a group commit (of different
// runs) in one statement, dbsqlc.AdvanceRuns, each with its own
// compare-and-set, or with AdvanceRun when there is one. When the statement
// fails as a whole with its own error (one row refused), each is written
// again alone, so that the error goes to the transition that caused it; a
// lost connection goes to all. A run another transaction holds locked is
// not waited for: its caller writes it alone (busy).
// Those of a statement refused as a whole are written again with
// AdvanceRun, which waits for such a lock.
func (db *DB) advanceBatch(ctx context.Context, items []dbsqlc.AdvanceRunParams) []AdvanceResult {
	out := make([]AdvanceResult, len(items))
	alone := func() []AdvanceResult {
		for n, a := range items {
			out[n].Row, out[n].Err = db.q.AdvanceRun(ctx, a)
		}
		return out
	}
	if len(items) == 1 {
		// AdvanceRuns costs more than AdvanceRun for a single run
		// (bench/store/group_statement.sh).
		return alone()
	}
	var arg dbsqlc.AdvanceRunsParams
	for _, a := range items {
		batch.Append(&arg, a)
	}
	arg.Now = db.Now()
	rows, err := db.q.AdvanceRuns(ctx, arg)
	switch {
	case err == nil:
		moved := make(map[pgtype.UUID]dbsqlc.AdvanceRunsRow, len(rows))
		for _, r := range rows {
			moved[r.ID] = r
		}
		for n, a := range items {
			r, ok := moved[a.ID]
			switch {
			case !ok:
				out[n].Err = pgx.ErrNoRows
			case r.Busy:
				out[n].Busy = true
			default:
				out[n].Row = dbsqlc.AdvanceRunRow{RowVersion: r.RowVersion, UpdatedAt: r.OccurredAt, NextRunAt: r.NextRunAt}
			}
		}
		return out
	case pgerr.Unavailable(err) || ctx.Err() != nil:
		for n := range out {
			out[n].Err = err
		}
		return out
	}
	return alone()
}

// refused is the error that refuses transition t, which the registered
// table does not have: to or from a configuration, it says why.
func refused(t runtime.Transition, why string) error {
	err := fmt.Errorf("%w: %s v%d has no transition %s -> %s on %s", runtime.ErrTransitionRefused, t.Machine, t.Version, t.From, t.To, t.Event)
	if configuration(t.From) || configuration(t.To) {
		err = fmt.Errorf("%w: %s", err, why)
	}
	return err
}
