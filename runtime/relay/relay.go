package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	mathrand "math/rand/v2"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/internal/dbsqlc"
)

// The relay's sentinel errors; match them with errors.Is.
var (
	// ErrInvalidConfig: New was given a Config that cannot work, or no pool
	// or no publisher.
	ErrInvalidConfig = errors.New("invalid config")
	// ErrPublish: the publisher refused a message or did not acknowledge
	// it in time. The failure is recorded on the row (attempts,
	// last_error, next_attempt_at) and the row is tried again after its
	// backoff; the error wraps the publisher's.
	ErrPublish = errors.New("publish failed")
	// ErrRejected is for a Publisher to wrap when the broker refused the
	// message itself, so that trying it again as it is cannot succeed
	// (no stream holds its subject, it is too large, its subject is
	// invalid), as opposed to a broker that could not be reached. A row
	// whose publish fails with it Config.DeadLetterAfter times in a row is
	// moved to the dead letters.
	ErrRejected = errors.New("rejected by the broker")
)

// Message is an outbox row handed to a Publisher.
type Message struct {
	// ID is the row's id: unique in the database, and the same on every
	// try of the row. Ids start at 1 in every database: give the broker
	// DedupID, not ID, as the message's deduplication key.
	ID int64
	// RunID, Type and Attempt are the run that emitted the message, its
	// workflow type and its attempt_no then.
	RunID   string
	Type    string
	Attempt int
	// Topic is what the run emitted the message under (store.Emit).
	Topic string
	// Payload is the message's JSON, nil when it was emitted without one.
	Payload json.RawMessage
	// CreatedAt is when the message was written, by the database's clock.
	CreatedAt time.Time
	// Tries is how many earlier tries of publishing it failed.
	Tries int
	// TraceParent is the W3C traceparent of the span that started the
	// run (store.WithTraceParent, engine.TraceContext), "" when the run
	// was started without tracing. Give it to the broker as the message's
	// traceparent header (contrib/nats does), so that its consumers' spans
	// join the run's trace.
	TraceParent string
}

// DedupID is the message's deduplication key, "RUN/ID": its run's id and
// its row's id. Run ids are random UUIDs, so that two databases relaying
// into one stream never share a key, and the key is the same on every try
// of the row, so that a message published again after a crash between its
// publish and its mark reaches consumers once. Give it to the broker as
// the message's id (JetStream: the Nats-Msg-Id header, which contrib/nats
// sets).
func (m Message) DedupID() string {
	return m.RunID + "/" + strconv.FormatInt(m.ID, 10)
}

// Publisher publishes messages to a broker. Publish returns nil only once
// the broker has acknowledged msg (stored it durably); the relay then marks
// the row published. An error, or ctx ending (Config.PublishTimeout), counts
// as a failed try: the row is tried again after its backoff, possibly
// although the broker did store it, so a Publisher should have the broker
// deduplicate by msg.DedupID(). An error that matches ErrRejected says
// the broker refused the message for good: after Config.DeadLetterAfter
// such tries in a row the row is moved to the dead letters. The relay calls Publish
// from one goroutine at a time per Relay, in the order the messages must
// reach consumers within a run.
type Publisher interface {
	Publish(ctx context.Context, msg Message) error
}

// Receipt is a broker's acknowledgement of a message.
type Receipt struct {
	// Duplicate reports that the broker had stored a message under the
	// same deduplication key already and did not store this one. The relay
	// records it on the row (fsmctl outbox status counts such rows).
	Duplicate bool
}

// ReceiptPublisher is a Publisher that says how the broker acknowledged a
// message; the relay calls PublishReceipt instead of Publish when its
// publisher has it.
type ReceiptPublisher interface {
	Publisher
	PublishReceipt(ctx context.Context, msg Message) (Receipt, error)
}

// PublisherFunc adapts a function to Publisher.
type PublisherFunc func(ctx context.Context, msg Message) error

// Publish calls f.
func (f PublisherFunc) Publish(ctx context.Context, msg Message) error { return f(ctx, msg) }

