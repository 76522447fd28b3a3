// Package riverbench runs River (github.com/riverqueue/river, its pgx v5
// driver, its schema migrated by rivermigrate) beside fsmgen's engines in
// the benchmarks of bench/, on the same database: no-op jobs and chains of
// jobs, each inserting the next with InsertTx and completing itself with
// JobCompleteTx in one transaction. The client is tuned as River's
// documentation suggests for throughput (FetchCooldown 2 ms,
// FetchPollInterval 20 ms, MaxWorkers the worker count).
//
// The jobs exist before the clock starts; the clock runs from starting the
// client until the last job (or chain) is done, and the server's work over
// that stretch is returned with the time (benchdb.Take, Since).
package riverbench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/fsmgen/fsmgen/bench/internal/benchdb"
)

// Schema holds River's tables, beside fsmgen's in the same database.
const Schema = "river"

// The client's tuning: it fetches again 2 ms after a fetch at the soonest,
// and polls every 20 ms besides LISTEN/NOTIFY.
const (
	FetchCooldown     = 2 * time.Millisecond
	FetchPollInterval = 20 * time.Millisecond
)

// Migrate creates Schema in the database of pool and migrates River's
// tables into it, to River's latest version.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+Schema); err != nil {
		return err
	}
	m, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Schema: Schema,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return err
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("migrate river: %w", err)
	}
	var n int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = $1 AND tablename = 'river_job'", Schema).Scan(&n); err != nil {
		return err
	}
	if n != 1 {
		return fmt.Errorf("migrate river: no %s.river_job after the migrations", Schema)
	}
	return nil
}

type noopArgs struct{}

func (noopArgs) Kind() string { return "bench_noop" }

type noopWorker struct {
	river.WorkerDefaults[noopArgs]
}

func (noopWorker) Work(context.Context, *river.Job[noopArgs]) error { return nil }

// Noop runs n no-op jobs with workers workers and returns when River has
// reported every one completed.
func Noop(b *testing.B, pool *pgxpool.Pool, workers, n int) (time.Duration, benchdb.Cost) {
	b.Helper()
	ws := river.NewWorkers()
	river.AddWorker(ws, noopWorker{})
	c := newClient(b, pool, workers, ws)
	insertJobs(b, c, n, noopArgs{})
	events, cancel := c.Subscribe(river.EventKindJobCompleted)
	defer cancel()
	all := make(chan struct{})
	go func() {
		for completed := 0; completed < n; completed++ {
			if _, ok := <-events; !ok {
				return
			}
		}
		close(all)
	}()
	return run(b, pool, c, all)
}

type chainArgs struct {
	Step int `json:"step"`
}

func (chainArgs) Kind() string { return "bench_chain" }

// chainWorker works one step of a chain: in one transaction it inserts the
// next step (unless this is the last) and marks its own job completed, then
// commits.
type chainWorker struct {
	river.WorkerDefaults[chainArgs]
	pool   *pgxpool.Pool
	client *river.Client[pgx.Tx]
	steps  int
	chains int64
	done   atomic.Int64
	all    chan struct{}
}

func (w *chainWorker) Work(ctx context.Context, job *river.Job[chainArgs]) error {
	tx, err := w.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	if job.Args.Step < w.steps {
		if _, err := w.client.InsertTx(ctx, tx, chainArgs{Step: job.Args.Step + 1}, nil); err != nil {
			return err
		}
	}
	if _, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	if job.Args.Step == w.steps && w.done.Add(1) == w.chains {
		close(w.all)
	}
	return nil
}

// Chains runs chains chains of steps jobs each with workers workers and
// returns when the last step of every chain has committed.
func Chains(b *testing.B, pool *pgxpool.Pool, workers, chains, steps int) (time.Duration, benchdb.Cost) {
	b.Helper()
	ws := river.NewWorkers()
	w := &chainWorker{pool: pool, steps: steps, chains: int64(chains), all: make(chan struct{})}
	river.AddWorker(ws, w)
	c := newClient(b, pool, workers, ws)
	w.client = c
	insertJobs(b, c, chains, chainArgs{Step: 1})
	return run(b, pool, c, w.all)
}

func newClient(b *testing.B, pool *pgxpool.Pool, workers int, ws *river.Workers) *river.Client[pgx.Tx] {
	b.Helper()
	c, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Schema:            Schema,
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: workers}},
		Workers:           ws,
		FetchCooldown:     FetchCooldown,
		FetchPollInterval: FetchPollInterval,
		Logger:            slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// insertJobs inserts n jobs with InsertManyFast, a thousand at a time.
func insertJobs(b *testing.B, c *river.Client[pgx.Tx], n int, args river.JobArgs) {
	b.Helper()
	ctx := context.Background()
	for n > 0 {
		k := min(n, 1000)
		params := make([]river.InsertManyParams, k)
		for i := range params {
			params[i] = river.InsertManyParams{Args: args}
		}
		if _, err := c.InsertManyFast(ctx, params); err != nil {
			b.Fatal(err)
		}
		n -= k
	}
}

// run starts the client with the clock and stops the clock when all is
// closed; it returns the time and the server's work.
func run(b *testing.B, pool *pgxpool.Pool, c *river.Client[pgx.Tx], all <-chan struct{}) (time.Duration, benchdb.Cost) {
	b.Helper()
	ctx := context.Background()
	before, err := benchdb.Take(ctx, pool)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	began := time.Now()
	if err := c.Start(ctx); err != nil {
		b.Fatal(err)
	}
	<-all
	elapsed := time.Since(began)
	b.StopTimer()
	after, err := benchdb.Take(ctx, pool)
	if err != nil {
		b.Fatal(err)
	}
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := c.Stop(sctx); err != nil {
		b.Fatal(err)
	}
	return elapsed, after.Since(before)
}
