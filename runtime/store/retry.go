package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/internal/dbsqlc"
	"github.com/fsmgen/fsmgen/runtime/internal/pgstore"
)

// Retry restarts a failed run as Start does for a failed run's key: the
// same row, attempt_no + 1, the state reset to the
// initial state of the run's definition version, the result and finish
// time cleared, a restarted row logged, and the run due at once and
// announced on NotifyChannel. The run's id, key, input and policy
// snapshot stay. A run that is not failed is refused with runtime.ErrConflict
// (saying its status and state), a missing one with runtime.ErrRunNotFound.
func (s *Store) Retry(ctx context.Context, runID string) (runtime.Run, error) {
	id, err := pgstore.ParseRunID("retry", runID)
	if err != nil {
		return runtime.Run{}, err
	}
	for range maxStartRounds {
		run, err := s.get(ctx, "retry", runID)
		if err != nil {
			return runtime.Run{}, err
		}
		if run.Status != "failed" {
			return run, pgstore.RunErr("retry", runID, fmt.Errorf("%w: only a failed run is retried, and it is %s in %s", runtime.ErrConflict, run.Status, run.State))
		}
		d, err := s.db().Definition(ctx, run.Type, run.Version)
		if err != nil {
			return run, pgstore.RunErr("retry", runID, err)
		}
		moved, err := s.db().Queries(nil).RestartRun(ctx, dbsqlc.RestartRunParams{
			InitialState: d.Def.Initial, NextDelayUs: d.InitialDelay(), DefinitionVersion: int32(run.Version),
			Now: s.db().Now(), ID: id, RowVersion: run.RowVersion, FromState: run.State,
		})
		if errors.Is(err, pgx.ErrNoRows) {
			continue // it moved between the read and the reset: read it again
		}
		if err != nil {
			return run, pgstore.RunErr("retry", runID, pgstore.Translate(err))
		}
		out, err := pgstore.RunFromRow(dbsqlc.WorkflowRun(moved))
		if err != nil {
			return out, pgstore.RunErr("retry", runID, err)
		}
		return out, nil
	}
	return runtime.Run{}, pgstore.RunErr("retry", runID, fmt.Errorf("%w: the run changed under %d consecutive reads", runtime.ErrConflict, maxStartRounds))
}