// Config tunes a Relay. Zero fields take the defaults documented on them;
// New refuses negative ones.
type Config struct {
	// BatchSize is the most rows one transaction claims and publishes.
	// Default 100.
	BatchSize int
	// PollInterval is how long Run waits before it looks for rows again
	// after a batch that found none, or that stopped at a failed publish
	// or a database error. A full batch is followed by the next at once.
	// Default 500ms.
	PollInterval time.Duration
	// PublishTimeout bounds each Publish call; a publish that takes longer
	// is a failed try. Default 10s. The claim's transaction stays open
	// while a batch is published, each row marked after its publish: the
	// database ends it (idle_in_transaction_session_timeout) when the
	// relay is silent for twice PublishTimeout (at least PublishTimeout +
	// 1s), so that a relay cut off from the database does not hold its
	// rows for good.
	PublishTimeout time.Duration
	// Backoff is the wait before the next try of a row whose publish
	// failed: after the n-th failed try, Backoff.Delay(n) spread by
	// Backoff.Jitter, at most MaxInterval (RetryPolicy.Jittered).
	// MaxAttempts and NonRetryable are not used: a row is
	// tried until it is published or moved to the dead letters. Default 1s
	// doubling, at most 1m, jitter 0.2.
	Backoff runtime.RetryPolicy
	// DeadLetterAfter is how many failed tries in a row with an error
	// matching ErrRejected move a row to the dead letters (dead_at): it is
	// not tried again, and its run's later rows are published without it.
	// A failure that does not match ErrRejected (a broker down, a timeout)
	// starts the count again. Default 10: with the default backoff, about
	// four minutes after the first rejection.
	DeadLetterAfter int
	// Random returns numbers uniform in [0, 1) for the jitter. Default
	// math/rand/v2's Float64.
	Random func() float64
	// Logger receives the failed publishes and database errors Run goes
	// past. Default slog.Default().
	Logger *slog.Logger
}

// The defaults of Config.
const (
	DefaultBatchSize       = 100
	DefaultPollInterval    = 500 * time.Millisecond
	DefaultPublishTimeout  = 10 * time.Second
	DefaultDeadLetterAfter = 10
)

// DefaultBackoff is Config.Backoff's default: 1s, 2s, 4s, ... up to a
// minute, ±20%.
var DefaultBackoff = runtime.RetryPolicy{InitialInterval: time.Second, Coefficient: 2, MaxInterval: time.Minute, Jitter: 0.2}

// maxErrorLen is how much of a publisher's error is kept in last_error, in
// bytes.
const maxErrorLen = 2000

