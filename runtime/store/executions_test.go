package store_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/fsmtest"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// TestExecutions: a run read as an Execution carries the run's fields
// under the seed's names and its transitions in order, from the view
// workflow_executions; the filters select as the seed's query does.
func TestExecutions(t *testing.T) {
	t.Parallel()
	c := fsmtest.NewClock(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	e := newEnv(t, store.WithClock(c.Now))
	const user = "8a5f2c1e-0000-4000-8000-0000000000a1"
	start := func(key, tenant string) runtime.Run {
		t.Helper()
		res, err := e.st.Start(e.ctx, runtime.StartRequest{Type: "order", Version: 1, IdempotencyKey: key, Owner: runtime.Owner{TenantID: tenant, UserID: user},
			Input: map[string]string{"key": key}})
		if err != nil {
			t.Fatal(err)
		}
		c.Advance(time.Minute)
		return res.Run
	}
	done := start("a", "org_a")
	working := start("b", "org_a")
	other := start("c", "org_b")
	done = e.record(t, done, "INITIATED", "Begin", "WORKING")
	c.Advance(time.Minute)
	e.record(t, done, "WORKING", "Finish", "SUCCEEDED")
	e.record(t, working, "INITIATED", "Begin", "WORKING")

	x, err := e.st.Execution(e.ctx, done.ID)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	run, err := e.st.Get(e.ctx, done.ID)
	if err != nil {
		t.Fatal(err)
	}
	if run.Result == nil || run.Result.Outcome != "done" || run.State != "SUCCEEDED" || run.UserID != user || run.TenantID != "org_a" {
		t.Fatalf("run %+v, want succeeded with outcome done, of %s in org_a", run, user)
	}
	want := store.Execution{
		Run: run,
		StateHistory: []store.StateChange{
			{From: "INITIATED", To: "WORKING", Event: "Begin", At: t0.Add(3 * time.Minute)},
			{From: "WORKING", To: "SUCCEEDED", Event: "Finish", At: t0.Add(4 * time.Minute)},
		},
		EvidenceIDs: []int64{},
	}
	if diff := cmp.Diff(want, x, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
		t.Errorf("execution (-want +got):\n%s", diff)
	}

	key := func(xs []store.Execution) []string {
		var out []string
		for _, x := range xs {
			out = append(out, fmt.Sprintf("%s %s %s %d", x.IdempotencyKey, x.Status, x.State, len(x.StateHistory)))
		}
		return out
	}
	for _, tc := range []struct {
		f    store.ExecutionFilter
		want []string
	}{
		{store.ExecutionFilter{Type: "order", Status: runtime.StatusRunning, TenantID: "org_a"}, []string{"b running WORKING 1"}},
		{store.ExecutionFilter{Type: "order", TenantID: "org_a"}, []string{"a succeeded SUCCEEDED 2", "b running WORKING 1"}},
		{store.ExecutionFilter{Status: runtime.StatusRunning}, []string{"b running WORKING 1", "c running INITIATED 0"}},
		{store.ExecutionFilter{}, []string{"a succeeded SUCCEEDED 2", "b running WORKING 1", "c running INITIATED 0"}},
		{store.ExecutionFilter{Limit: 1}, []string{"a succeeded SUCCEEDED 2"}},
		{store.ExecutionFilter{Type: "other"}, nil},
	} {
		got, err := e.st.Executions(e.ctx, tc.f)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, key(got)); diff != "" {
			t.Errorf("executions %+v (-want +got):\n%s", tc.f, diff)
		}
	}
	if _, err := e.st.Executions(e.ctx, store.ExecutionFilter{Limit: 10001}); !errors.Is(err, runtime.ErrInvalidInput) ||
		err.Error() != "store: query executions: invalid input: limit 10001, want 0..10000" {
		t.Errorf("limit 10001: err = %v", err)
	}
	if _, err := e.st.Execution(e.ctx, "5d3c1a2b-0000-4000-8000-000000000000"); !errors.Is(err, runtime.ErrRunNotFound) {
		t.Errorf("unknown run: err = %v, want ErrRunNotFound", err)
	}
	_ = other
}

// TestExecutionsQueryUsesIndex: on a table of 20,000 runs of two types in
// 200 organizations, the seed's query({workflowName, status,
// organizationId}) made by Executions is served by workflow_runs_query_idx:
// the index's scan count grows by the query, read from
// pg_stat_user_indexes after the backend flushed its statistics. The plan
// of the same statement is in the failure message.
func TestExecutionsQueryUsesIndex(t *testing.T) {
	t.Parallel()
	// One connection: the query and the flush of its statistics are on the
	// same backend.
	pool := pgtest.NewPool(t, pgtest.MaxConns(1))
	e := newEnvPool(t, pool)
	invoice := orderDef(1)
	invoice.Type = "invoice"
	if err := e.st.Register(e.ctx, invoice); err != nil {
		t.Fatal(err)
	}
	// Runs and their created rows in one statement (the schema's checks run
	// at its end), spread over types and organizations, a minute apart.
	if _, err := pool.Exec(e.ctx, `
WITH r AS (
    INSERT INTO workflow_runs (workflow_type, current_state, tenant_id, correlation_id, idempotency_key, definition_version, created_at)
    SELECT CASE WHEN g % 2 = 0 THEN 'order' ELSE 'invoice' END, 'INITIATED', 'org_' || (g / 2 % 200), gen_random_uuid(), 'k' || g, 1,
           timestamptz '2026-03-02 09:00:00+00' + g * interval '1 minute'
    FROM generate_series(1, 20000) g
    RETURNING id, workflow_type, current_state, row_version, definition_version, created_at)
INSERT INTO workflow_step_logs (workflow_run_id, workflow_type, attempt_no, step_name, state_before, state_after,
                                occurred_at, kind, row_version, definition_version)
SELECT id, workflow_type, 1, 'created', NULL, current_state, created_at, 'created', row_version, definition_version FROM r`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(e.ctx, `ANALYZE workflow_runs`); err != nil {
		t.Fatal(err)
	}
	scans := func() int64 {
		t.Helper()
		if _, err := pool.Exec(e.ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
			t.Fatal(err)
		}
		var n int64
		if err := pool.QueryRow(e.ctx, `SELECT idx_scan FROM pg_stat_user_indexes WHERE indexrelname = 'workflow_runs_query_idx'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := scans()
	got, err := e.st.Executions(e.ctx, store.ExecutionFilter{Type: "order", Status: runtime.StatusRunning, TenantID: "org_42"})
	if err != nil {
		t.Fatal(err)
	}
	after := scans()
	if len(got) != 50 || got[0].IdempotencyKey != "k84" || got[0].TenantID != "org_42" {
		t.Fatalf("query returned %d executions, first %+v; want the 50 runs of org_42", len(got), got[0])
	}
	if after <= before {
		rows, err := pool.Query(e.ctx, `EXPLAIN SELECT * FROM workflow_executions
WHERE workflow_name = 'order' AND status = 'running' AND organization_id = 'org_42' ORDER BY started_at, id LIMIT 100`)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, line)
		}
		t.Errorf("workflow_runs_query_idx scans %d before the query, %d after: not used; plan:\n%s", before, after, strings.Join(plan, "\n"))
	}
}
