package linearchain_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/linearchain"
)

var abc = []string{"A", "B", "C"}

func TestStartWritesTheWholePlanOnceAndIsIdempotent(t *testing.T) {
	t.Parallel()
	e, pool := newEngine(t, def("flow", 4, abc, returns(linearchain.Completed()), returns(linearchain.Completed()), returns(linearchain.Completed())))
	ctx := context.Background()
	first, err := e.Start(ctx, "flow", 1, "k1", map[string]int{"n": 1})
	if err != nil {
		t.Fatal(err)
	}
	again, err := e.Start(ctx, "flow", 1, "k1", map[string]int{"n": 2})
	if err != nil {
		t.Fatal(err)
	}
	if !first.Created || again.Created || again.InstanceID != first.InstanceID {
		t.Fatalf("Start twice: %+v then %+v; want the same instance, created once", first, again)
	}
	in := wantStatuses(t, e, first.InstanceID, "RUNNING", "READY", "PENDING", "PENDING")
	if in.CurrentStepSeq != 0 || in.CurrentStepType != "A" || string(in.Input) != `{"n": 1}` {
		t.Errorf("instance %+v: want current step 0 (A) and the first input", in)
	}
	for i, s := range in.Steps {
		if s.Seq != i || s.Type != abc[i] || s.MaxAttempts != 4 || s.Attempts != 0 {
			t.Errorf("step %d: %+v", i, s)
		}
		if (s.NextRunAt != nil) != (i == 0) {
			t.Errorf("step %d next_run_at %v: want it set on step 0 only", i, s.NextRunAt)
		}
	}
	if _, err := e.Start(ctx, "flow", 2, "k2", nil); !errors.Is(err, linearchain.ErrUnknownWorkflow) {
		t.Errorf("Start of an unregistered version: %v, want ErrUnknownWorkflow", err)
	}
	want := []logRow{
		{`{"id": 1}`, "-", "RUNNING", "-", "-"},
		{`{"step_seq": 0, "instance_id": 1}`, "-", "PENDING", "-", "-"},
		{`{"step_seq": 1, "instance_id": 1}`, "-", "PENDING", "-", "-"},
		{`{"step_seq": 2, "instance_id": 1}`, "-", "PENDING", "-", "-"},
		{`{"step_seq": 0, "instance_id": 1}`, "PENDING", "READY", "Activate", "-"},
	}
	got := append(statusLog(t, pool, "workflow_instance_status_log"), statusLog(t, pool, "workflow_step_status_log")...)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("status logs (-want +got):\n%s", diff)
	}
}