func (c Config) withDefaults() Config {
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.PollInterval == 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.PublishTimeout == 0 {
		c.PublishTimeout = DefaultPublishTimeout
	}
	if c.Backoff.InitialInterval == 0 && c.Backoff.MaxInterval == 0 && c.Backoff.Coefficient == 0 && c.Backoff.Jitter == 0 {
		c.Backoff = DefaultBackoff
	}
	if c.DeadLetterAfter == 0 {
		c.DeadLetterAfter = DefaultDeadLetterAfter
	}
	if c.Random == nil {
		c.Random = mathrand.Float64
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

func (c Config) validate(pool *pgxpool.Pool, pub Publisher) error {
	var bad []string
	if pool == nil {
		bad = append(bad, "no pool")
	}
	if pub == nil {
		bad = append(bad, "no publisher")
	}
	if c.BatchSize < 0 {
		bad = append(bad, fmt.Sprintf("negative batch size %d", c.BatchSize))
	}
	if c.DeadLetterAfter < 0 {
		bad = append(bad, fmt.Sprintf("negative dead letter try count %d", c.DeadLetterAfter))
	}
	if c.BatchSize > 10000 {
		bad = append(bad, fmt.Sprintf("batch size %d is more than 10000", c.BatchSize))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"poll interval", c.PollInterval}, {"publish timeout", c.PublishTimeout},
		{"backoff initial interval", c.Backoff.InitialInterval}, {"backoff max interval", c.Backoff.MaxInterval}} {
		if d.v < 0 {
			bad = append(bad, fmt.Sprintf("negative %s %v", d.name, d.v))
		}
	}
	if c.Backoff.Coefficient < 0 {
		bad = append(bad, fmt.Sprintf("negative backoff coefficient %v", c.Backoff.Coefficient))
	}
	if c.Backoff.Jitter < 0 || c.Backoff.Jitter > 1 {
		bad = append(bad, fmt.Sprintf("backoff jitter %v is not in [0, 1]", c.Backoff.Jitter))
	}
	if len(bad) > 0 {
		return fmt.Errorf("relay: %w: %s", ErrInvalidConfig, strings.Join(bad, "; "))
	}
	return nil
}

// Relay publishes the outbox. It is safe for concurrent use, and any number
// of relays, in one process or many, may work on one database: a row is
// published by one relay at a time, and a run's rows in their order.
type Relay struct {
	pool *pgxpool.Pool
	q    *dbsqlc.Queries
	pub  Publisher
	cfg  Config
}

// New returns a Relay that publishes the outbox of the database pool is on
// through pub. The schema must be migrated (db.Migrate).
func New(pool *pgxpool.Pool, pub Publisher, cfg Config) (*Relay, error) {
	if err := cfg.validate(pool, pub); err != nil {
		return nil, err
	}
	return &Relay{pool: pool, q: dbsqlc.New(pool), pub: pub, cfg: cfg.withDefaults()}, nil
}

// Config returns the relay's configuration, defaults filled in.
func (r *Relay) Config() Config { return r.cfg }

// Batch is what one RelayOnce did.
type Batch struct {
	// Claimed is how many rows the batch took, Published how many of them
	// it published and marked.
	Claimed, Published int
	// Failed is the message whose publish failed, when one did: the batch
	// stopped there. Zero otherwise.
	Failed Message
	// Retry is when Failed is tried again, by the database's clock.
	Retry time.Time
	// Dead are the messages the batch moved to the dead letters, their
	// last tries rejected (Config.DeadLetterAfter), with their errors; the
	// batch went on after each.
	Dead []Pending
}

// RelayOnce claims one batch of due rows and publishes them, in one
// transaction: it locks the first unpublished row of up to
// Config.BatchSize runs (skipping the rows other relays hold, and runs
// whose first unpublished row waits for its backoff) with the rows that
// follow them, publishes them in id order, and marks each published in
// that transaction as soon as its publish is acknowledged. It stops at
// the first failed publish, records that failure on the row, and returns
// an error matching ErrPublish with the batch, unless the failure moved
// the row to the dead letters: then it goes on with the next row (the
// run's next rows included) and the row is in Batch.Dead. A database
// error rolls the
// batch back (the rows it published are published again later, under the
// same ids). A ctx that ends between two publishes stops the batch there;
// the rows acknowledged so far are marked.
func (r *Relay) RelayOnce(ctx context.Context) (Batch, error) {
	var b Batch
	tx, err := r.pool.Begin(ctx)
	if err != nil {
		return b, fmt.Errorf("relay: begin: %w", err)
	}
	// The rollback and the marks must happen even when ctx ends while a
	// publish is under way: they use a context without its cancellation.
	bg := context.WithoutCancel(ctx)
	defer tx.Rollback(bg) //nolint:errcheck // a no-op after Commit
	idle := r.cfg.PublishTimeout + max(r.cfg.PublishTimeout, time.Second)
	if _, err := tx.Exec(ctx, fmt.Sprintf("SET LOCAL idle_in_transaction_session_timeout = %d", idle.Milliseconds())); err != nil {
		return b, fmt.Errorf("relay: claim: %w", err)
	}
	q := r.q.WithTx(tx)
	rows, err := q.ClaimOutbox(ctx, int32(r.cfg.BatchSize))
	if err != nil {
		return b, fmt.Errorf("relay: claim: %w", err)
	}
	b.Claimed = len(rows)
	if len(rows) == 0 {
		return b, nil
	}
	// Each row is marked as soon as its publish is acknowledged, so that
	// the transaction is never idle longer than one publish.
	published := 0
	var pubErr error
	for _, row := range rows {
		if ctx.Err() != nil {
			break
		}
		msg := messageOf(row)
		receipt, err := r.publish(ctx, msg)
		if err != nil {
			if ctx.Err() != nil {
				// Our own shutdown, not the broker's failure: the row is
				// tried again as it is.
				break
			}
			got, merr := r.markFailed(bg, q, msg, err)
			if merr != nil {
				return b, merr
			}
			if !got.DeadAt.IsZero() {
				b.Dead = append(b.Dead, got)
				continue
			}
			b.Failed, b.Retry, pubErr = msg, got.NextTry, err
			break
		}
		n, err := q.MarkOutboxPublished(bg, dbsqlc.MarkOutboxPublishedParams{ID: msg.ID, Duplicate: receipt.Duplicate})
		if err != nil {
			return b, fmt.Errorf("relay: mark outbox row %d published: %w", msg.ID, err)
		}
		if n != 1 {
			return b, fmt.Errorf("relay: outbox row %d was published by someone else", msg.ID)
		}
		published++
	}
	if err := tx.Commit(bg); err != nil {
		return b, fmt.Errorf("relay: commit %d published rows: %w", published, err)
	}
	b.Published = published
	if pubErr != nil {
		return b, fmt.Errorf("relay: outbox row %d (run %s, topic %s), try %d: %w: %w; next try at %s",
			b.Failed.ID, b.Failed.RunID, b.Failed.Topic, b.Failed.Tries+1, ErrPublish, pubErr, b.Retry.UTC().Format(time.RFC3339Nano))
	}
	return b, nil
}

// markFailed records the failed try of msg with pubErr: its next try
// after its backoff or, at its Config.DeadLetterAfter-th rejection in a
// row, its move to the dead letters. It returns the row as the failure
// left it.
func (r *Relay) markFailed(ctx context.Context, q *dbsqlc.Queries, msg Message, pubErr error) (Pending, error) {
	wait := r.backoff(msg.Tries + 1)
	lastError := truncate(pubErr.Error(), maxErrorLen)
	got, err := q.MarkOutboxFailed(ctx, dbsqlc.MarkOutboxFailedParams{
		ID: msg.ID, LastError: pgtype.Text{String: lastError, Valid: true},
		Backoff:  pgtype.Interval{Microseconds: wait.Microseconds(), Valid: true},
		Rejected: errors.Is(pubErr, ErrRejected), DeadAfter: int32(r.cfg.DeadLetterAfter),
	})
	if err != nil {
		return Pending{}, fmt.Errorf("relay: record the failed publish of outbox row %d: %w", msg.ID, err)
	}
	msg.Tries = int(got.Attempts)
	return Pending{Message: msg, LastTry: got.LastAttemptAt.Time, NextTry: got.NextAttemptAt.Time, DeadAt: got.DeadAt.Time, LastError: lastError}, nil
}

func (r *Relay) publish(ctx context.Context, msg Message) (receipt Receipt, err error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.PublishTimeout)
	defer cancel()
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("publisher panicked: %v", v)
		}
	}()
	if rp, ok := r.pub.(ReceiptPublisher); ok {
		return rp.PublishReceipt(ctx, msg)
	}
	return Receipt{}, r.pub.Publish(ctx, msg)
}

