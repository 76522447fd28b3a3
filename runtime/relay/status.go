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
	// Pending counts the unpublished rows that wait to be published,
	// Retrying those of them whose publish failed at least once,
	// Published the published rows, Duplicates those of them the broker
	// acknowledged as duplicates of a message it had stored already (see
	// Receipt), Dead the dead letters (see Config.DeadLetterAfter).
	Pending, Retrying, Published, Duplicates, Dead int64
	// Now is the database's clock when the counts were taken.
	Now time.Time
	// Oldest is the first unpublished row in the relay's order, nil when
	// every row is published or dead.
	Oldest *Pending
	// DeadLetters are the latest dead letters, the latest first, at most
	// MaxDeadLetters of them.
	DeadLetters []Pending
}

// MaxDeadLetters is how many dead letters ReadStatus reads.
const MaxDeadLetters = 20

// Pending is an unpublished row with its tries: one that waits to be
// published, or a dead letter.
type Pending struct {
	Message
	// LastTry is when it was last tried, NextTry when it is tried next
	// (zero: at the next claim, or never for a dead letter), LastError why
	// the last try failed, DeadAt when it was moved to the dead letters
	// (zero while it waits).
	LastTry, NextTry, DeadAt time.Time
	LastError                string
}

func pendingOf(o dbsqlc.WorkflowOutbox) Pending {
	return Pending{
		Message: Message{
			ID: o.ID, RunID: o.WorkflowRunID.String(), Type: o.WorkflowType, Attempt: int(o.AttemptNo),
			Topic: o.Topic, Payload: o.Payload, CreatedAt: o.CreatedAt.Time, Tries: int(o.Attempts), TraceParent: o.TraceParent.String,
		},
		LastTry: o.LastAttemptAt.Time, NextTry: o.NextAttemptAt.Time, DeadAt: o.DeadAt.Time, LastError: o.LastError.String,
	}
}

// Age is how long the row has been waiting at s.Now.
func (s Status) Age() time.Duration {
	if s.Oldest == nil {
		return 0
	}
	return s.Now.Sub(s.Oldest.CreatedAt)
}

// ReadStatus counts the outbox's rows and reads its oldest pending one and
// its latest dead letters, in one snapshot.
func ReadStatus(ctx context.Context, pool *pgxpool.Pool) (Status, error) {
	var st Status
	err := pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		q := dbsqlc.New(tx)
		c, err := q.OutboxCounts(ctx)
		if err != nil {
			return err
		}
		st.Pending, st.Retrying, st.Published, st.Duplicates, st.Dead, st.Now = c.Pending, c.Retrying, c.Published, c.Duplicates, c.Dead, c.Now.Time
		rows, err := q.OldestPendingOutbox(ctx)
		if err != nil {
			return err
		}
		if len(rows) > 0 {
			o := pendingOf(rows[0])
			st.Oldest = &o
		}
		if c.Dead == 0 {
			return nil
		}
		dead, err := q.DeadOutbox(ctx, MaxDeadLetters)
		for _, d := range dead {
			st.DeadLetters = append(st.DeadLetters, pendingOf(d))
		}
		return err
	})
	if err != nil {
		return Status{}, fmt.Errorf("relay: read the outbox's status: %w", err)
	}
	return st, nil
}

// Requeue moves dead letters back to be published: those of ids, or every
// one when ids is nil, and returns how many it moved (with dryRun, how many
// it would, moving none). A requeued row is tried at the relay's next
// claim, before the later rows of its run that are still pending, with its
// rejections counted from 0 again (a row rejected Config.DeadLetterAfter
// times in a row is a dead letter again); its tries and last error stay.
// An id that names no dead letter (published, pending, or no row) is not
// counted. ids must not be empty but nil.
func Requeue(ctx context.Context, pool *pgxpool.Pool, ids []int64, dryRun bool) (int64, error) {
	if ids != nil && len(ids) == 0 {
		return 0, fmt.Errorf("relay: requeue dead letters: no ids (nil requeues every one)")
	}
	q := dbsqlc.New(pool)
	var n int64
	var err error
	if dryRun {
		n, err = q.CountDeadOutbox(ctx, ids)
	} else {
		n, err = q.RequeueDeadOutbox(ctx, ids)
	}
	if err != nil {
		return 0, fmt.Errorf("relay: requeue dead letters: %w", err)
	}
	return n, nil
}