func TestStartInsideTheCallersTransaction(t *testing.T) {
	t.Parallel()
	e, pool := newEngine(t, def("flow", 1, abc, returns(linearchain.Completed())))
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s, err := e.StartTx(ctx, tx, "flow", 1, "k", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Get(ctx, s.InstanceID); !errors.Is(err, linearchain.ErrInstanceNotFound) {
		t.Errorf("after a rollback: %v, want ErrInstanceNotFound", err)
	}
}

// A) Completed: the next step READY and the instance pointed at it, and
// with no step stepSeq + 1, the instance COMPLETED.
func TestCompletedAdvancesThenCompletes(t *testing.T) {
	t.Parallel()
	a, b := returns(linearchain.Completed()), returns(linearchain.Completed())
	e, pool := newEngine(t, def("flow", 3, abc, a, b))
	id := start(t, e, "flow", "k")
	task := claimOne(t, e, w1)
	if task.StepSeq != 0 || task.StepType != "A" || task.TaskType != linearchain.TaskRun || task.WorkerID != w1.WorkerID ||
		task.InstanceKey != "k" || string(task.Input) != `{"key": "k"}` {
		t.Fatalf("claimed %+v", task)
	}
	in := wantStatuses(t, e, id, "RUNNING", "RUNNING", "PENDING")
	if s := in.Steps[0]; s.LockedBy == nil || *s.LockedBy != w1.WorkerID || s.LockedUntil == nil {
		t.Fatalf("claimed step holds no lease: %+v", s)
	}
	applied := execute(t, e, task)
	if applied.Step.String() != "DONE" || applied.Instance != "RUNNING" {
		t.Errorf("applied %+v", applied)
	}
	in = wantStatuses(t, e, id, "RUNNING", "DONE", "READY")
	if in.CurrentStepSeq != 1 || in.CurrentStepType != "B" || in.Steps[1].NextRunAt == nil || in.Steps[0].LockedBy != nil {
		t.Errorf("after A completed: %+v", in)
	}
	applied = execute(t, e, claimOne(t, e, w2))
	if applied.Instance != "COMPLETED" {
		t.Errorf("last step applied %+v, want the instance COMPLETED", applied)
	}
	in = wantStatuses(t, e, id, "COMPLETED", "DONE", "DONE")
	if in.CompletedAt == nil || in.CurrentStepSeq != 1 {
		t.Errorf("completed instance %+v", in)
	}
	claimNone(t, e, w1)
	want := []logRow{
		{`{"step_seq": 0, "instance_id": 1}`, "PENDING", "READY", "Activate", "-"},
		{`{"step_seq": 0, "instance_id": 1}`, "READY", "RUNNING", "Claim", w1.WorkerID},
		{`{"step_seq": 0, "instance_id": 1}`, "RUNNING", "DONE", "Completed", w1.WorkerID},
		{`{"step_seq": 1, "instance_id": 1}`, "PENDING", "READY", "Activate", w1.WorkerID},
		{`{"step_seq": 1, "instance_id": 1}`, "READY", "RUNNING", "Claim", w2.WorkerID},
		{`{"step_seq": 1, "instance_id": 1}`, "RUNNING", "DONE", "Completed", w2.WorkerID},
	}
	if diff := cmp.Diff(want, statusLog(t, pool, "workflow_step_status_log")[2:]); diff != "" {
		t.Errorf("step log (-want +got):\n%s", diff)
	}
	wantInst := []logRow{
		{`{"id": 1}`, "-", "RUNNING", "-", "-"},
		{`{"id": 1}`, "RUNNING", "COMPLETED", "StepCompleted", w2.WorkerID},
	}
	if diff := cmp.Diff(wantInst, statusLog(t, pool, "workflow_instance_status_log")); diff != "" {
		t.Errorf("instance log (-want +got):\n%s", diff)
	}
}

// B) Waiting: WAITING with its event type and deadline, next_run_at
// cleared, the outbound events in the outbox, the instance unchanged.
func TestWaitingWritesTheOutbox(t *testing.T) {
	t.Parallel()
	out1, out2 := json.RawMessage(`{"to":"payments","order":7}`), json.RawMessage(`[1,2]`)
	e, pool := newEngine(t, def("flow", 3, abc, returns(linearchain.Waiting("paid", time.Hour, out1, out2)), returns(linearchain.Completed())))
	id := start(t, e, "flow", "k")
	applied := execute(t, e, claimOne(t, e, w1))
	if applied.Step.String() != "WAITING" || applied.Instance != "RUNNING" || applied.Outbox != 2 {
		t.Errorf("applied %+v", applied)
	}
	in := wantStatuses(t, e, id, "RUNNING", "WAITING", "PENDING")
	s := in.Steps[0]
	if s.WaitingEventType == nil || *s.WaitingEventType != "paid" || s.DeadlineAt == nil || s.NextRunAt != nil || s.LockedBy != nil {
		t.Errorf("waiting step %+v", s)
	}
	if in.CurrentStepSeq != 0 {
		t.Errorf("instance moved: %+v", in)
	}
	if d := s.DeadlineAt.Sub(in.Steps[0].DeadlineAt.Add(-time.Hour)); d != time.Hour {
		t.Errorf("deadline %v", d)
	}
	var got []string
	rows, err := pool.Query(context.Background(), `SELECT payload::text FROM workflow_chain_outbox WHERE instance_id = $1 AND step_seq = 0 AND attempt = 0 ORDER BY id`, id)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			t.Fatal(err)
		}
		got = append(got, p)
	}
	if diff := cmp.Diff([]string{`{"to": "payments", "order": 7}`, `[1, 2]`}, got); diff != "" {
		t.Errorf("outbox (-want +got):\n%s", diff)
	}
	claimNone(t, e, w1)
}

