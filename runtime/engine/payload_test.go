package engine_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
)

// An event a handler returns that the store refuses as invalid input (a
// NUL character, over the size limit) is not retried: the same event would
// be refused again. The state gives up at once, with INVALID_INPUT.
func TestInvalidHandlerEventIsNotRetried(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		payload string
	}{
		{"NUL", "a\x00b"},
		{"20 MB", strings.Repeat("x", 20<<20)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := newEnv(t)
			var calls atomic.Int32
			retry := &runtime.RetryPolicy{MaxAttempts: 3, InitialInterval: time.Millisecond, Coefficient: 1, MaxInterval: time.Millisecond}
			d := &driver{def: jobDef("job", retry, "GiveUp"), guards: ownerGuard(), handlers: map[string]handler{
				"QUEUED": constant(event("Begin")),
				"WORKING": func(context.Context, *runtime.Run) (runtime.Event, error) {
					calls.Add(1)
					return event("Finish", "note", tc.payload), nil
				},
			}}
			e := v.engine(t, engine.Config{}, d)
			run := v.start(t, e, "job", "k")
			if _, err := e.RunDue(context.Background()); err != nil {
				t.Fatal(err)
			}
			got := v.get(t, run.ID)
			if got.State != "FAILED" || got.Result == nil || got.Result.ErrorCode != engine.CodeInvalidInput {
				t.Fatalf("run in %s with result %+v, want FAILED with %s", got.State, got.Result, engine.CodeInvalidInput)
			}
			if n := calls.Load(); n != 1 {
				t.Errorf("the handler ran %d times, want once", n)
			}
			if len(got.Result.ErrorDetail) > 400 {
				t.Errorf("error detail of %d bytes, want a short one: %.200s…", len(got.Result.ErrorDetail), got.Result.ErrorDetail)
			}
			failed := v.steps(t, run.ID, "attempt_failed")
			if len(failed) != 1 || failed[0]["error_code"] != engine.CodeInvalidInput || failed[0]["retry"] != false {
				t.Errorf("attempt_failed rows: %v, want one with %s, not retried", failed, engine.CodeInvalidInput)
			}
		})
	}
}

// Signal refuses an event the store cannot hold, with ErrInvalidInput,
// and leaves the run as it was.
func TestSignalRefusesInvalidPayload(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	d := &driver{def: jobDef("job", nil, ""), guards: ownerGuard(), handlers: map[string]handler{}}
	e := v.engine(t, engine.Config{}, d)
	run := v.start(t, e, "job", "k")
	_, err := e.Signal(context.Background(), run.ID, event("Cancel", "userID", "\x00"))
	if !errors.Is(err, runtime.ErrInvalidInput) {
		t.Fatalf("signal with a NUL: %v, want ErrInvalidInput", err)
	}
	if !strings.Contains(err.Error(), `holds a NUL character (\u0000), which PostgreSQL cannot store`) {
		t.Errorf("signal with a NUL: %v", err)
	}
	if diff := cmp.Diff([]string{"created start ->QUEUED"}, v.moves(t, run.ID)); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
}
