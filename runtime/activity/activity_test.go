package activity_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/activity"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(childModeEnv); mode != "" {
		os.Exit(runChild(mode))
	}
	pgtest.Main(m)
}

func TestCalculateRetryDelay(t *testing.T) {
	t.Parallel()
	var got []time.Duration
	for n := 1; n <= 5; n++ {
		got = append(got, activity.CalculateRetryDelay(activity.Database, n))
	}
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("database delays (-want +got):\n%s", diff)
	}
	capped := activity.CreateRetryPolicy(activity.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 10})
	if got := activity.CalculateRetryDelay(capped, 8); got != time.Minute {
		t.Errorf("delay after try 8 of 1s x2 capped at 1m = %v, want 1m", got)
	}
}

func TestNamedPolicies(t *testing.T) {
	t.Parallel()
	type row struct {
		Attempts int
		Initial  time.Duration
	}
	got := map[string]row{}
	for name, p := range activity.Policies() {
		got[name] = row{p.MaximumAttempts, p.InitialInterval}
	}
	want := map[string]row{
		"validation":      {1, time.Second},
		"database":        {5, 500 * time.Millisecond},
		"externalService": {10, time.Second},
		"payment":         {3, time.Second},
		"background":      {20, time.Second},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("named policies (-want +got):\n%s", diff)
	}
	if rt := activity.Database.Runtime(); rt.MaxAttempts != runtime.RetryDatabase.MaxAttempts || rt.InitialInterval != runtime.RetryDatabase.InitialInterval {
		t.Errorf("Database.Runtime() = %+v, want runtime.RetryDatabase's numbers", rt)
	}
}

func TestJitter(t *testing.T) {
	t.Parallel()
	p := activity.Database // Jitter 0.2
	d := time.Second
	got := []time.Duration{p.Jittered(d, 0), p.Jittered(d, 0.5), p.Jittered(d, 0.999)}
	want := []time.Duration{800 * time.Millisecond, time.Second, 1199600 * time.Microsecond}
	if diff := cmp.Diff(want, got, cmpopts.EquateApproxTime(0)); diff != "" {
		t.Errorf("jittered (-want +got):\n%s", diff)
	}
}

// CardDeclinedError is an error matched by its type's name.
type CardDeclinedError struct{}

func (CardDeclinedError) Error() string { return "card declined" }

func TestNonRetryable(t *testing.T) {
	t.Parallel()
	p := activity.CreateRetryPolicy(activity.RetryPolicy{MaximumAttempts: 5, NonRetryableErrors: []string{"CardDeclinedError", "FRAUD"}})
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"plain", errors.New("timeout"), true},
		{"by type", fmt.Errorf("charge: %w", CardDeclinedError{}), false},
		{"by code", runtime.WithCode("FRAUD", errors.New("flagged")), false},
		{"other code", runtime.WithCode("BUSY", errors.New("busy")), true},
	}
	for _, tc := range tests {
		if got := p.Retryable(tc.err, 1); got != tc.want {
			t.Errorf("%s: Retryable = %v, want %v", tc.name, got, tc.want)
		}
	}
	if p.Retryable(errors.New("x"), 5) {
		t.Error("Retryable after the last try")
	}
}

// provider fails its first fails calls, then answers.
type provider struct {
	calls atomic.Int32
	fails int32
}

func (p *provider) check(_ context.Context, in string) (string, error) {
	n := p.calls.Add(1)
	if n <= p.fails {
		return "", fmt.Errorf("provider unavailable (call %d)", n)
	}
	return "clear:" + in, nil
}

// sleeps records the waits between tries instead of waiting.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(_ context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.d = append(s.d, d)
	return nil
}

func screening(p *provider) activity.Activity[string, string] {
	return activity.Activity[string, string]{
		Name: "screening", Retry: activity.ExternalService, Timeout: time.Minute,
		IdempotencyKey: func(in string) string { return "screening:" + in },
		Execute:        p.check,
	}
}

func TestExecuteRetriesThenCaches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	var sl sleeps
	x := activity.NewExecutor(pool, activity.WithSleep(sl.sleep), activity.WithRand(func() float64 { return 0.5 }))
	p := &provider{fails: 4}

	res, err := activity.Execute(ctx, x, "wf-1", screening(p), "app-1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(activity.Result[string]{Output: "clear:app-1", Tries: 5, Key: "screening:app-1"}, res, cmpopts.IgnoreFields(activity.Result[string]{}, "ExecutionID")); diff != "" {
		t.Errorf("first call (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}, sl.d); diff != "" {
		t.Errorf("waits (-want +got):\n%s", diff)
	}
	again, err := activity.Execute(ctx, x, "wf-1", screening(p), "app-1")
	if err != nil {
		t.Fatal(err)
	}
	if !again.Cached || again.Output != "clear:app-1" || again.Tries != 0 || again.ExecutionID != res.ExecutionID {
		t.Errorf("second call = %+v, want the cached result of %s", again, res.ExecutionID)
	}
	if got := p.calls.Load(); got != 5 {
		t.Errorf("provider called %d times, want 5", got)
	}
	ex, err := activity.Executions(ctx, pool, "wf-1")
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Name, Key, Status, Output, Error string
		Attempt                          int
	}
	var got []row
	for _, e := range ex {
		got = append(got, row{e.ActivityName, e.IdempotencyKey, e.Status, string(e.Output), e.Error, e.Attempt})
	}
	want := []row{{"screening", "screening:app-1", "completed", `"clear:app-1"`, "", 5}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("executions (-want +got):\n%s", diff)
	}
}