// C) Retry and the max_attempts boundary: with max_attempts 3, the retry
// update succeeds while attempts + 1 < 3, so the third Retry is exhausted
// and dead, the handler having run exactly three times.
func TestRetryRespectsMaxAttemptsExactly(t *testing.T) {
	t.Parallel()
	h := returns(linearchain.Retry(0, "busy"))
	e, _ := newEngine(t, def("flow", 3, abc, h, returns(linearchain.Completed())))
	id := start(t, e, "flow", "k")
	for attempt := 0; attempt < 2; attempt++ {
		task := claimOne(t, e, w1)
		if task.Attempts != attempt || task.MaxAttempts != 3 {
			t.Fatalf("attempt %d: task %+v", attempt, task)
		}
		applied := execute(t, e, task)
		if applied.Step.String() != "READY" {
			t.Fatalf("attempt %d: %+v, want READY", attempt, applied)
		}
		in := wantStatuses(t, e, id, "RUNNING", "READY", "PENDING")
		if s := in.Steps[0]; s.Attempts != attempt+1 || s.LastError == nil || *s.LastError != "busy" || s.LockedBy != nil {
			t.Fatalf("after retry %d: %+v", attempt, s)
		}
	}
	applied := execute(t, e, claimOne(t, e, w1))
	if applied.Step.String() != "DEAD" || applied.Instance != "FAILED" {
		t.Fatalf("third retry: %+v, want DEAD and FAILED", applied)
	}
	in := wantStatuses(t, e, id, "FAILED", "DEAD", "PENDING")
	if in.Steps[0].Attempts != 3 || in.FailedAt == nil {
		t.Errorf("after exhaustion: %+v", in)
	}
	if h.count() != 3 {
		t.Errorf("handler ran %d times, want 3", h.count())
	}
	claimNone(t, e, w1)
}

func TestRetryWaitsForItsBackoffByTheDatabaseClock(t *testing.T) {
	t.Parallel()
	e, pool := newEngine(t, def("flow", 5, abc, returns(linearchain.Retry(time.Minute, "later"), linearchain.Completed())))
	id := start(t, e, "flow", "k")
	execute(t, e, claimOne(t, e, w1))
	claimNone(t, e, w1)
	if err := linearchain.AdvanceClock(context.Background(), pool, time.Minute); err != nil {
		t.Fatal(err)
	}
	execute(t, e, claimOne(t, e, w1))
	wantStatuses(t, e, id, "COMPLETED", "DONE")
}

func TestMaxAttemptsOneMakesTheFirstRetryDead(t *testing.T) {
	t.Parallel()
	h := returns(linearchain.Retry(0, "once"))
	e, _ := newEngine(t, def("flow", 1, abc, h))
	id := start(t, e, "flow", "k")
	if a := execute(t, e, claimOne(t, e, w1)); a.Step.String() != "DEAD" {
		t.Fatalf("%+v", a)
	}
	in := wantStatuses(t, e, id, "FAILED", "DEAD")
	if in.Steps[0].Attempts != 1 || *in.Steps[0].LastError != "once" {
		t.Errorf("%+v", in.Steps[0])
	}
}

