package engine_test

import (
	"context"
	"fmt"
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
//     from as many goroutines as there are workers (benchdb.Floor, as in
//     bench/store), so that the engine's transitions/s can be set beside it
//     in the same run;
//   - system=pgbench: the same INSERT run by pgbench with as many clients
//     as there are workers, for -pgbench-time (benchdb.Pgbench), a
//     cross-check of the floor; skipped, saying so, when there is no
//     pgbench binary.
//
// Every system's pool has its connections opened before the clock starts
// (benchdb.Warm).
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
				reportSteps(b, 5*b.N, elapsed, cost)
			})
			b.Run("system=river", func(b *testing.B) {
				pool := benchdb.NewPool(b, benchdb.MaxConns(48), withRiver)
				benchdb.Warm(b, pool, workers+2)
				elapsed, cost := riverbench.Noop(b, pool, workers, 5*b.N)
				reportSteps(b, 5*b.N, elapsed, cost)
			})
			b.Run("system=river-chain", func(b *testing.B) {
				pool := benchdb.NewPool(b, benchdb.MaxConns(48), withRiver)
				benchdb.Warm(b, pool, workers+2)
				elapsed, cost := riverbench.Chains(b, pool, workers, b.N, 5)
				reportSteps(b, 5*b.N, elapsed, cost)
			})
			b.Run("system=floor", func(b *testing.B) {
				pool := benchdb.NewPool(b, benchdb.MaxConns(48), withRiver)
				r := benchdb.Floor(b, pool, workers, 5*b.N)
				reportSteps(b, r.Ops, r.Elapsed, r.Cost)
			})
			b.Run("system=pgbench", func(b *testing.B) {
				pool := benchdb.NewPool(b, benchdb.MaxConns(48), withRiver)
				r := benchdb.Pgbench(b, pool, workers)
				reportSteps(b, r.Ops, r.Elapsed, r.Cost)
			})
		})
	}
}

// reportSteps reports steps/s, chains/s (five steps a chain) and the
// server's work per step.
func reportSteps(b *testing.B, steps int, elapsed time.Duration, cost benchdb.Cost) {
	b.ReportMetric(float64(steps)/elapsed.Seconds(), "steps/s")
	b.ReportMetric(float64(steps)/5/elapsed.Seconds(), "chains/s")
	cost.Report(b, float64(steps), "step")
}
