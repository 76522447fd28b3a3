package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
	"github.com/fsmgen/fsmgen/runtime/fsmtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// chainDef is five driven states in a row and a final one.
func chainDef(typ string) runtime.Definition {
	return def(typ,
		[]runtime.StateSpec{running("S1"), running("S2"), running("S3"), running("S4"), running("S5"), final("END", runtime.StatusSucceeded)},
		[]string{"S1", "Next", "S2"}, []string{"S2", "Next", "S3"}, []string{"S3", "Next", "S4"},
		[]string{"S4", "Next", "S5"}, []string{"S5", "Next", "END"})
}

func chainDriver(typ string) *driver {
	h := map[string]handler{}
	for _, s := range []string{"S1", "S2", "S3", "S4", "S5"} {
		h[s] = constant(event("Next"))
	}
	return &driver{def: chainDef(typ), handlers: h}
}

var chainLog = []string{
	"created start ->S1",
	"transition Next S1->S2", "transition Next S2->S3", "transition Next S3->S4",
	"transition Next S4->S5", "transition Next S5->END",
}

// TestNotifyWakesIdleWorker: with an hour between polls, only the
// notification of the new run can wake the idle worker in time.
func TestNotifyWakesIdleWorker(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	e := v.engine(t, engine.Config{PollInterval: time.Hour}, chainDriver("chain"))
	work(t, e)
	<-e.Listening()
	run := v.start(t, e, "chain", "k1")
	got := wait(t, e, run.ID, 30*time.Second)
	if got.State != "END" || got.Result == nil || got.Result.Status != runtime.StatusSucceeded || got.Lease.Owner != "" {
		t.Errorf("run = %s %+v lease %q", got.State, got.Result, got.Lease.Owner)
	}
	if diff := cmp.Diff(chainLog, v.moves(t, run.ID)); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
}

func TestPollingWithoutNotify(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	e := v.engine(t, engine.Config{PollInterval: 20 * time.Millisecond, DisableNotify: true}, chainDriver("chain"))
	work(t, e)
	var ids []string
	for i := range 5 {
		ids = append(ids, v.start(t, e, "chain", fmt.Sprint(i)).ID)
	}
	for _, id := range ids {
		if got := wait(t, e, id, 10*time.Second); got.State != "END" {
			t.Errorf("run %s in %s", id, got.State)
		}
		if diff := cmp.Diff(chainLog, v.moves(t, id)); diff != "" {
			t.Errorf("log (-want +got):\n%s", diff)
		}
	}
}