// D) Dead: DEAD with attempts + 1 and last_error, the instance FAILED.
func TestDeadFailsTheInstance(t *testing.T) {
	t.Parallel()
	e, pool := newEngine(t, def("flow", 3, abc, returns(linearchain.Completed()), returns(linearchain.Dead("card declined")), returns(linearchain.Completed())))
	id := start(t, e, "flow", "k")
	execute(t, e, claimOne(t, e, w1))
	applied := execute(t, e, claimOne(t, e, w1))
	if applied.Step.String() != "DEAD" || applied.Instance != "FAILED" {
		t.Fatalf("%+v", applied)
	}
	in := wantStatuses(t, e, id, "FAILED", "DONE", "DEAD", "PENDING")
	if s := in.Steps[1]; s.Attempts != 1 || *s.LastError != "card declined" || in.FailedAt == nil || in.CurrentStepSeq != 1 {
		t.Errorf("%+v", in)
	}
	claimNone(t, e, w1)
	log := statusLog(t, pool, "workflow_step_status_log")
	if last := log[len(log)-1]; last != (logRow{`{"step_seq": 1, "instance_id": 1}`, "RUNNING", "DEAD", "Dead", w1.WorkerID}) {
		t.Errorf("last step log row %+v", last)
	}
}

// The lease-recovery branch, and the late write of the expired worker:
// refused, with nothing changed.
func TestLeaseRecoveryAndTheLateWriteRefused(t *testing.T) {
	t.Parallel()
	h := returns(linearchain.Completed())
	e, pool := newEngine(t, def("flow", 5, abc, h, returns(linearchain.Completed())))
	ctx := context.Background()
	id := start(t, e, "flow", "k")
	short := w1
	short.Lease = 10 * time.Second
	stale := claimOne(t, e, short)
	if c := claimNone(t, e, w2); c.Recovered != 0 {
		t.Fatalf("recovered a live lease: %+v", c)
	}
	if err := linearchain.AdvanceClock(ctx, pool, 11*time.Second); err != nil {
		t.Fatal(err)
	}
	// Expired but not yet recovered: the late write is refused.
	before := get(t, e, id)
	if _, err := e.Apply(ctx, stale, linearchain.Completed()); !errors.Is(err, linearchain.ErrLeaseLost) {
		t.Fatalf("late write after expiry: %v, want ErrLeaseLost", err)
	}
	if diff := cmp.Diff(before, get(t, e, id)); diff != "" {
		t.Fatalf("the refused write changed the instance (-before +after):\n%s", diff)
	}
	// Recovery, then claimed by another worker.
	c, err := e.Claim(ctx, w2)
	if err != nil {
		t.Fatal(err)
	}
	if c.Recovered != 1 || len(c.Tasks) != 0 {
		t.Fatalf("claim after expiry: %+v; want one lease recovered (and the recovered step due from the next tick)", c)
	}
	in := wantStatuses(t, e, id, "RUNNING", "READY", "PENDING")
	if s := in.Steps[0]; s.Attempts != 1 || *s.LastError != "LEASE_EXPIRED" || s.LockedBy != nil || s.LockedUntil != nil || s.NextRunAt == nil {
		t.Fatalf("recovered step %+v", s)
	}
	fresh := claimOne(t, e, w2)
	if fresh.Attempts != 1 {
		t.Fatalf("reclaimed %+v", fresh)
	}
	before = get(t, e, id)
	for _, r := range []linearchain.Result{linearchain.Completed(), linearchain.Dead("x"), linearchain.Retry(0, "x"), linearchain.Waiting("e", time.Second)} {
		if _, err := e.Apply(ctx, stale, r); !errors.Is(err, linearchain.ErrLeaseLost) {
			t.Errorf("late %s: %v, want ErrLeaseLost", r.Event().EventName(), err)
		}
	}
	if diff := cmp.Diff(before, get(t, e, id)); diff != "" {
		t.Fatalf("refused writes changed the instance (-before +after):\n%s", diff)
	}
	execute(t, e, fresh)
	wantStatuses(t, e, id, "RUNNING", "DONE", "READY")
	if h.count() != 1 {
		t.Errorf("handler ran %d times, want 1 (the stale task was never executed)", h.count())
	}
	log := statusLog(t, pool, "workflow_step_status_log")
	want := []logRow{
		{`{"step_seq": 0, "instance_id": 1}`, "READY", "RUNNING", "Claim", w1.WorkerID},
		{`{"step_seq": 0, "instance_id": 1}`, "RUNNING", "READY", "RecoverLease", w2.WorkerID},
		{`{"step_seq": 0, "instance_id": 1}`, "READY", "RUNNING", "Claim", w2.WorkerID},
		{`{"step_seq": 0, "instance_id": 1}`, "RUNNING", "DONE", "Completed", w2.WorkerID},
		{`{"step_seq": 1, "instance_id": 1}`, "PENDING", "READY", "Activate", w2.WorkerID},
	}
	if diff := cmp.Diff(want, log[3:]); diff != "" {
		t.Errorf("step log (-want +got):\n%s", diff)
	}
}

