package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// The engine's own errors about a start quote at most a short prefix of
// the idempotency key, however long it is.
func TestStartErrorsQuoteShortPrefix(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	e := v.engine(t, engine.Config{})
	refuse := func(context.Context, runtime.StartRequest) (json.RawMessage, error) {
		return nil, errors.New("over quota")
	}
	if err := e.Register(context.Background(), &driver{def: jobDef("job", nil, ""), guards: ownerGuard()}, engine.WithPolicy(refuse)); err != nil {
		t.Fatal(err)
	}
	// Under the store's limit on keys (512 bytes), which the store checks
	// before the policy is asked.
	key := strings.Repeat("k", 500)
	const prefix = `"kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk"…`
	for _, tc := range []struct {
		typ, want string
		sentinel  error
	}{
		{"nope", "engine: start nope/" + prefix + ": definition not registered with this engine: nope v0", runtime.ErrNotRegistered},
		{"job", "engine: start job/" + prefix + ": policy refused the run: over quota", runtime.ErrPolicy},
	} {
		_, err := e.Start(context.Background(), runtime.StartRequest{Type: tc.typ, IdempotencyKey: key, Owner: runtime.Owner{TenantID: "t1", UserID: alice}})
		if !errors.Is(err, tc.sentinel) {
			t.Fatalf("start %s: %.300v, want %v", tc.typ, err, tc.sentinel)
		}
		if got := err.Error(); got != tc.want {
			t.Errorf("start %s: error of %d bytes %.300q, want %q", tc.typ, len(got), got, tc.want)
		}
	}
	// The type is an input too.
	long := strings.Repeat("t", 100)
	_, err := e.Start(context.Background(), runtime.StartRequest{Type: long, IdempotencyKey: "k", Owner: runtime.Owner{TenantID: "t1", UserID: alice}})
	want := `engine: start "tttttttttttttttttttttttttttttttt"…/k: definition not registered with this engine: "tttttttttttttttttttttttttttttttt"… v0`
	if err == nil || err.Error() != want {
		t.Errorf("start with a long type: %v, want %s", err, want)
	}
}

// A handler error whose text PostgreSQL cannot store (a NUL byte, invalid
// UTF-8) is logged cleaned, on every path that logs a failed try: the
// state's exhausted event is fired, not refused for the text of the error.
func TestHandlerErrorTextIsCleaned(t *testing.T) {
	t.Parallel()
	const raw, clean = "bad \x00 byte \xff end", "bad \uFFFD byte \uFFFD end"
	fast := func(n int, nonRetryable ...string) *runtime.RetryPolicy {
		return &runtime.RetryPolicy{MaxAttempts: n, InitialInterval: time.Millisecond, Coefficient: 1, MaxInterval: time.Millisecond, NonRetryable: nonRetryable}
	}
	for _, tc := range []struct {
		name   string
		retry  *runtime.RetryPolicy
		fail   func() error
		code   string
		detail string
		// rows is the number of attempt_failed rows: one per try.
		rows int
	}{
		{"retried then exhausted", fast(2), func() error { return errors.New(raw) }, engine.CodeHandlerError, clean, 2},
		{"exhausted at once", fast(1), func() error { return errors.New(raw) }, engine.CodeHandlerError, clean, 1},
		{"non-retryable", fast(5, "ADDRESS_INVALID"), func() error { return runtime.WithCode("ADDRESS_INVALID", errors.New(raw)) }, "ADDRESS_INVALID", "ADDRESS_INVALID: " + clean, 1},
		{"code", fast(1), func() error { return runtime.WithCode("BAD\x00CODE", errors.New(raw)) }, "BAD\uFFFDCODE", "BAD\uFFFDCODE: " + clean, 1},
		{"panic", fast(1), func() error { panic(raw) }, engine.CodePanic, "", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := newEnv(t)
			d := &driver{def: jobDef("job", tc.retry, "GiveUp"), guards: ownerGuard(), handlers: map[string]handler{
				"QUEUED":  constant(event("Begin")),
				"WORKING": func(context.Context, *runtime.Run) (runtime.Event, error) { return nil, tc.fail() },
			}}
			e := v.engine(t, engine.Config{}, d)
			run := v.start(t, e, "job", "k")
			got, err := e.Drive(context.Background(), run.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.State != "FAILED" || got.Result == nil || got.Result.ErrorCode != tc.code {
				t.Fatalf("run in %s (parked: %t, %s: %s) with result %+v, want FAILED with %s", got.State, !got.ParkedAt.IsZero(), got.LastErrorCode, got.LastError, got.Result, tc.code)
			}
			failed := v.steps(t, run.ID, "attempt_failed")
			if len(failed) != tc.rows {
				t.Fatalf("attempt_failed rows: %v, want %d", failed, tc.rows)
			}
			last := failed[len(failed)-1]
			if last["error_code"] != tc.code || last["retry"] != false {
				t.Errorf("last attempt_failed row: %v, want %s, not retried", last, tc.code)
			}
			for _, row := range failed {
				detail, _ := row["error"].(string)
				if tc.detail != "" && detail != tc.detail {
					t.Errorf("attempt_failed error %q, want %q", detail, tc.detail)
				}
				if tc.detail == "" && !strings.HasPrefix(detail, "panic in handler of WORKING: "+clean+"\n") {
					t.Errorf("attempt_failed error %.200q, want the cleaned panic value and its stack", detail)
				}
			}
			if tc.detail != "" && got.Result.ErrorDetail != tc.detail {
				t.Errorf("result's error detail %q, want %q", got.Result.ErrorDetail, tc.detail)
			}
		})
	}
}

