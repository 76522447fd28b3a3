package store

import (
	"context"
	"time"

	"github.com/fsmgen/fsmgen/runtime/internal/pgstore"
)

// Backlog is the work waiting in the database for one workflow type, as
// Store.Backlog reads it: what an operator watches to know whether workers
// keep up and whether anything needs a hand.
type Backlog struct {
	// Type is the workflow type.
	Type string
	// Due counts the running runs that are due and that no live lease
	// holds: the runs waiting for a worker to claim them.
	Due int64
	// DueLag is how long the oldest of them has been due in its current
	// state; zero when none is. A lag that grows means the workers do not
	// keep up.
	DueLag time.Duration
	// Parked counts the parked runs, waiting for an operator (Resume or
	// Cancel).
	Parked int64
	// Outbox counts the outbox messages not yet published (dead letters
	// aside), and OutboxLag
	// is the age of the oldest of them; zero when none waits.
	Outbox    int64
	OutboxLag time.Duration
}

// Backlog reads the work waiting in the database, one Backlog per workflow
// type that has any, ordered by type: due runs no worker holds, parked
// runs and unpublished outbox messages. Lags are measured by the store's
// clock (the database's). It is one statement, reading the partial
// indexes of due, parked and pending rows, meant for a gauge polled every
// few seconds or more.
func (s *Store) Backlog(ctx context.Context) ([]Backlog, error) {
	rows, err := s.db().Queries(nil).Backlog(ctx, s.db().Now())
	if err != nil {
		return nil, pgstore.RunErr("backlog", "", pgstore.Translate(err))
	}
	out := make([]Backlog, len(rows))
	for i, r := range rows {
		b := Backlog{Type: r.WorkflowType, Due: r.Due, Parked: r.Parked, Outbox: r.Outbox}
		if r.OldestDue.Valid {
			b.DueLag = max(r.Now.Time.Sub(r.OldestDue.Time), 0)
		}
		if r.OldestOutbox.Valid {
			b.OutboxLag = max(r.Now.Time.Sub(r.OldestOutbox.Time), 0)
		}
		out[i] = b
	}
	return out, nil
}
