package engine_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
	"github.com/fsmgen/fsmgen/runtime/internal/enginestore"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// The test binary re-executed as a worker process: crashEnv holds the
// database's connection string.
const crashEnv = "FSMGEN_ENGINE_CRASH_WORKER_DSN"

// crashWorker works job runs with a WORKING handler that announces itself
// on stdout ("READY <run id>") and then blocks until the process is killed.
func crashWorker(dsn string) int {
	d := &driver{def: jobDef("job", nil, ""), guards: ownerGuard(), handlers: map[string]handler{
		"QUEUED": constant(event("Begin")),
		"WORKING": func(ctx context.Context, run *runtime.Run) (runtime.Event, error) {
			fmt.Printf("READY %s\n", run.ID)
			select {}
		},
	}}
	return workerProcess(dsn, engine.Config{WorkerID: engine.DefaultWorkerID("crashworker"),
		Lease: time.Minute, Heartbeat: 200 * time.Millisecond, PollInterval: 20 * time.Millisecond}, d, nil)
}

// workerProcess is the body of a worker process of a crash test: it
// connects to dsn, registers d on an engine configured by cfg (its logger
// quiet), calls ready when not nil, and works until it is killed. It
// returns the process's exit status, 2 when any of that fails.
func workerProcess(dsn string, cfg engine.Config, d runtime.Driver, ready func()) int {
	ctx := context.Background()
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return fail(err)
	}
	cfg.Logger = quiet
	e, err := engine.New(store.New(pool), cfg)
	if err != nil {
		return fail(err)
	}
	if err := e.Register(ctx, d); err != nil {
		return fail(err)
	}
	if ready != nil {
		ready()
	}
	if err := e.Work(ctx); err != nil {
		return fail(err)
	}
	return 0
}

func TestCrashRecovery(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	dsn := v.pool.Config().ConnString()

	// A worker process takes the run and dies in the middle of WORKING.
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashEnv+"="+dsn)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill() //nolint:errcheck // killed below; this is for early failures
	lines := bufio.NewScanner(out)

	// The run is started once the worker has registered the machine.
	var e *engine.Engine
	var lease enginestore.Lease
	var run runtime.Run
	{
		var calls atomic.Int32
		finishing := &driver{def: jobDef("job", nil, ""), guards: ownerGuard(), handlers: map[string]handler{
			"WORKING": func(ctx context.Context, r *runtime.Run) (runtime.Event, error) {
				calls.Add(1)
				// The dead worker's late write, with its stale lease: refused.
				_, err := enginestore.New(v.st).Advance(ctx, r.ID, enginestore.AdvanceParams{Lease: &lease, RowVersion: run.RowVersion,
					Transition: runtime.Transition{Machine: "job", Version: 1, From: "WORKING", To: "DONE", Event: "Finish", Status: runtime.StatusSucceeded}})
				if !errors.Is(err, runtime.ErrLeaseLost) {
					t.Errorf("late write with a stale lease: %v, want ErrLeaseLost", err)
				}
				return event("Finish"), nil
			},
		}}
		e = v.engine(t, engine.Config{Lease: time.Minute, PollInterval: 20 * time.Millisecond}, finishing)
		run = v.start(t, e, "job", "k")
		if !lines.Scan() {
			t.Fatalf("the worker process said nothing: %v", lines.Err())
		}
		if got := lines.Text(); got != "READY "+run.ID {
			t.Fatalf("worker process: %q", got)
		}
		held := v.get(t, run.ID)
		if held.State != "WORKING" || !strings.HasPrefix(held.Lease.Owner, "crashworker:") {
			t.Fatalf("held run: %s by %q", held.State, held.Lease.Owner)
		}
		lease = enginestore.Lease{RunID: run.ID, Owner: held.Lease.Owner, Epoch: held.Lease.Epoch}
		run = held
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()

		// The dead worker's lease is long, so that a slow machine cannot
		// end it while the worker lives; its end is brought forward to now
		// rather than waited for. The second worker takes the run once the
		// lease expired.
		if _, err := v.pool.Exec(ctx, `UPDATE workflow_runs SET lease_expires_at = now()
			WHERE id = $1 AND lease_owner = $2 AND lease_epoch = $3`, run.ID, lease.Owner, lease.Epoch); err != nil {
			t.Fatal(err)
		}
		work(t, e)
		got := wait(t, e, run.ID, 15*time.Second)
		if got.State != "DONE" || calls.Load() != 1 {
			t.Errorf("run in %s after %d calls", got.State, calls.Load())
		}
	}
	want := []string{"created start ->QUEUED", "transition Begin QUEUED->WORKING",
		"step lease_expired WORKING->WORKING", "transition Finish WORKING->DONE"}
	if diff := cmp.Diff(want, v.moves(t, run.ID)); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
	steps := v.steps(t, run.ID, "lease_expired")
	if len(steps) != 1 || steps[0]["previous_owner"] != lease.Owner || steps[0]["owner"] != e.WorkerID() || steps[0]["step_attempt"] != 2.0 {
		t.Errorf("lease_expired step = %v", steps)
	}
	_ = ctx
}

