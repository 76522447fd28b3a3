package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
)

// scope is the context key under which the tracing middleware below puts
// the step being wrapped, as a tracer puts its span.
type scope struct{}

func scopeOf(ctx context.Context) string {
	s, _ := ctx.Value(scope{}).(string)
	return s
}

// tracer is a middleware that logs every step as a line naming the step
// wrapped around it (read from the context), and wraps the context of the
// step's code with the step's own name.
type tracer struct {
	name string
	mu   sync.Mutex
	log  []string
	// claims are logged only with logClaims: Work polls.
	logClaims bool
}

func (m *tracer) add(format string, args ...any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.log = append(m.log, m.name+": "+fmt.Sprintf(format, args...))
}

func (m *tracer) lines() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.log...)
}

func (m *tracer) Claim(ctx context.Context, c engine.ClaimInfo, next func(context.Context) (int, error)) (int, error) {
	n, err := next(context.WithValue(ctx, scope{}, "claim"))
	if m.logClaims {
		m.add("claim in %q worker=%s limit=%d run=%t: %d %v", scopeOf(ctx), c.WorkerID, c.Limit, c.RunID != "", n, err)
	}
	return n, err
}

func (m *tracer) Drive(ctx context.Context, run runtime.Run, next func(context.Context) (runtime.Run, error)) (runtime.Run, error) {
	m.add("drive in %q %s from %s", scopeOf(ctx), run.Type, run.State)
	after, err := next(context.WithValue(ctx, scope{}, "drive"))
	m.add("drive ended in %s %s parked=%t: %v", after.State, after.Status, !after.ParkedAt.IsZero(), err)
	return after, err
}

func (m *tracer) Handle(ctx context.Context, run *runtime.Run, state string, next func(context.Context) (runtime.Event, error)) (runtime.Event, error) {
	ev, err := next(context.WithValue(ctx, scope{}, "handle "+state))
	name := "-"
	if ev != nil {
		name = ev.EventName()
	}
	m.add("handle in %q %s try %d of attempt %d: %s %v", scopeOf(ctx), state, run.StepAttempt, run.Attempt, name, err)
	return ev, err
}

func (m *tracer) Transition(ctx context.Context, run *runtime.Run, from string, ev runtime.Event, next func(context.Context) (runtime.Transition, error)) (runtime.Transition, error) {
	t, err := next(context.WithValue(ctx, scope{}, "transition"))
	m.add("transition in %q %s on %s -> %q (%s): %v", scopeOf(ctx), from, ev.EventName(), t.To, t.Status, err)
	return t, err
}

func (m *tracer) Command(ctx context.Context, c engine.CommandInfo, next func(context.Context) (runtime.Run, error)) (runtime.Run, error) {
	run, err := next(context.WithValue(ctx, scope{}, c.Command))
	m.add("%s in %q event=%q user=%q: %s %v", c.Command, scopeOf(ctx), c.Event, c.UserID, run.State, err)
	return run, err
}

