package engine_test

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
	"github.com/fsmgen/fsmgen/runtime/store"
)

// riverSchema holds River's tables, beside fsmgen's in the same database.
const riverSchema = "river"

// The River client's tuning for the comparison: it fetches again 2 ms after
// a fetch at the soonest, and polls every 20 ms besides LISTEN/NOTIFY.
const (
	riverFetchCooldown     = 2 * time.Millisecond
	riverFetchPollInterval = 20 * time.Millisecond
)

// withRiver is the benchdb set-up that adds River's schema, migrated to
// River's latest version, to fsmgen's.
var withRiver = benchdb.Setup("river", func(ctx context.Context, conn *pgx.Conn) error {
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+riverSchema); err != nil {
		return err
	}
	pool, err := pgxpool.New(ctx, conn.Config().ConnString())
	if err != nil {
		return err
	}
	defer pool.Close()
	m, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Schema: riverSchema,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return err
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("migrate river: %w", err)
	}
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = $1 AND tablename = 'river_job'", riverSchema).Scan(&n); err != nil {
		return err
	}
	if n != 1 {
		return fmt.Errorf("migrate river: no %s.river_job after the migrations", riverSchema)
	}
	return nil
})

type noopArgs struct{}

func (noopArgs) Kind() string { return "bench_noop" }

type noopWorker struct {
	river.WorkerDefaults[noopArgs]
}

func (noopWorker) Work(context.Context, *river.Job[noopArgs]) error { return nil }

type chainArgs struct {
	Step int `json:"step"`
}

func (chainArgs) Kind() string { return "bench_chain" }

// chainWorker works one step of a five-job chain: in one transaction it
// inserts the next step (unless this is the fifth) and marks its own job
// completed, then commits.
type chainWorker struct {
	river.WorkerDefaults[chainArgs]
	pool   *pgxpool.Pool
	client *river.Client[pgx.Tx]
	done   *atomic.Int64
}

func (w *chainWorker) Work(ctx context.Context, job *river.Job[chainArgs]) error {
	tx, err := w.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if job.Args.Step < 5 {
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
	if job.Args.Step == 5 {
		w.done.Add(1)
	}
	return nil
}

// BenchmarkVersusRiver sets the engine beside River
// (github.com/riverqueue/river, its pgx v5 driver, its schema migrated by
// rivermigrate into the same database) with 1, 4 and 16 workers, in one
// run, every sub-benchmark on a fresh copy of the same database. One
// iteration is five steps everywhere:
//
//   - system=engine: one run of the five-state chain driven to its end by
//     the engine's workers (BenchmarkEngine's), five transitions;
//   - system=river: five no-op River jobs;
//   - system=river-chain: one chain of five River jobs, each inserting the
//     next with InsertTx and completing itself with JobCompleteTx in one
//     transaction;
//   - system=floor: five bare single-row INSERTs, each its own transaction,
//     from as many goroutines as there are workers (bench/store's floor),
//     so that the engine's transitions/s can be set beside it in the same
//     run.
//
// The work exists before the clock starts (runs started, jobs and chain
// heads inserted); the clock runs from starting the workers (engine.Work,
// river.Client.Start) until the last step is done: the run SUCCEEDED, the
// job completed, the chain's fifth job committed. The River client is tuned
// as its documentation suggests for throughput: FetchCooldown 2 ms,
// FetchPollInterval 20 ms, MaxWorkers the worker count.
//
// Reported: steps/s (transitions, jobs or INSERTs), chains/s (engine runs,
// River chains, five INSERTs) and the server's work per step (stmts,
// write-xacts, WAL-B).
// Compare with benchstat -col /system.
func BenchmarkVersusRiver(b *testing.B) {
	for _, workers := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			b.Run("system=engine", func(b *testing.B) {
				pool := benchdb.NewPool(b, benchdb.MaxConns(48), withRiver)
				elapsed, cost := driveChains(b, pool, store.New(pool), workers, "bench_chain")
				reportSteps(b, elapsed, cost)
			})
			b.Run("system=river", func(b *testing.B) {
				pool := benchdb.NewPool(b, benchdb.MaxConns(48), withRiver)
				elapsed, cost := riverNoop(b, pool, workers)
				reportSteps(b, elapsed, cost)
			})
			b.Run("system=river-chain", func(b *testing.B) {
				pool := benchdb.NewPool(b, benchdb.MaxConns(48), withRiver)
				elapsed, cost := riverChains(b, pool, workers)
				reportSteps(b, elapsed, cost)
			})
			b.Run("system=floor", func(b *testing.B) {
				pool := benchdb.NewPool(b, benchdb.MaxConns(48), withRiver)
				elapsed, cost := floorInserts(b, pool, workers)
				reportSteps(b, elapsed, cost)
			})
		})
	}
}

