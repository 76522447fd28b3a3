package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/db"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/fsmtest"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// machine is a stand-in for a generated machine: it records a transition and
// applies it only if recording succeeded.
type machine struct {
	state string
	rec   runtime.Recorder
}

func (m *machine) fire(ctx context.Context, event, to string, payload any) error {
	t := tr(m.state, event, to, payload)
	if err := m.rec.Record(ctx, t); err != nil {
		return err
	}
	m.state = to
	return nil
}

type beginPayload struct {
	Worker string  `json:"worker"`
	Score  float64 `json:"score"`
}

func TestRecordMovesStateAndLogsInOneStep(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	run := e.start(t, "k").Run
	got, err := e.st.Record(e.ctx, run.ID, run.RowVersion, tr("INITIATED", "Begin", "WORKING", beginPayload{"w1", 0.5}))
	if err != nil {
		t.Fatal(err)
	}
	if got.RowVersion != 2 || got.AlreadyApplied || got.At.IsZero() {
		t.Errorf("recorded %+v, want row version 2, applied now", got)
	}
	after := e.get(t, run.ID)
	if after.State != "WORKING" || after.RowVersion != 2 {
		t.Errorf("run in %s at %d, want WORKING at 2", after.State, after.RowVersion)
	}
	h := e.history(t, run.ID)
	if diff := cmp.Diff([]string{"created ->INITIATED/@1 a1", "transition INITIATED->WORKING/Begin@2 a1"}, moves(h)); diff != "" {
		t.Errorf("history mismatch (-want +got):\n%s", diff)
	}
	var p beginPayload
	if err := h[1].Decode(&p); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(beginPayload{"w1", 0.5}, p); diff != "" {
		t.Errorf("payload mismatch (-want +got):\n%s", diff)
	}
}

// Two recorders loaded from the same run both record: exactly one transition
// lands, the other gets ErrConflict, the log has one row for it.
func TestTwoRecordersOneWins(t *testing.T) {
	t.Parallel()
	e := newEnvPool(t, pgtest.NewPool(t, pgtest.MaxConns(4)))
	for round := range 50 {
		run := e.start(t, "k"+strings.Repeat("x", round)).Run
		var machines [2]*machine
		for i := range machines {
			loaded, rec, err := e.st.Load(e.ctx, run.ID, orderDef(1))
			if err != nil {
				t.Fatal(err)
			}
			machines[i] = &machine{state: loaded.State, rec: rec}
		}
		var errs [2]error
		var wg sync.WaitGroup
		gate := make(chan struct{})
		for i, m := range machines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-gate
				if i == 0 {
					errs[i] = m.fire(e.ctx, "Begin", "WORKING", nil)
				} else {
					errs[i] = m.fire(e.ctx, "Cancel", "CANCELLED", nil)
				}
			}()
		}
		close(gate)
		wg.Wait()
		won := 0
		for i, err := range errs {
			switch {
			case err == nil:
				won++
			case errors.Is(err, runtime.ErrConflict):
				if machines[i].state != "INITIATED" {
					t.Errorf("the losing machine moved to %s", machines[i].state)
				}
				var re *runtime.RunError
				if !errors.As(err, &re) || re.RunID != run.ID {
					t.Errorf("conflict error %v does not name run %s", err, run.ID)
				}
			default:
				t.Fatalf("recorder %d: %v", i, err)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d recorders won, want 1 (errors %v)", round, won, errs)
		}
		if h := e.history(t, run.ID); len(h) != 2 {
			t.Fatalf("round %d: %d log rows, want 2:\n%s", round, len(h), strings.Join(moves(h), "\n"))
		}
	}
}