// A step whose lease expires on its last allowed try is exhausted: lease
// recovery ends it DEAD (attempts = max_attempts, last_error
// LEASE_EXPIRED, logged as RecoverLease) and fails its instance, as a
// Retry would; it never runs again.
func TestLeaseExpiredOnTheLastAttemptIsDead(t *testing.T) {
	t.Parallel()
	h := returns(linearchain.Retry(0, "busy"), linearchain.Completed())
	e, pool := newEngine(t, def("flow", 2, abc, h, returns(linearchain.Completed())))
	ctx := context.Background()
	id := start(t, e, "flow", "k")
	execute(t, e, claimOne(t, e, w1)) // attempts 1 of 2
	last := claimOne(t, e, w1)
	if last.Attempts != 1 || last.MaxAttempts != 2 {
		t.Fatalf("last try claimed as %+v", last)
	}
	if err := linearchain.AdvanceClock(ctx, pool, 2*w1.Lease); err != nil {
		t.Fatal(err)
	}
	c := claimNone(t, e, w2)
	if c.Recovered != 1 || c.Exhausted != 1 {
		t.Fatalf("claim after the last try's lease expired: %+v, want one recovered, exhausted", c)
	}
	in := wantStatuses(t, e, id, "FAILED", "DEAD", "PENDING")
	if s := in.Steps[0]; s.Attempts != 2 || *s.LastError != "LEASE_EXPIRED" || s.LockedBy != nil || s.LockedUntil != nil || in.FailedAt == nil {
		t.Fatalf("exhausted step %+v of %+v", s, in)
	}
	if _, err := e.Apply(ctx, last, linearchain.Completed()); !errors.Is(err, linearchain.ErrLeaseLost) {
		t.Fatalf("late write of the expired try: %v, want ErrLeaseLost", err)
	}
	claimNone(t, e, w2)
	if h.count() != 1 {
		t.Errorf("handler ran %d times, want 1", h.count())
	}
	wantLastLog(t, pool, "workflow_step_status_log", logRow{`{"step_seq": 0, "instance_id": 1}`, "RUNNING", "DEAD", "RecoverLease", w2.WorkerID})
	wantLastLog(t, pool, "workflow_instance_status_log", logRow{`{"id": 1}`, "RUNNING", "FAILED", "StepDead", w2.WorkerID})
}

// 3) Timed-out WAITING steps are claimed, when enabled, as
// WAITING_TIMEOUT tasks.
func TestWaitingTimeoutIsClaimed(t *testing.T) {
	t.Parallel()
	var seen []linearchain.Task
	h := func(_ context.Context, t linearchain.Task) linearchain.Result {
		seen = append(seen, t)
		if t.TaskType == linearchain.TaskWaitingTimeout {
			return linearchain.Dead("no payment before the deadline")
		}
		return linearchain.Waiting("paid", time.Minute)
	}
	e, pool := newEngine(t, linearchain.Definition{Type: "flow", Version: 1, Steps: []linearchain.Step{{Type: "PAY", Handler: h}}})
	id := start(t, e, "flow", "k")
	execute(t, e, claimOne(t, e, w1))
	timed := w1
	timed.ClaimTimedOut = true
	claimNone(t, e, timed)
	if err := linearchain.AdvanceClock(context.Background(), pool, time.Minute); err != nil {
		t.Fatal(err)
	}
	task := claimOne(t, e, timed)
	if task.TaskType != linearchain.TaskWaitingTimeout || task.WaitingEventType != "paid" || task.StepSeq != 0 {
		t.Fatalf("timed-out task %+v", task)
	}
	execute(t, e, task)
	wantStatuses(t, e, id, "FAILED", "DEAD")
	if len(seen) != 2 || seen[1].TaskType != linearchain.TaskWaitingTimeout {
		t.Errorf("handler saw %+v", seen)
	}
	log := statusLog(t, pool, "workflow_step_status_log")
	if got := log[len(log)-2]; got != (logRow{`{"step_seq": 0, "instance_id": 1}`, "WAITING", "RUNNING", "ClaimTimedOut", w1.WorkerID}) {
		t.Errorf("timed-out claim log row %+v", got)
	}
}

