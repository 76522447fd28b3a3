// Package engine_test measures the durable engine: completed runs per second
// of a five-state driven machine (S1 -> S2 -> S3 -> S4 -> S5 -> END, every
// handler returns at once) with 1, 4 and 16 workers, and the engine's cost
// per transition, to set beside bench/store's floor (one Record per
// transition, and a bare INSERT).
//
//	go test -run '^$' -bench Engine -count 6 ./engine/ | tee /tmp/engine.txt
//	go test -run '^$' -bench Store -count 6 ./store/ | tee /tmp/store.txt
//	benchstat -col /workers /tmp/engine.txt
//
// One iteration is one run: five transitions, claimed, driven and finished
// by the engine's workers. Reported: runs/s and transitions/s (throughput)
// and µs/transition, the wall time one worker spends per transition (claim,
// events read, five fenced transitions and the final release shared out),
// comparable with bench/store's p50-µs for op=transition.
package engine_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/bench/internal/benchdb"
	"github.com/fsmgen/fsmgen/runtime/store"
)

func TestMain(m *testing.M) { benchdb.Main(m) }

var states = []string{"S1", "S2", "S3", "S4", "S5", "END"}

// batchWindow is engine.Config.BatchWindow for the engines of Engine and
// VersusRiver, to tune the group commit (default 0, the engine's default).
var batchWindow = flag.Duration("batch-window", 0, "Engine, VersusRiver: the engine's BatchWindow")

func chain(typ string) runtime.Definition {
	d := runtime.Definition{Machine: "Chain", Type: typ, Version: 1, Initial: "S1",
		Events: []runtime.EventSpec{{Name: "Next"}}}
	for i, s := range states {
		st := runtime.StateSpec{Name: s, Initial: i == 0, Status: runtime.StatusRunning}
		if s == "END" {
			st.Status = runtime.StatusSucceeded
		} else {
			d.Transitions = append(d.Transitions, runtime.TransitionSpec{From: s, To: states[i+1], Event: "Next"})
		}
		d.States = append(d.States, st)
	}
	return d
}

type next struct{}

func (next) EventName() string { return "Next" }

// driver is what a generated package's NewDriver gives for chain: a switch
// over the states, no guards.
type driver struct {
	def  runtime.Definition
	last *atomic.Int64
}

func (d driver) Definition() runtime.Definition { return d.def }

func (d driver) Handle(_ context.Context, _ *runtime.Run, state string) (runtime.Event, error) {
	switch state {
	case "S1", "S2", "S3", "S4":
		return next{}, nil
	case "S5":
		d.last.Add(1)
		return next{}, nil
	}
	return nil, runtime.ErrNotDriven
}

func (d driver) Decode(name string, _ []byte) (runtime.Event, error) {
	if name == "Next" {
		return next{}, nil
	}
	return nil, runtime.ErrUnknownEvent
}

func (d driver) Fire(ctx context.Context, _ *runtime.Run, state string, e runtime.Event, rec runtime.Recorder) error {
	for i, s := range states[:len(states)-1] {
		if s == state {
			to := states[i+1]
			status := runtime.StatusRunning
			if to == "END" {
				status = runtime.StatusSucceeded
			}
			return rec.Record(ctx, runtime.Transition{Machine: d.def.Type, Version: 1, From: s, To: to, Event: "Next", Status: status})
		}
	}
	return &runtime.TransitionError{Machine: d.def.Type, State: state, Event: e.EventName(), Err: runtime.ErrIllegalTransition}
}

// BenchmarkEngine drives b.N five-state chains per sub-benchmark with 1, 4
// and 16 workers. Besides the throughput it reports the server's work per
// transition over the measured stretch: statements (pg_stat_statements;
// a statement is a round trip unless the client batched it), write
// transactions and WAL bytes (server-wide).
func BenchmarkEngine(b *testing.B) {
	pool := benchdb.NewPool(b, benchdb.MaxConns(48))
	st := store.New(pool)
	var round atomic.Int64
	for _, workers := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			elapsed, cost := driveChains(b, pool, st, workers, fmt.Sprintf("bench_chain_%d", round.Add(1)))
			transitions := float64(5 * b.N)
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "runs/s")
			b.ReportMetric(transitions/elapsed.Seconds(), "transitions/s")
			b.ReportMetric(elapsed.Seconds()*1e6*float64(workers)/transitions, "µs/transition")
			cost.Report(b, transitions, "transition")
		})
	}
}

// driveChains starts b.N runs of a chain of type typ before the clock
// starts, then has an engine with the given number of workers drive them
// all to END. It returns the time that took and the server's work in it.
func driveChains(b *testing.B, pool *pgxpool.Pool, st *store.Store, workers int, typ string) (time.Duration, benchdb.Cost) {
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	var last atomic.Int64
	e, err := engine.New(st, engine.Config{Concurrency: workers, PollInterval: 5 * time.Millisecond, Logger: quiet,
		BatchWindow: *batchWindow})
	if err != nil {
		b.Fatal(err)
	}
	if err := e.Register(ctx, driver{def: chain(typ), last: &last}); err != nil {
		b.Fatal(err)
	}
	// The runs exist before the clock starts; starting is bench/store's.
	// The workers' connections, the claimer's and the listener's are open.
	benchdb.Warm(b, pool, workers+2)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < b.N; i += 16 {
				if _, err := st.Start(ctx, runtime.StartRequest{Type: typ, Version: 1, IdempotencyKey: fmt.Sprint(i), Owner: runtime.Owner{TenantID: "bench"}}); err != nil {
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
	before, err := benchdb.Take(ctx, pool)
	if err != nil {
		b.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	b.ResetTimer()
	began := time.Now()
	go func() { done <- e.Work(wctx) }()
	for last.Load() < int64(b.N) {
		time.Sleep(200 * time.Microsecond)
	}
	for {
		var n int64
		if err := pool.QueryRow(ctx, benchdb.Mark+"SELECT count(*) FROM workflow_runs WHERE workflow_type = $1 AND status = 'succeeded'", typ).Scan(&n); err != nil {
			b.Fatal(err)
		}
		if n == int64(b.N) {
			break
		}
		time.Sleep(200 * time.Microsecond)
	}
	elapsed := time.Since(began)
	b.StopTimer()
	after, err := benchdb.Take(ctx, pool)
	if err != nil {
		b.Fatal(err)
	}
	stop()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		b.Fatal(err)
	}
	return elapsed, after.Since(before)
}
