package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// retryable is a machine whose run fails at once: START -> FAILED on Fail.
var retryable = runtime.Definition{
	Machine: "Retryable", Type: "retryable", Version: 1, Initial: "START",
	States: []runtime.StateSpec{
		{Name: "START", Initial: true, Status: runtime.StatusRunning, Wait: true},
		{Name: "FAILED", Status: runtime.StatusFailed},
	},
	Events:      []runtime.EventSpec{{Name: "Fail"}},
	Transitions: []runtime.TransitionSpec{{From: "START", Event: "Fail", To: "FAILED"}},
}

func TestRetry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := store.New(pgtest.NewPool(t))
	if err := st.Register(ctx, retryable); err != nil {
		t.Fatal(err)
	}
	res, err := st.Start(ctx, runtime.StartRequest{Type: "retryable", Version: 1, IdempotencyKey: "k", Owner: runtime.Owner{TenantID: "t"}, Input: map[string]int{"n": 1}})
	if err != nil {
		t.Fatal(err)
	}
	run := res.Run
	if _, err := st.Retry(ctx, run.ID); !errors.Is(err, runtime.ErrConflict) || err.Error() != "store: retry run "+run.ID+": conflict: the run moved since it was read: only a failed run is retried, and it is running in START" {
		t.Errorf("retry of a running run: %v", err)
	}
	if _, err := st.Record(ctx, run.ID, run.RowVersion, runtime.Transition{Machine: "retryable", Version: 1, From: "START", To: "FAILED", Event: "Fail", Status: runtime.StatusFailed}); err != nil {
		t.Fatal(err)
	}
	got, err := st.Retry(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != run.ID || got.Attempt != 2 || got.State != "START" || got.Status != runtime.StatusRunning || got.Result != nil ||
		!got.FinishedAt.IsZero() || string(got.Input) != `{"n": 1}` || got.RowVersion != 3 {
		t.Errorf("after retry: %+v", got)
	}
	steps, err := st.History(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if last := steps[len(steps)-1]; last.Kind != store.KindRestarted || last.From != "FAILED" || last.To != "START" || last.Attempt != 2 {
		t.Errorf("last log row: %+v", last)
	}
	const missing = "1b4e28ba-2fa1-4d2b-883f-0016d3cca427"
	if _, err := st.Retry(ctx, missing); !errors.Is(err, runtime.ErrRunNotFound) {
		t.Errorf("retry of a missing run: %v", err)
	}
	if _, err := st.Retry(ctx, "nope"); !errors.Is(err, runtime.ErrInvalidID) {
		t.Errorf("retry of a malformed id: %v", err)
	}
}
