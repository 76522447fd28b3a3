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

// approvalDef waits in AWAIT for Approve, or for a week (FCHA's
// authorization timeout).
func approvalDef() runtime.Definition {
	await := running("AWAIT")
	await.Wait = true
	await.Timers = []runtime.Timer{{After: 7 * 24 * time.Hour, Event: "Timeout"}}
	return def("approval",
		[]runtime.StateSpec{running("QUEUED"), await, running("FINISHING"), final("DONE", runtime.StatusSucceeded), final("EXPIRED", runtime.StatusFailed)},
		[]string{"QUEUED", "Begin", "AWAIT"},
		[]string{"AWAIT", "Approve", "FINISHING"},
		[]string{"AWAIT", "Timeout", "EXPIRED"},
		[]string{"FINISHING", "Finish", "DONE"},
	)
}

func approvalDriver() *driver {
	return &driver{def: approvalDef(), handlers: map[string]handler{
		"QUEUED": constant(event("Begin")), "FINISHING": constant(event("Finish")),
	}}
}

func runDue(t *testing.T, e *engine.Engine, want int) {
	t.Helper()
	n, err := e.RunDue(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n != want {
		t.Fatalf("RunDue claimed %d runs, want %d", n, want)
	}
}

func TestSignal(t *testing.T) {
	t.Parallel()
	clk := fsmtest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	v := newEnv(t, store.WithClock(clk.Now))
	e := v.engine(t, engine.Config{}, approvalDriver())
	run := v.start(t, e, "approval", "k")
	runDue(t, e, 1)
	parked := v.get(t, run.ID)
	if parked.State != "AWAIT" || parked.Lease.Owner != "" || !parked.NextRunAt.Equal(clk.Now().Add(7*24*time.Hour)) {
		t.Fatalf("waiting run: %s lease %q due %v", parked.State, parked.Lease.Owner, parked.NextRunAt)
	}
	runDue(t, e, 0) // a waiting run is not claimed

	ctx := context.Background()
	if _, err := e.Signal(ctx, run.ID, event("Nope")); !errors.Is(err, runtime.ErrIllegalTransition) {
		t.Errorf("Signal of an event AWAIT does not take: %v", err)
	}
	got, err := e.Signal(ctx, run.ID, event("Approve", "by", "ops"))
	if err != nil {
		t.Fatal(err)
	}
	if got.State != "FINISHING" || !got.NextRunAt.Equal(clk.Now()) {
		t.Errorf("signalled run: %s due %v, want FINISHING due now", got.State, got.NextRunAt)
	}
	runDue(t, e, 1)
	want := []string{"created start ->QUEUED", "transition Begin QUEUED->AWAIT", "transition Approve AWAIT->FINISHING", "transition Finish FINISHING->DONE"}
	if diff := cmp.Diff(want, v.moves(t, run.ID)); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
	if _, err := e.Signal(ctx, run.ID, event("Approve")); !errors.Is(err, runtime.ErrRunFinished) {
		t.Errorf("Signal of a finished run: %v, want ErrRunFinished", err)
	}
}

// TestSignalWakesWorker: with an hour between polls, the notification of
// the signal wakes the idle worker, which drives the run on.
func TestSignalWakesWorker(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	e := v.engine(t, engine.Config{PollInterval: time.Hour}, approvalDriver())
	run := v.start(t, e, "approval", "k")
	if got, err := e.Drive(context.Background(), run.ID); err != nil || got.State != "AWAIT" {
		t.Fatalf("Drive: %s, %v", got.State, err)
	}
	work(t, e)
	<-e.Listening()
	if _, err := e.Signal(context.Background(), run.ID, event("Approve")); err != nil {
		t.Fatal(err)
	}
	if got := wait(t, e, run.ID, 30*time.Second); got.State != "DONE" {
		t.Errorf("run in %s", got.State)
	}
}

func TestTimer(t *testing.T) {
	t.Parallel()
	clk := fsmtest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	v := newEnv(t, store.WithClock(clk.Now))
	e := v.engine(t, engine.Config{}, approvalDriver())
	run := v.start(t, e, "approval", "k")
	runDue(t, e, 1)
	clk.Advance(7*24*time.Hour - time.Second)
	runDue(t, e, 0)
	clk.Advance(time.Second)
	runDue(t, e, 1)
	got := v.get(t, run.ID)
	if got.State != "EXPIRED" || got.Result == nil || got.Result.Status != runtime.StatusFailed {
		t.Errorf("run after the timeout: %s %+v", got.State, got.Result)
	}
	want := []string{"created start ->QUEUED", "transition Begin QUEUED->AWAIT", "transition Timeout AWAIT->EXPIRED"}
	if diff := cmp.Diff(want, v.moves(t, run.ID)); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
}

func TestChildRun(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	pd, kid := childDrivers()
	e := v.engine(t, engine.Config{}, pd, kid)
	run := v.start(t, e, "parent", "p")

	runDue(t, e, 1) // parent: P_START -> P_WAIT, child started
	kids, err := v.st.List(context.Background(), store.Filter{Filter: runtime.Filter{Type: "kid"}})
	if err != nil || len(kids) != 1 {
		t.Fatalf("children: %v, %v", kids, err)
	}
	child := kids[0]
	if child.ParentID != run.ID || child.ParentEvent != "KidDone" || child.UserID != alice || string(child.Input) != `{"n": 7}` {
		t.Errorf("child = %+v", child)
	}
	runDue(t, e, 1) // child finishes; its parent becomes due
	runDue(t, e, 1) // parent fires KidDone
	got := v.get(t, run.ID)
	if got.State != "P_DONE" {
		t.Errorf("parent in %s", got.State)
	}
	h, err := v.st.History(context.Background(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	last := h[len(h)-1]
	var payload map[string]string
	if err := last.Decode(&payload); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"childRunID": child.ID, "status": "succeeded", "outcome": "solved"}, payload); diff != "" {
		t.Errorf("KidDone payload (-want +got):\n%s", diff)
	}
	runDue(t, e, 0) // delivered once
}

func TestEnqueueInTransaction(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	bg := chainDriver("chain")
	d := &driver{def: jobDef("job", nil, ""), guards: ownerGuard(), handlers: map[string]handler{
		"QUEUED": constant(event("Begin")),
		"WORKING": func(_ context.Context, run *runtime.Run) (runtime.Event, error) {
			run.Effects.LogStep("video_enqueued", map[string]string{"key": "video-" + run.IdempotencyKey})
			run.Effects.Enqueue("chain", "video-"+run.IdempotencyKey, map[string]string{"from": run.ID})
			run.Effects.Enqueue("chain", "video-"+run.IdempotencyKey, map[string]string{"from": run.ID}) // idempotent
			run.Effects.Emit("job.done", map[string]string{"id": run.ID})
			run.Effects.SetResult(map[string]bool{"video_pending": true}, 0.12)
			if run.IdempotencyKey == "bad" {
				return event("Begin"), nil // not a transition of WORKING: nothing is written
			}
			return event("Finish"), nil
		},
	}}
	e := v.engine(t, engine.Config{}, d, bg)
	ctx := context.Background()
	good, bad := v.start(t, e, "job", "good"), v.start(t, e, "job", "bad")
	for _, id := range []string{good.ID, bad.ID} {
		if _, err := e.Drive(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	got := v.get(t, good.ID)
	if got.State != "DONE" || got.Result.CostUSD != 0.12 || string(got.Result.Output) != `{"video_pending": true}` {
		t.Errorf("good run: %s %+v", got.State, got.Result)
	}
	chains, err := v.st.List(ctx, store.Filter{Filter: runtime.Filter{Type: "chain"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(chains) != 1 || chains[0].IdempotencyKey != "video-good" || chains[0].ParentID != "" || chains[0].TenantID != "t1" {
		t.Fatalf("background runs: %+v", chains)
	}
	if out, err := v.st.Outbox(ctx, good.ID); err != nil || len(out) != 1 || out[0].Topic != "job.done" {
		t.Errorf("outbox of the good run: %+v %v", out, err)
	}
	want := []string{"created start ->QUEUED", "transition Begin QUEUED->WORKING", "step video_enqueued WORKING->WORKING", "transition Finish WORKING->DONE"}
	if diff := cmp.Diff(want, v.moves(t, good.ID)); diff != "" {
		t.Errorf("log of the good run (-want +got):\n%s", diff)
	}

	// The refused transition left nothing: no step, no message, no run; the
	// run is parked with the refusal.
	b := v.get(t, bad.ID)
	if b.State != "WORKING" || b.ParkedAt.IsZero() || b.LastErrorCode != engine.CodeTransitionRefused {
		t.Errorf("bad run: %s parked %v code %q", b.State, b.ParkedAt, b.LastErrorCode)
	}
	if out, err := v.st.Outbox(ctx, bad.ID); err != nil || len(out) != 0 {
		t.Errorf("outbox of the bad run: %+v %v", out, err)
	}
	want = []string{"created start ->QUEUED", "transition Begin QUEUED->WORKING", "step parked WORKING->WORKING"}
	if diff := cmp.Diff(want, v.moves(t, bad.ID)); diff != "" {
		t.Errorf("log of the bad run (-want +got):\n%s", diff)
	}
}
