package engine_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
	"github.com/fsmgen/fsmgen/runtime/fsmtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// The test binary re-executed as a worker process whose handler panics on
// the poisoned run: panicEnv holds the database's connection string.
const panicEnv = "FSMGEN_ENGINE_PANIC_WORKER_DSN"

// poisonPolicy gives the poisoned run three quick tries.
var poisonPolicy = &runtime.RetryPolicy{MaxAttempts: 3, InitialInterval: 10 * time.Millisecond, Coefficient: 1}

// poisonDriver is a job machine whose WORKING handler panics for the run
// with the key "poison" and finishes the others.
func poisonDriver() *driver {
	return &driver{def: jobDef("job", poisonPolicy, "GiveUp"), guards: ownerGuard(), handlers: map[string]handler{
		"QUEUED": constant(event("Begin")),
		"WORKING": func(_ context.Context, run *runtime.Run) (runtime.Event, error) {
			if run.IdempotencyKey == "poison" {
				panic("poisoned run " + run.ID)
			}
			return event("Finish"), nil
		},
	}}
}

// panicWorker works job runs with poisonDriver until it is killed; it says
// "READY" once its machine is registered.
func panicWorker(dsn string) int {
	return workerProcess(dsn, engine.Config{WorkerID: engine.DefaultWorkerID("panicworker"),
		Lease: 5 * time.Second, PollInterval: 20 * time.Millisecond, Concurrency: 4}, poisonDriver(), func() { fmt.Println("READY") })
}

