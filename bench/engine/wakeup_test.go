package engine_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	mathrand "math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/fsmgen/fsmgen/bench/internal/benchdb"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
	"github.com/fsmgen/fsmgen/runtime/store"
)

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// oneStep is S1 -> END on Next: a run whose only handler reports when it
// is called.
func oneStep(typ string) runtime.Definition {
	return runtime.Definition{Machine: "OneStep", Type: typ, Version: 1, Initial: "S1",
		Events: []runtime.EventSpec{{Name: "Next"}},
		States: []runtime.StateSpec{
			{Name: "S1", Initial: true, Status: runtime.StatusRunning},
			{Name: "END", Status: runtime.StatusSucceeded},
		},
		Transitions: []runtime.TransitionSpec{{From: "S1", To: "END", Event: "Next"}},
	}
}

// calledDriver drives oneStep; its S1 handler sends the time it was called.
type calledDriver struct {
	def    runtime.Definition
	called chan time.Time
}

func (d calledDriver) Definition() runtime.Definition { return d.def }

func (d calledDriver) Handle(context.Context, *runtime.Run, string) (runtime.Event, error) {
	d.called <- time.Now()
	return next{}, nil
}

func (d calledDriver) Decode(name string, _ []byte) (runtime.Event, error) {
	if name == "Next" {
		return next{}, nil
	}
	return nil, runtime.ErrUnknownEvent
}

func (d calledDriver) Fire(ctx context.Context, _ *runtime.Run, state string, e runtime.Event, rec runtime.Recorder) error {
	if state != "S1" {
		return &runtime.TransitionError{Machine: d.def.Type, State: state, Event: e.EventName(), Err: runtime.ErrIllegalTransition}
	}
	return rec.Record(ctx, runtime.Transition{Machine: d.def.Type, Version: 1, From: "S1", To: "END", Event: "Next", Status: runtime.StatusSucceeded})
}

// BenchmarkWakeup measures how soon an idle worker (Work, one run at a
// time) calls the handler of a run that engine.Start has just created: the
// time from Start's call to the handler's, p50 and p99 over the
// iterations. notify is the default (LISTEN/NOTIFY, with the default
// PollInterval as a safety net); poll has DisableNotify and the default
// PollInterval for that, so that only polling finds the run. Before each
// start the worker has been idle for a random time up to 150 ms, so that
// starts fall at every point of the poll period.
//
//	go test -run '^$' -bench Wakeup -benchtime 40x -count 6 ./engine/ | tee /tmp/wakeup.txt
//	benchstat -col /mode /tmp/wakeup.txt
func BenchmarkWakeup(b *testing.B) {
	for _, mode := range []string{"notify", "poll"} {
		b.Run("mode="+mode, func(b *testing.B) {
			ctx := context.Background()
			pool := benchdb.NewPool(b)
			st := store.New(pool)
			e, err := engine.New(st, engine.Config{Concurrency: 1, DisableNotify: mode == "poll", Logger: quietLog})
			if err != nil {
				b.Fatal(err)
			}
			d := calledDriver{def: oneStep("bench_wakeup"), called: make(chan time.Time, 1)}
			if err := e.Register(ctx, d); err != nil {
				b.Fatal(err)
			}
			wctx, stop := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- e.Work(wctx) }()
			defer func() {
				stop()
				if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
					b.Error(err)
				}
			}()
			// A first run, not timed: the listener is up once it is picked
			// up by notification, and the worker has claimed once.
			start := func(i int) runtime.Started {
				res, err := e.Start(ctx, runtime.StartRequest{Type: "bench_wakeup", IdempotencyKey: fmt.Sprint(i), Owner: runtime.Owner{TenantID: "bench"}})
				if err != nil {
					b.Fatal(err)
				}
				return res
			}
			finish := func(res runtime.Started) {
				wc, cancel := context.WithTimeout(ctx, 30*time.Second)
				defer cancel()
				if _, err := e.Wait(wc, res.Run.ID); err != nil {
					b.Fatal(err)
				}
			}
			finish(start(-1))
			<-d.called
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				time.Sleep(time.Duration(mathrand.Int64N(int64(150 * time.Millisecond))))
				b.StartTimer()
				began := time.Now()
				res := start(i)
				select {
				case at := <-d.called:
					lat = append(lat, at.Sub(began))
				case <-time.After(30 * time.Second):
					b.Fatalf("run %d not picked up in 30s", i)
				}
				b.StopTimer()
				finish(res)
				b.StartTimer()
			}
			b.StopTimer()
			slices.Sort(lat)
			q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))]) / 1e6 }
			b.ReportMetric(q(0.5), "p50-ms")
			b.ReportMetric(q(0.99), "p99-ms")
		})
	}
}

// BenchmarkEngineStart starts runs with engine.Start, one after the other,
// with no worker running: one iteration is one created run. Besides the
// time it reports the statements (round trips) and write transactions per
// start.
//
//	go test -run '^$' -bench EngineStart -count 6 ./engine/ | tee /tmp/start.txt
func BenchmarkEngineStart(b *testing.B) {
	ctx := context.Background()
	pool := benchdb.NewPool(b)
	e, err := engine.New(store.New(pool), engine.Config{Logger: quietLog})
	if err != nil {
		b.Fatal(err)
	}
	if err := e.Register(ctx, driver{def: chain("bench_start")}); err != nil {
		b.Fatal(err)
	}
	before, err := benchdb.Take(ctx, pool)
	if err != nil {
		b.Fatal(err)
	}
	i := 0
	for b.Loop() {
		i++
		if _, err := e.Start(ctx, runtime.StartRequest{Type: "bench_start", IdempotencyKey: fmt.Sprint(i), Owner: runtime.Owner{TenantID: "bench"}}); err != nil {
			b.Fatal(err)
		}
	}
	after, err := benchdb.Take(ctx, pool)
	if err != nil {
		b.Fatal(err)
	}
	after.Since(before).Report(b, float64(i), "start")
}
