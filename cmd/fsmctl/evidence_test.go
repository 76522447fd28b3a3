package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/machines/compliance"
	"github.com/fsmgen/fsmgen/machines/compliance/local"
	"github.com/fsmgen/fsmgen/runtime/activity"
	"github.com/fsmgen/fsmgen/runtime/engine"
	"github.com/fsmgen/fsmgen/runtime/evidence"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

func TestEvidenceVerifyAndExport(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	pool := openPool(t, url)
	eng, err := engine.New(pool, store.New(pool), engine.Config{WorkerID: "fsmctl-evidence-test", DisableNotify: true})
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
	out, err := wf.ExecuteWorkflowSync(ctx, compliance.Application{ApplicationID: "app1", ApplicantID: "a1", OrganizationID: "org"}, "")
	if err != nil {
		t.Fatal(err)
	}
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