// Wake-up: an on-time matching event wakes the current WAITING step, and
// its handler sees it; a duplicate and an event for no instance are
// recorded and reported, not applied. (Early and late events:
// events_test.go.)
func TestWakeUp(t *testing.T) {
	t.Parallel()
	pay := returns(linearchain.Waiting("payment.captured", time.Minute), linearchain.Completed())
	e, pool := newEngine(t, def("flow", 3, abc, pay, returns(linearchain.Waiting("shipped", time.Minute))))
	id := start(t, e, "flow", "order-1")
	execute(t, e, claimOne(t, e, w1))
	wantStatuses(t, e, id, "RUNNING", "WAITING", "PENDING")
	deliver(t, e, linearchain.Inbound{ID: "evt-1", Type: "payment.captured", WorkflowType: "flow", InstanceKey: "order-1", Payload: json.RawMessage(`{"amount":12}`)},
		linearchain.Delivery{Outcome: linearchain.Woken, InstanceID: id})
	in := wantStatuses(t, e, id, "RUNNING", "READY", "PENDING")
	if s := in.Steps[0]; s.NextRunAt == nil || s.WaitingEventType != nil || s.DeadlineAt != nil {
		t.Errorf("woken step %+v", s)
	}
	deliver(t, e, linearchain.Inbound{ID: "evt-1", Type: "payment.captured", InstanceID: id}, linearchain.Delivery{Outcome: linearchain.Duplicate, InstanceID: id, First: linearchain.Woken})
	task := claimOne(t, e, w1)
	if task.StepSeq != 0 || task.TaskType != linearchain.TaskRun || task.Event == nil || task.Event.ID != "evt-1" ||
		task.Event.Type != "payment.captured" || string(task.Event.Payload) != `{"amount": 12}` {
		t.Fatalf("woken step claimed as %+v", task)
	}
	execute(t, e, task)
	deliver(t, e, linearchain.Inbound{ID: "nobody", Type: "shipped", InstanceID: 999}, linearchain.Delivery{Outcome: linearchain.UnknownInstance})
	wantStatuses(t, e, id, "RUNNING", "DONE", "READY")
	if pay.count() != 2 {
		t.Errorf("A ran %d times, want 2", pay.count())
	}
	if diff := cmp.Diff([]string{"evt-1:applied:0", "nobody:unknown_instance:-"}, inbox(t, pool)); diff != "" {
		t.Errorf("inbox (-want +got):\n%s", diff)
	}
}

func TestCancel(t *testing.T) {
	t.Parallel()
	e, _ := newEngine(t, def("flow", 3, abc, returns(linearchain.Completed()), returns(linearchain.Completed())))
	ctx := context.Background()
	id := start(t, e, "flow", "k")
	if err := e.Cancel(ctx, id, "customer asked"); err != nil {
		t.Fatal(err)
	}
	in := wantStatuses(t, e, id, "CANCELED", "READY", "PENDING")
	if in.CanceledAt == nil || in.CancelReason == nil || *in.CancelReason != "customer asked" {
		t.Errorf("%+v", in)
	}
	claimNone(t, e, w1)
	err := e.Cancel(ctx, id, "again")
	if !errors.Is(err, linearchain.ErrNotRunning) || !errors.Is(err, runtime.ErrIllegalTransition) {
		t.Errorf("second cancel: %v, want ErrNotRunning and runtime.ErrIllegalTransition", err)
	}
	if err := e.Cancel(ctx, 999, "x"); !errors.Is(err, linearchain.ErrInstanceNotFound) {
		t.Errorf("unknown instance: %v", err)
	}
	// A step running when its instance is cancelled may finish its own
	// row; the next step is not activated.
	id2 := start(t, e, "flow", "k2")
	task := claimOne(t, e, w1)
	if err := e.Cancel(ctx, id2, "stop"); err != nil {
		t.Fatal(err)
	}
	if a := execute(t, e, task); a.Instance != "CANCELED" {
		t.Errorf("%+v", a)
	}
	wantStatuses(t, e, id2, "CANCELED", "DONE", "PENDING")
}