// backoff is the wait after the n-th failed try.
func (r *Relay) backoff(n int) time.Duration {
	d := r.cfg.Backoff.Jittered(r.cfg.Backoff.Delay(n), r.cfg.Random())
	return max(d, 0)
}

// Run publishes the outbox until ctx is done, then returns nil: it calls
// RelayOnce again at once after a full batch, and after
// Config.PollInterval otherwise. Failed publishes and database errors are
// logged and tried again; they do not end Run. When ctx ends, the
// publish under way is cancelled and Run returns once the rows
// acknowledged before are marked.
func (r *Relay) Run(ctx context.Context) error {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		}
		b, err := r.RelayOnce(ctx)
		for _, m := range b.Dead {
			r.cfg.Logger.LogAttrs(ctx, slog.LevelError, "outbox message moved to the dead letters",
				slog.Int64("outbox_id", m.ID), slog.String("run_id", m.RunID),
				slog.String("topic", m.Topic), slog.Int("tries", m.Tries), slog.String("error", m.LastError))
		}
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, ErrPublish):
			r.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "outbox publish failed",
				slog.Int64("outbox_id", b.Failed.ID), slog.String("run_id", b.Failed.RunID),
				slog.String("topic", b.Failed.Topic), slog.Int("try", b.Failed.Tries+1),
				slog.Time("next_try", b.Retry), slog.Any("error", err))
		case err != nil:
			r.cfg.Logger.LogAttrs(ctx, slog.LevelError, "outbox relay", slog.Any("error", err))
		}
		wait := r.cfg.PollInterval
		if err == nil && b.Claimed == r.cfg.BatchSize {
			wait = 0
		}
		timer.Reset(wait)
	}
}

func messageOf(row dbsqlc.ClaimOutboxRow) Message {
	m := Message{
		ID: row.ID, RunID: row.WorkflowRunID.String(), Type: row.WorkflowType, Attempt: int(row.AttemptNo),
		Topic: row.Topic, CreatedAt: row.CreatedAt.Time, Tries: int(row.Attempts), TraceParent: row.TraceParent.String,
	}
	if row.Payload != nil {
		m.Payload = json.RawMessage(row.Payload)
	}
	return m
}

// truncate makes s storable as TEXT (valid UTF-8 without NUL) and cuts it
// to at most n bytes on a rune boundary.
func truncate(s string, n int) string {
	s = strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
