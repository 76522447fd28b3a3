package engine_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
	"github.com/fsmgen/fsmgen/runtime/fsmtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

func TestCancelWhileHandlerRuns(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	started, release := make(chan string, 1), make(chan struct{})
	d := &driver{def: jobDef("job", nil, ""), guards: ownerGuard(), handlers: map[string]handler{
		"QUEUED": constant(event("Begin")),
		"WORKING": func(ctx context.Context, run *runtime.Run) (runtime.Event, error) {
			run.Effects.LogStep("half_done", map[string]int{"n": 1})
			run.Effects.Emit("job.finished", map[string]string{"id": run.ID})
			run.Effects.Enqueue("job", "follow-up", nil)
			started <- run.ID
			<-release
			return event("Finish"), nil
		},
	}}
	// No heartbeat before the handler returns: it learns at its transition.
	e := v.engine(t, engine.Config{Lease: time.Hour, Heartbeat: 30 * time.Minute, PollInterval: 10 * time.Millisecond}, d)
	run := v.start(t, e, "job", "k")
	driven := make(chan error, 1)
	go func() { _, err := e.Drive(context.Background(), run.ID); driven <- err }()
	<-started

	ctx := context.Background()
	if _, err := e.Cancel(ctx, run.ID, bob); !errors.Is(err, runtime.ErrNotOwner) {
		t.Errorf("Cancel by another user: %v, want ErrNotOwner", err)
	}
	got, err := e.Cancel(ctx, run.ID, alice)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != "CANCELLED" || got.Result == nil || got.Result.Status != runtime.StatusCancelled || got.Lease.Owner != "" {
		t.Errorf("cancelled run = %s %+v lease %q", got.State, got.Result, got.Lease.Owner)
	}
	close(release)
	err = <-driven
	if !errors.Is(err, runtime.ErrLeaseLost) {
		t.Errorf("Drive after the cancellation: %v, want ErrLeaseLost", err)
	}
	want := []string{"created start ->QUEUED", "transition Begin QUEUED->WORKING", "transition Cancel WORKING->CANCELLED"}
	if diff := cmp.Diff(want, v.moves(t, run.ID)); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
	if out, err := v.st.Outbox(ctx, run.ID); err != nil || len(out) != 0 {
		t.Errorf("outbox = %v, %v: the refused transition's message was written", out, err)
	}
	if runs, err := v.st.List(ctx, store.Filter{Filter: runtime.Filter{Type: "job"}}); err != nil || len(runs) != 1 {
		t.Errorf("%d runs (%v): the refused transition's enqueued run was written", len(runs), err)
	}
	if _, err := e.Cancel(ctx, run.ID, alice); !errors.Is(err, runtime.ErrRunFinished) {
		t.Errorf("Cancel of a cancelled run: %v, want ErrRunFinished", err)
	}
}

func TestCancelRefusedByGuard(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	d := &driver{def: jobDef("job", nil, ""), guards: map[string]func(ev) bool{"UserOwnsRun": func(ev) bool { return false }}}
	e := v.engine(t, engine.Config{}, d)
	run := v.start(t, e, "job", "k")
	if _, err := e.Cancel(context.Background(), run.ID, alice); !errors.Is(err, runtime.ErrNotOwner) || !errors.Is(err, runtime.ErrGuardRejected) {
		t.Errorf("Cancel refused by the guard: %v, want ErrNotOwner and ErrGuardRejected", err)
	}
	if got := v.get(t, run.ID); got.State != "QUEUED" {
		t.Errorf("run moved to %s", got.State)
	}
}