func TestRegisterRefusesBadDefinitions(t *testing.T) {
	t.Parallel()
	e := linearchain.New(nil)
	h := returns(linearchain.Completed()).handle
	for _, d := range []linearchain.Definition{
		{Version: 1, Steps: []linearchain.Step{{Type: "A", Handler: h}}},
		{Type: "f", Version: 1},
		{Type: "f", Version: 1, Steps: []linearchain.Step{{Handler: h}}},
		{Type: "f", Version: 1, Steps: []linearchain.Step{{Type: "A"}}},
		{Type: "f", Version: 1, Steps: []linearchain.Step{{Type: "A", Handler: h}, {Type: "A", Handler: h}}},
		{Type: "f", Version: 1, Steps: []linearchain.Step{{Type: "A", Handler: h, MaxAttempts: -1}}},
	} {
		if err := e.Register(d); !errors.Is(err, linearchain.ErrInvalidDefinition) {
			t.Errorf("Register(%+v): %v, want ErrInvalidDefinition", d, err)
		}
	}
	ok := linearchain.Definition{Type: "f", Version: 1, Steps: []linearchain.Step{{Type: "A", Handler: h}}}
	if err := e.Register(ok); err != nil {
		t.Fatal(err)
	}
	if err := e.Register(ok); !errors.Is(err, linearchain.ErrInvalidDefinition) {
		t.Errorf("registered twice: %v", err)
	}
}

func TestPanicAndZeroResultAreRetried(t *testing.T) {
	t.Parallel()
	calls := 0
	h := func(context.Context, linearchain.Task) linearchain.Result {
		calls++
		if calls == 1 {
			panic("boom")
		}
		return linearchain.Result{}
	}
	e, pool := newEngine(t, linearchain.Definition{Type: "f", Version: 1, Steps: []linearchain.Step{{Type: "A", Handler: h, MaxAttempts: 3}}})
	id := start(t, e, "f", "k")
	// The retries are spaced as runtime/engine spaces a state's failed
	// tries: DefaultBackoff's 1s, then 2s, each ±20%.
	backoff := func() time.Duration {
		t.Helper()
		var d time.Duration
		if err := pool.QueryRow(context.Background(), `SELECT next_run_at - updated_at FROM workflow_step WHERE instance_id = $1 AND step_seq = 0`, id).Scan(&d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	execute(t, e, claimOne(t, e, w1))
	in := wantStatuses(t, e, id, "RUNNING", "READY")
	if *in.Steps[0].LastError != "panic: boom" {
		t.Errorf("%+v", in.Steps[0])
	}
	if d := backoff(); d < 800*time.Millisecond || d > 1200*time.Millisecond {
		t.Errorf("after the panic of attempt 1: due in %v, want 1s ±20%%", d)
	}
	if err := linearchain.AdvanceClock(context.Background(), pool, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	execute(t, e, claimOne(t, e, w1))
	in = wantStatuses(t, e, id, "RUNNING", "READY")
	if *in.Steps[0].LastError != "handler returned the zero Result" {
		t.Errorf("%+v", in.Steps[0])
	}
	if d := backoff(); d < 1600*time.Millisecond || d > 2400*time.Millisecond {
		t.Errorf("after the zero Result of attempt 2: due in %v, want 2s ±20%%", d)
	}
}
