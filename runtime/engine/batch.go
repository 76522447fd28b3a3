package engine

import (
	"context"
	"fmt"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/internal/batch"
	"github.com/fsmgen/fsmgen/runtime/internal/enginestore"
)

// batcher commits the transitions of the engine's sessions together (group
// commit, see package batch) with enginestore.AdvanceBatch: one statement
// and one transaction for the transitions recorded while the previous batch
// was being written, up to Config.BatchSize.
type batcher struct {
	e *Engine
	b *batch.Batcher[enginestore.BatchItem, enginestore.BatchResult]
}

func newBatcher(e *Engine) *batcher {
	key := func(it enginestore.BatchItem) string { return it.RunID }
	// A write outlives no lease.
	return &batcher{e: e, b: batch.New(e.cfg.BatchSize, e.cfg.BatchWindow, e.cfg.Lease, key, e.es.AdvanceBatch)}
}

// advance records p on run runID: in a batch when it can go in one (see
// enginestore.Batchable), else alone. A caller whose context ends before a
// batch takes its transition gets the context's error, and nothing is
// written; one whose context ends later gets runtime.ErrOutcomeUnknown with it: the
// batch goes on and may commit the transition, as a statement cancelled in
// flight may (the compare-and-set refuses it if sent again).
func (b *batcher) advance(ctx context.Context, runID string, p enginestore.AdvanceParams) (enginestore.Advanced, error) {
	if b.e.cfg.BatchSize <= 1 || !enginestore.Batchable(p) {
		return b.e.es.Advance(ctx, runID, p)
	}
	if err := ctx.Err(); err != nil {
		return enginestore.Advanced{}, runErr("advance", runID, err)
	}
	res, out := b.b.Do(ctx, enginestore.BatchItem{RunID: runID, Params: p}, func() enginestore.BatchResult {
		adv, err := b.e.es.Advance(ctx, runID, p)
		return enginestore.BatchResult{Advanced: adv, Err: err}
	})
	switch {
	case out == batch.Withdrawn:
		return enginestore.Advanced{}, runErr("advance", runID, ctx.Err())
	case out == batch.Unknown:
		return enginestore.Advanced{}, runErr("advance", runID, fmt.Errorf("%w: %w", runtime.ErrOutcomeUnknown, ctx.Err()))
	case res.Busy:
		// Another transaction holds the run's row: wait for it alone.
		return b.e.es.Advance(ctx, runID, p)
	}
	return res.Advanced, res.Err
}