// TestHeartbeatKeepsLease: while a handler runs for several leases, by the
// database's clock, its heartbeats keep the lease, and a rival worker never
// takes the run.
func TestHeartbeatKeepsLease(t *testing.T) {
	t.Parallel()
	clk := fsmtest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	v := newEnv(t, store.WithClock(clk.Now))
	var calls atomic.Int32
	started, release := make(chan struct{}, 1), make(chan struct{})
	d := &driver{def: jobDef("job", nil, ""), guards: ownerGuard(), handlers: map[string]handler{
		"QUEUED": constant(event("Begin")),
		"WORKING": func(ctx context.Context, run *runtime.Run) (runtime.Event, error) {
			calls.Add(1)
			started <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
			return event("Finish"), nil
		},
	}}
	const lease = time.Minute
	cfg := engine.Config{Lease: lease, Heartbeat: 20 * time.Millisecond, PollInterval: 10 * time.Millisecond}
	e1 := v.engine(t, cfg, d)
	beats := make(chan error, 1024)
	e1.OnHeartbeat(func(_ string, err error) {
		select {
		case beats <- err:
		default:
		}
	})
	run := v.start(t, e1, "job", "k")
	work(t, e1)
	<-started
	e2 := v.engine(t, cfg, d) // a rival that would take an expired run
	work(t, e2)

	// Five times two thirds of a lease pass on the database's clock; after
	// each, the test waits for a heartbeat begun after it.
	for range 5 {
		clk.Advance(2 * lease / 3)
		for len(beats) > 0 {
			<-beats
		}
		for range 2 { // the first may have begun before the clock moved
			if err := <-beats; err != nil {
				t.Fatalf("heartbeat: %v", err)
			}
		}
	}
	close(release)
	got := wait(t, e1, run.ID, 30*time.Second)
	if got.State != "DONE" || calls.Load() != 1 {
		t.Errorf("run in %s after %d handler calls, want DONE after 1", got.State, calls.Load())
	}
	if s := v.steps(t, run.ID, "lease_expired"); len(s) != 0 {
		t.Errorf("the lease expired while the handler ran: %v", s)
	}
}

func TestLostLeaseCancelsHandler(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	causes := make(chan error, 1)
	d := &driver{def: jobDef("job", nil, ""), guards: ownerGuard(), handlers: map[string]handler{
		"QUEUED": constant(event("Begin")),
		"WORKING": func(ctx context.Context, run *runtime.Run) (runtime.Event, error) {
			// Another claim takes the run over (as after an expiry).
			if _, err := v.pool.Exec(context.Background(), "UPDATE workflow_runs SET lease_epoch = lease_epoch + 1 WHERE id = $1", run.ID); err != nil {
				return nil, err
			}
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return event("Finish"), nil
		},
	}}
	e := v.engine(t, engine.Config{Lease: 5 * time.Second, Heartbeat: 20 * time.Millisecond}, d)
	run := v.start(t, e, "job", "k")
	_, err := e.Drive(context.Background(), run.ID)
	if !errors.Is(err, runtime.ErrLeaseLost) {
		t.Errorf("Drive: %v, want ErrLeaseLost", err)
	}
	if cause := <-causes; !errors.Is(cause, runtime.ErrLeaseLost) {
		t.Errorf("the handler's context ended with %v, want ErrLeaseLost", cause)
	}
	want := []string{"created start ->QUEUED", "transition Begin QUEUED->WORKING"}
	if diff := cmp.Diff(want, v.moves(t, run.ID)); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
}

func TestShutdownReleasesLeases(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	started := make(chan struct{}, 4)
	blocking := &driver{def: jobDef("job", nil, ""), guards: ownerGuard(), handlers: map[string]handler{
		"QUEUED": constant(event("Begin")),
		"WORKING": func(ctx context.Context, run *runtime.Run) (runtime.Event, error) {
			started <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		},
	}}
	e1 := v.engine(t, engine.Config{Lease: time.Hour, ShutdownGrace: 2 * time.Second, PollInterval: 10 * time.Millisecond}, blocking)
	a, b := v.start(t, e1, "job", "a"), v.start(t, e1, "job", "b")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e1.Work(ctx) }()
	<-started
	<-started
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The abandoned tries are interrupted: the leases are given up as
	// expired, for the next claim to count and log the tries.
	now, err := v.st.Now(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{a.ID, b.ID} {
		got := v.get(t, id)
		if got.State != "WORKING" || got.Lease.ExpiresAt.After(now) || got.NextRunAt.IsZero() || got.StepAttempt != 1 {
			t.Errorf("after shutdown: state %s, lease %q until %v (now %v), next run %v, step attempt %d",
				got.State, got.Lease.Owner, got.Lease.ExpiresAt, now, got.NextRunAt, got.StepAttempt)
		}
	}
	// Another worker takes them at once, without waiting for an expiry.
	finishing := &driver{def: jobDef("job", nil, ""), guards: ownerGuard(), handlers: map[string]handler{"WORKING": constant(event("Finish"))}}
	e2 := v.engine(t, engine.Config{Lease: time.Hour}, finishing)
	if n, err := e2.RunDue(context.Background()); err != nil || n != 2 {
		t.Fatalf("RunDue after shutdown: %d, %v", n, err)
	}
	for _, id := range []string{a.ID, b.ID} {
		want := []string{"created start ->QUEUED", "transition Begin QUEUED->WORKING", "step lease_expired WORKING->WORKING", "transition Finish WORKING->DONE"}
		if diff := cmp.Diff(want, v.moves(t, id)); diff != "" {
			t.Errorf("log (-want +got):\n%s", diff)
		}
		if expired := v.steps(t, id, "lease_expired"); len(expired) != 1 || expired[0]["step_attempt"] != float64(2) {
			t.Errorf("lease_expired steps %v, want one counting the abandoned try (step attempt 2)", expired)
		}
	}
}