func TestRecorderTracksRowVersion(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	run, rec, err := e.st.Load(e.ctx, e.start(t, "k").Run.ID, orderDef(1))
	if err != nil {
		t.Fatal(err)
	}
	m := &machine{state: run.State, rec: rec}
	rec.SetResult(runtime.Result{Output: json.RawMessage(`{"ok":true}`), CostUSD: 1.5, DurationMS: 1234})
	for _, step := range [][2]string{{"Begin", "WORKING"}, {"Finish", "SUCCEEDED"}} {
		if err := m.fire(e.ctx, step[0], step[1], nil); err != nil {
			t.Fatal(err)
		}
	}
	if rec.RowVersion() != 3 {
		t.Errorf("recorder at row version %d, want 3", rec.RowVersion())
	}
	got := e.get(t, run.ID)
	want := &runtime.Result{Status: runtime.StatusSucceeded, Outcome: "done", Output: json.RawMessage(`{"ok": true}`),
		RunID: run.ID, Attempt: 1, CostUSD: 1.5, DurationMS: 1234}
	if diff := cmp.Diff(want, got.Result); diff != "" {
		t.Errorf("result mismatch (-want +got):\n%s", diff)
	}
	if got.FinishedAt.IsZero() || got.Status != runtime.StatusSucceeded {
		t.Errorf("finished run: status %s finished at %v", got.Status, got.FinishedAt)
	}
	// A terminal state refuses everything.
	if err := m.fire(e.ctx, "Cancel", "CANCELLED", nil); !errors.Is(err, runtime.ErrTransitionRefused) {
		t.Errorf("transition out of a terminal state: %v, want ErrTransitionRefused", err)
	}
}

func TestFinishComputesDurationWithTheDatabaseClock(t *testing.T) {
	t.Parallel()
	clk := fsmtest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	e := newEnv(t, store.WithClock(clk.Now))
	run := e.start(t, "k").Run
	clk.Advance(1500 * time.Millisecond)
	if _, err := e.st.Finish(e.ctx, run.ID, run.RowVersion, tr("INITIATED", "Fail", "FAILED", nil),
		runtime.Result{ErrorCode: "E1", ErrorDetail: "broke"}); err != nil {
		t.Fatal(err)
	}
	got := e.get(t, run.ID)
	want := &runtime.Result{Status: runtime.StatusFailed, RunID: run.ID, Attempt: 1, DurationMS: 1500, ErrorCode: "E1", ErrorDetail: "broke"}
	if diff := cmp.Diff(want, got.Result); diff != "" {
		t.Errorf("result mismatch (-want +got):\n%s", diff)
	}
	if !got.FinishedAt.Equal(clk.Now()) || !got.UpdatedAt.Equal(clk.Now()) {
		t.Errorf("finished at %v, updated at %v, want the stubbed %v", got.FinishedAt, got.UpdatedAt, clk.Now())
	}
	// Finish needs a terminal target.
	run2 := e.start(t, "k2").Run
	if _, err := e.st.Finish(e.ctx, run2.ID, run2.RowVersion, tr("INITIATED", "Begin", "WORKING", nil), runtime.Result{}); !errors.Is(err, runtime.ErrInvalidInput) {
		t.Errorf("finish on a non-terminal state: %v, want ErrInvalidInput", err)
	}
}

// A retry of a transition whose commit succeeded but whose acknowledgement
// was lost is recognised as applied.
func TestRecordRetryAfterLostAckIsAlreadyApplied(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	run := e.start(t, "k").Run
	t1 := tr("INITIATED", "Begin", "WORKING", beginPayload{"w1", 1})
	if _, err := e.st.Record(e.ctx, run.ID, 1, t1); err != nil {
		t.Fatal(err)
	}
	got, err := e.st.Record(e.ctx, run.ID, 1, t1)
	if err != nil {
		t.Fatalf("retry: %v", err)
	}
	if diff := cmp.Diff(store.Recorded{RowVersion: 2, AlreadyApplied: true}, got); diff != "" {
		t.Errorf("retry mismatch (-want +got):\n%s", diff)
	}
	// Still recognised after the run moved on.
	if _, err := e.st.Record(e.ctx, run.ID, 2, tr("WORKING", "Fail", "FAILED", nil)); err != nil {
		t.Fatal(err)
	}
	if got, err := e.st.Record(e.ctx, run.ID, 1, t1); err != nil || !got.AlreadyApplied {
		t.Errorf("late retry: %+v %v, want already applied", got, err)
	}
	// Same version and event with another payload is a conflict, not a retry.
	if _, err := e.st.Record(e.ctx, run.ID, 1, tr("INITIATED", "Begin", "WORKING", beginPayload{"w2", 1})); !errors.Is(err, runtime.ErrConflict) {
		t.Errorf("different payload: %v, want ErrConflict", err)
	}
	if n := len(e.history(t, run.ID)); n != 3 {
		t.Errorf("%d log rows, want 3", n)
	}
}

