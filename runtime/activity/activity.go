package activity

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
)

// Activity is a typed unit of work of a workflow. Its result is cached by
// IdempotencyKey: a call with a key whose result is stored returns it
// without executing.
type Activity[In, Out any] struct {
	// Name names the activity in its records.
	Name string
	// Retry is the policy of its tries (Validation, Database, ...,
	// or a CreateRetryPolicy).
	Retry RetryPolicy
	// Timeout bounds one try; 0 means none beyond the caller's context.
	Timeout time.Duration
	// IdempotencyKey derives the key from the input: the same input gives
	// the same key ("payment:" + userID + ":" + amount). Include every field
	// that matters, no timestamps or random values. Nil means the name and
	// the SHA-256 of the input's JSON.
	IdempotencyKey func(In) string
	// TTL is how long a completed result is served from the cache; 0 means
	// for ever. An expired result is executed again.
	TTL time.Duration
	// Execute does the work.
	Execute func(ctx context.Context, in In) (Out, error)
}

// Result is what Execute returns besides the output.
type Result[Out any] struct {
	// Output is the activity's output, executed or cached.
	Output Out
	// Cached is true when the output came from the cache, without
	// executing.
	Cached bool
	// Tries is the number of tries this call made (0 when cached).
	Tries int
	// Key is the idempotency key.
	Key string
	// ExecutionID is the id of the activity_executions row.
	ExecutionID string
}

// Errors of the package, matched with errors.Is.
var (
	// ErrExhausted: the activity failed on its last allowed try.
	ErrExhausted = errors.New("tries used up")
	// ErrInvalid: an activity or input that cannot run (no name, no
	// Execute, an empty key, an input or output that does not encode).
	ErrInvalid = errors.New("invalid activity")
)

// Executor executes activities and caches their results in the
// activity_executions table (migrated by db.Migrate).
type Executor struct {
	pool  *pgxpool.Pool
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) error
	rand  func() float64
}

// Option configures an Executor.
type Option func(*Executor)

// WithClock sets the clock of the records' times and of the TTL (the
// database's, given as the clock of the store: store.WithClock).
func WithClock(now func() time.Time) Option { return func(x *Executor) { x.now = now } }

// WithSleep replaces Execute's waits (a timer, returning early with ctx's
// error): between tries, and between two looks at a key that another call
// holds. Tests record the delays instead of waiting.
func WithSleep(sleep func(ctx context.Context, d time.Duration) error) Option {
	return func(x *Executor) { x.sleep = sleep }
}

// WithRand replaces the source of jitter, uniform in [0, 1).
func WithRand(u func() float64) Option { return func(x *Executor) { x.rand = u } }

