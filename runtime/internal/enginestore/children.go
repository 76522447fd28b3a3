package enginestore

import (
	"context"

	"github.com/fsmgen/fsmgen/runtime/internal/dbsqlc"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// ChildEventNamed reports whether a child of the run, finished or not,
// names event as the one fired on the run when it finishes: an event the
// engine fires, which Signal refuses.
func (s *Store) ChildEventNamed(ctx context.Context, runID, event string) (bool, error) {
	id, err := parseRunID(s, "child events", runID)
	if err != nil {
		return false, err
	}
	named, err := s.q.ChildEventNamed(ctx, dbsqlc.ChildEventNamedParams{ID: id, Event: event})
	if err != nil {
		return false, runErr("child events", runID, store.Translate(err))
	}
	return named, nil
}