// Raw SQL cannot move a run along a pair its table lacks, nor touch the log.
func TestDatabaseRefusesRawSQL(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	run := e.start(t, "k").Run
	e.record(t, run, "INITIATED", "Begin", "WORKING")
	tests := []struct {
		sql  string
		want error
	}{
		{"UPDATE workflow_runs SET current_state = 'SUCCEEDED' WHERE id = $1 AND false", nil},
		{"UPDATE workflow_runs SET current_state = 'INITIATED' WHERE id = $1", runtime.ErrTransitionRefused},
		{"UPDATE workflow_runs SET current_state = 'NOWHERE' WHERE id = $1", runtime.ErrTransitionRefused},
		{"UPDATE workflow_runs SET attempt_no = attempt_no + 1 WHERE id = $1", runtime.ErrRunImmutable},
		{"UPDATE workflow_runs SET idempotency_key = 'other' WHERE id = $1", runtime.ErrRunImmutable},
		{"UPDATE workflow_step_logs SET payload = '{}' WHERE workflow_run_id = $1", runtime.ErrLogImmutable},
		{"DELETE FROM workflow_step_logs WHERE workflow_run_id = $1", runtime.ErrLogImmutable},
		{"TRUNCATE workflow_step_logs CASCADE", runtime.ErrLogImmutable},
		{"UPDATE workflow_transitions SET to_state = 'SUCCEEDED' WHERE from_state = 'INITIATED'", runtime.ErrDefinitionImmutable},
		{"DELETE FROM workflow_definitions", runtime.ErrDefinitionImmutable},
		{"INSERT INTO workflow_runs (workflow_type, current_state, tenant_id, correlation_id, idempotency_key, definition_version) VALUES ('order', 'WORKING', 't', gen_random_uuid(), $1::uuid::text, 1)", runtime.ErrTransitionRefused},
		{"INSERT INTO workflow_runs (workflow_type, current_state, tenant_id, correlation_id, idempotency_key, definition_version) VALUES ('order', 'INITIATED', 't', gen_random_uuid(), $1::uuid::text, 7)", runtime.ErrUnknownDefinition},
	}
	for _, tt := range tests {
		var args []any
		if strings.Contains(tt.sql, "$1") {
			args = append(args, run.ID)
		}
		_, err := e.pool.Exec(e.ctx, tt.sql, args...)
		err = store.Translate(err)
		if tt.want == nil {
			if err != nil {
				t.Errorf("%s: %v", tt.sql, err)
			}
			continue
		}
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: error %v, want %v", tt.sql, err, tt.want)
		}
	}
	// A raw move along a registered pair is let through when its log row is
	// written by the same statement, and keeps row_version and status in
	// step.
	tx, err := e.pool.Begin(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(e.ctx)
	var state, status string
	var version int64
	if err := tx.QueryRow(e.ctx, rawMove, run.ID, "SUCCEEDED", "Finish").Scan(&state, &status, &version); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]any{"SUCCEEDED", "succeeded", int64(3)}, []any{state, status, version}); diff != "" {
		t.Errorf("raw legal move mismatch (-want +got):\n%s", diff)
	}
}

