package enginestore

import (
	"context"
	"slices"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/fsmgen/fsmgen/runtime/internal/batch"
	"github.com/fsmgen/fsmgen/runtime/internal/dbsqlc"
	"github.com/fsmgen/fsmgen/runtime/internal/pgerr"
	"github.com/fsmgen/fsmgen/runtime/internal/pgstore"
)

// BatchItem is one transition of AdvanceBatch.
type BatchItem struct {
	RunID  string
	Params AdvanceParams
}

// BatchResult is what AdvanceBatch did with one item: what Advance would
// have returned for it.
type BatchResult struct {
	Advanced Advanced
	Err      error
	// Busy: another transaction holds the run's row locked; the item was
	// skipped rather than waited for, and nothing is written. Write it
	// with Advance.
	Busy bool
}

// Batchable reports whether AdvanceBatch writes p in its shared statement:
// a transition under a lease, without effects. Others are written by
// Advance, one by one.
func Batchable(p AdvanceParams) bool {
	return p.Lease != nil && p.Effects.empty() && p.Transition.Actions == nil && !p.Nested
}

// AdvanceBatch records the transitions of items, of different runs, as
// Advance records each: the batchable ones (see Batchable) in one statement
// and one transaction, each with its own compare-and-set of state, row
// version and lease, so that one committed write holds them all; the others,
// and any item whose run appears earlier in items, with Advance after it.
// Result n is item n's, known only once its transaction committed (or
// failed).
//
// An item that does not move (its run moved, or its lease is lost) gets the
// error Advance gives it. When the shared statement fails as a whole with
// an error of the statement (a trigger or a constraint refusing one of the
// rows), nothing of it is written, and every item is written again alone
// with Advance so that the error goes to the item that caused it. When the
// connection is lost, every item of the statement gets that error: the
// statement may or may not have committed, as for Advance. A run whose row
// another transaction holds locked is skipped, not waited for (Busy).
func (s *Store) AdvanceBatch(ctx context.Context, items []BatchItem) []BatchResult {
	out := make([]BatchResult, len(items))
	var (
		arg    dbsqlc.AdvanceRunsParams
		shared []int // indexes of the items in the statement
		alone  []int
		seen   = make(map[pgtype.UUID]bool, len(items))
		ids    = make([]pgtype.UUID, len(items))
	)
	for n, it := range items {
		if !Batchable(it.Params) {
			alone = append(alone, n)
			continue
		}
		id, err := pgstore.ParseRunID("advance", it.RunID)
		if err != nil {
			out[n].Err = err
			continue
		}
		if seen[id] {
			alone = append(alone, n)
			continue
		}
		p := it.Params
		a, _, err := s.db.TransitionParams(ctx, id, p.RowVersion, p.Transition, p.Result)
		if err != nil {
			out[n].Err = pgstore.RunErr("advance", it.RunID, err)
			continue
		}
		if !batch.Fits(a) {
			alone = append(alone, n)
			continue
		}
		a.Fenced, a.Owner, a.Epoch, a.ReleaseLease = true, p.Lease.Owner, p.Lease.Epoch, !p.KeepLease
		seen[id], ids[n] = true, id
		shared = append(shared, n)
		batch.Append(&arg, a)
	}
	if len(shared) == 1 {
		// AdvanceRuns costs more than Advance for a single run
		// (bench/store/group_statement.sh).
		alone, shared = append(alone, shared...), nil
	}
	if len(shared) > 0 {
		arg.Now = s.db.Now()
		rows, err := s.q.AdvanceRuns(ctx, arg)
		switch {
		case err == nil:
			moved := make(map[pgtype.UUID]dbsqlc.AdvanceRunsRow, len(rows))
			for _, r := range rows {
				moved[r.ID] = r
			}
			for _, n := range shared {
				if r, ok := moved[ids[n]]; ok {
					if r.Busy {
						out[n].Busy = true
					} else {
						out[n].Advanced.RowVersion, out[n].Advanced.At, out[n].Advanced.NextRunAt = r.RowVersion, r.OccurredAt.Time, r.NextRunAt.Time
					}
					continue
				}
				p := items[n].Params
				out[n].Err = pgstore.RunErr("advance", items[n].RunID, s.whyNot(ctx, ids[n], p.Lease, p.Transition, p.RowVersion))
			}
		case pgerr.Unavailable(err) || ctx.Err() != nil:
			for _, n := range shared {
				out[n].Err = pgstore.RunErr("advance", items[n].RunID, pgstore.Translate(err))
			}
		default:
			// One row was refused, and the statement with it: write each
			// alone to tell which.
			alone = append(alone, shared...)
		}
	}
	slices.Sort(alone) // a run's later item after its earlier one
	for _, n := range alone {
		out[n].Advanced, out[n].Err = s.Advance(ctx, items[n].RunID, items[n].Params)
	}
	return out
}
