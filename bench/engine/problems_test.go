package engine_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fsmgen/fsmgen/bench/internal/benchdb"
	"github.com/fsmgen/fsmgen/machines/problems"
	"github.com/fsmgen/fsmgen/machines/problems/local"
	rog "github.com/fsmgen/fsmgen/machines/problems/retrieveorgenerate"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// missTransitions is the length of RetrieveOrGenerate's miss path:
// INITIATED -> INGESTING -> RETRIEVING -> GENERATING_SOLUTION ->
// REGISTERING -> INDEXING -> SUCCEEDED.
const missTransitions = 6

// problemSeq numbers the benchmark's problems, so that every run of every
// round submits a problem of its own.
var problemSeq atomic.Int64

// BenchmarkEngineRetrieveOrGenerate measures whole RetrieveOrGenerate runs
// on the miss path, every adapter the local one on the benchmark's
// database: normalize, search (a miss), solve and store the page, register
// the problem and its version, index it. Every run submits a new linear
// equation under a policy whose retrieval threshold (1.0) admits exact
// matches only, and that skips the video, so that one run is the six
// transitions of the miss path and nothing else. The problem bank is
// emptied before each round, since the local retriever's similarity search
// slows as its index grows. The runs are submitted (key, policy, insert)
// before the clock starts; the clock measures the engine's workers driving
// them all to SUCCEEDED.
//
// Reported as BenchmarkEngine's: runs/s, transitions/s and µs/transition
// (wall time times workers over transitions: a worker's time per
// transition, adapters' work included).
func BenchmarkEngineRetrieveOrGenerate(b *testing.B) {
	ctx := context.Background()
	pool := benchdb.NewPool(b, benchdb.MaxConns(48))
	if err := local.Migrate(ctx, pool); err != nil {
		b.Fatal(err)
	}
	set := local.NewSet(pool, nil)
	set.Policies.Tiers["bench"] = problems.ExecutionPolicy{
		RetrievalThreshold: 1, VideoGeneration: problems.VideoSkip, RetryMax: 0, CostCapUSD: 1,
	}
	wf, err := problems.New(set.Adapters())
	if err != nil {
		b.Fatal(err)
	}
	st := store.New(pool)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	var round atomic.Int64
	for _, workers := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			tenant := fmt.Sprintf("bench-%d", round.Add(1))
			// Every round starts with an empty problem bank: the local
			// retriever's similarity search grows with the index.
			if _, err := pool.Exec(ctx, `TRUNCATE problembank.problem_index, problembank.videos, problembank.asset_versions,
				problembank.problems, problembank.contents`); err != nil {
				b.Fatal(err)
			}
			e, err := engine.New(st, engine.Config{Concurrency: workers, PollInterval: 5 * time.Millisecond, Logger: quiet})
			if err != nil {
				b.Fatal(err)
			}
			if err := wf.Register(ctx, e); err != nil {
				b.Fatal(err)
			}
			var wg sync.WaitGroup
			errs := make(chan error, 16)
			for w := range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := w; i < b.N; i += 16 {
						n := problemSeq.Add(1)
						res, err := wf.Submit(ctx, e, problems.SubmitRequest{
							UserID:   fmt.Sprintf("00000000-0000-4000-8000-%012d", n%1000),
							TenantID: tenant, SubscriptionTier: "bench",
							Problem: problems.SubmitProblem{Text: fmt.Sprintf("Solve %dx + %d = %d", n%97+2, n, 3*n+1)},
						})
						if err == nil && res.Outcome != runtime.StartCreated {
							err = fmt.Errorf("problem %d: start outcome %v, want created", n, res.Outcome)
						}
						if err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				b.Fatal(err)
			}
			wctx, stop := context.WithCancel(ctx)
			done := make(chan error, 1)
			b.ResetTimer()
			began := time.Now()
			go func() { done <- e.Work(wctx) }()
			for {
				var finished, succeeded int64
				err := pool.QueryRow(ctx, `
					SELECT count(*) FILTER (WHERE status <> 'running'), count(*) FILTER (WHERE status = 'succeeded')
					FROM workflow_runs WHERE workflow_type = $1 AND tenant_id = $2`, rog.Type, tenant).Scan(&finished, &succeeded)
				if err != nil {
					b.Fatal(err)
				}
				if finished == int64(b.N) {
					if succeeded != finished {
						b.Fatalf("%d of %d runs did not succeed", finished-succeeded, finished)
					}
					break
				}
				time.Sleep(500 * time.Microsecond)
			}
			elapsed := time.Since(began)
			b.StopTimer()
			stop()
			if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
				b.Fatal(err)
			}
			var news int64
			if err := pool.QueryRow(ctx, `SELECT count(*) FROM workflow_runs WHERE tenant_id = $1 AND result->>'outcome' = 'new'`, tenant).Scan(&news); err != nil {
				b.Fatal(err)
			}
			if news != int64(b.N) {
				b.Fatalf("%d of %d runs took the miss path", news, b.N)
			}
			transitions := float64(missTransitions * b.N)
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "runs/s")
			b.ReportMetric(transitions/elapsed.Seconds(), "transitions/s")
			b.ReportMetric(elapsed.Seconds()*1e6*float64(workers)/transitions, "µs/transition")
		})
	}
}