// NewExecutor returns an Executor on pool.
func NewExecutor(pool *pgxpool.Pool, opts ...Option) *Executor {
	x := &Executor{pool: pool, now: time.Now, sleep: sleepCtx, rand: rand.Float64}
	for _, o := range opts {
		o(x)
	}
	return x
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Execute runs a for workflowID with input in, honouring the cache:
//
//  1. a completed, unexpired result stored for the key is returned, with
//     Cached set, and the activity is not executed;
//  2. otherwise the call claims the key; while another call (of any
//     process) holds it, it waits until that call stored its result, which
//     it returns with Cached set, or gave up, or ctx is done (see the
//     package doc);
//  3. holding the key, it tries the activity, each try bounded by
//     a.Timeout, the key's row in activity_executions updated after each
//     (status, attempt, error), until it succeeds or a.Retry says stop.
//     Between tries it waits CalculateRetryDelay(a.Retry, n) spread by the
//     policy's jitter. The key is released when Execute returns.
//
// A success is stored (committed) before Execute returns, so that a process
// that dies after the activity ran finds the result on its next call and
// does not execute it again. An error that the policy does not retry
// matches ErrNonRetryable; the error of the last allowed try matches
// ErrExhausted. Both wrap the activity's error, keep its code, and match
// runtime.ErrNoRetry: a state handler that returns them has its state
// exhausted at once, not tried again by the state's policy.
func Execute[In, Out any](ctx context.Context, x *Executor, workflowID string, a Activity[In, Out], in In) (Result[Out], error) {
	var res Result[Out]
	if a.Name == "" || a.Execute == nil {
		return res, fmt.Errorf("activity %q: %w: it needs a name and an Execute function", a.Name, ErrInvalid)
	}
	input, err := json.Marshal(in)
	if err != nil {
		return res, fmt.Errorf("activity %s: %w: input: %w", a.Name, ErrInvalid, err)
	}
	key := ""
	if a.IdempotencyKey != nil {
		key = a.IdempotencyKey(in)
	} else {
		sum := sha256.Sum256(input)
		key = a.Name + ":" + hex.EncodeToString(sum[:])
	}
	if key == "" {
		return res, fmt.Errorf("activity %s: %w: empty idempotency key", a.Name, ErrInvalid)
	}
	res.Key = key
	fail := func(err error) (Result[Out], error) {
		return res, fmt.Errorf("activity %s (key %s): %w", a.Name, key, err)
	}

	// A completed result is served without claiming the key; otherwise the
	// call claims it, or waits for the call that holds it.
	done := func(ctx context.Context, q queryRower) (bool, error) { return cached(ctx, q, x.now(), key, &res) }
	ok, err := done(ctx, x.pool)
	if ok || err != nil {
		if err != nil {
			return fail(err)
		}
		return res, nil
	}
	conn, err := x.claim(ctx, key, done)
	if err != nil {
		return fail(err)
	}
	if conn == nil {
		return res, nil // completed by the call that held the key
	}
	defer x.unclaim(ctx, conn, key)

	p := a.Retry
	for try := 1; ; try++ {
		// The row's attempt counts every try of the key, over calls; a
		// result that expired starts again at 1.
		err := conn.QueryRow(ctx, `
INSERT INTO activity_executions (workflow_id, activity_name, idempotency_key, status, input, attempt, started_at)
VALUES ($1, $2, $3, 'running', $4, 1, $5)
ON CONFLICT (idempotency_key) DO UPDATE SET
    workflow_id = EXCLUDED.workflow_id, status = 'running', input = EXCLUDED.input,
    attempt = CASE WHEN activity_executions.status = 'completed' THEN 1 ELSE activity_executions.attempt + 1 END,
    started_at = CASE WHEN activity_executions.status = 'completed' THEN EXCLUDED.started_at ELSE activity_executions.started_at END,
    output = NULL, completed_at = NULL, expires_at = NULL
RETURNING id::text`, workflowID, a.Name, key, input, x.now()).Scan(&res.ExecutionID)
		if err != nil {
			return fail(fmt.Errorf("record try %d: %w", try, err))
		}
		res.Tries = try
		out, err := once(ctx, a, in)
		if err == nil {
			raw, merr := json.Marshal(out)
			if merr != nil {
				return fail(fmt.Errorf("%w: output: %w", ErrInvalid, merr))
			}
			now := x.now()
			var exp *time.Time
			if a.TTL > 0 {
				e := now.Add(a.TTL)
				exp = &e
			}
			if _, err := conn.Exec(ctx, `UPDATE activity_executions SET status = 'completed', output = $2, error = NULL, error_code = NULL, completed_at = $3, expires_at = $4 WHERE idempotency_key = $1`,
				key, raw, now, exp); err != nil {
				return fail(fmt.Errorf("store result: %w", err))
			}
			res.Output = out
			return res, nil
		}
		text := safeText(err.Error())
		if _, uerr := conn.Exec(ctx, `UPDATE activity_executions SET status = 'failed', error = $2, error_code = NULLIF($3, '') WHERE idempotency_key = $1`,
			key, text, runtime.ErrorCode(err)); uerr != nil {
			return fail(fmt.Errorf("record failed try %d: %w (the try failed with: %w)", try, uerr, err))
		}
		if p.nonRetryable(err) {
			return fail(runtime.NoRetry(fmt.Errorf("%w: try %d: %w", ErrNonRetryable, try, err)))
		}
		if try >= p.attempts() {
			return fail(runtime.NoRetry(fmt.Errorf("%w: %d of %d: %w", ErrExhausted, try, p.attempts(), err)))
		}
		if err := x.sleep(ctx, p.Jittered(CalculateRetryDelay(p, try), x.rand())); err != nil {
			return fail(fmt.Errorf("wait after try %d: %w", try, err))
		}
	}
}

// queryRower is a pool or a connection.
type queryRower interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// cached reads key's row and, when it holds a completed result that has
// not expired, decodes it into res, with Cached set, and reports true.
func cached[Out any](ctx context.Context, q queryRower, now time.Time, key string, res *Result[Out]) (bool, error) {
	var (
		id     string
		status string
		output []byte
		expiry *time.Time
	)
	err := q.QueryRow(ctx, `SELECT id::text, status, output, expires_at FROM activity_executions WHERE idempotency_key = $1`, key).
		Scan(&id, &status, &output, &expiry)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read cache: %w", err)
	case status != "completed" || (expiry != nil && !expiry.After(now)):
		return false, nil
	}
	if err := json.Unmarshal(output, &res.Output); err != nil {
		return false, fmt.Errorf("%w: cached output: %w", ErrInvalid, err)
	}
	res.ExecutionID, res.Cached = id, true
	return true, nil
}

