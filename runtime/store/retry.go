package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/internal/dbsqlc"
)

// Retry restarts a failed run as Start does for a failed run's key (seed
// 000's retry): the same row, attempt_no + 1, the state reset to the
// initial state of the run's definition version, the result and finish
// time cleared, a restarted row logged, and the run due at once and
// announced on NotifyChannel. The run's id, key, input and policy
// snapshot stay. A run that is not failed is refused with runtime.ErrConflict
// (saying its status and state), a missing one with runtime.ErrRunNotFound.
func (s *Store) Retry(ctx context.Context, runID string) (runtime.Run, error) {
	id, err := parseRunID("retry", runID)
	if err != nil {
		return runtime.Run{}, err
	}
	for range maxStartRounds {
		run, err := s.get(ctx, "retry", runID)
		if err != nil {
			return runtime.Run{}, err
		}
		if run.Status != "failed" {
			return run, runErr("retry", runID, fmt.Errorf("%w: only a failed run is retried, and it is %s in %s", runtime.ErrConflict, run.Status, run.State))
		}
		d, err := s.definition(ctx, run.Type, run.Version)
		if err != nil {
			return run, runErr("retry", runID, err)
		}
		moved, err := s.q.RestartRun(ctx, dbsqlc.RestartRunParams{
			InitialState: d.def.Initial, NextDelayUs: d.initialDelay(), DefinitionVersion: int32(run.Version),
			Now: s.now(), ID: id, RowVersion: run.RowVersion, FromState: run.State,
		})
		if errors.Is(err, pgx.ErrNoRows) {
			continue // it moved between the read and the reset: read it again
		}
		if err != nil {
			return run, runErr("retry", runID, Translate(err))
		}
		out, err := runFromRow(dbsqlc.WorkflowRun(moved))
		if err != nil {
			return out, runErr("retry", runID, err)
		}
		return out, nil
	}
	return runtime.Run{}, runErr("retry", runID, fmt.Errorf("%w: the run changed under %d consecutive reads", runtime.ErrConflict, maxStartRounds))
}
