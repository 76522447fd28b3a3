package runfiles_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/internal/runfiles"
)

func TestWriteFileReplacesWholeAndLeavesNoTemporary(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	name := filepath.Join(dir, "run.json")
	for _, v := range []any{map[string]int{"a": 1}, []string{"b", "c"}} {
		if err := runfiles.WriteJSON(name, v); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("[\n  \"b\",\n  \"c\"\n]\n", string(got)); diff != "" {
		t.Errorf("content (-want +got):\n%s", diff)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("%d entries in the directory, want only run.json", len(entries))
	}
	if err := runfiles.WriteFile(filepath.Join(dir, "missing", "x.json"), nil); err == nil {
		t.Error("WriteFile into a missing directory succeeded")
	}
}

func TestAppendArtifactGrows(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	recs := []runfiles.ArtifactRecord{
		{Name: "report_csv", Type: "csv", Path: "report.csv", CreatedAt: "2026-02-19T10:30:00.000Z", Metadata: map[string]any{"rows": 2.0}},
		{Name: "cleanup", Type: "json", Path: "cleanup.json", CreatedAt: "2026-02-19T10:30:01.000Z", Metadata: map[string]any{}},
	}
	for _, r := range recs {
		if err := runfiles.AppendArtifact(dir, r); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "artifacts", "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got []runfiles.ArtifactRecord
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(recs, got); diff != "" {
		t.Errorf("index (-want +got):\n%s", diff)
	}
	if err := os.WriteFile(filepath.Join(dir, "artifacts", "index.json"), []byte("[{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := runfiles.AppendArtifact(dir, recs[0]); err == nil {
		t.Error("append to a corrupt index succeeded")
	}
}

func TestCompactJSONIsCanonical(t *testing.T) {
	t.Parallel()
	// As jsonb returns it: keys by length, spaces.
	got, err := runfiles.CompactJSON([]byte(`{"b": 1, "aa": [1.50, 12345678901234567890], "a": {"y": null, "x": "<&>"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(`{"a":{"x":"<&>","y":null},"aa":[1.50,12345678901234567890],"b":1}`, string(got)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, in := range []string{"", " ", "null"} {
		if got, err := runfiles.CompactJSON([]byte(in)); got != nil || err != nil {
			t.Errorf("CompactJSON(%q) = %s, %v; want nil, nil", in, got, err)
		}
	}
	if _, err := runfiles.CompactJSON([]byte(`{} {}`)); err == nil {
		t.Error("trailing data accepted")
	}
}

func audit() runfiles.Audit {
	return runfiles.Audit{
		Run: runfiles.RunSummary{RunID: "r1", WorkflowName: "report", Status: "FAILED", StartedAt: "2026-02-19T10:30:00.000Z",
			FinishedAt: "2026-02-19T10:30:05.000Z", DurationMS: 5000, ErrorSummary: "step 2 failed"},
		Steps: []runfiles.StepSummary{
			{StepIndex: 1, StepName: "fetch", Status: "OK", StartedAt: "2026-02-19T10:30:01.000Z", FinishedAt: "2026-02-19T10:30:02.000Z",
				DurationMS: 1000, Metrics: json.RawMessage(`{"rows": 2, "cols": ["a", "b"]}`)},
			{StepIndex: 2, StepName: "write", Status: "FAILED", StartedAt: "2026-02-19T10:30:03.000Z", FinishedAt: "2026-02-19T10:30:04.000Z",
				DurationMS: 1000, ErrorCode: "StepFailed", ErrorMessage: "bad row, \"quoted\"\nsecond line"},
		},
	}
}

func TestAuditCSVReadsBack(t *testing.T) {
	t.Parallel()
	data, err := runfiles.AuditCSV(audit())
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"run_id", "workflow_name", "run_status", "run_started_at", "run_finished_at", "run_duration_ms", "step_index", "step_name",
			"step_status", "step_started_at", "step_finished_at", "step_duration_ms", "step_error_code", "step_error_message", "step_metrics_json"},
		{"r1", "report", "FAILED", "2026-02-19T10:30:00.000Z", "2026-02-19T10:30:05.000Z", "5000", "1", "fetch", "OK",
			"2026-02-19T10:30:01.000Z", "2026-02-19T10:30:02.000Z", "1000", "", "", `{"cols":["a","b"],"rows":2}`},
		{"r1", "report", "FAILED", "2026-02-19T10:30:00.000Z", "2026-02-19T10:30:05.000Z", "5000", "2", "write", "FAILED",
			"2026-02-19T10:30:03.000Z", "2026-02-19T10:30:04.000Z", "1000", "StepFailed", "bad row, \"quoted\"\nsecond line", ""},
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("CSV (-want +got):\n%s", diff)
	}
}

func TestReadSummariesErrors(t *testing.T) {
	t.Parallel()
	runs := t.TempDir()
	dir := filepath.Join(runs, "r1")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	a := audit()
	write := func(name string, v any) {
		t.Helper()
		if err := runfiles.WriteJSON(filepath.Join(dir, name), v); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := runfiles.ReadSummaries(runs, "r2"); !errors.Is(err, runfiles.ErrRunDirNotFound) {
		t.Errorf("missing directory: %v", err)
	}
	if _, err := runfiles.ReadSummaries(runs, "../r1"); err == nil {
		t.Error("a run id with a slash was accepted")
	}
	if _, err := runfiles.ReadSummaries(runs, "r1"); !errors.Is(err, runfiles.ErrSummaryMissing) {
		t.Errorf("missing run.json: %v", err)
	}
	write("run.json", a.Run)
	if _, err := runfiles.ReadSummaries(runs, "r1"); !errors.Is(err, runfiles.ErrSummaryMissing) {
		t.Errorf("missing steps.json: %v", err)
	}
	write("steps.json", a.Steps)
	got, err := runfiles.ReadSummaries(runs, "r1")
	if err != nil {
		t.Fatal(err)
	}
	a.Steps[0].Metrics = json.RawMessage(`{"cols":["a","b"],"rows":2}`)
	if diff := cmp.Diff(a, got); diff != "" {
		t.Errorf("audit (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		file string
		v    any
	}{
		{"run.json", map[string]any{"run_id": "r1"}},
		{"run.json", map[string]any{"run_id": "other", "workflow_name": "w", "status": "OK"}},
		{"run.json", "not an object"},
		{"steps.json", map[string]any{"step_index": 1}},
		{"steps.json", []map[string]any{{"step_index": 1, "step_name": "x", "status": "DONE"}}},
	} {
		write("run.json", a.Run)
		write("steps.json", a.Steps)
		write(tc.file, tc.v)
		if _, err := runfiles.ReadSummaries(runs, "r1"); !errors.Is(err, runfiles.ErrSummaryCorrupt) {
			t.Errorf("%s = %v: %v, want ErrSummaryCorrupt", tc.file, tc.v, err)
		}
	}
}

// TestAuditCSVNeutralisesFormulas writes cells a spreadsheet would run as
// formulas: each is read back with a single quote in front, the others as
// they were.
func TestAuditCSVNeutralisesFormulas(t *testing.T) {
	t.Parallel()
	a := audit()
	a.Run.WorkflowName = "=cmd|' /C calc'!A0"
	a.Steps[0].StepName = "+SUM(1,2)"
	a.Steps[0].ErrorCode = "@SUM(A1)"
	a.Steps[0].ErrorMessage = "-2+3"
	a.Steps[1].ErrorCode = "\tTAB"
	a.Steps[1].ErrorMessage = "\r=HYPERLINK(\"http://evil.example\")"
	data, err := runfiles.AuditCSV(a)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var got [][]string
	for _, r := range rows[1:] {
		got = append(got, []string{r[1], r[7], r[12], r[13], r[14]})
	}
	want := [][]string{
		{"'=cmd|' /C calc'!A0", "'+SUM(1,2)", "'@SUM(A1)", "'-2+3", `{"cols":["a","b"],"rows":2}`},
		{"'=cmd|' /C calc'!A0", "write", "'\tTAB", "'\r=HYPERLINK(\"http://evil.example\")", ""},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cells (workflow, step, code, message, metrics) (-want +got):\n%s", diff)
	}
}
