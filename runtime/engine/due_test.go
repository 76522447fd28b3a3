package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// claims records Work's claims that took runs: what started each round,
// and how many runs it took.
type claims struct {
	mu  sync.Mutex
	got []string
}

func (c *claims) hook(why string, n int) {
	if n == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, fmt.Sprintf("%s %d", why, n))
}

func (c *claims) list() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.got...)
}

// TestSubSecondRetryStartsWhenDue: a retry 200 ms after a failed try is
// claimed when it falls due, by a worker that would otherwise poll only
// once an hour and hears no notification: the claim comes from the due
// time the worker remembers, and not before the run is due.
func TestSubSecondRetryStartsWhenDue(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	var (
		mu    sync.Mutex
		calls []time.Time
	)
	pol := &runtime.RetryPolicy{MaxAttempts: 2, InitialInterval: 200 * time.Millisecond, Coefficient: 1}
	d := &driver{def: jobDef("job", pol, "GiveUp"), guards: ownerGuard(), handlers: map[string]handler{
		"QUEUED": constant(event("Begin")),
		"WORKING": func(ctx context.Context, run *runtime.Run) (runtime.Event, error) {
			now, err := v.st.Now(ctx)
			if err != nil {
				return nil, err
			}
			mu.Lock()
			defer mu.Unlock()
			calls = append(calls, now)
			if len(calls) == 1 {
				return nil, errors.New("not yet")
			}
			return event("Finish"), nil
		},
	}}
	e := v.engine(t, engine.Config{PollInterval: time.Hour, DisableNotify: true}, d)
	var c claims
	e.OnClaimed(c.hook)
	run := v.start(t, e, "job", "k")
	work(t, e)
	if got := wait(t, e, run.ID, time.Minute); got.State != "DONE" {
		t.Fatalf("run in %s", got.State)
	}
	if diff := cmp.Diff([]string{"start 1", "due 1"}, c.list()); diff != "" {
		t.Errorf("claims that took the run (-want +got):\n%s", diff)
	}
	failed := v.steps(t, run.ID, "attempt_failed")
	if len(failed) != 1 {
		t.Fatalf("attempt_failed steps: %v", failed)
	}
	due, err := time.Parse(time.RFC3339Nano, failed[0]["next_run_at"].(string))
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 2 || calls[1].Before(due) {
		t.Errorf("handler called at %v, the retry due at %v", calls, due)
	}
}

