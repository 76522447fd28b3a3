package store_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/fsmtest"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

func TestStartCreatesRunInInitialState(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	res, err := e.st.Start(e.ctx, runtime.StartRequest{
		Type: "order", Version: 1, IdempotencyKey: "k1", Owner: runtime.Owner{TenantID: "tenant-a", UserID: "6f1c2d3e-0000-4000-8000-000000000001"}, Input: map[string]int{"n": 1},
		Policy: map[string]string{"tier": "pro"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != runtime.StartCreated {
		t.Fatalf("outcome %v, want created", res.Outcome)
	}
	r := res.Run
	got := []any{r.Type, r.Version, r.State, r.Status, r.RowVersion, r.Attempt, r.TenantID, r.UserID, string(r.Input), string(r.Policy), r.Result == nil}
	want := []any{"order", 1, "INITIATED", runtime.StatusRunning, int64(1), 1, "tenant-a", "6f1c2d3e-0000-4000-8000-000000000001", `{"n": 1}`, `{"tier": "pro"}`, true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("created run mismatch (-want +got):\n%s", diff)
	}
	if r.CorrelationID == "" || r.ID == "" {
		t.Errorf("run id %q, correlation id %q: want both generated", r.ID, r.CorrelationID)
	}
	if diff := cmp.Diff([]string{"created ->INITIATED/@1 a1"}, moves(e.history(t, r.ID))); diff != "" {
		t.Errorf("history mismatch (-want +got):\n%s", diff)
	}
}

// 64 goroutines start the same (type, key) at once, for 200 keys: one row per
// key, and every caller gets that row's id.
func TestStartConcurrentCallersGetOneRun(t *testing.T) {
	t.Parallel()
	const keys, callers = 200, 64
	e := newEnvPool(t, pgtest.NewPool(t, pgtest.MaxConns(callers)))
	for k := range keys {
		key := fmt.Sprintf("key-%d", k)
		ids := make([]string, callers)
		outcomes := make([]runtime.StartOutcome, callers)
		errs := make([]error, callers)
		var ready, done sync.WaitGroup
		gate := make(chan struct{})
		for i := range callers {
			ready.Add(1)
			done.Add(1)
			go func() {
				defer done.Done()
				ready.Done()
				<-gate
				res, err := e.st.Start(e.ctx, runtime.StartRequest{Type: "order", Version: 1, IdempotencyKey: key, Owner: runtime.Owner{TenantID: "t"}})
				ids[i], outcomes[i], errs[i] = res.Run.ID, res.Outcome, err
			}()
		}
		ready.Wait()
		close(gate)
		done.Wait()
		created := 0
		for i := range callers {
			if errs[i] != nil {
				t.Fatalf("%s caller %d: %v", key, i, errs[i])
			}
			if ids[i] != ids[0] {
				t.Fatalf("%s: caller %d got run %s, caller 0 got %s", key, i, ids[i], ids[0])
			}
			switch outcomes[i] {
			case runtime.StartCreated:
				created++
			case runtime.StartRunning:
			default:
				t.Fatalf("%s caller %d: outcome %v", key, i, outcomes[i])
			}
		}
		if created != 1 {
			t.Fatalf("%s: %d callers created the run, want 1", key, created)
		}
	}
	var rows, logs int
	if err := e.pool.QueryRow(e.ctx, "SELECT count(*), count(DISTINCT idempotency_key) FROM workflow_runs").Scan(&rows, &logs); err != nil {
		t.Fatal(err)
	}
	if rows != keys || logs != keys {
		t.Errorf("%d rows for %d distinct keys, want %d and %d", rows, logs, keys, keys)
	}
	if err := e.pool.QueryRow(e.ctx, "SELECT count(*) FROM workflow_step_logs").Scan(&logs); err != nil {
		t.Fatal(err)
	}
	if logs != keys {
		t.Errorf("%d log rows, want one creation per run: %d", logs, keys)
	}
}

func TestStartBranches(t *testing.T) {
	t.Parallel()
	clk := fsmtest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	e := newEnv(t, store.WithClock(clk.Now))

	// Three past runs that took 10 s, 20 s and 40 s: median 20 s.
	for i, d := range []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second} {
		run := e.start(t, fmt.Sprintf("past-%d", i)).Run
		run = e.record(t, run, "INITIATED", "Begin", "WORKING")
		clk.Advance(d)
		e.record(t, run, "WORKING", "Finish", "SUCCEEDED")
	}

	t.Run("running with ETA", func(t *testing.T) {
		first := e.start(t, "running")
		clk.Advance(5 * time.Second)
		again := e.start(t, "running")
		want := runtime.Started{Outcome: runtime.StartRunning, Run: first.Run,
			ETA: first.Run.StartedAt.Add(20 * time.Second)}
		if diff := cmp.Diff(want, again); diff != "" {
			t.Errorf("second start mismatch (-want +got):\n%s", diff)
		}
		// Overdue: the ETA stays.
		clk.Advance(time.Minute)
		late := e.start(t, "running")
		if !late.ETA.Equal(want.ETA) {
			t.Errorf("overdue run: ETA %v, want %v", late.ETA, want.ETA)
		}
	})

	t.Run("succeeded returns the cached result", func(t *testing.T) {
		run := e.start(t, "done").Run
		run = e.record(t, run, "INITIATED", "Begin", "WORKING")
		if _, err := e.st.Finish(e.ctx, run.ID, run.RowVersion, tr("WORKING", "Finish", "SUCCEEDED", nil),
			runtime.Result{Output: []byte(`{"answer":42}`), CostUSD: 0.25}); err != nil {
			t.Fatal(err)
		}
		before := e.history(t, run.ID)
		res := e.start(t, "done")
		if res.Outcome != runtime.StartCached || res.Run.ID != run.ID {
			t.Fatalf("outcome %v run %s, want cached %s", res.Outcome, res.Run.ID, run.ID)
		}
		want := &runtime.Result{Status: runtime.StatusSucceeded, Outcome: "done", Output: []byte(`{"answer": 42}`),
			RunID: run.ID, Attempt: 1, CostUSD: 0.25}
		if diff := cmp.Diff(want, res.Run.Result); diff != "" {
			t.Errorf("cached result mismatch (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(moves(before), moves(e.history(t, run.ID))); diff != "" {
			t.Errorf("a cached start wrote to the log:\n%s", diff)
		}
	})

	t.Run("failed restarts the same row", func(t *testing.T) {
		run := e.start(t, "fail").Run
		run = e.record(t, run, "INITIATED", "Begin", "WORKING")
		if _, err := e.st.Finish(e.ctx, run.ID, run.RowVersion, tr("WORKING", "Fail", "FAILED", nil),
			runtime.Result{ErrorCode: "E_UPSTREAM", ErrorDetail: "timeout"}); err != nil {
			t.Fatal(err)
		}
		failed := e.get(t, run.ID)
		if failed.Result == nil || failed.Result.ErrorCode != "E_UPSTREAM" || failed.Status != runtime.StatusFailed {
			t.Fatalf("failed run: status %s result %+v", failed.Status, failed.Result)
		}
		clk.Advance(time.Second)
		res := e.start(t, "fail")
		if res.Outcome != runtime.StartRestarted || res.Run.ID != run.ID {
			t.Fatalf("outcome %v run %s, want restarted %s", res.Outcome, res.Run.ID, run.ID)
		}
		r := res.Run
		got := []any{r.State, r.Status, r.Attempt, r.RowVersion, r.Result == nil, r.FinishedAt.IsZero(), r.StartedAt.Equal(clk.Now())}
		if diff := cmp.Diff([]any{"INITIATED", runtime.StatusRunning, 2, int64(4), true, true, true}, got); diff != "" {
			t.Errorf("restarted run mismatch (-want +got):\n%s", diff)
		}
		want := []string{
			"created ->INITIATED/@1 a1",
			"transition INITIATED->WORKING/Begin@2 a1",
			"transition WORKING->FAILED/Fail@3 a1",
			"restarted FAILED->INITIATED/@4 a2",
		}
		if diff := cmp.Diff(want, moves(e.history(t, run.ID))); diff != "" {
			t.Errorf("history mismatch (-want +got):\n%s", diff)
		}
		// The second attempt runs normally.
		e.record(t, res.Run, "INITIATED", "Begin", "WORKING")
	})

	t.Run("cancelled stays cancelled", func(t *testing.T) {
		run := e.start(t, "cancel").Run
		if _, err := e.st.Record(e.ctx, run.ID, run.RowVersion, tr("INITIATED", "Cancel", "CANCELLED", map[string]string{"by": "user"})); err != nil {
			t.Fatal(err)
		}
		res := e.start(t, "cancel")
		if res.Outcome != runtime.StartCancelled || res.Run.ID != run.ID || res.Run.State != "CANCELLED" || res.Run.Attempt != 1 {
			t.Fatalf("got %v run %s in %s attempt %d, want cancelled %s in CANCELLED attempt 1",
				res.Outcome, res.Run.ID, res.Run.State, res.Run.Attempt, run.ID)
		}
		if res.Run.Result == nil || res.Run.Result.Status != runtime.StatusCancelled {
			t.Errorf("cancelled run result %+v, want status cancelled", res.Run.Result)
		}
	})

	t.Run("no history, no ETA", func(t *testing.T) {
		other := orderDef(1)
		other.Type = "other"
		if err := e.st.Register(e.ctx, other); err != nil {
			t.Fatal(err)
		}
		p := runtime.StartRequest{Type: "other", Version: 1, IdempotencyKey: "x", Owner: runtime.Owner{TenantID: "t"}}
		if _, err := e.st.Start(e.ctx, p); err != nil {
			t.Fatal(err)
		}
		res, err := e.st.Start(e.ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome != runtime.StartRunning || !res.ETA.IsZero() {
			t.Errorf("got %v ETA %v, want running with no ETA", res.Outcome, res.ETA)
		}
	})
}

// 16 goroutines start a failed run at once: one restarts it, the others see it
// running, and the log has one restart.
func TestStartFailedRunRacedBy16(t *testing.T) {
	t.Parallel()
	const callers = 16
	e := newEnvPool(t, pgtest.NewPool(t, pgtest.MaxConns(callers)))
	for round := range 20 {
		key := fmt.Sprintf("k%d", round)
		run := e.start(t, key).Run
		e.record(t, run, "INITIATED", "Fail", "FAILED")
		outcomes := make([]runtime.StartOutcome, callers)
		errs := make([]error, callers)
		var wg sync.WaitGroup
		gate := make(chan struct{})
		for i := range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-gate
				res, err := e.st.Start(e.ctx, runtime.StartRequest{Type: "order", Version: 1, IdempotencyKey: key, Owner: runtime.Owner{TenantID: "t"}})
				outcomes[i], errs[i] = res.Outcome, err
				if err == nil && (res.Run.ID != run.ID || res.Run.Attempt != 2) {
					errs[i] = fmt.Errorf("run %s attempt %d, want %s attempt 2", res.Run.ID, res.Run.Attempt, run.ID)
				}
			}()
		}
		close(gate)
		wg.Wait()
		count := map[runtime.StartOutcome]int{}
		for i, err := range errs {
			if err != nil {
				t.Fatalf("%s caller %d: %v", key, i, err)
			}
			count[outcomes[i]]++
		}
		if diff := cmp.Diff(map[runtime.StartOutcome]int{runtime.StartRestarted: 1, runtime.StartRunning: callers - 1}, count); diff != "" {
			t.Fatalf("%s outcomes mismatch (-want +got):\n%s", key, diff)
		}
	}
}

func TestStartRestartsUnderNewVersion(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	run := e.start(t, "k").Run
	e.record(t, run, "INITIATED", "Fail", "FAILED")
	v2 := orderDef(2)
	v2.Initial = "WORKING"
	v2.States[0].Initial, v2.States[1].Initial = false, true
	if err := e.st.Register(e.ctx, v2); err != nil {
		t.Fatal(err)
	}
	res, err := e.st.Start(e.ctx, runtime.StartRequest{Type: "order", Version: 2, IdempotencyKey: "k", Owner: runtime.Owner{TenantID: "t1"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != runtime.StartRestarted || res.Run.Version != 2 || res.Run.State != "WORKING" || res.Run.Attempt != 2 {
		t.Fatalf("got %v v%d in %s attempt %d, want restarted v2 in WORKING attempt 2", res.Outcome, res.Run.Version, res.Run.State, res.Run.Attempt)
	}
}

func TestStartBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tests := []struct {
		name string
		p    runtime.StartRequest
		want error
	}{
		{"no key", runtime.StartRequest{Type: "order", Version: 1, Owner: runtime.Owner{TenantID: "t"}}, runtime.ErrInvalidInput},
		{"no tenant", runtime.StartRequest{Type: "order", Version: 1, IdempotencyKey: "k"}, runtime.ErrInvalidInput},
		{"bad user id", runtime.StartRequest{Type: "order", Version: 1, IdempotencyKey: "k", Owner: runtime.Owner{TenantID: "t", UserID: "bob"}}, runtime.ErrInvalidInput},
		{"bad correlation id", runtime.StartRequest{Type: "order", Version: 1, IdempotencyKey: "k", Owner: runtime.Owner{TenantID: "t", CorrelationID: "x"}}, runtime.ErrInvalidInput},
		{"unregistered type", runtime.StartRequest{Type: "nope", Version: 1, IdempotencyKey: "k", Owner: runtime.Owner{TenantID: "t"}}, runtime.ErrUnknownDefinition},
		{"unregistered version", runtime.StartRequest{Type: "order", Version: 9, IdempotencyKey: "k", Owner: runtime.Owner{TenantID: "t"}}, runtime.ErrUnknownDefinition},
		{"input that does not encode", runtime.StartRequest{Type: "order", Version: 1, IdempotencyKey: "k", Owner: runtime.Owner{TenantID: "t"}, Input: make(chan int)}, runtime.ErrPayload},
		{"raw input that is not JSON", runtime.StartRequest{Type: "order", Version: 1, IdempotencyKey: "k", Owner: runtime.Owner{TenantID: "t"}, Input: json.RawMessage("{")}, runtime.ErrPayload},
	}
	for _, tt := range tests {
		_, err := e.st.Start(e.ctx, tt.p)
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: error %v, want %v", tt.name, err, tt.want)
		}
	}
	var n int
	if err := e.pool.QueryRow(e.ctx, "SELECT count(*) FROM workflow_runs").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("bad starts left %d runs", n)
	}
}