// A result output that cannot be stored (a NUL character, over the size
// limit, not encodable to JSON) fails the state at once with
// INVALID_INPUT, as an invalid event does: the same output would be
// refused again.
func TestInvalidResultOutputIsNotRetried(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		output any
		detail string
	}{
		{"NUL", map[string]any{"note": "a\x00b"}, `invalid input: result output holds a NUL character (\u0000), which PostgreSQL cannot store, at byte 10: "\\u0000b\"}"`},
		{"over the limit", strings.Repeat("x", 2048), `invalid input: result output is 2050 bytes of JSON, over the limit of 1024: "\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"…`},
		{"not JSON", math.Inf(1), "bad payload: result output of type float64: json: unsupported value: +Inf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := newEnv(t, store.WithLimits(store.Limits{MaxPayload: 1024}))
			var calls atomic.Int32
			retry := &runtime.RetryPolicy{MaxAttempts: 3, InitialInterval: time.Millisecond, Coefficient: 1, MaxInterval: time.Millisecond}
			d := &driver{def: jobDef("job", retry, "GiveUp"), guards: ownerGuard(), handlers: map[string]handler{
				"QUEUED": constant(event("Begin")),
				"WORKING": func(_ context.Context, run *runtime.Run) (runtime.Event, error) {
					calls.Add(1)
					run.Effects.SetResult(tc.output, 0)
					return event("Finish"), nil
				},
			}}
			e := v.engine(t, engine.Config{}, d)
			run := v.start(t, e, "job", "k")
			got, err := e.Drive(context.Background(), run.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.State != "FAILED" || got.Result == nil || got.Result.ErrorCode != engine.CodeInvalidInput {
				t.Fatalf("run in %s (parked: %t, %s: %s) with result %+v, want FAILED with %s", got.State, !got.ParkedAt.IsZero(), got.LastErrorCode, got.LastError, got.Result, engine.CodeInvalidInput)
			}
			if n := calls.Load(); n != 1 {
				t.Errorf("the handler ran %d times, want once", n)
			}
			detail := got.Result.ErrorDetail
			if i := strings.Index(detail, "invalid input: "); i >= 0 {
				detail = detail[i:]
			} else if i := strings.Index(detail, "bad payload: "); i >= 0 {
				detail = detail[i:]
			}
			if detail != tc.detail {
				t.Errorf("result's error detail %q, want it to end in %q", got.Result.ErrorDetail, tc.detail)
			}
			want := []map[string]any{{"step_attempt": 1.0, "error_code": engine.CodeInvalidInput, "error": got.Result.ErrorDetail, "retry": false}}
			if diff := cmp.Diff(want, v.steps(t, run.ID, "attempt_failed")); diff != "" {
				t.Errorf("attempt_failed rows (-want +got):\n%s", diff)
			}
		})
	}
}