// TestSubSecondTimerFiresWhenDue: a timer 500 ms after a run starts
// waiting fires when it falls due, by a worker that would otherwise poll
// only once an hour and hears no notification.
func TestSubSecondTimerFiresWhenDue(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	dr := approvalDriver()
	for i, s := range dr.def.States {
		if s.Name == "AWAIT" {
			dr.def.States[i].Timers = []runtime.Timer{{After: 500 * time.Millisecond, Event: "Timeout"}}
		}
	}
	e := v.engine(t, engine.Config{PollInterval: time.Hour, DisableNotify: true}, dr)
	var c claims
	e.OnClaimed(c.hook)
	run := v.start(t, e, "approval", "k")
	work(t, e)
	got := wait(t, e, run.ID, time.Minute)
	if got.State != "EXPIRED" {
		t.Fatalf("run in %s", got.State)
	}
	if diff := cmp.Diff([]string{"start 1", "due 1"}, c.list()); diff != "" {
		t.Errorf("claims that took the run (-want +got):\n%s", diff)
	}
	h, err := v.st.History(context.Background(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	var entered, fired time.Time
	for _, s := range h {
		switch s.Event {
		case "Begin":
			entered = s.At
		case "Timeout":
			fired = s.At
		}
	}
	if fired.Sub(entered) < 500*time.Millisecond {
		t.Errorf("the timer fired %v after the run entered AWAIT, want 500ms at least", fired.Sub(entered))
	}
}

// TestStartInWaitingState: a run whose initial state waits for an event
// without a timer is not due when it starts, nor when it starts again
// after failing: no worker claims it until an event moves it. One whose
// initial state waits with a timer is due when the timer is.
func TestStartInWaitingState(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	v := newEnv(t)
	waiting := running("WAITING")
	waiting.Wait = true
	timed := running("WAITING")
	timed.Wait = true
	timed.Timers = []runtime.Timer{{After: time.Hour, Event: "Lapse"}}
	rows := [][]string{{"WAITING", "Go", "DONE"}, {"WAITING", "Fail", "FAILED"}, {"WAITING", "Lapse", "FAILED"}}
	states := func(first runtime.StateSpec) []runtime.StateSpec {
		return []runtime.StateSpec{first, final("DONE", runtime.StatusSucceeded), final("FAILED", runtime.StatusFailed)}
	}
	e := v.engine(t, engine.Config{},
		&driver{def: def("inbox", states(waiting), rows...)},
		&driver{def: def("timed", states(timed), rows...)})

	run := v.start(t, e, "inbox", "k")
	if !run.NextRunAt.IsZero() {
		t.Errorf("a run started waiting without a timer is due at %v", run.NextRunAt)
	}
	runDue(t, e, 0)
	if _, err := e.Signal(ctx, run.ID, event("Fail")); err != nil {
		t.Fatal(err)
	}
	res, err := e.Start(ctx, runtime.StartRequest{Type: "inbox", IdempotencyKey: "k", Owner: runtime.Owner{TenantID: "t1", UserID: alice}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Run.Attempt != 2 || !res.Run.NextRunAt.IsZero() {
		t.Errorf("restarted run: attempt %d, due at %v; want attempt 2, not due", res.Run.Attempt, res.Run.NextRunAt)
	}
	runDue(t, e, 0)
	if got := v.get(t, run.ID); !got.NextRunAt.IsZero() || got.State != "WAITING" {
		t.Errorf("run in %s due at %v, want WAITING, not due", got.State, got.NextRunAt)
	}

	tr := v.start(t, e, "timed", "k")
	if want := tr.UpdatedAt.Add(time.Hour); !tr.NextRunAt.Equal(want) {
		t.Errorf("a run started waiting for a timer of an hour is due at %v, want %v", tr.NextRunAt, want)
	}
	runDue(t, e, 0)
}

// TestChildAndEnqueuedRunsStartWaiting: a run started by StartChild or
// Effects.Enqueue is scheduled as Start schedules one: not due when its
// initial state waits without a timer, so that no worker claims it until
// an event moves it, and due at the first timer when it has one.
func TestChildAndEnqueuedRunsStartWaiting(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	v := newEnv(t)
	waiting := running("WAITING")
	waiting.Wait = true
	timed := running("WAITING")
	timed.Wait = true
	timed.Timers = []runtime.Timer{{After: time.Hour, Event: "Lapse"}}
	rows := [][]string{{"WAITING", "Go", "DONE"}, {"WAITING", "Fail", "FAILED"}, {"WAITING", "Lapse", "FAILED"}}
	states := func(first runtime.StateSpec) []runtime.StateSpec {
		return []runtime.StateSpec{first, final("DONE", runtime.StatusSucceeded), final("FAILED", runtime.StatusFailed)}
	}
	parked := running("P_WAIT")
	parked.Wait = true
	parent := &driver{
		def: def("spawner", []runtime.StateSpec{running("P_START"), parked, final("P_DONE", runtime.StatusSucceeded)},
			[]string{"P_START", "Spawned", "P_WAIT"}, []string{"P_WAIT", "KidDone", "P_DONE"}),
		handlers: map[string]handler{"P_START": func(_ context.Context, run *runtime.Run) (runtime.Event, error) {
			for _, typ := range []string{"inbox", "timed"} {
				if err := runtime.StartChild(run, runtime.Child{Type: typ, IdempotencyKey: "child-" + typ, Event: "KidDone"}); err != nil {
					return nil, err
				}
				run.Effects.Enqueue(typ, "enqueued-"+typ, nil)
			}
			return event("Spawned"), nil
		}},
	}
	e := v.engine(t, engine.Config{}, parent,
		&driver{def: def("inbox", states(waiting), rows...)},
		&driver{def: def("timed", states(timed), rows...)})

	p := v.start(t, e, "spawner", "p")
	runDue(t, e, 1)
	if got := v.get(t, p.ID); got.State != "P_WAIT" {
		t.Fatalf("parent in %s, want P_WAIT", got.State)
	}
	var got []string
	for _, typ := range []string{"inbox", "timed"} {
		runs, err := v.st.List(ctx, store.Filter{Filter: runtime.Filter{Type: typ}})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			due := "not due"
			if !r.NextRunAt.IsZero() {
				due = fmt.Sprintf("due +%v", r.NextRunAt.Sub(r.UpdatedAt))
			}
			got = append(got, fmt.Sprintf("%s %s child=%t %s", typ, r.IdempotencyKey, r.ParentID != "", due))
		}
	}
	slices.Sort(got)
	want := []string{
		"inbox child-inbox child=true not due",
		"inbox enqueued-inbox child=false not due",
		"timed child-timed child=true due +1h0m0s",
		"timed enqueued-timed child=false due +1h0m0s",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("started runs (-want +got):\n%s", diff)
	}
	runDue(t, e, 0)
}