func TestDriveInline(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	e := v.engine(t, engine.Config{}, chainDriver("chain"))
	run := v.start(t, e, "chain", "k")
	got, err := e.Drive(context.Background(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != "END" || !got.Terminal() {
		t.Fatalf("Drive left the run in %s", got.State)
	}
	if diff := cmp.Diff(chainLog, v.moves(t, run.ID)); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
}

func TestPolicyFirst(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	d := chainDriver("chain")
	e := v.engine(t, engine.Config{})
	var seen []string
	err := e.Register(context.Background(), d, engine.WithPolicy(func(_ context.Context, p runtime.StartRequest) (json.RawMessage, error) {
		seen = append(seen, p.IdempotencyKey)
		if p.IdempotencyKey == "refused" {
			return nil, errors.New("tier does not allow it")
		}
		return json.RawMessage(`{"retrieval_threshold": 0.85}`), nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	var policy []byte
	d.handlers["S1"] = func(_ context.Context, run *runtime.Run) (runtime.Event, error) {
		policy = run.Policy
		return event("Next"), nil
	}
	run := v.start(t, e, "chain", "ok")
	if string(run.Policy) != `{"retrieval_threshold": 0.85}` {
		t.Errorf("policy snapshot = %s", run.Policy)
	}
	if _, err := e.Drive(context.Background(), run.ID); err != nil {
		t.Fatal(err)
	}
	if string(policy) != `{"retrieval_threshold": 0.85}` {
		t.Errorf("the handler saw policy %s", policy)
	}
	_, err = e.Start(context.Background(), runtime.StartRequest{Type: "chain", IdempotencyKey: "refused", Owner: runtime.Owner{TenantID: "t1"}})
	if !errors.Is(err, runtime.ErrPolicy) {
		t.Errorf("Start with a refusing policy: %v, want ErrPolicy", err)
	}
	runs, err := v.st.List(context.Background(), store.Filter{Filter: runtime.Filter{Type: "chain"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 {
		t.Errorf("%d runs, want 1: a refused start writes nothing", len(runs))
	}
	if diff := cmp.Diff([]string{"ok", "refused"}, seen); diff != "" {
		t.Errorf("policy calls (-want +got):\n%s", diff)
	}
}

// failing returns a handler that fails with code until n calls have been
// made, then returns e; n < 0 fails forever.
func failing(code string, n int, e runtime.Event, calls *int) handler {
	return func(context.Context, *runtime.Run) (runtime.Event, error) {
		*calls++
		if n < 0 || *calls <= n {
			return nil, runtime.WithCode(code, fmt.Errorf("try %d failed", *calls))
		}
		return e, nil
	}
}

// retryRun drives a run of a job machine with the given WORKING policy, with
// a stubbed clock advanced by each scheduled delay, and returns the
// attempt_failed steps and the run.
func retryRun(t *testing.T, pol *runtime.RetryPolicy, onExhausted string, jitter float64, h handler) (env, runtime.Run, []map[string]any) {
	t.Helper()
	clk := fsmtest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	v := newEnv(t, store.WithClock(clk.Now))
	d := &driver{def: jobDef("job", pol, onExhausted), guards: ownerGuard(),
		handlers: map[string]handler{"QUEUED": constant(event("Begin")), "WORKING": h}}
	e := v.engine(t, engine.Config{Jitter: func() float64 { return jitter }}, d)
	run := v.start(t, e, "job", "k")
	ctx := context.Background()
	for range 30 {
		if _, err := e.RunDue(ctx); err != nil {
			t.Fatal(err)
		}
		run = v.get(t, run.ID)
		if run.Terminal() || !run.ParkedAt.IsZero() {
			break
		}
		// Not due yet: nothing may be claimed before its time.
		if n, err := e.RunDue(ctx); err != nil || n != 0 {
			t.Fatalf("RunDue before the retry is due claimed %d runs (%v)", n, err)
		}
		clk.Advance(run.NextRunAt.Sub(clk.Now()))
	}
	return v, run, v.steps(t, run.ID, "attempt_failed")
}

// delays returns the delays of the retried tries among attempt_failed steps.
func delays(steps []map[string]any) []float64 {
	var out []float64
	for _, s := range steps {
		if s["retry"] == true {
			out = append(out, s["delay_ms"].(float64))
		}
	}
	return out
}

func TestRetryDelays(t *testing.T) {
	t.Parallel()
	seed001 := &runtime.RetryPolicy{MaxAttempts: 4, InitialInterval: time.Second, Coefficient: 4, MaxInterval: 16 * time.Second, Jitter: 0.2}
	db := runtime.RetryDatabase
	tests := []struct {
		name   string
		pol    *runtime.RetryPolicy
		jitter float64
		want   []float64
	}{
		{"seed001 1s 4s 16s", seed001, 0.5, []float64{1000, 4000, 16000}},
		{"database 500ms doubling", &db, 0.5, []float64{500, 1000, 2000, 4000}},
		{"database low jitter bound", &db, 0, []float64{400, 800, 1600, 3200}},
		{"database high jitter bound", &db, 0.999999, []float64{599, 1199, 2399, 4799}},
		{"capped", &runtime.RetryPolicy{MaxAttempts: 5, InitialInterval: time.Second, Coefficient: 10, MaxInterval: 30 * time.Second}, 0.5, []float64{1000, 10000, 30000, 30000}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			calls := 0
			v, run, steps := retryRun(t, tc.pol, "GiveUp", tc.jitter, failing("FLAKY", -1, nil, &calls))
			if diff := cmp.Diff(tc.want, delays(steps)); diff != "" {
				t.Errorf("delays (-want +got):\n%s", diff)
			}
			if calls != tc.pol.MaxAttempts {
				t.Errorf("%d calls, want %d", calls, tc.pol.MaxAttempts)
			}
			// Every try failed and is logged; the last one is not retried.
			if len(steps) != tc.pol.MaxAttempts {
				t.Fatalf("%d attempt_failed steps, want %d", len(steps), tc.pol.MaxAttempts)
			}
			for i, s := range steps {
				retried := i < len(steps)-1
				if s["step_attempt"].(float64) != float64(i+1) || s["error_code"] != "FLAKY" || s["retry"] != retried ||
					s["error"] != fmt.Sprintf("FLAKY: try %d failed", i+1) {
					t.Errorf("step %d = %v", i, s)
				}
			}
			// Exhaustion fired GiveUp: FAILED, with the last error in the result.
			if run.State != "FAILED" || run.Result == nil || run.Result.ErrorCode != "FLAKY" ||
				run.Result.ErrorDetail != fmt.Sprintf("FLAKY: try %d failed", calls) {
				t.Errorf("run = %s %+v", run.State, run.Result)
			}
			_ = v
		})
	}
}

func TestRetrySucceedsAfterFailures(t *testing.T) {
	t.Parallel()
	calls := 0
	v, run, steps := retryRun(t, &runtime.RetryPolicy{MaxAttempts: 3, InitialInterval: time.Second, Coefficient: 2}, "", 0.5,
		failing("FLAKY", 2, event("Finish"), &calls))
	if run.State != "DONE" || calls != 3 || len(steps) != 2 {
		t.Errorf("run in %s after %d calls, %d failed attempts logged", run.State, calls, len(steps))
	}
	want := []string{"created start ->QUEUED", "transition Begin QUEUED->WORKING",
		"step attempt_failed WORKING->WORKING", "step attempt_failed WORKING->WORKING", "transition Finish WORKING->DONE"}
	if diff := cmp.Diff(want, v.moves(t, run.ID)); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
}

func TestNonRetryableCode(t *testing.T) {
	t.Parallel()
	calls := 0
	pol := &runtime.RetryPolicy{MaxAttempts: 5, InitialInterval: time.Second, Coefficient: 2, NonRetryable: []string{"CARD_DECLINED"}}
	_, run, steps := retryRun(t, pol, "GiveUp", 0.5, failing("CARD_DECLINED", -1, nil, &calls))
	if calls != 1 || run.State != "FAILED" || run.Result.ErrorCode != "CARD_DECLINED" || run.Result.ErrorDetail != "CARD_DECLINED: try 1 failed" {
		t.Errorf("calls %d, run %s %+v", calls, run.State, run.Result)
	}
	// The failure is logged, not retried.
	want := []map[string]any{{"step_attempt": 1.0, "error_code": "CARD_DECLINED", "error": "CARD_DECLINED: try 1 failed", "retry": false}}
	if diff := cmp.Diff(want, steps); diff != "" {
		t.Errorf("attempt_failed steps (-want +got):\n%s", diff)
	}
}

func TestExhaustedWithoutEventParks(t *testing.T) {
	t.Parallel()
	calls := 0
	pol := &runtime.RetryPolicy{MaxAttempts: 2, InitialInterval: time.Second, Coefficient: 2}
	v, run, steps := retryRun(t, pol, "", 0.5, failing("BOOM", -1, nil, &calls))
	if calls != 2 || len(steps) != 1 {
		t.Errorf("calls %d, retries %d", calls, len(steps))
	}
	if run.State != "WORKING" || run.ParkedAt.IsZero() || !run.NextRunAt.IsZero() || run.LastErrorCode != "BOOM" ||
		run.LastError != "BOOM: try 2 failed" || run.Lease.Owner != "" {
		t.Errorf("parked run = %+v", run)
	}
	parked := v.steps(t, run.ID, "parked")
	if diff := cmp.Diff([]map[string]any{{"step_attempt": 2.0, "error_code": "BOOM", "error": "BOOM: try 2 failed", "retry": false}}, parked); diff != "" {
		t.Errorf("parked step (-want +got):\n%s", diff)
	}
}
