package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/db"
	"github.com/fsmgen/fsmgen/machines/compliance"
	"github.com/fsmgen/fsmgen/machines/compliance/local"
	"github.com/fsmgen/fsmgen/runtime/activity"
	"github.com/fsmgen/fsmgen/runtime/engine"
	"github.com/fsmgen/fsmgen/runtime/evidence"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// complianceRuns runs the compliance workflow to its end for each
// application id, with the engine as a runtime role (db.RoleRuntime), and
// returns the schema owner's pool, the database as an operator role
// (db.RoleOperator) for fsmctl, and the runs' ids.
func complianceRuns(t *testing.T, apps ...string) (owner *pgxpool.Pool, operator string, runIDs []string) {
	t.Helper()
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	owner = openPool(t, url)
	pool := openPool(t, pgtest.RoleDSN(t, url, db.RoleRuntime))
	eng, err := engine.New(store.New(pool), engine.Config{WorkerID: "fsmctl-evidence-test", DisableNotify: true})
	if err != nil {
		t.Fatal(err)
	}
	wf := compliance.New(eng, activity.NewExecutor(pool), compliance.Adapters{
		Prequalifier: &local.Prequalifier{Fail: map[string]string{"a1": "income below 40x monthly rent"}},
		Screening:    &local.Screening{}, Notifier: &local.Notifier{}, Assessor: &local.Assessor{},
	})
	if err := wf.Register(ctx); err != nil {
		t.Fatal(err)
	}
	for _, app := range apps {
		out, err := wf.ExecuteWorkflowSync(ctx, compliance.Application{ApplicationID: app, ApplicantID: "a1", OrganizationID: "org"}, "")
		if err != nil {
			t.Fatal(err)
		}
		runIDs = append(runIDs, out.RunID)
	}
	return owner, pgtest.RoleDSN(t, url, db.RoleOperator), runIDs
}

