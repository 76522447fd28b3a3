// Package store_test measures persisted transitions per second and their
// latency through runtime/store, beside the floor in the same database and
// the same run: a bare single-row INSERT per commit, through the same pgx
// pool and through pgbench.
//
//	go test -run '^$' -bench 'Store$' -benchtime 2000x -count 4 ./store/ | tee /tmp/store.txt
//	benchstat -col /op /tmp/store.txt
//
// Each sub-benchmark runs its concurrency's worth of goroutines, on
// connections opened before the clock starts; for op=transition each
// goroutine drives its own run back and forth between two states, one
// Record per operation; op=pgbench runs for -pgbench-time (3 s) whatever
// b.N is. Reported: ops/s (throughput), p50-µs and p99-µs (latency of one
// operation; not for pgbench) and the server's work per operation.
package store_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

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
			benchdb.Warm(b, pool, c)
			benchdb.Run(b, pool, c, b.N, func(w, n int) error {
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
			}).Report(b)
		})
		b.Run(fmt.Sprintf("op=floor/runs=%d", c), func(b *testing.B) {
			benchdb.Floor(b, pool, c, b.N).Report(b)
		})
		b.Run(fmt.Sprintf("op=pgbench/runs=%d", c), func(b *testing.B) {
			benchdb.Pgbench(b, pool, c).Report(b)
		})
	}
}