// The waits between two looks at a key another caller holds: from
// claimPollMin, doubling, up to claimPollMax.
const (
	claimPollMin = 10 * time.Millisecond
	claimPollMax = 200 * time.Millisecond
)

// claimSQL takes key's advisory lock if it is free: the key's claim, held
// by the connection (the session) until released or the session ends.
const claimSQL = `SELECT pg_try_advisory_lock(hashtextextended('fsmgen.activity:' || $1, 0))`

// claim claims key for this call: it returns a connection of the pool that
// holds key's advisory lock, on which the call makes its tries, and which
// unclaim gives back. While another caller holds the key, it waits without
// holding a connection and looks again. done reports whether a completed
// result is stored for the key (and takes it); claim asks it after each
// wait and once it holds the key, and when it is, returns a nil connection.
func (x *Executor) claim(ctx context.Context, key string, done func(context.Context, queryRower) (bool, error)) (*pgxpool.Conn, error) {
	for wait := claimPollMin; ; wait = min(2*wait, claimPollMax) {
		conn, err := x.pool.Acquire(ctx)
		if err != nil {
			return nil, fmt.Errorf("claim: %w", err)
		}
		var held bool
		if err := conn.QueryRow(ctx, claimSQL, key).Scan(&held); err != nil {
			drop(conn)
			return nil, fmt.Errorf("claim: %w", err)
		}
		if held {
			// The key may have been completed since it was last read.
			ok, err := done(ctx, conn)
			if ok || err != nil {
				x.unclaim(ctx, conn, key)
				return nil, err
			}
			return conn, nil
		}
		conn.Release()
		if err := x.sleep(ctx, wait); err != nil {
			return nil, fmt.Errorf("wait for the call that holds the key: %w", err)
		}
		if ok, err := done(ctx, x.pool); ok || err != nil {
			return nil, err
		}
	}
}