// TestManyRunsManyWorkers drives 200 runs with 4 engines whose WORKING
// handler fails at random, and checks every run against the retry policy.
func TestManyRunsManyWorkers(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	pol := &runtime.RetryPolicy{MaxAttempts: 5, InitialInterval: 10 * time.Millisecond, Coefficient: 2, MaxInterval: 40 * time.Millisecond, Jitter: 0.5}
	var mu sync.Mutex
	calls := map[string]int{}
	inFlight := map[string]bool{}
	d := &driver{def: jobDef("job", pol, "GiveUp"), guards: ownerGuard(), handlers: map[string]handler{
		"QUEUED": constant(event("Begin")),
		"WORKING": func(ctx context.Context, run *runtime.Run) (runtime.Event, error) {
			mu.Lock()
			if inFlight[run.ID] {
				t.Errorf("run %s: two handlers at once", run.ID)
			}
			inFlight[run.ID] = true
			calls[run.ID]++
			n := calls[run.ID]
			mu.Unlock()
			defer func() { mu.Lock(); delete(inFlight, run.ID); mu.Unlock() }()
			if n != run.StepAttempt {
				t.Errorf("run %s: call %d sees step attempt %d", run.ID, n, run.StepAttempt)
			}
			time.Sleep(time.Duration(rand.IntN(3)) * time.Millisecond)
			if rand.IntN(100) < 45 {
				return nil, runtime.WithCode("FLAKY", errors.New("injected failure"))
			}
			return event("Finish"), nil
		},
	}}
	var engines []*engine.Engine
	for range 4 {
		engines = append(engines, v.engine(t, engine.Config{Concurrency: 4, PollInterval: 10 * time.Millisecond, Lease: 5 * time.Second}, d))
	}
	for _, e := range engines {
		work(t, e)
	}
	var ids []string
	for i := range 200 {
		ids = append(ids, v.start(t, engines[i%4], "job", fmt.Sprint(i)).ID)
	}
	done, failed := 0, 0
	for _, id := range ids {
		got := wait(t, engines[0], id, 60*time.Second)
		h, err := v.st.History(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		retries, exhausted := 0, 0
		for _, s := range h {
			if s.Kind != store.KindStep {
				continue
			}
			if s.Name != "attempt_failed" {
				t.Errorf("run %s: unexpected step %s", id, s.Name)
				continue
			}
			var p struct {
				StepAttempt int       `json:"step_attempt"`
				ErrorCode   string    `json:"error_code"`
				Retry       bool      `json:"retry"`
				DelayMS     int64     `json:"delay_ms"`
				NextRunAt   time.Time `json:"next_run_at"`
			}
			if err := s.Decode(&p); err != nil {
				t.Fatal(err)
			}
			if !p.Retry {
				// The last try, not retried: the state is exhausted.
				if p.StepAttempt != pol.MaxAttempts || p.ErrorCode != "FLAKY" {
					t.Errorf("run %s: failure not retried: %+v", id, p)
				}
				exhausted++
				continue
			}
			retries++
			base := pol.Delay(p.StepAttempt)
			lo, hi := time.Duration(float64(base)*(1-pol.Jitter)), time.Duration(float64(base)*(1+pol.Jitter))
			if d := time.Duration(p.DelayMS) * time.Millisecond; p.StepAttempt != retries || d < lo-time.Millisecond || d > hi {
				t.Errorf("run %s: retry %d: attempt %d delay %v, want in [%v, %v]", id, retries, p.StepAttempt, d, lo, hi)
			}
			if gap := p.NextRunAt.Sub(s.At); gap < time.Duration(p.DelayMS)*time.Millisecond || gap >= time.Duration(p.DelayMS+1)*time.Millisecond {
				t.Errorf("run %s: scheduled %v after the failure, delay %d ms", id, gap, p.DelayMS)
			}
		}
		mu.Lock()
		n := calls[id]
		mu.Unlock()
		last := h[len(h)-1]
		switch got.State {
		case "DONE":
			done++
			if n != retries+1 || last.Event != "Finish" || retries >= pol.MaxAttempts || exhausted != 0 {
				t.Errorf("run %s: DONE after %d calls and %d retries", id, n, retries)
			}
		case "FAILED":
			failed++
			if n != pol.MaxAttempts || retries != pol.MaxAttempts-1 || exhausted != 1 || last.Event != "GiveUp" || got.Result.ErrorCode != "FLAKY" {
				t.Errorf("run %s: FAILED after %d calls and %d retries, result %+v", id, n, retries, got.Result)
			}
		default:
			t.Errorf("run %s in %s", id, got.State)
		}
	}
	t.Logf("%d done, %d failed after %d retries", done, failed, pol.MaxAttempts)
}