// rawMove moves run $1 to state $2 on event $3 and logs it in the same
// statement, as the store does.
const rawMove = `WITH moved AS (
    UPDATE workflow_runs SET current_state = $2, row_version = row_version + 1,
        result = CASE WHEN $2 IN ('SUCCEEDED', 'FAILED', 'CANCELLED') THEN '{}'::jsonb END,
        finished_at = CASE WHEN $2 IN ('SUCCEEDED', 'FAILED', 'CANCELLED') THEN now() END
    WHERE id = $1
    RETURNING id, workflow_type, attempt_no, current_state, status, row_version, definition_version
), logged AS (
    INSERT INTO workflow_step_logs (workflow_run_id, workflow_type, attempt_no, step_name, state_before, state_after,
        kind, event, row_version, definition_version)
    SELECT m.id, m.workflow_type, m.attempt_no, $3, (SELECT r.current_state FROM workflow_runs r WHERE r.id = $1), m.current_state,
        'transition', $3, m.row_version, m.definition_version
    FROM moved m
)
SELECT current_state, status, row_version FROM moved`

// Raw SQL that writes around the log, sets what the transitions set, or
// extends a registered table is refused by the database with an FS
// SQLSTATE, which Translate maps to the store's sentinels.
func TestDatabaseRefusesWritesAroundTheLog(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	run := e.start(t, "k").Run
	e.record(t, run, "INITIATED", "Begin", "WORKING")
	const logRow = `INSERT INTO workflow_step_logs (workflow_run_id, workflow_type, attempt_no, step_name, state_before, state_after,
		kind, event, row_version, definition_version) VALUES ($1, 'order', 1, 'Finish', 'WORKING', 'SUCCEEDED', 'transition', 'Finish', %s, 1)`
	tests := []struct {
		name  string
		sql   string
		state string
		want  error
	}{
		{"move along a registered pair without a log row",
			"UPDATE workflow_runs SET current_state = 'SUCCEEDED', result = '{}', finished_at = now() WHERE id = $1", db.SQLStateUnlogged, runtime.ErrUnlogged},
		{"forged log row of the next change", fmt.Sprintf(logRow, "3"), db.SQLStateUnlogged, runtime.ErrUnlogged},
		// The unique index of the change rows refuses it (no trigger
		// repeats the index); the store reports it as FS005.
		{"forged log row of a past change", fmt.Sprintf(logRow, "2"), "23505", runtime.ErrUnlogged},
		{"move along a registered pair with a wrong status",
			"UPDATE workflow_runs SET current_state = 'SUCCEEDED', previous_state = current_state, status = 'failed', row_version = row_version + 1, result = '{}', finished_at = now() WHERE id = $1",
			"23503", runtime.ErrTransitionRefused},
		{"move the registered table lacks, written as the runtime writes one",
			"UPDATE workflow_runs SET current_state = 'INITIATED', previous_state = current_state, row_version = row_version + 1 WHERE id = $1",
			"23503", runtime.ErrTransitionRefused},
		{"previous_state set by hand", "UPDATE workflow_runs SET previous_state = 'SUCCEEDED' WHERE id = $1", db.SQLStateRunImmutable, runtime.ErrRunImmutable},
		{"status set by hand", "UPDATE workflow_runs SET status = 'succeeded' WHERE id = $1", db.SQLStateRunImmutable, runtime.ErrRunImmutable},
		{"row_version set by hand", "UPDATE workflow_runs SET row_version = 7 WHERE id = $1", db.SQLStateRunImmutable, runtime.ErrRunImmutable},
		{"row_version + 1 without a self transition", "UPDATE workflow_runs SET row_version = row_version + 1 WHERE id = $1", db.SQLStateTransitionRefused, runtime.ErrTransitionRefused},
		{"result on a running run", `UPDATE workflow_runs SET result = '{"status":"succeeded"}' WHERE id = $1`, db.SQLStateRunImmutable, runtime.ErrRunImmutable},
		{"finished_at on a running run", "UPDATE workflow_runs SET finished_at = now() WHERE id = $1", db.SQLStateRunImmutable, runtime.ErrRunImmutable},
		{"transition added to a registered table",
			"INSERT INTO workflow_transitions (workflow_type, version, from_state, event, to_state) VALUES ('order', 1, 'WORKING', 'Begin', 'INITIATED')",
			db.SQLStateDefinitionImmutable, runtime.ErrDefinitionImmutable},
		{"state added to a registered definition",
			"INSERT INTO workflow_states (workflow_type, version, state, status) VALUES ('order', 1, 'LIMBO', 'running')",
			db.SQLStateDefinitionImmutable, runtime.ErrDefinitionImmutable},
	}
	for _, tt := range tests {
		var args []any
		if strings.Contains(tt.sql, "$1") {
			args = append(args, run.ID)
		}
		_, err := e.pool.Exec(e.ctx, tt.sql, args...)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != tt.state {
			t.Errorf("%s: %v, want SQLSTATE %s", tt.name, err, tt.state)
			continue
		}
		if !errors.Is(store.Translate(err), tt.want) {
			t.Errorf("%s: %v translates to %v, want %v", tt.name, err, store.Translate(err), tt.want)
		}
	}
	if got := e.get(t, run.ID); got.State != "WORKING" || got.RowVersion != 2 || got.Status != runtime.StatusRunning || got.Result != nil || !got.FinishedAt.IsZero() {
		t.Errorf("run after the refused writes: %s/%s at row version %d, result %v, finished %v; want WORKING/running at 2, none",
			got.State, got.Status, got.RowVersion, got.Result, got.FinishedAt)
	}
	// With the constraint triggers deferred, a transaction may move the run
	// and log the move in two statements.
	err := pgx.BeginFunc(e.ctx, e.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(e.ctx, "SET CONSTRAINTS workflow_runs_logged, workflow_step_logs_change DEFERRED"); err != nil {
			return err
		}
		if _, err := tx.Exec(e.ctx, "UPDATE workflow_runs SET current_state = 'SUCCEEDED', result = '{}', finished_at = now() WHERE id = $1", run.ID); err != nil {
			return err
		}
		_, err := tx.Exec(e.ctx, fmt.Sprintf(logRow, "3"), run.ID)
		return err
	})
	if err != nil {
		t.Errorf("deferred move and log row: %v", err)
	}
	if got := e.get(t, run.ID); got.State != "SUCCEEDED" || got.RowVersion != 3 || got.Status != runtime.StatusSucceeded {
		t.Errorf("run after the deferred move: %s/%s at row version %d, want SUCCEEDED/succeeded at 3", got.State, got.Status, got.RowVersion)
	}
}

