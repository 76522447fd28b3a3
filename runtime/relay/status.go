package relay

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/runtime/internal/dbsqlc"
)

// Status is the outbox at a glance, as fsmctl outbox status prints it.
type Status struct {
	// Pending counts the unpublished rows, Retrying those of them whose
	// publish failed at least once, Published the published rows.
	Pending, Retrying, Published int64
	// Now is the database's clock when the counts were taken.
	Now time.Time
	// Oldest is the first unpublished row in the relay's order, nil when
	// every row is published.
	Oldest *Pending
}

// Pending is an unpublished row with its tries.
type Pending struct {
	Message
	// LastTry is when it was last tried, NextTry when it is tried next
	// (zero: at the next claim), LastError why the last try failed.
	LastTry, NextTry time.Time
	LastError        string
}

// Age is how long the row has been waiting at s.Now.
func (s Status) Age() time.Duration {
	if s.Oldest == nil {
		return 0
	}
	return s.Now.Sub(s.Oldest.CreatedAt)
}

// ReadStatus counts the outbox's rows and reads its oldest unpublished
// one, in one snapshot.
func ReadStatus(ctx context.Context, pool *pgxpool.Pool) (Status, error) {
	var st Status
	err := pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		q := dbsqlc.New(tx)
		c, err := q.OutboxCounts(ctx)
		if err != nil {
			return err
		}
		st.Pending, st.Retrying, st.Published, st.Now = c.Pending, c.Retrying, c.Published, c.Now.Time
		rows, err := q.OldestPendingOutbox(ctx)
		if err != nil || len(rows) == 0 {
			return err
		}
		o := rows[0]
		st.Oldest = &Pending{
			Message: Message{
				ID: o.ID, RunID: o.WorkflowRunID.String(), Type: o.WorkflowType, Attempt: int(o.AttemptNo),
				Topic: o.Topic, Payload: o.Payload, CreatedAt: o.CreatedAt.Time, Tries: int(o.Attempts),
			},
			LastTry: o.LastAttemptAt.Time, NextTry: o.NextAttemptAt.Time, LastError: o.LastError.String,
		}
		return nil
	})
	if err != nil {
		return Status{}, fmt.Errorf("relay: read the outbox's status: %w", err)
	}
	return st, nil
}