// TestPanicKeepsWorkersAlive runs 50 runs, one of them poisoned, on four
// worker processes: the poisoned run fails after its tries with code PANIC
// and the panic in its log, the 49 others succeed without a lease expiring,
// and no worker process exits.
func TestPanicKeepsWorkersAlive(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	dsn := v.pool.Config().ConnString()
	exited := make(chan error, 4)
	for i := range 4 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), panicEnv+"="+dsn)
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waited := make(chan struct{})
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			<-waited
		})
		lines := bufio.NewScanner(out)
		if !lines.Scan() || lines.Text() != "READY" {
			t.Fatalf("worker process %d: %q, %v", i, lines.Text(), lines.Err())
		}
		go func() {
			err := cmd.Wait()
			close(waited)
			exited <- fmt.Errorf("worker process %d exited: %v", i, err)
		}()
	}

	// This engine only starts runs; the worker processes drive them.
	e := v.engine(t, engine.Config{}, poisonDriver())
	var ids []string
	poison := ""
	for i := range 50 {
		key := fmt.Sprint(i)
		if i == 17 {
			key = "poison"
		}
		id := v.start(t, e, "job", key).ID
		ids = append(ids, id)
		if key == "poison" {
			poison = id
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	finished := make(chan error, 1)
	go func() {
		for _, id := range ids {
			if _, err := e.Wait(ctx, id); err != nil {
				finished <- err
				return
			}
		}
		finished <- nil
	}()
	select {
	case err := <-exited:
		t.Fatal(err)
	case err := <-finished:
		if err != nil {
			t.Fatal(err)
		}
	}

	for _, id := range ids {
		got := v.get(t, id)
		if id == poison {
			if got.State != "FAILED" || got.Result == nil || got.Result.ErrorCode != engine.CodePanic ||
				!strings.HasPrefix(got.Result.ErrorDetail, "panic in handler of WORKING: poisoned run "+id+"\n") {
				t.Errorf("poisoned run: %s %+v", got.State, got.Result)
			}
			continue
		}
		if got.State != "DONE" {
			t.Errorf("run %s in %s, result %+v", id, got.State, got.Result)
		}
		if s := v.steps(t, id, "lease_expired"); len(s) != 0 {
			t.Errorf("run %s was charged with an expired lease: %v", id, s)
		}
	}
	failed := v.steps(t, poison, "attempt_failed")
	if len(failed) != poisonPolicy.MaxAttempts {
		t.Fatalf("poisoned run: %d attempt_failed rows, want %d", len(failed), poisonPolicy.MaxAttempts)
	}
	for i, s := range failed {
		detail, _ := s["error"].(string)
		if s["error_code"] != engine.CodePanic || s["step_attempt"] != float64(i+1) ||
			!strings.HasPrefix(detail, "panic in handler of WORKING: poisoned run "+poison+"\n\ngoroutine ") ||
			!strings.Contains(detail, "poisonDriver") {
			t.Errorf("attempt_failed row %d = %v", i, s)
		}
	}
	select {
	case err := <-exited:
		t.Error(err)
	default:
	}
}

// TestPanicRecovered covers the workflow code the engine calls besides
// handlers: a panic in each is recovered and recorded with code PANIC.
func TestPanicRecovered(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")

	t.Run("guard", func(t *testing.T) {
		t.Parallel()
		v := newEnv(t)
		d := &driver{def: jobDef("job", nil, ""), handlers: map[string]handler{"QUEUED": constant(event("Cancel", "userID", alice))},
			guards: map[string]func(ev) bool{"UserOwnsRun": func(ev) bool { panic(boom) }}}
		e := v.engine(t, engine.Config{}, d)
		run := v.start(t, e, "job", "k")

		// From Signal, the panic is the caller's error.
		_, err := e.Signal(context.Background(), run.ID, event("Cancel", "userID", alice))
		var pe *engine.PanicError
		if !errors.As(err, &pe) || !errors.Is(err, runtime.ErrPanic) || !errors.Is(err, boom) || pe.Where != "firing Cancel in QUEUED" {
			t.Errorf("Signal with a panicking guard: %v", err)
		}
		// In a worker, it is a failed try: no policy, so the run is parked.
		got, err := e.Drive(context.Background(), run.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.State != "QUEUED" || got.ParkedAt.IsZero() || got.LastErrorCode != engine.CodePanic ||
			!strings.HasPrefix(got.LastError, "panic in firing Cancel in QUEUED: boom\n\ngoroutine ") {
			t.Errorf("run = %s parked %v %q %q", got.State, got.ParkedAt, got.LastErrorCode, got.LastError)
		}
	})

	t.Run("decode of a timer event", func(t *testing.T) {
		t.Parallel()
		clk := fsmtest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
		v := newEnv(t, store.WithClock(clk.Now))
		d := &panicDecoder{driver: approvalDriver(), name: "Timeout"}
		e := v.engine(t, engine.Config{}, d)
		run := v.start(t, e, "approval", "k")
		runDue(t, e, 1)
		clk.Advance(7 * 24 * time.Hour)
		runDue(t, e, 1)
		got := v.get(t, run.ID)
		if got.State != "AWAIT" || got.ParkedAt.IsZero() || got.LastErrorCode != engine.CodePanic ||
			!strings.HasPrefix(got.LastError, "timer Timeout after 168h0m0s: panic in Decode of Timeout: decoder broke\n\ngoroutine ") {
			t.Errorf("run = %s parked %v %q %q", got.State, got.ParkedAt, got.LastErrorCode, got.LastError)
		}
	})

	t.Run("exhausted func", func(t *testing.T) {
		t.Parallel()
		v := newEnv(t)
		calls := 0
		d := &driver{def: jobDef("job", nil, "GiveUp"), guards: ownerGuard(),
			handlers: map[string]handler{"QUEUED": constant(event("Begin")), "WORKING": failing("BOOM", -1, nil, &calls)}}
		e := v.engine(t, engine.Config{})
		err := e.Register(context.Background(), d, engine.WithExhausted(func(context.Context, *runtime.Run, string, string, string) (runtime.Event, error) {
			panic("no fallback")
		}))
		if err != nil {
			t.Fatal(err)
		}
		run := v.start(t, e, "job", "k")
		got, err := e.Drive(context.Background(), run.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.State != "WORKING" || got.ParkedAt.IsZero() || got.LastErrorCode != "BOOM" ||
			!strings.HasPrefix(got.LastError, "BOOM: try 1 failed; GiveUp not fired: panic in ExhaustedFunc of WORKING: no fallback\n\ngoroutine ") {
			t.Errorf("run = %s parked %v %q %q", got.State, got.ParkedAt, got.LastErrorCode, got.LastError)
		}
	})

	t.Run("policy func", func(t *testing.T) {
		t.Parallel()
		v := newEnv(t)
		e := v.engine(t, engine.Config{})
		err := e.Register(context.Background(), chainDriver("chain"), engine.WithPolicy(func(context.Context, runtime.StartRequest) (json.RawMessage, error) {
			panic("no policy")
		}))
		if err != nil {
			t.Fatal(err)
		}
		_, err = e.Start(context.Background(), runtime.StartRequest{Type: "chain", IdempotencyKey: "k", Owner: runtime.Owner{TenantID: "t1"}})
		if !errors.Is(err, runtime.ErrPolicy) || !errors.Is(err, runtime.ErrPanic) {
			t.Errorf("Start with a panicking policy: %v", err)
		}
		runs, err := v.st.List(context.Background(), store.Filter{Filter: runtime.Filter{Type: "chain"}})
		if err != nil || len(runs) != 0 {
			t.Errorf("runs after a refused start: %d, %v", len(runs), err)
		}
	})

	t.Run("handler with retries", func(t *testing.T) {
		t.Parallel()
		calls := 0
		_, run, steps := retryRun(t, &runtime.RetryPolicy{MaxAttempts: 2, InitialInterval: time.Second, Coefficient: 2}, "GiveUp", 0.5,
			func(context.Context, *runtime.Run) (runtime.Event, error) {
				calls++
				if calls == 1 {
					panic(fmt.Sprintf("try %d", calls))
				}
				return event("Finish"), nil
			})
		if run.State != "DONE" || calls != 2 {
			t.Errorf("run in %s after %d calls", run.State, calls)
		}
		var codes []any
		for _, s := range steps {
			codes = append(codes, s["error_code"])
		}
		if diff := cmp.Diff([]any{engine.CodePanic}, codes); diff != "" {
			t.Errorf("attempt_failed codes (-want +got):\n%s", diff)
		}
	})
}

// panicDecoder is a driver whose Decode panics for one event.
type panicDecoder struct {
	*driver
	name string
}

func (d *panicDecoder) Decode(name string, payload []byte) (runtime.Event, error) {
	if name == d.name {
		panic("decoder broke")
	}
	return d.driver.Decode(name, payload)
}
