package engine_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/bench/internal/benchdb"
	"github.com/fsmgen/fsmgen/bench/internal/riverbench"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// withRiver is the benchdb set-up that adds River's schema, migrated to
// River's latest version, to fsmgen's.
var withRiver = benchdb.Setup("river", func(ctx context.Context, conn *pgx.Conn) error {
	pool, err := pgxpool.New(ctx, conn.Config().ConnString())
	if err != nil {
		return err
	}
	defer pool.Close()
	return riverbench.Migrate(ctx, pool)
})

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
				elapsed, cost := riverbench.Noop(b, pool, workers, 5*b.N)
				reportSteps(b, elapsed, cost)
			})
			b.Run("system=river-chain", func(b *testing.B) {
				pool := benchdb.NewPool(b, benchdb.MaxConns(48), withRiver)
				elapsed, cost := riverbench.Chains(b, pool, workers, b.N, 5)
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
