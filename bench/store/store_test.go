// Package store_test measures persisted transitions per second and their
// latency through runtime/store, beside the floor of the same pool: a bare
// single-row INSERT round trip.
//
//	go test -run '^$' -bench . -count 6 ./store/ | tee /tmp/store.txt
//	benchstat -col /op /tmp/store.txt
//
// Each sub-benchmark runs its concurrency's worth of goroutines; for
// op=transition each goroutine drives its own run back and forth between
// two states, one Record per operation. Reported: ops/s (throughput),
// p50-µs and p99-µs (latency of one operation).
package store_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fsmgen/fsmgen/bench/internal/benchdb"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/store"
)

func TestMain(m *testing.M) { benchdb.Main(m) }

var pingPong = runtime.Definition{
	Machine: "PingPong", Type: "bench_ping_pong", Version: 1, Initial: "PING",
	States: []runtime.StateSpec{
		{Name: "PING", Initial: true, Status: runtime.StatusRunning},
		{Name: "PONG", Status: runtime.StatusRunning},
	},
	Events: []runtime.EventSpec{{Name: "Hit", Fields: []runtime.FieldSpec{{Name: "n", Type: "int"}}}},
	Transitions: []runtime.TransitionSpec{
		{From: "PING", To: "PONG", Event: "Hit"},
		{From: "PONG", To: "PING", Event: "Hit"},
	},
}

type hit struct {
	N int `json:"n"`
}

var concurrencies = []int{1, 4, 16}

func BenchmarkStore(b *testing.B) {
	ctx := context.Background()
	pool := benchdb.NewPool(b, benchdb.MaxConns(int32(slices.Max(concurrencies))))
	st := store.New(pool)
	if err := st.Register(ctx, pingPong); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "CREATE TABLE bench_floor (id BIGSERIAL PRIMARY KEY, v BIGINT NOT NULL)"); err != nil {
		b.Fatal(err)
	}
	var keys atomic.Int64
	for _, c := range concurrencies {
		b.Run(fmt.Sprintf("op=transition/runs=%d", c), func(b *testing.B) {
			recs := make([]*store.Recorder, c)
			states := make([]string, c)
			for i := range recs {
				res, err := st.Start(ctx, runtime.StartRequest{Type: pingPong.Type, Version: 1,
					IdempotencyKey: fmt.Sprint(keys.Add(1)), Owner: runtime.Owner{TenantID: "bench"}})
				if err != nil {
					b.Fatal(err)
				}
				recs[i], states[i] = st.Recorder(res.Run), res.Run.State
			}
			run(b, c, pool, func(w, n int) error {
				to := "PONG"
				if states[w] == "PONG" {
					to = "PING"
				}
				err := recs[w].Record(ctx, runtime.Transition{Machine: pingPong.Type, Version: 1,
					From: states[w], To: to, Event: "Hit", Payload: hit{n}, Status: runtime.StatusRunning})
				if err == nil {
					states[w] = to
				}
				return err
			})
		})
		b.Run(fmt.Sprintf("op=floor/runs=%d", c), func(b *testing.B) {
			run(b, c, pool, func(w, n int) error {
				_, err := pool.Exec(ctx, "INSERT INTO bench_floor (v) VALUES ($1)", n)
				return err
			})
		})
	}
}

// run spreads b.N operations over c goroutines and reports throughput,
// latency percentiles and the server's work per operation (see
// benchdb.Cost).
func run(b *testing.B, c int, pool benchdb.Querier, op func(worker, n int) error) {
	ctx := context.Background()
	before, err := benchdb.Take(ctx, pool)
	if err != nil {
		b.Fatal(err)
	}
	var next atomic.Int64
	lat := make([][]time.Duration, c)
	errs := make([]error, c)
	var wg sync.WaitGroup
	b.ResetTimer()
	began := time.Now()
	for w := range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				n := next.Add(1)
				if n > int64(b.N) {
					return
				}
				t0 := time.Now()
				if err := op(w, int(n)); err != nil {
					errs[w] = err
					return
				}
				lat[w] = append(lat[w], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(began)
	b.StopTimer()
	after, err := benchdb.Take(ctx, pool)
	if err != nil {
		b.Fatal(err)
	}
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	pct := func(p float64) float64 {
		return float64(all[int(p*float64(len(all)-1))].Nanoseconds()) / 1e3
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "ops/s")
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
	after.Since(before).Report(b, float64(b.N), "op")
}
