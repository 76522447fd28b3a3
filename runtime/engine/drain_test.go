package engine_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
	"github.com/fsmgen/fsmgen/runtime/fsmtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// TestDrain moves the approval machine from one engine's database to
// another's: the runs under way finish where they are, and the new ones
// start on the new backend, behind one Runner.
func TestDrain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := fsmtest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	oldEnv, newEnv := newEnv(t, store.WithClock(clk.Now)), newEnv(t)
	from := oldEnv.engine(t, engine.Config{}, approvalDriver())
	to := newEnv.engine(t, engine.Config{}, approvalDriver())

	// Before the switch: on the old backend, one run has failed (its
	// approval window closed), one has succeeded and one waits.
	failed := oldEnv.start(t, from, "approval", "failed")
	runDue(t, from, 1)
	clk.Advance(7*24*time.Hour - time.Second)
	done := oldEnv.start(t, from, "approval", "done")
	runDue(t, from, 1)
	if _, err := from.Signal(ctx, done.ID, event("Approve")); err != nil {
		t.Fatal(err)
	}
	runDue(t, from, 1)
	clk.Advance(time.Second)
	runDue(t, from, 1) // failed: AWAIT -> EXPIRED
	waiting := oldEnv.start(t, from, "approval", "waiting")
	runDue(t, from, 1)

	r := runtime.Drain(from, to)
	start := func(key string) runtime.Started {
		t.Helper()
		s, err := r.Start(ctx, runtime.StartRequest{Type: "approval", IdempotencyKey: key, Owner: runtime.Owner{TenantID: "t1", UserID: alice}})
		if err != nil {
			t.Fatalf("start %s: %v", key, err)
		}
		return s
	}
	type outcome struct {
		ID      string
		Outcome runtime.StartOutcome
	}
	got := map[string]outcome{}
	for _, key := range []string{"waiting", "done", "failed", "new"} {
		s := start(key)
		got[key] = outcome{s.Run.ID, s.Outcome}
	}
	if diff := cmp.Diff(outcome{waiting.ID, runtime.StartRunning}, got["waiting"]); diff != "" {
		t.Errorf("a run under way on the old backend (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(outcome{done.ID, runtime.StartCached}, got["done"]); diff != "" {
		t.Errorf("a run that succeeded on the old backend (-want +got):\n%s", diff)
	}
	for _, key := range []string{"failed", "new"} {
		if got[key].Outcome != runtime.StartCreated || got[key].ID == failed.ID {
			t.Errorf("%s: %+v, want a run created on the new backend", key, got[key])
		}
		if _, err := to.Get(ctx, got[key].ID); err != nil {
			t.Errorf("%s: not on the new backend: %v", key, err)
		}
	}
	if _, err := to.Get(ctx, waiting.ID); !errors.Is(err, runtime.ErrRunNotFound) {
		t.Errorf("the waiting run was copied to the new backend: %v", err)
	}

	// The run under way is signalled, read and waited for where it is.
	if run, err := r.Signal(ctx, waiting.ID, event("Approve")); err != nil || run.State != "FINISHING" {
		t.Fatalf("signal the old run: %s, %v", run.State, err)
	}
	runDue(t, from, 1)
	if run, err := r.Wait(ctx, waiting.ID); err != nil || run.State != "DONE" {
		t.Errorf("wait for the old run: %s, %v", run.State, err)
	}
	runDue(t, to, 2)
	if run, err := r.Signal(ctx, got["new"].ID, event("Approve")); err != nil || run.State != "FINISHING" {
		t.Errorf("signal the new run: %s, %v", run.State, err)
	}
	if _, err := r.Cancel(ctx, got["failed"].ID, alice); !errors.Is(err, runtime.ErrNoCancelEvent) {
		t.Errorf("cancel a run of a machine without a cancel event: %v, want ErrNoCancelEvent", err)
	}
	if _, err := r.Get(ctx, "5d3c1a2b-0000-4000-8000-000000000000"); !errors.Is(err, runtime.ErrRunNotFound) {
		t.Errorf("get an unknown run: %v, want ErrRunNotFound", err)
	}

	// List: the old backend's runs first, then the new one's, to the limit.
	keys := func(f runtime.Filter) []string {
		t.Helper()
		runs, err := r.List(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, run := range runs {
			out = append(out, run.IdempotencyKey)
		}
		return out
	}
	if diff := cmp.Diff([]string{"failed", "done", "waiting", "failed", "new"}, keys(runtime.Filter{Type: "approval"})); diff != "" {
		t.Errorf("list (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"failed", "done", "waiting", "failed"}, keys(runtime.Filter{Type: "approval", Limit: 4})); diff != "" {
		t.Errorf("list to 4 (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"failed", "failed"}, keys(runtime.Filter{Type: "approval", IdempotencyKey: "failed"})); diff != "" {
		t.Errorf("list by key (-want +got):\n%s", diff)
	}
}
