// Package chain_test measures the linear chain engine of seed 002
// (runtime/linearchain) beside River on the same durable database.
package chain_test

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/bench/internal/benchdb"
	"github.com/fsmgen/fsmgen/bench/internal/riverbench"
	"github.com/fsmgen/fsmgen/runtime/linearchain"
)

func TestMain(m *testing.M) { benchdb.Main(m) }

// withChainAndRiver adds the chain's tables (linearchain.Migrate) and River's
// schema (rivermigrate, latest version) to the template.
var withChainAndRiver = benchdb.Setup("chain+river", func(ctx context.Context, conn *pgx.Conn) error {
	pool, err := pgxpool.New(ctx, conn.Config().ConnString())
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := linearchain.Migrate(ctx, pool); err != nil {
		return err
	}
	return riverbench.Migrate(ctx, pool)
})

var stepTypes = []string{"S1", "S2", "S3", "S4", "S5"}

// BenchmarkChainVersusRiver runs five-step chains to their end with 1, 4
// and 16 workers, in one run, every sub-benchmark on a fresh copy of the
// same database. One iteration is one chain of five steps:
//
//   - system=chain: an instance of a five-step linear workflow whose
//     handlers return Completed, driven by linearchain.Engine.Run's workers
//     (batch claim of up to 16 steps, FOR UPDATE SKIP LOCKED, one
//     transaction per result);
//   - system=river: a chain of five River jobs, each inserting the next
//     with InsertTx and completing itself with JobCompleteTx in one
//     transaction (as bench/engine's river-chain).
//
// The work exists before the clock starts (instances started, chain heads
// inserted); the clock runs from starting the workers until the last chain
// is done. Reported: steps/s, chains/s and the server's work per step.
// Compare with benchstat -col /system.
func BenchmarkChainVersusRiver(b *testing.B) {
	for _, workers := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			b.Run("system=chain", func(b *testing.B) {
				pool := benchdb.NewPool(b, benchdb.MaxConns(48), withChainAndRiver)
				elapsed, cost := runChains(b, pool, workers)
				report(b, elapsed, cost)
			})
			b.Run("system=river", func(b *testing.B) {
				pool := benchdb.NewPool(b, benchdb.MaxConns(48), withChainAndRiver)
				elapsed, cost := riverbench.Chains(b, pool, workers, b.N, len(stepTypes))
				report(b, elapsed, cost)
			})
		})
	}
}

func report(b *testing.B, elapsed time.Duration, cost benchdb.Cost) {
	steps := float64(len(stepTypes) * b.N)
	b.ReportMetric(steps/elapsed.Seconds(), "steps/s")
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "chains/s")
	cost.Report(b, steps, "step")
}

func runChains(b *testing.B, pool *pgxpool.Pool, workers int) (time.Duration, benchdb.Cost) {
	b.Helper()
	ctx := context.Background()
	e := linearchain.New(pool)
	d := linearchain.Definition{Type: "bench", Version: 1}
	for _, t := range stepTypes {
		d.Steps = append(d.Steps, linearchain.Step{Type: t, Handler: func(context.Context, linearchain.Task) linearchain.Result { return linearchain.Completed() }})
	}
	if err := e.Register(d); err != nil {
		b.Fatal(err)
	}
	for i := range b.N {
		if _, err := e.Start(ctx, "bench", 1, strconv.Itoa(i), nil); err != nil {
			b.Fatal(err)
		}
	}
	var completed atomic.Int64
	finished := make(chan struct{})
	errs := make(chan error, 1)
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	before, err := benchdb.Take(ctx, pool)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	began := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = e.Run(runCtx, linearchain.RunOptions{App: "bench", Workers: workers, Batch: 16, Poll: 20 * time.Millisecond,
			OnApplied: func(a linearchain.Applied) {
				if a.Instance == "COMPLETED" && completed.Add(1) == int64(b.N) {
					close(finished)
				}
			},
			OnError: func(err error) {
				select {
				case errs <- err:
				default:
				}
			}})
	}()
	select {
	case <-finished:
	case err := <-errs:
		b.Fatal(err)
	}
	elapsed := time.Since(began)
	b.StopTimer()
	after, err := benchdb.Take(ctx, pool)
	if err != nil {
		b.Fatal(err)
	}
	stop()
	<-done
	return elapsed, after.Since(before)
}