// TestMiddlewareWrapsEveryStep drives runs inline, signals and cancels
// them, with a middleware that logs each step and the step its context
// comes from: the claim, then the session around the handlers and
// transitions, each with what came of it; the commands Signal and Cancel
// in their caller's context, around their transitions; a failed handler
// and the exhausted state's transition; an event refused; a cancel by a
// user who does not own the run, refused before any transition. The
// handler and the guard see the context the middleware gave.
func TestMiddlewareWrapsEveryStep(t *testing.T) {
	t.Parallel()
	ctx := context.WithValue(context.Background(), scope{}, "caller")
	v := newEnv(t)
	var seen []string
	var mu sync.Mutex
	saw := func(ctx context.Context, where string) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, where+" sees "+scopeOf(ctx))
	}
	d := &driver{def: jobDef("job", nil, "GiveUp"), handlers: map[string]handler{
		"QUEUED": func(ctx context.Context, _ *runtime.Run) (runtime.Event, error) {
			saw(ctx, "handler of QUEUED")
			return event("Begin"), nil
		},
		"WORKING": func(ctx context.Context, run *runtime.Run) (runtime.Event, error) {
			saw(ctx, "handler of WORKING")
			if strings.HasPrefix(run.IdempotencyKey, "fail") {
				return nil, runtime.WithCode("DOWN", errors.New("the service is down"))
			}
			return event("Finish"), nil
		},
	}, guards: map[string]func(ev) bool{"UserOwnsRun": func(e ev) bool { return e.data["userID"] != "blocked" }}}
	m := &tracer{name: "m", logClaims: true}
	e := v.engine(t, engine.Config{WorkerID: "w1", Middleware: []engine.Middleware{m}}, d)

	ok := v.start(t, e, "job", "ok")
	if run, err := e.Drive(ctx, ok.ID); err != nil || run.State != "DONE" {
		t.Fatalf("Drive = %s, %v", run.State, err)
	}
	failed := v.start(t, e, "job", "fail")
	if run, err := e.Drive(ctx, failed.ID); err != nil || run.State != "FAILED" {
		t.Fatalf("Drive = %s, %v", run.State, err)
	}
	cancelled := v.start(t, e, "job", "cancel")
	if _, err := e.Signal(ctx, cancelled.ID, event("Nope")); !errors.Is(err, runtime.ErrIllegalTransition) {
		t.Fatalf("Signal of an event QUEUED refuses = %v, want ErrIllegalTransition", err)
	}
	if _, err := e.Cancel(ctx, cancelled.ID, "mallory"); !errors.Is(err, runtime.ErrNotOwner) {
		t.Fatalf("Cancel by another user = %v, want ErrNotOwner", err)
	}
	if run, err := e.Cancel(ctx, cancelled.ID, alice); err != nil || run.State != "CANCELLED" {
		t.Fatalf("Cancel = %s, %v", run.State, err)
	}

	want := []string{
		`m: claim in "caller" worker=w1 limit=1 run=true: 1 <nil>`,
		`m: drive in "caller" job from QUEUED`,
		`m: handle in "drive" QUEUED try 1 of attempt 1: Begin <nil>`,
		`m: transition in "drive" QUEUED on Begin -> "WORKING" (running): <nil>`,
		`m: handle in "drive" WORKING try 1 of attempt 1: Finish <nil>`,
		`m: transition in "drive" WORKING on Finish -> "DONE" (succeeded): <nil>`,
		`m: drive ended in DONE succeeded parked=false: <nil>`,
		`m: claim in "caller" worker=w1 limit=1 run=true: 1 <nil>`,
		`m: drive in "caller" job from QUEUED`,
		`m: handle in "drive" QUEUED try 1 of attempt 1: Begin <nil>`,
		`m: transition in "drive" QUEUED on Begin -> "WORKING" (running): <nil>`,
		`m: handle in "drive" WORKING try 1 of attempt 1: - DOWN: the service is down`,
		`m: transition in "drive" WORKING on GiveUp -> "FAILED" (failed): <nil>`,
		`m: drive ended in FAILED failed parked=false: <nil>`,
		`m: transition in "signal" QUEUED on Nope -> "" (): job: illegal transition: state QUEUED has no transition on event Nope`,
		`m: signal in "caller" event="Nope" user="": QUEUED engine: signal Nope run ` + cancelled.ID + `: job: illegal transition: state QUEUED has no transition on event Nope`,
		`m: cancel in "caller" event="" user="mallory": QUEUED engine: cancel run ` + cancelled.ID + `: not authorized: not the run's owner: user "mallory" may not cancel a run of user "` + alice + `"`,
		`m: transition in "cancel" QUEUED on Cancel -> "CANCELLED" (cancelled): <nil>`,
		`m: cancel in "caller" event="" user="` + alice + `": CANCELLED <nil>`,
	}
	if diff := cmp.Diff(want, m.lines()); diff != "" {
		t.Errorf("middleware log (-want +got):\n%s", diff)
	}
	wantSeen := []string{
		"handler of QUEUED sees handle QUEUED", "handler of WORKING sees handle WORKING",
		"handler of QUEUED sees handle QUEUED", "handler of WORKING sees handle WORKING",
	}
	if diff := cmp.Diff(wantSeen, seen); diff != "" {
		t.Errorf("contexts the handlers saw (-want +got):\n%s", diff)
	}
}