func TestShutdownLetsHandlerFinish(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	started := make(chan struct{}, 1)
	d := &driver{def: jobDef("job", nil, ""), guards: ownerGuard(), handlers: map[string]handler{
		"QUEUED": constant(event("Begin")),
		"WORKING": func(ctx context.Context, run *runtime.Run) (runtime.Event, error) {
			started <- struct{}{}
			time.Sleep(100 * time.Millisecond)
			return event("Finish"), nil
		},
	}}
	e := v.engine(t, engine.Config{ShutdownGrace: 5 * time.Second, PollInterval: 10 * time.Millisecond}, d)
	run := v.start(t, e, "job", "a")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Work(ctx) }()
	<-started
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := v.get(t, run.ID); got.State != "DONE" || got.Lease.Owner != "" {
		t.Errorf("after a graceful shutdown: %s, lease %q", got.State, got.Lease.Owner)
	}
}

// TestShutdownAbandonsStuckHandler: a handler that ignores its context
// does not keep Work from returning within its grace; the run's lease, no
// longer extended, expires, and another worker resumes the run.
func TestShutdownAbandonsStuckHandler(t *testing.T) {
	t.Parallel()
	clk := fsmtest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	v := newEnv(t, store.WithClock(clk.Now))
	started, unblock := make(chan struct{}, 1), make(chan struct{})
	t.Cleanup(func() { close(unblock) }) // lets the stuck goroutine end with the test
	stuck := &driver{def: jobDef("job", nil, ""), guards: ownerGuard(), handlers: map[string]handler{
		"QUEUED": constant(event("Begin")),
		"WORKING": func(context.Context, *runtime.Run) (runtime.Event, error) {
			started <- struct{}{}
			<-unblock // ignores its context
			return nil, errors.New("too late")
		},
	}}
	cfg := engine.Config{Lease: time.Hour, ShutdownGrace: 200 * time.Millisecond, PollInterval: 10 * time.Millisecond}
	e1 := v.engine(t, cfg, stuck)
	run := v.start(t, e1, "job", "k")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e1.Work(ctx) }()
	<-started
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Work did not return with a handler that ignores its context")
	}
	held := v.get(t, run.ID)
	if held.State != "WORKING" || held.Lease.Owner != e1.WorkerID() {
		t.Fatalf("after the shutdown: %s, lease %q", held.State, held.Lease.Owner)
	}

	// Once the lease has expired, by the database's clock, another worker
	// takes the run and finishes it; the interrupted try is counted.
	finishing := &driver{def: jobDef("job", nil, ""), guards: ownerGuard(), handlers: map[string]handler{"WORKING": constant(event("Finish"))}}
	e2 := v.engine(t, engine.Config{Lease: time.Hour}, finishing)
	runDue(t, e2, 0)
	clk.Advance(time.Hour)
	runDue(t, e2, 1)
	want := []string{"created start ->QUEUED", "transition Begin QUEUED->WORKING",
		"step lease_expired WORKING->WORKING", "transition Finish WORKING->DONE"}
	if diff := cmp.Diff(want, v.moves(t, run.ID)); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
}

// TestNotOwnerErrorNamesTheCallerWhole: the refusal names the caller's id
// whole, however long, quoted as the owner's is.
func TestNotOwnerErrorNamesTheCallerWhole(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	d := &driver{def: jobDef("job", nil, ""), guards: ownerGuard()}
	e := v.engine(t, engine.Config{}, d)
	run := v.start(t, e, "job", "k")
	const caller = "svc-account:billing-reconciler@payments.example.com"
	_, err := e.Cancel(context.Background(), run.ID, caller)
	want := `engine: cancel run ` + run.ID + `: not authorized: not the run's owner: user "` + caller + `" may not cancel a run of user "` + alice + `"`
	if err == nil || err.Error() != want || !errors.Is(err, runtime.ErrNotOwner) {
		t.Errorf("Cancel by another user:\n got %v\nwant %s", err, want)
	}
}