// unclaim releases key's advisory lock and gives conn back to the pool, or
// closes conn when the lock may be left held (its session then ends, and
// the lock with it).
func (x *Executor) unclaim(ctx context.Context, conn *pgxpool.Conn, key string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unclaimTimeout)
	defer cancel()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock(hashtextextended('fsmgen.activity:' || $1, 0))`, key); err != nil {
		drop(conn)
		return
	}
	conn.Release()
}

// unclaimTimeout bounds the release of a claim, made also when the call's
// context is done.
const unclaimTimeout = 10 * time.Second

// drop closes conn, which the pool then discards.
func drop(conn *pgxpool.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = conn.Conn().Close(ctx)
	conn.Release()
}

// once runs one try, bounded by the activity's timeout, a panic turned
// into an error.
func once[In, Out any](ctx context.Context, a Activity[In, Out], in In) (out Out, err error) {
	if a.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, a.Timeout, fmt.Errorf("%w: activity %s timed out after %s", context.DeadlineExceeded, a.Name, a.Timeout))
		defer cancel()
	}
	defer func() {
		if v := recover(); v != nil {
			err = runtime.WithCode("PANIC", fmt.Errorf("activity %s panicked: %v", a.Name, v))
		}
	}()
	out, err = a.Execute(ctx, in)
	if err == nil && ctx.Err() != nil {
		err = context.Cause(ctx)
	}
	return out, err
}

// safeText makes s storable as PostgreSQL text: valid UTF-8, no NUL.
func safeText(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// ExecuteInRun executes a as Execute does, for the run a state handler
// works on (its id as the workflow id), and marks the cached result
// consumed by the transition the handler returns, in that transition's
// transaction: the row's consumed_run_id, consumed_row_version and
// consumed_at are set if and only if the transition is recorded. Outside
// the engine (run.Effects nil) nothing is marked. A runtime that records
// the transition in PostgreSQL later, in a transaction of its own
// (contrib/temporal's record, store.Store.RecordExternal), is told the key
// by its Effects' ConsumeActivity method, and marks it with MarkConsumed
// in that transaction.
func ExecuteInRun[In, Out any](ctx context.Context, x *Executor, run *runtime.Run, a Activity[In, Out], in In) (Result[Out], error) {
	res, err := Execute(ctx, x, run.ID, a, in)
	if err != nil || run.Effects == nil {
		return res, err
	}
	key := res.Key
	if c, ok := run.Effects.(consumer); ok {
		c.ConsumeActivity(key)
		return res, nil
	}
	err = engine.InTx(run, func(ctx context.Context, tx pgx.Tx, c engine.Committed) error {
		return MarkConsumed(ctx, tx, key, c.RunID, c.RowVersion, c.At)
	})
	return res, err
}

// consumer is the Effects of a runtime that records a handler's transition
// in PostgreSQL after the handler returned, and marks the results the
// handler used consumed then.
type consumer interface {
	ConsumeActivity(key string)
}

// MarkConsumed marks the result cached under key consumed by the
// transition of run runID to row version rowVersion at at: call it in the
// transaction that records that transition.
func MarkConsumed(ctx context.Context, q Querier, key, runID string, rowVersion int64, at time.Time) error {
	_, err := q.Exec(ctx, `UPDATE activity_executions SET consumed_run_id = $2, consumed_row_version = $3, consumed_at = $4 WHERE idempotency_key = $1`,
		key, runID, rowVersion, at)
	if err != nil {
		return fmt.Errorf("mark activity result %s consumed by run %s: %w", key, runID, err)
	}
	return nil
}

// Execution is a row of activity_executions: an activity's execution.
type Execution struct {
	ID                 string          `json:"id"`
	WorkflowID         string          `json:"workflowId"`
	ActivityName       string          `json:"activityName"`
	IdempotencyKey     string          `json:"idempotencyKey"`
	Status             string          `json:"status"`
	Input              json.RawMessage `json:"input"`
	Output             json.RawMessage `json:"output,omitempty"`
	Error              string          `json:"error,omitempty"`
	ErrorCode          string          `json:"errorCode,omitempty"`
	Attempt            int             `json:"attempt"`
	StartedAt          time.Time       `json:"startedAt"`
	CompletedAt        *time.Time      `json:"completedAt,omitempty"`
	ExpiresAt          *time.Time      `json:"expiresAt,omitempty"`
	ConsumedRunID      string          `json:"consumedRunId,omitempty"`
	ConsumedRowVersion int64           `json:"consumedRowVersion,omitempty"`
	ConsumedAt         *time.Time      `json:"consumedAt,omitempty"`
}

// Querier is what the read functions need: a pool, a connection or a
// transaction.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Executions returns the activity executions of workflowID, oldest first.
func Executions(ctx context.Context, q Querier, workflowID string) ([]Execution, error) {
	rows, err := q.Query(ctx, `SELECT id::text, workflow_id, activity_name, idempotency_key, status, input, output,
       coalesce(error, ''), coalesce(error_code, ''), attempt, started_at, completed_at, expires_at,
       coalesce(consumed_run_id::text, ''), coalesce(consumed_row_version, 0), consumed_at
  FROM activity_executions WHERE workflow_id = $1 ORDER BY started_at, activity_name, id`, workflowID)
	if err != nil {
		return nil, fmt.Errorf("activity executions of %s: %w", workflowID, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Execution, error) {
		var e Execution
		err := r.Scan(&e.ID, &e.WorkflowID, &e.ActivityName, &e.IdempotencyKey, &e.Status, &e.Input, &e.Output,
			&e.Error, &e.ErrorCode, &e.Attempt, &e.StartedAt, &e.CompletedAt, &e.ExpiresAt,
			&e.ConsumedRunID, &e.ConsumedRowVersion, &e.ConsumedAt)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("activity executions of %s: %w", workflowID, err)
	}
	return out, nil
}
