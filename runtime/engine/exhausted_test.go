package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
)

func TestExhaustedFunc(t *testing.T) {
	t.Parallel()
	type seen struct {
		State, Code, Detail string
		Events              []string
	}
	tests := []struct {
		name string
		// hook is the ExhaustedFunc under test, given what it saw.
		hook       func(s *seen) engine.ExhaustedFunc
		wantState  string
		wantResult *runtime.Result
		wantSteps  []map[string]any
		wantParked bool
	}{
		{
			name: "event with payload, result and steps",
			hook: func(s *seen) engine.ExhaustedFunc {
				return func(_ context.Context, run *runtime.Run, state, code, detail string) (runtime.Event, error) {
					*s = seen{State: state, Code: code, Detail: detail}
					for _, e := range run.Events {
						s.Events = append(s.Events, e.EventName())
					}
					run.Effects.LogStep("gave_up", map[string]any{"code": code})
					run.Effects.SetResult(map[string]any{"served": "fallback"}, 0.25)
					return event("GiveUp", "reason", "tries used up"), nil
				}
			},
			wantState:  "FAILED",
			wantResult: &runtime.Result{Status: runtime.StatusFailed, Output: json.RawMessage(`{"served": "fallback"}`), CostUSD: 0.25},
			wantSteps:  []map[string]any{{"code": "BOOM"}},
		},
		{
			name: "nil event: the default event and result",
			hook: func(s *seen) engine.ExhaustedFunc {
				return func(_ context.Context, _ *runtime.Run, state, code, detail string) (runtime.Event, error) {
					*s = seen{State: state, Code: code, Detail: detail, Events: []string{"Begin"}}
					return nil, nil
				}
			},
			wantState:  "FAILED",
			wantResult: &runtime.Result{Status: runtime.StatusFailed, ErrorCode: "BOOM", ErrorDetail: "BOOM: try 1 failed"},
		},
		{
			name: "error: parked",
			hook: func(s *seen) engine.ExhaustedFunc {
				return func(_ context.Context, _ *runtime.Run, state, code, detail string) (runtime.Event, error) {
					*s = seen{State: state, Code: code, Detail: detail, Events: []string{"Begin"}}
					return nil, errors.New("no fallback")
				}
			},
			wantState:  "WORKING",
			wantParked: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := newEnv(t)
			calls := 0
			d := &driver{def: jobDef("job", &runtime.RetryPolicy{MaxAttempts: 1}, "GiveUp"), guards: ownerGuard(),
				handlers: map[string]handler{"QUEUED": constant(event("Begin")), "WORKING": failing("BOOM", -1, nil, &calls)}}
			e := v.engine(t, engine.Config{})
			var got seen
			if err := e.Register(context.Background(), d, engine.WithExhausted(tc.hook(&got))); err != nil {
				t.Fatal(err)
			}
			run := v.start(t, e, "job", "k")
			run, err := e.Drive(context.Background(), run.ID)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(seen{State: "WORKING", Code: "BOOM", Detail: "BOOM: try 1 failed", Events: []string{"Begin"}}, got); diff != "" {
				t.Errorf("the hook saw (-want +got):\n%s", diff)
			}
			if run.State != tc.wantState || run.ParkedAt.IsZero() == tc.wantParked {
				t.Fatalf("run in %s, parked at %v", run.State, run.ParkedAt)
			}
			if tc.wantResult != nil {
				res := *run.Result
				res.RunID, res.Attempt, res.DurationMS = "", 0, 0
				if diff := cmp.Diff(*tc.wantResult, res); diff != "" {
					t.Errorf("result (-want +got):\n%s", diff)
				}
			}
			if diff := cmp.Diff(tc.wantSteps, v.steps(t, run.ID, "gave_up")); diff != "" {
				t.Errorf("gave_up steps (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNoRetryExhaustsAtOnce: a handler error marked runtime.NoRetry (an
// activity whose own policy gave up) is not tried again by the state's
// policy: the state is exhausted on that try, its else event fired with the
// error's code and message in the result; without an else event the run is
// parked after the one try.
func TestNoRetryExhaustsAtOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, onExhausted, wantState string
	}{
		{"else event", "GiveUp", "FAILED"},
		{"no else event: parked", "", "WORKING"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := newEnv(t)
			calls := 0
			d := &driver{def: jobDef("job", runtime.RetryDatabase.Clone(), tc.onExhausted), guards: ownerGuard(),
				handlers: map[string]handler{"QUEUED": constant(event("Begin")), "WORKING": func(context.Context, *runtime.Run) (runtime.Event, error) {
					calls++
					return nil, runtime.NoRetry(runtime.WithCode("DB_DOWN", errors.New("activity gave up after 5 tries")))
				}}}
			e := v.engine(t, engine.Config{}, d)
			run := v.start(t, e, "job", "k")
			run, err := e.Drive(context.Background(), run.ID)
			if err != nil {
				t.Fatal(err)
			}
			if calls != 1 {
				t.Errorf("handler called %d times, want 1", calls)
			}
			if run.State != tc.wantState || run.ParkedAt.IsZero() != (tc.onExhausted != "") {
				t.Fatalf("run in %s, parked at %v; want %s", run.State, run.ParkedAt, tc.wantState)
			}
			if tc.onExhausted == "" {
				if run.LastErrorCode != "DB_DOWN" || run.LastError != "DB_DOWN: activity gave up after 5 tries" {
					t.Errorf("parked with %q %q", run.LastErrorCode, run.LastError)
				}
				return
			}
			res := *run.Result
			res.RunID, res.Attempt, res.DurationMS = "", 0, 0
			want := runtime.Result{Status: runtime.StatusFailed, ErrorCode: "DB_DOWN", ErrorDetail: "DB_DOWN: activity gave up after 5 tries"}
			if diff := cmp.Diff(want, res); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}
