package linearchain_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/runtime/linearchain"
)

// inbox is every inbox row as event:outcome:step_seq, in the order
// received.
func inbox(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT event_id || ':' || outcome || ':' || coalesce(step_seq::text, '-')
		FROM workflow_chain_inbox ORDER BY received_at, event_id`)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func deliver(t *testing.T, e *linearchain.Engine, ev linearchain.Inbound, want linearchain.Delivery) {
	t.Helper()
	got, err := e.Deliver(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("deliver %s (-want +got):\n%s", ev.ID, diff)
	}
}

// waitsForPayment waits for "paid" once, then completes, and records the
// events it saw.
type waitsForPayment struct{ seen []*linearchain.Event }

func (w *waitsForPayment) handle(_ context.Context, t linearchain.Task) linearchain.Result {
	w.seen = append(w.seen, t.Event)
	if t.Event == nil {
		return linearchain.Waiting("paid", time.Minute)
	}
	return linearchain.Completed()
}

// An event that arrives before its step is WAITING (the step READY, or
// RUNNING with its handler still at work) is kept in the inbox as early
// and applied when the step starts WAITING for its type: the Waiting
// result wakes the step at once, and its handler sees the event. An event
// of a type no step has waited for yet stays early.
func TestEarlyEventIsKeptAndAppliedWhenTheStepWaits(t *testing.T) {
	t.Parallel()
	pay := &waitsForPayment{}
	e, pool := newEngine(t, linearchain.Definition{Type: "flow", Version: 1, Steps: []linearchain.Step{
		{Type: "PAY", Handler: pay.handle}, {Type: "SHIP", Handler: returns(linearchain.Completed()).handle}}})
	ready := start(t, e, "flow", "ready")

	// Before the step is even claimed.
	deliver(t, e, linearchain.Inbound{ID: "paid-1", Type: "paid", InstanceID: ready, Payload: json.RawMessage(`{"n":1}`)},
		linearchain.Delivery{Outcome: linearchain.Early, InstanceID: ready})
	deliver(t, e, linearchain.Inbound{ID: "refund-1", Type: "refunded", InstanceID: ready}, linearchain.Delivery{Outcome: linearchain.Early, InstanceID: ready})
	a := execute(t, e, claimOne(t, e, w1))
	if a.Step.String() != "READY" || a.Instance != "RUNNING" {
		t.Fatalf("Waiting with its event in the inbox: %+v, want the step READY at once", a)
	}
	in := wantStatuses(t, e, ready, "RUNNING", "READY", "PENDING")
	if s := in.Steps[0]; s.WaitingEventType != nil || s.DeadlineAt != nil || s.NextRunAt == nil {
		t.Fatalf("woken step %+v", s)
	}
	task := claimOne(t, e, w1)
	if task.Event == nil || task.Event.ID != "paid-1" || string(task.Event.Payload) != `{"n": 1}` {
		t.Fatalf("woken step claimed as %+v", task)
	}
	execute(t, e, task)
	execute(t, e, claimOne(t, e, w1))
	wantStatuses(t, e, ready, "COMPLETED", "DONE", "DONE")

	// While the step runs: claimed, the event arrives, then the handler
	// returns Waiting.
	running := start(t, e, "flow", "running")
	task = claimOne(t, e, w2)
	deliver(t, e, linearchain.Inbound{ID: "paid-2", Type: "paid", WorkflowType: "flow", InstanceKey: "running"},
		linearchain.Delivery{Outcome: linearchain.Early, InstanceID: running})
	if a := execute(t, e, task); a.Step.String() != "READY" {
		t.Fatalf("Waiting with its event in the inbox: %+v, want the step READY at once", a)
	}
	execute(t, e, claimOne(t, e, w2))
	execute(t, e, claimOne(t, e, w2))
	wantStatuses(t, e, running, "COMPLETED", "DONE", "DONE")

	if diff := cmp.Diff([]string{"paid-1:applied:0", "refund-1:early:0", "paid-2:applied:0"}, inbox(t, pool)); diff != "" {
		t.Errorf("inbox (-want +got):\n%s", diff)
	}
	var woken []logRow
	for _, r := range statusLog(t, pool, "workflow_step_status_log") {
		if r.Event == "Waiting" || r.Event == "WakeUp" {
			woken = append(woken, r)
		}
	}
	want := []logRow{
		{`{"step_seq": 0, "instance_id": 1}`, "RUNNING", "WAITING", "Waiting", w1.WorkerID},
		{`{"step_seq": 0, "instance_id": 1}`, "WAITING", "READY", "WakeUp", w1.WorkerID},
		{`{"step_seq": 0, "instance_id": 2}`, "RUNNING", "WAITING", "Waiting", w2.WorkerID},
		{`{"step_seq": 0, "instance_id": 2}`, "WAITING", "READY", "WakeUp", w2.WorkerID},
	}
	if diff := cmp.Diff(want, woken); diff != "" {
		t.Errorf("Waiting and WakeUp in the step log (-want +got):\n%s", diff)
	}
}

// An event that arrives while the step WAITS for another type is early
// too: a later step that waits for its type takes it.
func TestEventForALaterWaitIsKept(t *testing.T) {
	t.Parallel()
	first, second := &waitsForPayment{}, &waitsForPayment{}
	e, pool := newEngine(t, linearchain.Definition{Type: "flow", Version: 1, Steps: []linearchain.Step{
		{Type: "PAY", Handler: first.handle}, {Type: "PAY_AGAIN", Handler: second.handle}}})
	id := start(t, e, "flow", "k")
	execute(t, e, claimOne(t, e, w1)) // PAY waits for "paid"
	deliver(t, e, linearchain.Inbound{ID: "paid-1", Type: "paid", InstanceID: id}, linearchain.Delivery{Outcome: linearchain.Woken, InstanceID: id})
	deliver(t, e, linearchain.Inbound{ID: "paid-2", Type: "paid", InstanceID: id}, linearchain.Delivery{Outcome: linearchain.Early, InstanceID: id})
	execute(t, e, claimOne(t, e, w1)) // PAY completes
	if a := execute(t, e, claimOne(t, e, w1)); a.Step.String() != "READY" {
		t.Fatalf("PAY_AGAIN's wait: %+v, want READY at once", a)
	}
	task := claimOne(t, e, w1)
	if task.StepSeq != 1 || task.Event == nil || task.Event.ID != "paid-2" {
		t.Fatalf("PAY_AGAIN claimed as %+v", task)
	}
	execute(t, e, task)
	wantStatuses(t, e, id, "COMPLETED", "DONE", "DONE")
	if diff := cmp.Diff([]string{"paid-1:applied:0", "paid-2:applied:1"}, inbox(t, pool)); diff != "" {
		t.Errorf("inbox (-want +got):\n%s", diff)
	}
}

// An on-time event wakes the waiting step; its handler sees it.
func TestOnTimeEventWakesTheStep(t *testing.T) {
	t.Parallel()
	pay := &waitsForPayment{}
	e, pool := newEngine(t, linearchain.Definition{Type: "flow", Version: 1, Steps: []linearchain.Step{{Type: "PAY", Handler: pay.handle}}})
	id := start(t, e, "flow", "k")
	if a := execute(t, e, claimOne(t, e, w1)); a.Step.String() != "WAITING" {
		t.Fatalf("%+v", a)
	}
	if err := linearchain.AdvanceClock(context.Background(), pool, time.Minute-time.Second); err != nil {
		t.Fatal(err)
	}
	deliver(t, e, linearchain.Inbound{ID: "paid-1", Type: "paid", InstanceID: id}, linearchain.Delivery{Outcome: linearchain.Woken, InstanceID: id})
	task := claimOne(t, e, w1)
	if task.Event == nil || task.Event.ID != "paid-1" {
		t.Fatalf("woken step claimed as %+v", task)
	}
	execute(t, e, task)
	wantStatuses(t, e, id, "COMPLETED", "DONE")
}

// An event after the deadline of the wait it matches is late: not
// applied. The deadline wins: with the default options (no claim of
// timed-out steps) the next claim times the step out, DEAD with
// WAITING_TIMEOUT, and fails the instance; the handler does not run again.
func TestLateEventLosesToTheDeadline(t *testing.T) {
	t.Parallel()
	pay := &waitsForPayment{}
	e, pool := newEngine(t, linearchain.Definition{Type: "flow", Version: 1, Steps: []linearchain.Step{{Type: "PAY", Handler: pay.handle}}})
	ctx := context.Background()
	id := start(t, e, "flow", "k")
	execute(t, e, claimOne(t, e, w1))
	if err := linearchain.AdvanceClock(ctx, pool, time.Minute); err != nil {
		t.Fatal(err)
	}
	deliver(t, e, linearchain.Inbound{ID: "paid-late", Type: "paid", InstanceID: id}, linearchain.Delivery{Outcome: linearchain.Late, InstanceID: id})
	wantStatuses(t, e, id, "RUNNING", "WAITING")
	c := claimNone(t, e, w2)
	if c.TimedOut != 1 || c.Recovered != 0 {
		t.Fatalf("claim past the deadline: %+v, want one wait timed out", c)
	}
	in := wantStatuses(t, e, id, "FAILED", "DEAD")
	if s := in.Steps[0]; *s.LastError != "WAITING_TIMEOUT" || s.Attempts != 0 || *s.WaitingEventType != "paid" || in.FailedAt == nil {
		t.Errorf("timed-out step %+v of %+v", s, in)
	}
	claimNone(t, e, w2)
	if len(pay.seen) != 1 {
		t.Errorf("handler ran %d times, want 1", len(pay.seen))
	}
	if diff := cmp.Diff([]string{"paid-late:late:0"}, inbox(t, pool)); diff != "" {
		t.Errorf("inbox (-want +got):\n%s", diff)
	}
	wantLastLog(t, pool, "workflow_step_status_log", logRow{`{"step_seq": 0, "instance_id": 1}`, "WAITING", "DEAD", "TimedOut", w2.WorkerID})
	wantLastLog(t, pool, "workflow_instance_status_log", logRow{`{"id": 1}`, "RUNNING", "FAILED", "StepDead", w2.WorkerID})
}

// No event at all: with Run's default options a wait ends at its deadline
// (DEAD, WAITING_TIMEOUT, the instance FAILED); it does not wait forever.
// A worker times out only the waits of workflows it runs.
func TestNoEventPastTheDeadlineTimesOutWithTheDefaults(t *testing.T) {
	t.Parallel()
	pay := &waitsForPayment{}
	e, pool := newEngine(t, linearchain.Definition{Type: "flow", Version: 1, Steps: []linearchain.Step{{Type: "PAY", Handler: pay.handle}}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Another workflow's engine, on the same database, times nothing of
	// "flow" out.
	other := linearchain.New(pool)
	if err := other.Register(def("other.flow", 3, abc[:1], returns(linearchain.Completed()))); err != nil {
		t.Fatal(err)
	}
	id := start(t, e, "flow", "k")
	execute(t, e, claimOne(t, e, w1))
	if err := linearchain.AdvanceClock(ctx, pool, time.Minute); err != nil {
		t.Fatal(err)
	}
	if c := claimNone(t, other, w2); c.TimedOut != 0 {
		t.Fatalf("the other workflow's engine timed out %d waits", c.TimedOut)
	}
	wantStatuses(t, e, id, "RUNNING", "WAITING")

	claims := make(chan linearchain.Claimed, 16)
	done := make(chan error)
	go func() {
		done <- e.Run(ctx, linearchain.RunOptions{OnClaimed: func(c linearchain.Claimed) { claims <- c }})
	}()
	select {
	case c := <-claims:
		if c.TimedOut != 1 || len(c.Tasks) != 0 {
			t.Errorf("the worker's claim: %+v, want one wait timed out", c)
		}
	case <-time.After(time.Minute):
		t.Fatal("the wait past its deadline was not timed out")
	}
	cancel()
	<-done
	in := wantStatuses(t, e, id, "FAILED", "DEAD")
	if s := in.Steps[0]; *s.LastError != "WAITING_TIMEOUT" {
		t.Errorf("timed-out step %+v", s)
	}
}