func TestExecuteExhaustedAndNonRetryable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	var sl sleeps
	x := activity.NewExecutor(pool, activity.WithSleep(sl.sleep), activity.WithRand(func() float64 { return 0.5 }))

	p := &provider{fails: 100}
	a := screening(p)
	a.Retry = activity.Payment
	_, err := activity.Execute(ctx, x, "wf-2", a, "app-2")
	if !errors.Is(err, activity.ErrExhausted) {
		t.Fatalf("err = %v, want ErrExhausted", err)
	}
	if got := p.calls.Load(); got != 3 {
		t.Errorf("payment policy tried %d times, want 3", got)
	}

	declined := activity.Activity[string, string]{
		Name: "charge", Retry: activity.CreateRetryPolicy(activity.RetryPolicy{MaximumAttempts: 5, NonRetryableErrors: []string{"CardDeclinedError"}}),
		Execute: func(context.Context, string) (string, error) { return "", CardDeclinedError{} },
	}
	_, err = activity.Execute(ctx, x, "wf-2", declined, "card")
	if !errors.Is(err, activity.ErrNonRetryable) || !errors.As(err, new(CardDeclinedError)) {
		t.Fatalf("err = %v, want ErrNonRetryable wrapping CardDeclinedError", err)
	}
	ex, err := activity.Executions(ctx, pool, "wf-2")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ex {
		got = append(got, fmt.Sprintf("%s %s %d %s", e.ActivityName, e.Status, e.Attempt, e.Error))
	}
	want := []string{"screening failed 3 provider unavailable (call 3)", "charge failed 1 card declined"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("executions (-want +got):\n%s", diff)
	}
	// A failed key is tried again on the next call, its attempts counted on.
	p.fails = 0
	res, err := activity.Execute(ctx, x, "wf-2", a, "app-2")
	if err != nil || res.Cached || res.Tries != 1 {
		t.Fatalf("after failures: %+v, %v; want one fresh try", res, err)
	}
	ex, _ = activity.Executions(ctx, pool, "wf-2")
	if ex[0].Attempt != 4 || ex[0].Status != "completed" {
		t.Errorf("row after the fourth try: attempt %d status %s, want 4 completed", ex[0].Attempt, ex[0].Status)
	}
}

func TestExecuteTTL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	x := activity.NewExecutor(pool, activity.WithClock(clock))
	p := &provider{}
	a := screening(p)
	a.TTL = time.Hour
	for i, step := range []time.Duration{0, 59 * time.Minute, 2 * time.Minute} {
		mu.Lock()
		now = now.Add(step)
		mu.Unlock()
		res, err := activity.Execute(ctx, x, "wf-3", a, "app-3")
		if err != nil {
			t.Fatal(err)
		}
		if wantCached := i == 1; res.Cached != wantCached {
			t.Errorf("call %d at +%v: cached %v, want %v", i, step, res.Cached, wantCached)
		}
	}
	if got := p.calls.Load(); got != 2 {
		t.Errorf("provider called %d times, want 2 (first call and after expiry)", got)
	}
}

func TestExecuteTimeout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	var sl sleeps
	x := activity.NewExecutor(pool, activity.WithSleep(sl.sleep))
	var calls atomic.Int32
	a := activity.Activity[int, int]{
		Name: "slow", Retry: activity.CreateRetryPolicy(activity.RetryPolicy{MaximumAttempts: 2}), Timeout: time.Millisecond,
		Execute: func(ctx context.Context, in int) (int, error) {
			if calls.Add(1) == 1 {
				<-ctx.Done() // the try's deadline, not a sleep
				return 0, ctx.Err()
			}
			return in * 2, nil
		},
	}
	res, err := activity.Execute(ctx, x, "wf-4", a, 21)
	if err != nil || res.Output != 42 || res.Tries != 2 {
		t.Fatalf("Execute = %+v, %v; want 42 on the second try", res, err)
	}
	ex, _ := activity.Executions(ctx, pool, "wf-4")
	if len(ex) != 1 || ex[0].Attempt != 2 {
		t.Errorf("executions = %+v, want one row at attempt 2", ex)
	}
}

func TestExecuteInvalid(t *testing.T) {
	t.Parallel()
	x := activity.NewExecutor(nil)
	_, err := activity.Execute(context.Background(), x, "wf", activity.Activity[int, int]{Name: "x"}, 1)
	if !errors.Is(err, activity.ErrInvalid) {
		t.Errorf("no Execute: err = %v, want ErrInvalid", err)
	}
	_, err = activity.Execute(context.Background(), x, "wf", activity.Activity[int, int]{Name: "x", IdempotencyKey: func(int) string { return "" },
		Execute: func(context.Context, int) (int, error) { return 0, nil }}, 1)
	if !errors.Is(err, activity.ErrInvalid) {
		t.Errorf("empty key: err = %v, want ErrInvalid", err)
	}
}
