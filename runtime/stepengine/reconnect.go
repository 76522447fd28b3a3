package stepengine

import (
	"context"
	"errors"
	"time"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/internal/worker"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// retry calls op, one of the engine's own statements, again on a new
// connection while the server could not serve it (pgerr.Unavailable: a
// lost or refused connection, a shutdown), backing off as the other
// engines do (worker.Statements), until ctx, the caller's, is done. lost
// reports whether a try was lost with its connection: such a try may have
// committed.
func retry(ctx context.Context, op func() error) (lost bool, err error) {
	return worker.Statements.Retry(ctx, time.Time{}, op, nil)
}

// retried is retry for an op that returns a value.
func retried[T any](ctx context.Context, op func() (T, error)) (T, bool, error) {
	var v T
	lost, err := retry(ctx, func() error {
		var err error
		v, err = op()
		return err
	})
	return v, lost, err
}

// logged reports whether the run's log holds transition t recorded from
// row version rowVersion: a try lost with its connection had committed.
func (e *Engine) logged(ctx context.Context, runID string, rowVersion int64, t runtime.Transition) (bool, error) {
	h, _, err := retried(ctx, func() ([]store.Step, error) { return e.st.History(context.WithoutCancel(ctx), runID) })
	if err != nil {
		return false, err
	}
	_, ok := worker.Recorded(h, rowVersion, t)
	return ok, nil
}

// recorder records a machine's transitions of one run through the store,
// again on a new connection when one is lost (retry). When a try lost with
// its connection had committed, the next is refused as a conflict: the
// transition is then found in the run's log, and the run loaded again.
type recorder struct {
	e *Engine
	// ctx is the caller's: it bounds the tries again.
	ctx context.Context
	id  string
	def runtime.Definition
	rec *store.Recorder
}

// load loads run id with its recorder, again on a new connection when one
// is lost.
func (e *Engine) load(ctx, dbctx context.Context, id string, def runtime.Definition) (*recorder, error) {
	rec, _, err := retried(ctx, func() (*store.Recorder, error) {
		_, rec, err := e.st.Load(dbctx, id, def)
		return rec, err
	})
	if err != nil {
		return nil, err
	}
	return &recorder{e: e, ctx: ctx, id: id, def: def, rec: rec}, nil
}

// Record implements runtime.Recorder.
func (r *recorder) Record(ctx context.Context, t runtime.Transition) error {
	from := r.rec.RowVersion()
	lost, err := retry(r.ctx, func() error { return r.rec.Record(ctx, t) })
	if err == nil || !lost || !errors.Is(err, runtime.ErrConflict) {
		return err
	}
	if ok, lerr := r.e.logged(r.ctx, r.id, from, t); lerr != nil || !ok {
		return err
	}
	next, lerr := r.e.load(r.ctx, ctx, r.id, r.def)
	if lerr != nil {
		return lerr
	}
	r.rec = next.rec
	return nil
}

// SetResult sets the result the next transition to a terminal state
// records.
func (r *recorder) SetResult(res runtime.Result) { r.rec.SetResult(res) }

// RowVersion is the run's row version after the last transition recorded.
func (r *recorder) RowVersion() int64 { return r.rec.RowVersion() }
