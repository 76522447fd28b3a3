package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/evidence"
	"github.com/fsmgen/fsmgen/runtime/store"
)

const externalID = "5f0c6e1e-7d3a-5b9e-9a51-0c2f2a1d4e01"

var ext = store.External{Executor: "temporal", ID: externalID, Attempt: 1}

func (e env) startExternal(t *testing.T, x store.External, key string) runtime.Started {
	t.Helper()
	res, err := e.st.StartExternal(e.ctx, x, runtime.StartRequest{Type: "order", Version: 1, IdempotencyKey: key,
		Owner: runtime.Owner{TenantID: "t1"}, Input: json.RawMessage(`{"n":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// The start, a transition with its steps and messages, and the final
// transition with its result, each recorded twice as a retried activity
// would record them: written once, as the runtime role, the evidence chain
// checks out and the message keeps its id.
func TestExternalRunIsRecordedOnceByRowVersion(t *testing.T) {
	t.Parallel()
	e := newRoleEnv(t)
	if err := evidence.Enable(e.ctx, e.pool, "order"); err != nil {
		t.Fatal(err)
	}
	first := e.startExternal(t, ext, "k1")
	again := e.startExternal(t, ext, "k1")
	if first.Outcome != runtime.StartCreated || again.Outcome != runtime.StartCreated || first.Run.ID != externalID || again.Run.RowVersion != 1 {
		t.Fatalf("starts: %s %s %s v%d", first.Outcome, again.Outcome, first.Run.ID, again.Run.RowVersion)
	}
	fx := store.ExternalEffects{
		Steps:    []store.ExternalStep{{Name: "evidence.checked", Payload: json.RawMessage(`{"ok":true}`)}},
		Messages: []store.ExternalMessage{{Topic: "order.begun", Payload: map[string]int{"n": 1}}},
	}
	begin := tr("INITIATED", "Begin", "WORKING", map[string]string{"by": "x"})
	for i, want := range []bool{false, true} {
		rec, err := e.st.RecordExternal(e.ctx, ext, 1, begin, fx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if rec.RowVersion != 2 || rec.AlreadyApplied != want {
			t.Fatalf("record %d: %+v", i, rec)
		}
	}
	msgs, err := e.st.Outbox(e.ctx, externalID)
	if err != nil {
		t.Fatal(err)
	}
	res := runtime.Result{Output: json.RawMessage(`{"total":3}`), CostUSD: 0.5}
	for range 2 {
		if _, err := e.st.RecordExternal(e.ctx, ext, 2, tr("WORKING", "Finish", "SUCCEEDED", nil), store.ExternalEffects{Messages: fx.Messages}, &res); err != nil {
			t.Fatal(err)
		}
	}
	got := moves(e.history(t, externalID))
	want := []string{
		"created ->INITIATED/@1 a1",
		"step INITIATED->INITIATED/@1 a1",
		"transition INITIATED->WORKING/Begin@2 a1",
		"transition WORKING->SUCCEEDED/Finish@3 a1",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	after, err := e.st.Outbox(e.ctx, externalID)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 || len(after) != 2 || after[0].ID != msgs[0].ID || after[0].Topic != "order.begun" {
		t.Errorf("outbox: %+v, then %+v", msgs, after)
	}
	run := e.get(t, externalID)
	if run.Status != runtime.StatusSucceeded || run.Result == nil || string(run.Result.Output) != `{"total": 3}` || run.Result.CostUSD != 0.5 {
		t.Errorf("run: %s %+v", run.Status, run.Result)
	}
	v, err := evidence.Verify(e.ctx, e.pool, externalID)
	if err != nil {
		t.Fatal(err)
	}
	if v.Records != 4 {
		t.Errorf("evidence records: %d, want 4 (created, checked, Begin, Finish)", v.Records)
	}
	x, err := e.st.Execution(e.ctx, externalID)
	if err != nil {
		t.Fatal(err)
	}
	if len(x.StateHistory) != 2 || len(x.EvidenceIDs) != 4 {
		t.Errorf("execution: %+v, evidence %v", x.StateHistory, x.EvidenceIDs)
	}
}

// A transition that does not follow the recorded run is a conflict, and
// writes nothing (not its steps either).
func TestExternalTransitionThatDoesNotFollowIsAConflict(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.startExternal(t, ext, "k1")
	if _, err := e.st.RecordExternal(e.ctx, ext, 1, tr("INITIATED", "Begin", "WORKING", nil), store.ExternalEffects{}, nil); err != nil {
		t.Fatal(err)
	}
	fx := store.ExternalEffects{Steps: []store.ExternalStep{{Name: "s"}}, Messages: []store.ExternalMessage{{Topic: "m"}}}
	for _, c := range []struct {
		name       string
		rowVersion int64
		t          runtime.Transition
		x          store.External
		want       string
	}{
		{"another event at the recorded version", 1, tr("INITIATED", "Cancel", "CANCELLED", nil), ext,
			"store: record Cancel run " + externalID + ": conflict: the run moved since it was read: expected INITIATED at row version 1, the run is in WORKING at row version 2"},
		{"ahead of the run", 5, tr("WORKING", "Finish", "SUCCEEDED", nil), ext,
			"store: record Finish run " + externalID + ": conflict: the run moved since it was read: expected WORKING at row version 5, the run is in WORKING at row version 2"},
		{"another attempt", 2, tr("WORKING", "Finish", "SUCCEEDED", nil), store.External{Executor: "temporal", ID: externalID, Attempt: 2},
			"store: record Finish run " + externalID + ": conflict: the run moved since it was read: the run is at attempt 1, the transition is of attempt 2"},
	} {
		_, err := e.st.RecordExternal(e.ctx, c.x, c.rowVersion, c.t, fx, nil)
		if !errors.Is(err, runtime.ErrConflict) || err.Error() != c.want {
			t.Errorf("%s: got %v\nwant %s", c.name, err, c.want)
		}
	}
	if got := len(e.history(t, externalID)); got != 2 {
		t.Errorf("%d log rows, want 2", got)
	}
	if msgs, err := e.st.Outbox(e.ctx, externalID); err != nil || len(msgs) != 0 {
		t.Errorf("outbox: %v %v", msgs, err)
	}
}

// A failed run's next attempt resets it, once; other attempts conflict.
func TestExternalRunRestartsByAttempt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.startExternal(t, ext, "k1")
	if _, err := e.st.RecordExternal(e.ctx, ext, 1, tr("INITIATED", "Fail", "FAILED", nil), store.ExternalEffects{}, nil); err != nil {
		t.Fatal(err)
	}
	second := ext
	second.Attempt = 2
	for range 2 {
		res := e.startExternal(t, second, "k1")
		if res.Outcome != runtime.StartRestarted || res.Run.Attempt != 2 || res.Run.State != "INITIATED" || res.Run.RowVersion != 3 {
			t.Fatalf("restart: %s a%d %s v%d", res.Outcome, res.Run.Attempt, res.Run.State, res.Run.RowVersion)
		}
	}
	fourth := ext
	fourth.Attempt = 4
	_, err := e.st.StartExternal(e.ctx, fourth, runtime.StartRequest{Type: "order", Version: 1, IdempotencyKey: "k1", Owner: runtime.Owner{TenantID: "t1"}})
	want := "store: start order/k1 run " + externalID + ": conflict: the run moved since it was read: the run is running in INITIATED at attempt 2, the start is of attempt 4"
	if !errors.Is(err, runtime.ErrConflict) || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}

// An external run is never due, and no write of the store's other paths
// (Record, Resume, an upgrade's, a hand-written UPDATE) moves it; the
// recorder of one executor writes neither the engine's runs nor another
// executor's.
func TestExternalRunIsOnlyItsExecutors(t *testing.T) {
	t.Parallel()
	e := newRoleEnv(t)
	e.startExternal(t, ext, "k1")
	if _, err := e.st.RecordExternal(e.ctx, ext, 1, tr("INITIATED", "Begin", "WORKING", nil), store.ExternalEffects{}, nil); err != nil {
		t.Fatal(err)
	}
	run := e.get(t, externalID)
	if !run.NextRunAt.IsZero() || run.Lease.Owner != "" {
		t.Errorf("due at %v, leased by %q", run.NextRunAt, run.Lease.Owner)
	}
	const refusal = "run " + externalID + " of order/v1 is executed by temporal: only a recorder of that executor writes it"
	_, err := e.st.Record(e.ctx, externalID, 2, tr("WORKING", "Finish", "SUCCEEDED", nil))
	if !errors.Is(err, runtime.ErrOtherExecutor) || (err == nil || !strings.Contains(err.Error(), refusal)) {
		t.Errorf("record: %v", err)
	}
	// Never parked here (its executor retries), it has nothing to resume.
	if err := e.st.Resume(e.ctx, externalID); !errors.Is(err, runtime.ErrConflict) || err.Error() != "store: resume run "+externalID+": conflict: the run moved since it was read: the run is not parked" {
		t.Errorf("resume: %v", err)
	}
	_, err = e.pool.Exec(context.Background(), `UPDATE workflow_runs SET next_run_at = now() WHERE id = $1`, externalID)
	if err := store.Translate(err); !errors.Is(err, runtime.ErrOtherExecutor) {
		t.Errorf("update: %v", err)
	}
	// The executor's own transactions cannot make it due either.
	err = pgx.BeginFunc(e.ctx, e.owner, func(tx pgx.Tx) error {
		if _, err := tx.Exec(e.ctx, `SELECT set_config('fsmgen.executor', 'temporal', true)`); err != nil {
			return err
		}
		_, err := tx.Exec(e.ctx, `UPDATE workflow_runs SET next_run_at = now(), lease_owner = 'w', lease_expires_at = 'infinity' WHERE id = $1`, externalID)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if run := e.get(t, externalID); !run.NextRunAt.IsZero() || run.Lease.Owner != "" || run.RowVersion != 2 {
		t.Errorf("after the executor's update: due at %v, leased by %q, v%d", run.NextRunAt, run.Lease.Owner, run.RowVersion)
	}
	if _, err := e.owner.Exec(e.ctx, `UPDATE workflow_runs SET executor = NULL WHERE id = $1`, externalID); !errors.Is(store.Translate(err), runtime.ErrRunImmutable) {
		t.Errorf("executor cleared: %v", err)
	}

	engineRun := e.start(t, "k2").Run
	_, err = e.st.RecordExternal(e.ctx, store.External{Executor: "temporal", ID: engineRun.ID, Attempt: 1}, 1, tr("INITIATED", "Begin", "WORKING", nil), store.ExternalEffects{}, nil)
	want := "store: record Begin run " + engineRun.ID + ": run is executed by another runtime: run " + engineRun.ID + ` of order/k2 is executed by this database's engine, not by "temporal" as run ` + engineRun.ID
	if !errors.Is(err, runtime.ErrOtherExecutor) || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
	_, err = e.st.StartExternal(e.ctx, store.External{Executor: "other", ID: "5f0c6e1e-7d3a-5b9e-9a51-0c2f2a1d4e02", Attempt: 1},
		runtime.StartRequest{Type: "order", Version: 1, IdempotencyKey: "k1", Owner: runtime.Owner{TenantID: "t1"}})
	want = "store: start order/k1 run " + externalID + ": run is executed by another runtime: run " + externalID + ` of order/k1 is executed by "temporal", not by "other" as run 5f0c6e1e-7d3a-5b9e-9a51-0c2f2a1d4e02`
	if !errors.Is(err, runtime.ErrOtherExecutor) || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}
