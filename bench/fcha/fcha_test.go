// Package fcha_test compares the FCHA compliance workflow end to end on
// the two engines fsmgen runs it on: the PostgreSQL engine (runtime/engine,
// machines/compliance) on the durable benchmark server, and Temporal
// (contrib/temporal) on the Temporal CLI's dev server with one worker.
package fcha_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/fsmgen/fsmgen/bench/internal/benchdb"
	"github.com/fsmgen/fsmgen/contrib/temporal"
	"github.com/fsmgen/fsmgen/contrib/temporal/devserver"
	"github.com/fsmgen/fsmgen/machines/compliance"
	"github.com/fsmgen/fsmgen/machines/compliance/fcha"
	"github.com/fsmgen/fsmgen/machines/compliance/local"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/activity"
	"github.com/fsmgen/fsmgen/runtime/engine"
	"github.com/fsmgen/fsmgen/runtime/store"
)

func TestMain(m *testing.M) { benchdb.Main(m) }

// clients is the number of runs in flight at once, on either engine.
const clients = 16

var rounds = flag.Int("rounds", 3, "paired rounds of BenchmarkFCHA: each engine in turn, this many times")

var seq atomic.Int64

func adapters() compliance.Adapters {
	return compliance.Adapters{
		Prequalifier: &local.Prequalifier{},
		Screening:    &local.Screening{},
		Notifier:     &local.Notifier{},
		Assessor:     &local.Assessor{},
	}
}

func application(prefix string) compliance.Application {
	id := fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), seq.Add(1))
	return compliance.Application{ApplicationID: id, ApplicantID: "applicant-" + id, PropertyID: "prop_789", UnitID: "unit_101",
		OrganizationID: "org_bench", MarketID: "NYC"}
}

// measure runs b.N runs, clients at a time, each by one call of run, and
// reports runs/s and the median latency of a run.
func measure(b *testing.B, run func(ctx context.Context) error) {
	b.Helper()
	ctx := context.Background()
	lat := make([]time.Duration, b.N)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	b.ResetTimer()
	begin := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				t := time.Now()
				if err := run(ctx); err != nil {
					errs <- err
					return
				}
				lat[i] = time.Since(t)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(begin)
	b.StopTimer()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	slices.Sort(lat)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "runs/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
}

// BenchmarkFCHA runs whole FCHA runs of the clean branch (prequalification
// passed and the conditional offer delivered, the authorization signalled
// once the run waits for it, the background check clean, APPROVED), 16 in
// flight at once, on each engine in turn (-rounds paired rounds, after an
// untimed warm-up of each), so that every round pairs them on the same
// machine at nearly the same time:
//
//   - postgres: compliance.Workflow.ExecuteWorkflowSync on the PostgreSQL
//     engine, driven inline by the caller, the activities' results stored in
//     activity_executions and the evidence chained by trigger, on the
//     durable benchmark server (benchdb);
//   - temporal: contrib/temporal's workflow on a dev server (temporal server
//     start-dev, its SQLite database in a file) with one worker in this
//     process; the client starts the run through temporal.Runner (the
//     typed handle fcha.Runs), signals the authorization (buffered until
//     the run waits) and waits for the result through the Runner;
//   - temporal-record: the same, the workflow registered WithRecord on
//     the benchmark database, so that its runs are recorded there, with
//     the evidence chain and the activity cache, as on the engine.
//
// Reported: runs/s and p50-ms, the median time from start to result.
func BenchmarkFCHA(b *testing.B) {
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))

	pool := benchdb.NewPool(b, benchdb.MaxConns(3*clients+4))
	st := store.New(pool)
	eng, err := engine.New(st, engine.Config{Logger: quiet, DisableNotify: true})
	if err != nil {
		b.Fatal(err)
	}
	wf := compliance.New(eng, activity.NewExecutor(pool), adapters())
	if err := wf.Register(ctx); err != nil {
		b.Fatal(err)
	}

	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	srv, err := devserver.Start(sctx, "--db-filename", filepath.Join(b.TempDir(), "temporal.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Stop)
	// A client of its own that logs nothing: the SDK's default logger
	// writes every workflow command at debug level.
	c, err := client.Dial(client.Options{HostPort: srv.HostPort, Logger: sdklog.NewStructuredLogger(quiet)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	// Two task queues: the workflow alone (the history is the record), and
	// the workflow recording its runs in the benchmark database
	// (temporal.WithRecord: the evidence chain and the activity cache, as
	// on the engine).
	runner := func(queue string, opts ...temporal.Option) *temporal.Runner {
		w := worker.New(c, queue, worker.Options{})
		var x *activity.Executor
		if len(opts) > 0 {
			x = activity.NewExecutor(pool)
		}
		temporal.Register(w, compliance.New(nil, x, adapters()).Driver(), opts...)
		if err := w.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(w.Stop)
		r, err := temporal.NewRunner(c, temporal.RunnerConfig{TaskQueue: queue, Definitions: []runtime.Definition{fcha.Definition()}})
		if err != nil {
			b.Fatal(err)
		}
		return r
	}
	bare, recorded := runner("fcha-bench"), runner("fcha-bench-record", temporal.WithRecord(st))
	auth := fcha.BackgroundCheckAuthorizationSigned{SignedAt: time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC), SignedBy: "user_456"}

	runPG := func(ctx context.Context) error {
		out, err := wf.ExecuteWorkflowSync(ctx, application("pg"), "", compliance.OnWaiting(func(ctx context.Context, runID, _ string) error {
			return wf.SendSignal(ctx, runID, compliance.SignalAuthorizationSigned, compliance.Authorization{SignedAt: auth.SignedAt, SignedBy: auth.SignedBy})
		}))
		if err == nil && !out.Approved {
			err = fmt.Errorf("run %s: not approved: %+v", out.RunID, out)
		}
		return err
	}
	// A run on Temporal: started through the Runner, the authorization
	// sent as a signal (buffered by the workflow until the run waits for
	// it), the result awaited through the Runner.
	onTemporal := func(r *temporal.Runner) func(ctx context.Context) error {
		runs := fcha.Runs[compliance.Application](r)
		return func(ctx context.Context) error {
			app := application("tp")
			s, err := runs.Start(ctx, app.ApplicationID, app, runtime.Owner{TenantID: app.OrganizationID})
			if err != nil {
				return err
			}
			if err := temporal.Signal(ctx, c, s.ID, auth); err != nil {
				return err
			}
			done, err := runs.Wait(ctx, s.ID)
			if err != nil {
				return err
			}
			if done.State != fcha.StateApproved {
				return fmt.Errorf("run %s ended in %s", s.ID, done.State)
			}
			return nil
		}
	}
	runTemporal, runRecorded := onTemporal(bare), onTemporal(recorded)
	// Warm both up (connections, caches, the worker's pollers), untimed.
	for _, run := range []func(context.Context) error{runPG, runTemporal, runRecorded} {
		for range clients {
			if err := run(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	// Paired rounds: each engine in turn, Rounds times.
	for r := 1; r <= *rounds; r++ {
		b.Run(fmt.Sprintf("round=%d/engine=postgres", r), func(b *testing.B) { measure(b, runPG) })
		b.Run(fmt.Sprintf("round=%d/engine=temporal", r), func(b *testing.B) { measure(b, runTemporal) })
		b.Run(fmt.Sprintf("round=%d/engine=temporal-record", r), func(b *testing.B) { measure(b, runRecorded) })
	}
}