// TestMiddlewareOrder: the first middleware of the list is the outermost,
// and each sees the context the one around it gave; Work's claims and
// sessions go through them too.
func TestMiddlewareOrder(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	outer, inner := &tracer{name: "outer"}, &tracer{name: "inner"}
	d := &driver{def: def("one", []runtime.StateSpec{running("A"), final("B", runtime.StatusSucceeded)}, []string{"A", "Go", "B"}),
		handlers: map[string]handler{"A": constant(event("Go"))}}
	e := v.engine(t, engine.Config{Middleware: []engine.Middleware{outer, nil, inner}}, d)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Work(ctx) }()
	run := v.start(t, e, "one", "k")
	if got := wait(t, e, run.ID, 30*time.Second); got.State != "B" {
		t.Fatalf("run in %s", got.State)
	}
	// Work returns once its sessions have ended.
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"outer": {
			`outer: drive in "" one from A`,
			`outer: handle in "drive" A try 1 of attempt 1: Go <nil>`,
			`outer: transition in "drive" A on Go -> "B" (succeeded): <nil>`,
			`outer: drive ended in B succeeded parked=false: <nil>`,
		},
		"inner": {
			`inner: drive in "drive" one from A`,
			`inner: handle in "handle A" A try 1 of attempt 1: Go <nil>`,
			`inner: transition in "transition" A on Go -> "B" (succeeded): <nil>`,
			`inner: drive ended in B succeeded parked=false: <nil>`,
		},
	}
	for _, m := range []*tracer{outer, inner} {
		if diff := cmp.Diff(want[m.name], m.lines()); diff != "" {
			t.Errorf("%s (-want +got):\n%s", m.name, diff)
		}
	}
}

// traceCarrier is a middleware that traces: the trace context of a
// context is the string under scope{}, and it records the run's trace
// context each session is given.
type traceCarrier struct {
	engine.MiddlewareDefaults
	mu       sync.Mutex
	sessions []string
}

func (m *traceCarrier) TraceParent(ctx context.Context) string { return scopeOf(ctx) }

func (m *traceCarrier) Drive(ctx context.Context, run runtime.Run, next func(context.Context) (runtime.Run, error)) (runtime.Run, error) {
	m.mu.Lock()
	m.sessions = append(m.sessions, run.State+" "+engine.RunTraceParent(ctx))
	m.mu.Unlock()
	return next(ctx)
}

// TestMiddlewareTraceContext: the trace context of the context a run is
// started in (TraceContext) is stored with the run; every later session
// on the run, in a context of its own, is given it, and the messages the
// run emits and the runs it starts carry it. A run started without one
// has none.
func TestMiddlewareTraceContext(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	d := &driver{def: jobDef("job", nil, "GiveUp"), handlers: map[string]handler{
		"QUEUED": constant(event("Begin")),
		"WORKING": func(_ context.Context, run *runtime.Run) (runtime.Event, error) {
			run.Effects.Emit("job.done", nil)
			if run.IdempotencyKey != "child" {
				run.Effects.Enqueue("job", "child", nil)
			}
			return event("Finish"), nil
		},
	}}
	m := &traceCarrier{}
	e := v.engine(t, engine.Config{Middleware: []engine.Middleware{m}}, d)
	traced, err := e.Start(context.WithValue(context.Background(), scope{}, tp), runtime.StartRequest{Type: "job", IdempotencyKey: "traced", Owner: runtime.Owner{TenantID: "t1", UserID: alice}})
	if err != nil {
		t.Fatal(err)
	}
	plain := v.start(t, e, "job", "plain")
	for _, id := range []string{traced.Run.ID, plain.ID} {
		if run, err := e.Drive(context.Background(), id); err != nil || run.State != "DONE" {
			t.Fatalf("Drive = %s, %v", run.State, err)
		}
	}
	if diff := cmp.Diff([]string{"QUEUED " + tp, "QUEUED "}, m.sessions); diff != "" {
		t.Errorf("the sessions' run trace contexts (-want +got):\n%s", diff)
	}
	var got []string
	rows, err := v.pool.Query(context.Background(), `SELECT r.idempotency_key || ' ' || coalesce(r.trace_parent, '-') || ' ' || coalesce(o.trace_parent, '-')
		FROM workflow_runs r JOIN workflow_outbox o ON o.workflow_run_id = r.id ORDER BY o.id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		got = append(got, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"traced " + tp + " " + tp, "plain - -"}, got); diff != "" {
		t.Errorf("runs and their messages (-want +got):\n%s", diff)
	}
	var child string
	if err := v.pool.QueryRow(context.Background(), `SELECT coalesce(trace_parent, '-') FROM workflow_runs WHERE idempotency_key = 'child'`).Scan(&child); err != nil {
		t.Fatal(err)
	}
	if child != tp {
		t.Errorf("the child run's trace context %q, want its parent's %q", child, tp)
	}
}