func TestEvidenceVerifyAndExport(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, url, ids := complianceRuns(t, "app1")
	out := struct{ RunID string }{ids[0]}
	v, err := evidence.Verify(ctx, pool, out.RunID)
	if err != nil {
		t.Fatal(err)
	}

	r := withDB(t, url, "evidence", "verify", out.RunID)
	want := result{Code: 0, Stdout: "run " + out.RunID + ": 5 evidence records verified; head " + v.Head + "\n"}
	if diff := cmp.Diff(want, r); diff != "" {
		t.Errorf("verify (-want +got):\n%s", diff)
	}
	r = withDB(t, url, "evidence", "export", out.RunID)
	var ex evidence.Export
	if err := json.Unmarshal([]byte(r.Stdout), &ex); err != nil || r.Code != 0 {
		t.Fatalf("export: %+v: %v", r, err)
	}
	var kinds []string
	for _, rec := range ex.Records {
		kinds = append(kinds, rec.Kind)
	}
	if diff := cmp.Diff([]string{"created", "initialization", "prequalification_results", "final_decision_rationale", "transition"}, kinds); diff != "" || !ex.Verified || ex.Head != v.Head {
		t.Errorf("export: verified %v head %s kinds (-want +got):\n%s", ex.Verified, ex.Head, diff)
	}
	if _, err := evidence.VerifyRecords(out.RunID, ex.Records); err != nil {
		t.Errorf("the exported chain does not verify: %v", err)
	}

	if _, err := pool.Exec(ctx, `ALTER TABLE evidence_records DISABLE TRIGGER evidence_records_append_only`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE evidence_records SET prev_hash = 'forged' WHERE workflow_run_id = $1 AND seq = 4`, out.RunID); err != nil {
		t.Fatal(err)
	}
	r = withDB(t, url, "evidence", "verify", out.RunID)
	if r.Code != exitFailure || !strings.Contains(r.Stderr, "evidence chain broken at record 4 (id ") || !strings.Contains(r.Stderr, "previous hash forged") {
		t.Errorf("verify of a forged link = %+v", r)
	}
	r = withDB(t, url, "evidence", "verify", "8a5f2c1e-0000-4000-8000-000000000099")
	if r.Code != exitFailure || !strings.Contains(r.Stderr, "no evidence records") {
		t.Errorf("verify of a run without evidence = %+v", r)
	}
	r = withDB(t, url, "evidence", "verify", "nope")
	if r.Code != exitUsage {
		t.Errorf("verify of a malformed id = %+v", r)
	}
}

// fsmctl evidence verify fails on a chain whose last record was removed,
// and on one that ends with a record, correctly hashed and counted in the
// head, whose log row does not exist: changes made around the database's
// guards, by its owner with the triggers off (a runtime or operator role
// cannot make them; runtime/store's security tests show it).
func TestEvidenceVerifyFindsTruncationAndDanglingRecords(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	owner, url, ids := complianceRuns(t, "truncated", "dangling")
	tamper := func(sql, id string) {
		t.Helper()
		err := pgx.BeginFunc(ctx, owner, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SET LOCAL session_replication_role = replica`); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, sql, id)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	recordID := func(id string, seq int) string {
		t.Helper()
		var n int64
		if err := owner.QueryRow(ctx, `SELECT id FROM evidence_records WHERE workflow_run_id = $1 AND seq = $2`, id, seq).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(n)
	}
	hashes := func(id string) (last, head string) {
		t.Helper()
		if err := owner.QueryRow(ctx, `SELECT (SELECT left(hash, 12) FROM evidence_records WHERE workflow_run_id = $1 ORDER BY seq DESC LIMIT 1),
			(SELECT left(hash, 12) FROM evidence_heads WHERE workflow_run_id = $1)`, id).Scan(&last, &head); err != nil {
			t.Fatal(err)
		}
		return last, head
	}

	truncated := ids[0]
	tamper(`DELETE FROM evidence_records WHERE workflow_run_id = $1 AND seq = 5`, truncated)
	last, head := hashes(truncated)
	want := result{Code: exitFailure, Stderr: "fsmctl: run " + truncated + ": evidence chain broken at record 4 (id " + recordID(truncated, 4) +
		"): the chain ends at record 4 with hash " + last + ", its head says record 5 with hash " + head + "\n"}
	if diff := cmp.Diff(want, withDB(t, url, "evidence", "verify", truncated)); diff != "" {
		t.Errorf("verify of a truncated chain (-want +got):\n%s", diff)
	}

	dangling := ids[1]
	tamper(`WITH c AS (
    SELECT jsonb_build_object('run_id', h.workflow_run_id, 'seq', 6, 'kind', 'transition') AS c, h.hash AS prev
    FROM evidence_heads h WHERE h.workflow_run_id = $1),
ins AS (
    INSERT INTO evidence_records (workflow_run_id, workflow_type, seq, kind, step_log_id, content, content_hash, prev_hash, hash, recorded_at)
    SELECT $1, 'compliance', 6, 'transition', 987654321, c.c, encode(sha256(convert_to(c.c::text, 'UTF8')), 'hex'), c.prev,
        encode(sha256(convert_to(c.prev || encode(sha256(convert_to(c.c::text, 'UTF8')), 'hex'), 'UTF8')), 'hex'), now()
    FROM c RETURNING hash)
UPDATE evidence_heads SET records = 6, hash = (SELECT hash FROM ins) WHERE workflow_run_id = $1`, dangling)
	want = result{Code: exitFailure, Stderr: "fsmctl: run " + dangling + ": evidence chain broken at record 6 (id " + recordID(dangling, 6) +
		"): log row 987654321 of the run does not exist\n"}
	if diff := cmp.Diff(want, withDB(t, url, "evidence", "verify", dangling)); diff != "" {
		t.Errorf("verify of a chain with a dangling record (-want +got):\n%s", diff)
	}
}