// A transition from a state to itself moves the row version (it used to be
// undone by the trigger, and its log row then collided with the previous
// one).
func TestSelfTransition(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	def := orderDef(4)
	def.Events = append(def.Events, runtime.EventSpec{Name: "Ping"})
	def.Transitions = append(def.Transitions, runtime.TransitionSpec{From: "WORKING", To: "WORKING", Event: "Ping"})
	e := newEnvPool(t, pool)
	if err := e.st.Register(e.ctx, def); err != nil {
		t.Fatal(err)
	}
	res, err := e.st.Start(e.ctx, runtime.StartRequest{Type: "order", Version: 4, IdempotencyKey: "self", Owner: runtime.Owner{TenantID: "t1"}})
	if err != nil {
		t.Fatal(err)
	}
	at := func(from, event, to string) runtime.Transition {
		return runtime.Transition{Machine: "order", Version: 4, From: from, To: to, Event: event, Status: runtime.StatusRunning}
	}
	rec, err := e.st.Record(e.ctx, res.Run.ID, 1, at("INITIATED", "Begin", "WORKING"))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if rec, err = e.st.Record(e.ctx, res.Run.ID, rec.RowVersion, at("WORKING", "Ping", "WORKING")); err != nil {
			t.Fatal(err)
		}
	}
	if rec.RowVersion != 4 {
		t.Errorf("row version %d after two self transitions, want 4", rec.RowVersion)
	}
	want := []string{"created ->INITIATED/@1 a1", "transition INITIATED->WORKING/Begin@2 a1", "transition WORKING->WORKING/Ping@3 a1", "transition WORKING->WORKING/Ping@4 a1"}
	if diff := cmp.Diff(want, moves(e.history(t, res.Run.ID))); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
}

func TestRecordBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	run := e.start(t, "k").Run
	const missing = "00000000-0000-4000-8000-000000000000"
	nan := tr("INITIATED", "Begin", "WORKING", beginPayload{"w", math.NaN()})
	unknownType := tr("INITIATED", "Begin", "WORKING", nil)
	unknownType.Machine = "ghost"
	unknownVersion := tr("INITIATED", "Begin", "WORKING", nil)
	unknownVersion.Version = 3
	tests := []struct {
		name    string
		id      string
		version int64
		t       runtime.Transition
		want    error
		message string
	}{
		{"malformed id", "run-17", 1, tr("INITIATED", "Begin", "WORKING", nil), runtime.ErrInvalidID, `"run-17"`},
		{"missing run", missing, 1, tr("INITIATED", "Begin", "WORKING", nil), runtime.ErrRunNotFound, missing},
		{"payload that does not encode", run.ID, 1, nan, runtime.ErrPayload, run.ID},
		{"payload of a channel", run.ID, 1, tr("INITIATED", "Begin", "WORKING", make(chan int)), runtime.ErrPayload, "chan int"},
		{"unregistered type", run.ID, 1, unknownType, runtime.ErrUnknownDefinition, "ghost v1"},
		{"unregistered version", run.ID, 1, unknownVersion, runtime.ErrUnknownDefinition, "order v3"},
		{"move not in the table", run.ID, 1, tr("INITIATED", "Finish", "SUCCEEDED", nil), runtime.ErrTransitionRefused, "INITIATED -> SUCCEEDED on Finish"},
		{"stale version", run.ID, 7, tr("INITIATED", "Begin", "WORKING", nil), runtime.ErrConflict, "row version 7"},
		{"stale state", run.ID, 1, tr("WORKING", "Fail", "FAILED", nil), runtime.ErrConflict, "expected WORKING"},
	}
	for _, tt := range tests {
		_, err := e.st.Record(e.ctx, tt.id, tt.version, tt.t)
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: error %v, want %v", tt.name, err, tt.want)
			continue
		}
		if !strings.Contains(err.Error(), tt.message) || !strings.Contains(err.Error(), tt.id) {
			t.Errorf("%s: error %q does not say %q and the run id", tt.name, err, tt.message)
		}
	}
	// Another definition of the same type/version is registered elsewhere.
	v2 := orderDef(2)
	if err := e.st.Register(e.ctx, v2); err != nil {
		t.Fatal(err)
	}
	other := tr("INITIATED", "Begin", "WORKING", nil)
	other.Version = 2
	if _, err := e.st.Record(e.ctx, run.ID, 1, other); !errors.Is(err, runtime.ErrDefinitionMismatch) {
		t.Errorf("transition of v2 on a v1 run: %v, want ErrDefinitionMismatch", err)
	}
	if diff := cmp.Diff([]string{"created ->INITIATED/@1 a1"}, moves(e.history(t, run.ID))); diff != "" {
		t.Errorf("bad input wrote to the log:\n%s", diff)
	}
	if got := e.get(t, run.ID); got.State != "INITIATED" || got.RowVersion != 1 {
		t.Errorf("bad input moved the run to %s at %d", got.State, got.RowVersion)
	}
}

