package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	// The test makes real step-engine runs to export; fsmctl itself reads
	// their files and rows through internal/runfiles only.
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/stepengine"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// seedColumns are the CSV columns of the contract, in its order.
var seedColumns = []string{
	"run_id", "workflow_name", "run_status", "run_started_at", "run_finished_at", "run_duration_ms",
	"step_index", "step_name", "step_status", "step_started_at", "step_finished_at", "step_duration_ms",
	"step_error_code", "step_error_message", "step_metrics_json",
}

// stepRun runs a three-step workflow whose second step fails with a
// message that needs CSV quoting, and returns the database's URL, the runs
// directory and the run's id.
func stepRun(t *testing.T) (url, runsDir, runID string) {
	t.Helper()
	url = pgtest.NewDatabase(t)
	st := store.New(openPool(t, url))
	var mu sync.Mutex
	now := time.Date(2026, 2, 19, 10, 30, 0, 0, time.UTC)
	e := stepengine.New(st, stepengine.WithGitSHA("abc123"), stepengine.WithClock(func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(250 * time.Millisecond)
		return now
	}))
	ctx := context.Background()
	if err := e.Register(ctx); err != nil {
		t.Fatal(err)
	}
	ok := func(metrics map[string]any) func(context.Context, stepengine.RunContext, *stepengine.RunState, *stepengine.Logger) (stepengine.StepResult, error) {
		return func(context.Context, stepengine.RunContext, *stepengine.RunState, *stepengine.Logger) (stepengine.StepResult, error) {
			return stepengine.StepResult{OK: true, Metrics: metrics}, nil
		}
	}
	wf := stepengine.Workflow{Name: "report", Config: map[string]string{"sheet": "A"}, Steps: []stepengine.Step{
		{Name: "fetch", Run: ok(map[string]any{"rows": 3, "columns": []string{"a", "b"}, "source": "api, \"v4\""})},
		{Name: "write", Run: func(context.Context, stepengine.RunContext, *stepengine.RunState, *stepengine.Logger) (stepengine.StepResult, error) {
			return stepengine.StepResult{OK: false, Error: "row 2, column \"b\": empty\nrow 3: too long"}, nil
		}},
		{Name: "publish", Run: ok(nil)},
	}}
	runsDir = t.TempDir()
	res, err := e.Run(ctx, wf, stepengine.RunOptions{RunsDir: runsDir})
	if err != nil {
		t.Fatal(err)
	}
	return url, runsDir, res.RunID
}

func TestExportJSONAndCSV(t *testing.T) {
	t.Parallel()
	url, runsDir, id := stepRun(t)
	dir := filepath.Join(runsDir, id)
	engineAudit, err := os.ReadFile(filepath.Join(dir, "audit.json"))
	if err != nil {
		t.Fatal(err)
	}

	// JSON to the default place: the bundle the engine wrote, unchanged.
	r := fsmctl(t, nil, "export", id, "--format", "json", "--runs-dir", runsDir)
	if r.Code != 0 || r.Stderr != "" {
		t.Fatalf("export json: %+v", r)
	}
	if want := "Wrote " + filepath.Join(dir, "audit.json") + ": run " + id + " (report, FAILED), 2 steps.\n"; r.Stdout != want {
		t.Errorf("stdout %q, want %q", r.Stdout, want)
	}
	gotJSON, _ := os.ReadFile(filepath.Join(dir, "audit.json"))
	if diff := cmp.Diff(string(engineAudit), string(gotJSON)); diff != "" {
		t.Errorf("audit.json (-engine +export):\n%s", diff)
	}
	for _, want := range []string{`"run": {`, `"steps": [`, `"error_summary": "step 2 write failed: StepFailed:`} {
		if !strings.Contains(string(gotJSON), want) {
			t.Errorf("audit.json lacks %s:\n%s", want, gotJSON)
		}
	}

	// CSV, flags before the id this time.
	r = fsmctl(t, nil, "export", "-format=csv", "-runs-dir", runsDir, id)
	if r.Code != 0 || r.Stderr != "" {
		t.Fatalf("export csv: %+v", r)
	}
	csvData, err := os.ReadFile(filepath.Join(dir, "audit.csv"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(bytes.NewReader(csvData)).ReadAll()
	if err != nil {
		t.Fatalf("audit.csv does not read back: %v\n%s", err, csvData)
	}
	if diff := cmp.Diff(seedColumns, rows[0]); diff != "" {
		t.Errorf("header (-seed +got):\n%s", diff)
	}
	run := []string{id, "report", "FAILED", "2026-02-19T10:30:00.250Z", "2026-02-19T10:30:03.250Z", "3000"}
	want := [][]string{
		append(append([]string{}, run...), "1", "fetch", "OK", "2026-02-19T10:30:00.750Z", "2026-02-19T10:30:01.250Z", "500", "", "",
			`{"columns":["a","b"],"rows":3,"source":"api, \"v4\""}`),
		append(append([]string{}, run...), "2", "write", "FAILED", "2026-02-19T10:30:01.750Z", "2026-02-19T10:30:02.250Z", "500", "StepFailed",
			"row 2, column \"b\": empty\nrow 3: too long", ""),
	}
	if diff := cmp.Diff(want, rows[1:]); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}

	// From the database: the same bytes, JSON and CSV.
	for _, format := range []string{"json", "csv"} {
		fromFiles := filepath.Join(t.TempDir(), "files."+format)
		fromDB := filepath.Join(t.TempDir(), "db."+format)
		if r := fsmctl(t, nil, "export", id, "--format", format, "--runs-dir", runsDir, "--out", fromFiles); r.Code != 0 {
			t.Fatalf("export %s: %+v", format, r)
		}
		if r := withDB(t, url, "export", id, "--from-db", "--format", format, "--out", fromDB); r.Code != 0 {
			t.Fatalf("export %s --from-db: %+v", format, r)
		}
		a, _ := os.ReadFile(fromFiles)
		b, _ := os.ReadFile(fromDB)
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("%s from the files and from the database differ (-files +db):\n%s", format, cmp.Diff(string(a), string(b)))
		}
		// Without --out, --from-db writes to standard output.
		if r := withDB(t, url, "export", id, "--from-db", "--format", format); r.Code != 0 || r.Stdout != string(a) {
			t.Errorf("export %s --from-db to stdout: code %d, stdout differs: %s", format, r.Code, cmp.Diff(string(a), r.Stdout))
		}
	}
}

