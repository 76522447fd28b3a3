package store

import (
	"context"
	"fmt"
	"time"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/internal/dbsqlc"
	"github.com/fsmgen/fsmgen/runtime/internal/pgstore"
)

// NotifyChannel is the channel on which the runtime announces, with the
// run's type as payload, that a run became due: LISTEN on it to wake idle
// workers.
const NotifyChannel = "fsmgen_runs"

// Resume makes a parked run due again with a fresh attempt counter, logs it
// (a resumed step) and announces it on NotifyChannel, in one statement. It
// fails with runtime.ErrConflict when the run is not parked, and
// runtime.ErrRunNotFound when there is no such run.
func (s *Store) Resume(ctx context.Context, runID string) error {
	id, err := pgstore.ParseRunID("resume", runID)
	if err != nil {
		return err
	}
	n, err := s.db().Queries(nil).ResumeRun(ctx, dbsqlc.ResumeRunParams{Now: s.db().Now(), ID: id})
	if err != nil {
		return pgstore.RunErr("resume", runID, pgstore.Translate(err))
	}
	if n == 0 {
		ok, err := s.db().Queries(nil).RunExists(ctx, id)
		switch {
		case err != nil:
			return pgstore.RunErr("resume", runID, pgstore.Translate(err))
		case !ok:
			return pgstore.RunErr("resume", runID, runtime.ErrRunNotFound)
		}
		return pgstore.RunErr("resume", runID, fmt.Errorf("%w: the run is not parked", runtime.ErrConflict))
	}
	return nil
}

// Notify announces on NotifyChannel that a run of type typ became due.
func (s *Store) Notify(ctx context.Context, typ string) error {
	if err := s.db().Queries(nil).Notify(ctx, dbsqlc.NotifyParams{Channel: NotifyChannel, Payload: typ}); err != nil {
		return pgstore.RunErr("notify "+typ, "", pgstore.Translate(err))
	}
	return nil
}

// Now returns the current time of the store's clock: the database's, unless
// WithClock replaced it.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	t, err := s.db().Queries(nil).DBNow(ctx, s.db().Now())
	if err != nil {
		return time.Time{}, pgstore.RunErr("now", "", pgstore.Translate(err))
	}
	return t.Time, nil
}
