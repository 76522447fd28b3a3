package engine

import (
	"context"
	"errors"
	"time"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/internal/enginestore"
	"github.com/fsmgen/fsmgen/runtime/internal/worker"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// notifyTimeout bounds a notification, tries again included: it is a
// shortcut, and polling finds the run anyway.
const notifyTimeout = 2 * time.Second

// retryConn calls op until it succeeds or fails otherwise than by an
// unavailable server (pgerr.Unavailable: a lost or refused connection, a
// shutdown, a lack of resources), backing off between tries
// (worker.Statements), while ctx is not done and, unless until is zero,
// until then. It returns op's last error.
// lost reports whether a try failed by an unavailable server: such a try
// may have committed.
func (e *Engine) retryConn(ctx context.Context, until time.Time, what, runID string, op func() error) (lost bool, err error) {
	return worker.Statements.Retry(ctx, until, op, func(wait time.Duration, err error) {
		e.log.Warn("server unavailable; trying again", "op", what, "run", runID, "in", wait, "err", err)
	})
}

// retried is retryConn for an op that returns a value.
func retried[T any](ctx context.Context, e *Engine, until time.Time, what, runID string, op func() (T, error)) (T, error) {
	var v T
	_, err := e.retryConn(ctx, until, what, runID, func() error {
		var err error
		v, err = op()
		return err
	})
	return v, err
}

// retry runs one of the session's own statements with retryConn for as
// long as its lease holds, and reports whether a try was lost with its
// connection: such a try may have committed.
func (s *session) retry(ctx context.Context, what string, op func() error) (lostConn bool, err error) {
	return s.e.retryConn(ctx, s.leaseUntil, what, s.run.ID, op)
}

// advance records a transition under the session's lease, again on a new
// connection when one is lost. When a try lost with its connection had
// committed, the next try is refused as a conflict or a lost lease: advance
// finds the transition in the run's log and reports it recorded, and
// whether the lease is lost since.
func (s *session) advance(ctx context.Context, p enginestore.AdvanceParams) (enginestore.Advanced, bool, error) {
	var adv enginestore.Advanced
	lostConn, err := s.retry(ctx, "advance", func() error {
		var err error
		adv, err = s.e.batch.advance(ctx, s.run.ID, p)
		if err == nil && s.e.hooks.advanced != nil {
			err = s.e.hooks.advanced(s.run.ID)
		}
		return err
	})
	if err == nil || !lostConn || !(errors.Is(err, runtime.ErrLeaseLost) || errors.Is(err, runtime.ErrConflict)) {
		return adv, false, err
	}
	step, ok := s.logged(ctx, p.Transition, p.RowVersion)
	if !ok {
		return adv, false, err
	}
	s.e.log.Info("a transition lost with its connection had been recorded", "run", s.run.ID, "event", p.Transition.Event)
	return enginestore.Advanced{Recorded: store.Recorded{RowVersion: step.RowVersion, At: step.At}}, errors.Is(err, runtime.ErrLeaseLost), nil
}

// logged finds transition t, recorded from row version rowVersion, in the
// run's log.
func (s *session) logged(ctx context.Context, t runtime.Transition, rowVersion int64) (store.Step, bool) {
	h, err := retried(ctx, s.e, s.leaseUntil, "history", s.run.ID, func() ([]store.Step, error) {
		return s.e.st.History(ctx, s.run.ID)
	})
	if err != nil {
		return store.Step{}, false
	}
	return worker.Recorded(h, rowVersion, t)
}