func reportSteps(b *testing.B, elapsed time.Duration, cost benchdb.Cost) {
	steps := float64(5 * b.N)
	b.ReportMetric(steps/elapsed.Seconds(), "steps/s")
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "chains/s")
	cost.Report(b, steps, "step")
}

func newRiverClient(b *testing.B, pool *pgxpool.Pool, workers int, ws *river.Workers) *river.Client[pgx.Tx] {
	b.Helper()
	c, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Schema:            riverSchema,
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: workers}},
		Workers:           ws,
		FetchCooldown:     riverFetchCooldown,
		FetchPollInterval: riverFetchPollInterval,
		Logger:            slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// insertJobs inserts jobs with InsertManyFast, a thousand at a time.
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

// runRiver starts the client with the clock and stops the clock when done
// says the work is over; it returns the time and the server's work.
func runRiver(b *testing.B, pool *pgxpool.Pool, c *river.Client[pgx.Tx], done func() bool, wait <-chan struct{}) (time.Duration, benchdb.Cost) {
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
	for !done() {
		select {
		case <-wait:
		case <-time.After(200 * time.Microsecond):
		}
	}
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

func riverNoop(b *testing.B, pool *pgxpool.Pool, workers int) (time.Duration, benchdb.Cost) {
	ws := river.NewWorkers()
	river.AddWorker(ws, noopWorker{})
	c := newRiverClient(b, pool, workers, ws)
	total := 5 * b.N
	insertJobs(b, c, total, noopArgs{})
	events, cancel := c.Subscribe(river.EventKindJobCompleted)
	defer cancel()
	completed := 0
	wait := make(chan struct{}, 1)
	stopCount := make(chan struct{})
	var n atomic.Int64
	go func() {
		for {
			select {
			case <-events:
				n.Add(1)
				select {
				case wait <- struct{}{}:
				default:
				}
			case <-stopCount:
				return
			}
		}
	}()
	defer close(stopCount)
	return runRiver(b, pool, c, func() bool {
		completed = int(n.Load())
		return completed >= total
	}, wait)
}

func riverChains(b *testing.B, pool *pgxpool.Pool, workers int) (time.Duration, benchdb.Cost) {
	ws := river.NewWorkers()
	var done atomic.Int64
	w := &chainWorker{pool: pool, done: &done}
	river.AddWorker(ws, w)
	c := newRiverClient(b, pool, workers, ws)
	w.client = c
	insertJobs(b, c, b.N, chainArgs{Step: 1})
	return runRiver(b, pool, c, func() bool { return done.Load() >= int64(b.N) }, nil)
}

// floorInserts runs 5*b.N bare single-row INSERTs from workers goroutines.
func floorInserts(b *testing.B, pool *pgxpool.Pool, workers int) (time.Duration, benchdb.Cost) {
	ctx := context.Background()
	if _, err := pool.Exec(ctx, "CREATE TABLE bench_floor (id BIGSERIAL PRIMARY KEY, v BIGINT NOT NULL)"); err != nil {
		b.Fatal(err)
	}
	before, err := benchdb.Take(ctx, pool)
	if err != nil {
		b.Fatal(err)
	}
	total := int64(5 * b.N)
	var next atomic.Int64
	errs := make(chan error, workers)
	b.ResetTimer()
	began := time.Now()
	for range workers {
		go func() {
			for {
				n := next.Add(1)
				if n > total {
					errs <- nil
					return
				}
				if _, err := pool.Exec(ctx, "INSERT INTO bench_floor (v) VALUES ($1)", n); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for range workers {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	elapsed := time.Since(began)
	b.StopTimer()
	after, err := benchdb.Take(ctx, pool)
	if err != nil {
		b.Fatal(err)
	}
	return elapsed, after.Since(before)
}