func TestExportErrors(t *testing.T) {
	t.Parallel()
	url, runsDir, id := stepRun(t)
	dir := filepath.Join(runsDir, id)
	runJSON, _ := os.ReadFile(filepath.Join(dir, "run.json"))
	stepsJSON, _ := os.ReadFile(filepath.Join(dir, "steps.json"))
	if err := os.Remove(filepath.Join(dir, "audit.json")); err != nil {
		t.Fatal(err)
	}
	const missing = "11111111-2222-4333-8444-555555555555"
	// A run of the run machine that was started and never finished, as a
	// process that died leaves it.
	started, err := store.New(openPool(t, url)).Start(context.Background(), runtime.StartRequest{
		Type: "step_engine_run", Version: 1, IdempotencyKey: "unfinished", Owner: runtime.Owner{TenantID: "t"}, Input: map[string]string{"workflow": "report"},
	})
	if err != nil {
		t.Fatal(err)
	}
	unfinished := started.Run.ID
	for _, tc := range []struct {
		name   string
		change func(t *testing.T)
		args   []string
		code   int
		stderr string
	}{
		{
			name: "missing run directory", args: []string{"export", missing, "--runs-dir", runsDir},
			code: 1, stderr: "fsmctl: export " + missing + ": RUNS/" + missing + ": run directory not found: no run " + missing + " under RUNS\n",
		},
		{
			name: "missing run.json", change: func(t *testing.T) { remove(t, dir, "run.json") },
			code: 1, stderr: "fsmctl: export ID: RUNS/ID/run.json: summary file missing (the run has not finished, or its directory is incomplete)\n",
		},
		{
			name: "corrupt run.json", change: func(t *testing.T) { write(t, dir, "run.json", runJSON[:len(runJSON)/2]) },
			code: 1, stderr: "fsmctl: export ID: RUNS/ID/run.json: summary file corrupt: unexpected end of JSON input\n",
		},
		{
			name: "run.json without a status", change: func(t *testing.T) {
				write(t, dir, "run.json", bytes.Replace(runJSON, []byte(`"status": "FAILED"`), []byte(`"status": ""`), 1))
			},
			code: 1, stderr: "fsmctl: export ID: RUNS/ID/run.json: summary file corrupt: status \"\": want OK or FAILED\n",
		},
		{
			name: "missing steps.json", change: func(t *testing.T) { remove(t, dir, "steps.json") },
			code: 1, stderr: "fsmctl: export ID: RUNS/ID/steps.json: summary file missing (the run has not finished, or its directory is incomplete)\n",
		},
		{
			name: "corrupt steps.json", change: func(t *testing.T) { write(t, dir, "steps.json", []byte(`[{"step_index": 1,`)) },
			code: 1, stderr: "fsmctl: export ID: RUNS/ID/steps.json: summary file corrupt: unexpected end of JSON input\n",
		},
		{
			name: "steps.json not a list", change: func(t *testing.T) { write(t, dir, "steps.json", []byte(`{"step_index": 1}`)) },
			code: 1, stderr: "fsmctl: export ID: RUNS/ID/steps.json: summary file corrupt: json: cannot unmarshal object into Go value of type []runfiles.StepSummary\n",
		},
		{
			name: "bad format", args: []string{"export", id, "--format", "xml"},
			code: 2, stderr: "fsmctl export: --format \"xml\": want json or csv\nusage: fsmctl export " + exportCommand().synopsis + "\nRun 'fsmctl help export' for details.\n",
		},
		{
			name: "no run id", args: []string{"export", "--format", "csv"},
			code: 2, stderr: "fsmctl export: missing run id\nusage: fsmctl export " + exportCommand().synopsis + "\nRun 'fsmctl help export' for details.\n",
		},
		{
			name: "a path for a run id", args: []string{"export", "../x"},
			code: 2, stderr: "fsmctl export: invalid run id \"../x\": want a single directory name\nusage: fsmctl export " + exportCommand().synopsis + "\nRun 'fsmctl help export' for details.\n",
		},
		{
			name: "unknown run in the database", args: []string{"export", missing, "--from-db"},
			code: 1, stderr: "fsmctl: run " + missing + ": not found\n",
		},
		{
			name: "unfinished run in the database", args: []string{"export", unfinished, "--from-db"},
			code: 1, stderr: "fsmctl: export " + unfinished + ": run " + unfinished + ": run has not finished: it is RUNNING\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			write(t, dir, "run.json", runJSON)
			write(t, dir, "steps.json", stepsJSON)
			if tc.change != nil {
				tc.change(t)
			}
			args := tc.args
			if args == nil {
				args = []string{"export", id, "--format", "csv", "--runs-dir", runsDir}
			}
			r := withDB(t, url, args...)
			stderr := strings.ReplaceAll(strings.ReplaceAll(r.Stderr, runsDir, "RUNS"), id, "ID")
			if r.Code != tc.code || stderr != tc.stderr || r.Stdout != "" {
				t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant exit %d, stderr:\n%s", r.Code, r.Stdout, stderr, tc.code, tc.stderr)
			}
			// Nothing written: no audit file, no temporary file.
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), "audit") || strings.Contains(e.Name(), ".tmp-") {
					t.Errorf("%s left behind", e.Name())
				}
			}
		})
	}
}