func TestRecordContextCancelledMidTransition(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	run := e.start(t, "k").Run

	// Hold the run's row so that the transition waits, then give up on it.
	locker, err := e.pool.Begin(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := locker.Exec(e.ctx, "SELECT 1 FROM workflow_runs WHERE id = $1 FOR UPDATE", run.ID); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(e.ctx, 300*time.Millisecond)
	defer cancel()
	_, err = e.st.Record(ctx, run.ID, 1, tr("INITIATED", "Begin", "WORKING", nil))
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), run.ID) {
		t.Errorf("cancelled transition: %v, want context.DeadlineExceeded naming the run", err)
	}
	if err := locker.Rollback(e.ctx); err != nil {
		t.Fatal(err)
	}
	// The server may or may not run the statement before the cancel reaches
	// it (the caller cannot know: its acknowledgement is what got lost).
	// Wait until the abandoned statement is over, one way or the other;
	// either way the run and its log agree: all or nothing.
	waitIdle(t, e)
	got, h := e.get(t, run.ID), e.history(t, run.ID)
	landed := got.State == "WORKING"
	switch {
	case got.State == "INITIATED" && got.RowVersion == 1 && len(h) == 1:
	case landed && got.RowVersion == 2 && len(h) == 2:
	default:
		t.Fatalf("after a cancelled transition the run is in %s at %d with %d log rows", got.State, got.RowVersion, len(h))
	}
	// Retried, the transition goes through, or is recognised as applied.
	rec, err := e.st.Record(e.ctx, run.ID, 1, tr("INITIATED", "Begin", "WORKING", nil))
	if err != nil {
		t.Fatal(err)
	}
	if rec.AlreadyApplied != landed || rec.RowVersion != 2 {
		t.Errorf("retry: %+v, want row version 2, already applied %v", rec, landed)
	}
	// An already cancelled context writes nothing.
	done, cancelNow := context.WithCancel(e.ctx)
	cancelNow()
	if _, err := e.st.Record(done, run.ID, 2, tr("WORKING", "Fail", "FAILED", nil)); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v, want context.Canceled", err)
	}
	if got := e.get(t, run.ID); got.State != "WORKING" || got.RowVersion != 2 {
		t.Errorf("a cancelled context moved the run to %s at %d", got.State, got.RowVersion)
	}
}
func TestClosedPool(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	run := e.start(t, "k").Run
	pool, err := pgxpool.New(e.ctx, e.pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(pool)
	pool.Close()
	_, err = st.Record(e.ctx, run.ID, 1, tr("INITIATED", "Begin", "WORKING", nil))
	if !errors.Is(err, runtime.ErrClosed) || !strings.Contains(err.Error(), run.ID) {
		t.Errorf("record on a closed pool: %v, want ErrClosed naming the run", err)
	}
	if _, err := st.Get(e.ctx, run.ID); !errors.Is(err, runtime.ErrClosed) {
		t.Errorf("get on a closed pool: %v, want ErrClosed", err)
	}
	if _, err := st.Start(e.ctx, runtime.StartRequest{Type: "order", Version: 1, IdempotencyKey: "k2", Owner: runtime.Owner{TenantID: "t"}}); !errors.Is(err, runtime.ErrClosed) {
		t.Errorf("start on a closed pool: %v, want ErrClosed", err)
	}
}

func TestLoadRefusesRunsTheMachineDoesNotKnow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	run := e.start(t, "k").Run
	if _, _, err := e.st.Load(e.ctx, run.ID, orderDef(2)); !errors.Is(err, runtime.ErrDefinitionMismatch) {
		t.Errorf("load with v2: %v, want ErrDefinitionMismatch", err)
	}
	// Put the row in a state nobody registered, behind the triggers' back
	// (as a restore from an old backup might), then put it back.
	setState := func(state string) {
		t.Helper()
		err := pgx.BeginFunc(e.ctx, e.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(e.ctx, "SET LOCAL session_replication_role = replica"); err != nil {
				return err
			}
			_, err := tx.Exec(e.ctx, "UPDATE workflow_runs SET current_state = $2 WHERE id = $1", run.ID, state)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	setState("LIMBO")
	t.Cleanup(func() { setState("INITIATED") })
	_, rec, err := e.st.Load(e.ctx, run.ID, orderDef(1))
	if !errors.Is(err, runtime.ErrUnknownState) || !strings.Contains(err.Error(), `"LIMBO"`) || !strings.Contains(err.Error(), run.ID) {
		t.Errorf("load of a run in LIMBO: %v, want ErrUnknownState naming the state and the run", err)
	}
	if rec != nil {
		t.Error("load returned a recorder with its error")
	}
	if err := pgtest.CheckInvariants(e.ctx, e.pool); !errors.Is(err, pgtest.ErrInvariant) || !strings.Contains(err.Error(), "LIMBO") {
		t.Errorf("the invariant check missed the run in LIMBO: %v", err)
	}
}

func TestMalformedIDsAreNamed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for name, call := range map[string]func() error{
		"get":     func() error { _, err := e.st.Get(e.ctx, "nope-1"); return err },
		"history": func() error { _, err := e.st.History(e.ctx, "nope-1"); return err },
		"log":     func() error { _, err := e.st.LogStep(e.ctx, "nope-1", "s", nil); return err },
		"emit":    func() error { _, err := e.st.Emit(e.ctx, "nope-1", "topic", nil); return err },
		"list":    func() error { _, err := e.st.List(e.ctx, store.Filter{After: "nope-1"}); return err },
	} {
		err := call()
		if !errors.Is(err, runtime.ErrInvalidID) || !strings.Contains(err.Error(), `"nope-1"`) {
			t.Errorf("%s: %v, want ErrInvalidID naming the id", name, err)
		}
	}
	const missing = "00000000-0000-4000-8000-00000000abcd"
	for name, call := range map[string]func() error{
		"get":     func() error { _, err := e.st.Get(e.ctx, missing); return err },
		"history": func() error { _, err := e.st.History(e.ctx, missing); return err },
		"log":     func() error { _, err := e.st.LogStep(e.ctx, missing, "s", nil); return err },
		"emit":    func() error { _, err := e.st.Emit(e.ctx, missing, "topic", nil); return err },
	} {
		if err := call(); !errors.Is(err, runtime.ErrRunNotFound) || !strings.Contains(err.Error(), missing) {
			t.Errorf("%s: %v, want ErrRunNotFound naming the id", name, err)
		}
	}
}

// waitIdle waits until no other session of the test's database runs a
// statement.
func waitIdle(t *testing.T, e env) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var active int
		err := e.pool.QueryRow(e.ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND state <> 'idle'`).Scan(&active)
		if err != nil {
			t.Fatal(err)
		}
		if active == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions still busy after 30s", active)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A transition reads the registered move it takes without locking it: a
// transaction that holds the move's row (here FOR UPDATE, which a foreign
// key's KEY SHARE lock waits for) does not hold up the transitions of the
// type's runs, and their transactions write no lock of a row that every
// run of the type shares.
func TestTransitionDoesNotLockTheRegisteredMove(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	run := e.start(t, "k").Run
	holder, err := e.pool.Begin(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(e.ctx)
	if _, err := holder.Exec(e.ctx, `SELECT 1 FROM workflow_moves
		WHERE workflow_type = 'order' AND version = 1 AND from_state = 'INITIATED' AND to_state = 'WORKING' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	err = pgx.BeginFunc(e.ctx, e.pool, func(tx pgx.Tx) error {
		// A statement that waited for the row would fail here, after
		// lock_timeout, with SQLSTATE 55P03.
		if _, err := tx.Exec(e.ctx, "SET LOCAL lock_timeout = '10s'"); err != nil {
			return err
		}
		_, err := e.st.RecordTx(e.ctx, tx, run.ID, run.RowVersion, tr("INITIATED", "Begin", "WORKING", nil))
		return err
	})
	if err != nil {
		t.Fatalf("transition while its move's row is locked: %v", err)
	}
	if got := e.get(t, run.ID); got.State != "WORKING" || got.RowVersion != 2 {
		t.Errorf("run after the transition: %s at row version %d, want WORKING at 2", got.State, got.RowVersion)
	}
}