func remove(t *testing.T, dir, name string) {
	t.Helper()
	if err := os.Remove(filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, dir, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestExportOutRefusesRunFilesLinksAndDevices points --out at a run's own
// run.json, at a symbolic link and at a FIFO: each is refused and left
// as it was; an existing file written keeps its mode.
func TestExportOutRefusesRunFilesLinksAndDevices(t *testing.T) {
	t.Parallel()
	_, runsDir, id := stepRun(t)
	dir := filepath.Join(runsDir, id)
	runJSON := filepath.Join(dir, "run.json")
	before, err := os.ReadFile(runJSON)
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "audit.json")
	if err := os.Symlink(runJSON, link); err != nil {
		t.Fatal(err)
	}
	// A FIFO stands for a device: a test must never risk replacing a
	// real one, such as /dev/null, of the machine it runs on.
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	inside := "fsmctl export: --out %s: inside the run directory " + dir + ", whose files an export must not overwrite (only audit.json and audit.csv may be written there)\n"
	for _, tc := range []struct {
		out  string
		want result
	}{
		{runJSON, result{Code: exitUsage, Stderr: fmt.Sprintf(inside, runJSON)}},
		{filepath.Join(dir, "artifacts", "index.json"), result{Code: exitUsage, Stderr: fmt.Sprintf(inside, filepath.Join(dir, "artifacts", "index.json"))}},
		{link, result{Code: exitFailure, Stderr: "fsmctl: export " + id + ": write " + link + ": not a regular file\n"}},
		{fifo, result{Code: exitFailure, Stderr: "fsmctl: export " + id + ": write " + fifo + ": not a regular file\n"}},
	} {
		r := fsmctl(t, nil, "export", id, "--runs-dir", runsDir, "--out", tc.out)
		if first, _, _ := strings.Cut(r.Stderr, "\n"); tc.want.Code == exitUsage {
			r.Stderr = first + "\n"
		}
		if diff := cmp.Diff(tc.want, r); diff != "" {
			t.Errorf("export --out %s (-want +got):\n%s", tc.out, diff)
		}
	}
	if after, _ := os.ReadFile(runJSON); !bytes.Equal(before, after) {
		t.Errorf("run.json was overwritten")
	}
	if info, err := os.Lstat(link); err != nil || info.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v %v", info, err)
	}
	if info, err := os.Lstat(fifo); err != nil || info.Mode()&fs.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced: %v %v", info, err)
	}
	// The run's own audit files may be written, and keep their mode.
	audit := filepath.Join(dir, "audit.csv")
	if err := os.WriteFile(audit, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if r := fsmctl(t, nil, "export", id, "--runs-dir", runsDir, "--format", "csv", "--out", audit); r.Code != exitOK {
		t.Fatalf("export to the run's audit.csv: %+v", r)
	}
	if info, err := os.Stat(audit); err != nil || info.Mode().Perm() != 0o600 || info.Size() == 0 {
		t.Errorf("audit.csv: %v %v, want written, -rw-------", info, err)
	}
}
