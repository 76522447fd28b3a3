package stepengine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/internal/runfiles"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/stepengine"
	"github.com/fsmgen/fsmgen/runtime/stepengine/run"
	"github.com/fsmgen/fsmgen/runtime/stepengine/step"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// threeSteps returns a workflow of three steps whose second is second:
// extract puts rows in the state, load registers an artifact.
func threeSteps(second stepengine.Step) stepengine.Workflow {
	return stepengine.Workflow{
		Name:   "report",
		Config: map[string]any{"sheet": "Report", "limit": 10},
		Steps: []stepengine.Step{
			{Name: "extract", Run: func(ctx context.Context, rc stepengine.RunContext, st *stepengine.RunState, log *stepengine.Logger) (stepengine.StepResult, error) {
				st.Data["rows"] = []string{"a", "b"}
				if err := log.Log("extracted", map[string]any{"rows": 2}); err != nil {
					return stepengine.StepResult{}, err
				}
				return stepengine.StepResult{OK: true, Outputs: map[string]any{"rows": 2}, Metrics: map[string]any{"rows_read": 2, "api_calls": 1}}, nil
			}},
			second,
			{Name: "load", Run: func(ctx context.Context, rc stepengine.RunContext, st *stepengine.RunState, log *stepengine.Logger) (stepengine.StepResult, error) {
				if err := os.WriteFile(filepath.Join(rc.ArtifactsDir(), "report.csv"), []byte("name\na\nb\n"), 0o644); err != nil {
					return stepengine.StepResult{}, err
				}
				if _, err := rc.RegisterArtifact("report_csv", "csv", "artifacts/report.csv", map[string]any{"rows": 2, "columns": []string{"name"}}); err != nil {
					return stepengine.StepResult{}, err
				}
				return stepengine.StepResult{OK: true, Outputs: map[string]any{"path": "artifacts/report.csv"}}, nil
			}},
		},
	}
}

func transform(fn func(ctx context.Context) (stepengine.StepResult, error)) stepengine.Step {
	return stepengine.Step{Name: "transform", Run: func(ctx context.Context, rc stepengine.RunContext, st *stepengine.RunState, log *stepengine.Logger) (stepengine.StepResult, error) {
		st.Data["transformed"] = true
		return fn(ctx)
	}}
}

// exhausted is an API client's error of a request whose retries ran out,
// as machines/reporting/apiclient returns it: it has an ErrorType and
// APIDetails, which the engine writes into the failure's records.
type exhausted struct{ d stepengine.APIDetails }

func (e *exhausted) Error() string {
	reason := ""
	if e.d.Reason != "" {
		reason = " " + e.d.Reason
	}
	msg := "The service is currently unavailable."
	if e.d.StatusCode == http.StatusForbidden {
		msg = "Quota exceeded for quota metric 'Read requests'"
	}
	return fmt.Sprintf("%s: retries exhausted after %d attempts: HTTP %d%s: %s", e.d.Operation, e.d.Attempts, e.d.StatusCode, reason, msg)
}

func (e *exhausted) ErrorType() string { return stepengine.ErrorTypeAPIRetryExhausted }

func (e *exhausted) APIDetails() stepengine.APIDetails { return e.d }

// scenarios are the runs with golden files: one that succeeds, and one
// failing at step 2 of 3 by each path.
func scenarios(t *testing.T) map[string]stepengine.Step {
	return map[string]stepengine.Step{
		"ok": transform(func(context.Context) (stepengine.StepResult, error) {
			return stepengine.StepResult{OK: true, Outputs: map[string]any{"upper": []string{"A", "B"}}}, nil
		}),
		"returned_failure": transform(func(context.Context) (stepengine.StepResult, error) {
			return stepengine.StepResult{OK: false, Error: "2 rows have no name"}, nil
		}),
		"error": transform(func(context.Context) (stepengine.StepResult, error) {
			return stepengine.StepResult{}, fmt.Errorf("transform: open lookup table: %w", fs.ErrNotExist)
		}),
		"panic": transform(func(context.Context) (stepengine.StepResult, error) {
			panic("lookup table not loaded")
		}),
		"invalid_result": transform(func(context.Context) (stepengine.StepResult, error) {
			return stepengine.StepResult{}, nil
		}),
		"api_retry_exhausted": transform(func(ctx context.Context) (stepengine.StepResult, error) {
			err := &exhausted{stepengine.APIDetails{Operation: "sheets.spreadsheets.values.get", StatusCode: http.StatusTooManyRequests, Attempts: 6}}
			return stepengine.StepResult{OK: true}, err
		}),
	}
}

// runFiles reads every file of a run's directory, by path relative to it,
// with the run id replaced by RUN_ID.
func runFiles(t *testing.T, dir, runID string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = strings.ReplaceAll(string(b), runID, "RUN_ID")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// checkGolden compares the files with testdata/golden/<name>/, or writes
// them there with -update.
func checkGolden(t *testing.T, name string, got map[string]string) {
	t.Helper()
	dir := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		for p, data := range got {
			f := filepath.Join(dir, filepath.FromSlash(p))
			if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(f, []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	want := runFiles(t, dir, "RUN_ID")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s: run files differ from testdata/golden/%s (-want +got); go test -update rewrites them:\n%s", name, name, diff)
	}
}

func TestGoldenRuns(t *testing.T) {
	t.Parallel()
	for name, second := range scenarios(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e, st := newEngine(t)
			ctx := context.Background()
			runsDir := t.TempDir()
			res, err := e.Run(ctx, threeSteps(second), stepengine.RunOptions{RunsDir: runsDir})
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, name, runFiles(t, res.RunDir, res.RunID))

			wantStates := []string{"OK", "FAILED", "SKIPPED"}
			if name == "ok" {
				wantStates = []string{"OK", "OK", "OK"}
			}
			if diff := cmp.Diff(wantStates, res.StepStates); diff != "" {
				t.Errorf("step states (-want +got):\n%s", diff)
			}
			checkDatabase(t, st, res, wantStates)
		})
	}
}

// checkDatabase checks that the database tells the run's story as its
// directory does: the run's and steps' states, and the same audit.
func checkDatabase(t *testing.T, st *store.Store, res stepengine.RunResult, wantStates []string) {
	t.Helper()
	ctx := context.Background()
	dbRun, err := st.Get(ctx, res.ExecutionID)
	if err != nil {
		t.Fatal(err)
	}
	wantRun := run.StateOk.String()
	if res.Status == "FAILED" {
		wantRun = run.StateFailed.String()
	}
	if dbRun.Type != run.Type || dbRun.State != wantRun {
		t.Errorf("run in the database: %s %s, want %s %s", dbRun.Type, dbRun.State, run.Type, wantRun)
	}
	steps, err := runfiles.StepRunsOf(ctx, st, res.ExecutionID, dbRun.Attempt)
	if err != nil {
		t.Fatal(err)
	}
	var gotStates []string
	for _, s := range steps.Steps {
		sr, err := st.Get(ctx, s.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if sr.Type != step.Type {
			t.Errorf("step run %s is a %s", s.RunID, sr.Type)
		}
		gotStates = append(gotStates, sr.State)
	}
	if diff := cmp.Diff(wantStates, gotStates); diff != "" {
		t.Errorf("step states in the database (-want +got):\n%s", diff)
	}
	fromFiles, err := runfiles.ReadSummaries(filepath.Dir(res.RunDir), res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	fromDB, err := runfiles.FromStore(ctx, st, res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(fromFiles, fromDB); diff != "" {
		t.Errorf("audit from the database differs from the files' (-files +db):\n%s", diff)
	}
	audit, err := os.ReadFile(filepath.Join(res.RunDir, runfiles.AuditFile))
	if err != nil {
		t.Fatal(err)
	}
	dbAudit, err := runfiles.AuditJSON(fromDB)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(audit), string(dbAudit)); diff != "" {
		t.Errorf("audit.json differs from the database's audit (-file +db):\n%s", diff)
	}
}

func TestMachineTypesAgreeWithRunfiles(t *testing.T) {
	t.Parallel()
	if run.Type != runfiles.RunType || step.Type != runfiles.StepType {
		t.Errorf("runfiles names %s and %s, the machines %s and %s", runfiles.RunType, runfiles.StepType, run.Type, step.Type)
	}
}

func TestFailureDetails(t *testing.T) {
	t.Parallel()
	e, _ := newEngine(t)
	wf := threeSteps(transform(func(ctx context.Context) (stepengine.StepResult, error) {
		return stepengine.StepResult{OK: true}, &exhausted{stepengine.APIDetails{
			Operation: "sheets.spreadsheets.values.get", StatusCode: http.StatusForbidden, Attempts: 6, Reason: "rateLimitExceeded"}}
	}))
	res, err := e.Run(context.Background(), wf, stepengine.RunOptions{RunsDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	f := res.Failure
	if f == nil {
		t.Fatal("no failure")
	}
	var x *exhausted
	if !errors.As(f.Err, &x) {
		t.Fatalf("failure's error %v is not the step's", f.Err)
	}
	got := stepengine.Failure{StepIndex: f.StepIndex, StepName: f.StepName, Type: f.Type, Operation: f.Operation,
		StatusCode: f.StatusCode, Attempts: f.Attempts, Reason: f.Reason, ArtifactPath: f.ArtifactPath}
	want := stepengine.Failure{StepIndex: 2, StepName: "transform", Type: "APIRetryExhausted", Operation: "sheets.spreadsheets.values.get",
		StatusCode: 403, Attempts: 6, Reason: "rateLimitExceeded", ArtifactPath: "errors/report__transform.json"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("failure (-want +got):\n%s", diff)
	}
	// The contract's failure lines: step_error with the details,
	// step_failed with the details and the artifact's path, step_end.
	lines := logEvents(t, res)
	var events []string
	var failed map[string]any
	for _, l := range lines[len(lines)-4:] {
		events = append(events, l["event"].(string))
		if l["event"] == "step_failed" {
			failed = l
		}
	}
	if diff := cmp.Diff([]string{"step_error", "step_failed", "step_end", "run_end"}, events); diff != "" {
		t.Errorf("last log events (-want +got):\n%s", diff)
	}
	wantFailed := map[string]any{
		"component": "engine", "event": "step_failed", "run_id": res.RunID, "ts": "2026-02-19T10:30:11.000Z",
		"step": "transform", "step_index": 2.0,
		"error_type": "APIRetryExhausted", "error_message": x.Error(),
		"operation": "sheets.spreadsheets.values.get", "status_code": 403.0, "attempts": 6.0, "reason": "rateLimitExceeded",
		"artifact_path": "errors/report__transform.json",
	}
	if diff := cmp.Diff(wantFailed, failed); diff != "" {
		t.Errorf("step_failed line (-want +got):\n%s", diff)
	}
}

// logEvents reads the run's logs.jsonl, one map a line.
func logEvents(t *testing.T, res stepengine.RunResult) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(res.RunDir, runfiles.LogsFile))
	if err != nil {
		t.Fatal(err)
	}
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("logs.jsonl line %q: %v", l, err)
		}
		lines = append(lines, m)
	}
	return lines
}

func TestInvalidWorkflows(t *testing.T) {
	t.Parallel()
	e, _ := newEngine(t)
	noop := func(context.Context, stepengine.RunContext, *stepengine.RunState, *stepengine.Logger) (stepengine.StepResult, error) {
		return stepengine.StepResult{OK: true}, nil
	}
	for _, tc := range []struct {
		wf   stepengine.Workflow
		want string
	}{
		{stepengine.Workflow{}, `invalid workflow: workflow: empty name`},
		{stepengine.Workflow{Name: "a/b"}, `invalid workflow: workflow: name "a/b" has '/': use letters, digits, '.', '-' and '_'`},
		{stepengine.Workflow{Name: "w", Steps: []stepengine.Step{{Name: "s", Run: noop}, {Name: "s", Run: noop}}}, `invalid workflow w: step 2: a second step named "s"`},
		{stepengine.Workflow{Name: "w", Steps: []stepengine.Step{{Name: "s"}}}, `invalid workflow w: step 1 (s) has no Run function`},
		{stepengine.Workflow{Name: "w", Steps: []stepengine.Step{{Name: "a__b", Run: noop}}}, `invalid workflow w: step 1: name "a__b": not a file name part (".", ".." and "__" are reserved)`},
	} {
		_, err := e.Run(context.Background(), tc.wf, stepengine.RunOptions{RunsDir: t.TempDir()})
		if !errors.Is(err, stepengine.ErrInvalidWorkflow) || err.Error() != tc.want {
			t.Errorf("Run(%+v) = %v, want %s", tc.wf.Name, err, tc.want)
		}
	}
}

func TestRerunAfterFailureOverwrites(t *testing.T) {
	t.Parallel()
	e, st := newEngine(t)
	ctx := context.Background()
	runsDir := t.TempDir()
	fail := true
	wf := threeSteps(transform(func(context.Context) (stepengine.StepResult, error) {
		if fail {
			return stepengine.StepResult{OK: false, Error: "first time"}, nil
		}
		return stepengine.StepResult{OK: true}, nil
	}))
	first, err := e.Run(ctx, wf, stepengine.RunOptions{RunsDir: runsDir})
	if err != nil {
		t.Fatal(err)
	}
	fail = false
	second, err := e.Run(ctx, wf, stepengine.RunOptions{RunsDir: runsDir, RunID: first.RunID})
	if err != nil {
		t.Fatal(err)
	}
	if second.RunID != first.RunID || second.Attempt != 2 || second.Status != "OK" {
		t.Fatalf("rerun: id %s attempt %d status %s; want %s, 2, OK", second.RunID, second.Attempt, second.Status, first.RunID)
	}
	// The directory holds the second attempt's files only: no error
	// artifact of the first, one artifact record, logs of one attempt.
	files := runFiles(t, second.RunDir, second.RunID)
	if _, ok := files["errors/report__transform.json"]; ok {
		t.Error("the first attempt's error artifact is still there")
	}
	var index []runfiles.ArtifactRecord
	if err := json.Unmarshal([]byte(files["artifacts/index.json"]), &index); err != nil || len(index) != 1 {
		t.Errorf("artifact index %s: %v, want one record", files["artifacts/index.json"], err)
	}
	if n := strings.Count(files["logs.jsonl"], `"event":"run_start"`); n != 1 {
		t.Errorf("logs.jsonl has %d run_start lines, want 1", n)
	}
	checkDatabase(t, st, second, []string{"OK", "OK", "OK"})

	// Another run gets another directory.
	other, err := e.Run(ctx, wf, stepengine.RunOptions{RunsDir: runsDir})
	if err != nil {
		t.Fatal(err)
	}
	if other.RunID == first.RunID || other.RunDir == first.RunDir {
		t.Errorf("a new run reused %s", other.RunDir)
	}
}

func TestRunContextIsReadOnlyAndRegisterArtifactChecksPaths(t *testing.T) {
	t.Parallel()
	e, _ := newEngine(t)
	var errs []string
	wf := stepengine.Workflow{Name: "w", Steps: []stepengine.Step{{Name: "s", Run: func(ctx context.Context, rc stepengine.RunContext, st *stepengine.RunState, log *stepengine.Logger) (stepengine.StepResult, error) {
		for _, p := range []string{"", "../x", "/etc/passwd", "missing.csv"} {
			if _, err := rc.RegisterArtifact("x", "csv", p, nil); err != nil {
				errs = append(errs, strings.ReplaceAll(err.Error(), rc.RunDir(), "RUN_DIR"))
			}
		}
		return stepengine.StepResult{OK: true}, nil
	}}}}
	if _, err := e.Run(context.Background(), wf, stepengine.RunOptions{RunsDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`register artifact "x": path "" is not inside the run's directory`,
		`register artifact "x": path "../x" is not inside the run's directory`,
		`register artifact "x": path "/etc/passwd" is not inside the run's directory`,
		`register artifact "x": stat RUN_DIR/missing.csv: no such file or directory`,
	}
	if diff := cmp.Diff(want, errs); diff != "" {
		t.Errorf("RegisterArtifact errors (-want +got):\n%s", diff)
	}
}

func TestFailedRunEndsItsUnstartedStepsInOneTransaction(t *testing.T) {
	t.Parallel()
	e, st := newEngine(t)
	ctx := context.Background()
	runsDir := t.TempDir()
	wf := threeSteps(transform(func(context.Context) (stepengine.StepResult, error) {
		return stepengine.StepResult{OK: false, Error: "2 rows have no name"}, nil
	}))
	wf.Steps = append(wf.Steps, stepengine.Step{Name: "publish", Run: wf.Steps[2].Run})

	// A run failing at step 2 of 4: steps 3 and 4 end SKIPPED, by
	// RunStopped, in the transaction that fails the run (the same now()).
	res, err := e.Run(ctx, wf, stepengine.RunOptions{RunsDir: runsDir})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"OK", "FAILED", "SKIPPED", "SKIPPED"}, res.StepStates); diff != "" {
		t.Errorf("step states (-want +got):\n%s", diff)
	}
	checkDatabase(t, st, res, res.StepStates)
	runEnd := lastTransition(t, st, res.RunID)
	if runEnd.Event != "StepFailed" || runEnd.To != "FAILED" {
		t.Fatalf("run's last transition: %+v", runEnd)
	}
	steps, err := runfiles.StepRunsOf(ctx, st, res.RunID, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range steps.Steps[2:] {
		sr, err := st.Get(ctx, s.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if sr.Status != "cancelled" || sr.Result == nil || sr.Result.ErrorCode != "Skipped" || sr.Result.ErrorDetail != "not started: the run stopped at step 2 transform" {
			t.Errorf("step %d: status %s, result %+v", s.Index, sr.Status, sr.Result)
		}
		last := lastTransition(t, st, s.RunID)
		var p step.RunStopped
		if err := last.Decode(&p); err != nil {
			t.Fatal(err)
		}
		if last.Event != "RunStopped" || p != (step.RunStopped{StepIndex: 2, StepName: "transform"}) || !last.At.Equal(runEnd.At) {
			t.Errorf("step %d: last transition %s %+v at %v, want RunStopped {2 transform} at the run's %v", s.Index, last.Event, p, last.At, runEnd.At)
		}
	}

	// When the run's last write fails, nothing of the transaction is
	// left: the unstarted steps are still PENDING and the run RUNNING.
	// Running it again closes that attempt, steps included, at once.
	pool := st.Pool()
	if _, err := pool.Exec(ctx, `
		CREATE FUNCTION refuse_run_end() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'refused by the test'; END $$;
		CREATE TRIGGER refuse_run_end BEFORE INSERT ON workflow_step_logs FOR EACH ROW
		WHEN (NEW.workflow_type = 'step_engine_run' AND NEW.event = 'StepFailed') EXECUTE FUNCTION refuse_run_end()`); err != nil {
		t.Fatal(err)
	}
	_, err = e.Run(ctx, wf, stepengine.RunOptions{RunsDir: runsDir})
	if err == nil || !strings.Contains(err.Error(), "refused by the test") {
		t.Fatalf("run with its last write refused: %v", err)
	}
	runs, err := st.List(ctx, store.Filter{Filter: runtime.Filter{Type: run.Type, Status: "running"}})
	if err != nil || len(runs) != 1 {
		t.Fatalf("%d running runs, want 1: %v", len(runs), err)
	}
	interrupted := runs[0].ID
	stepStates := func(attempt int) []string {
		t.Helper()
		steps, err := runfiles.StepRunsOf(ctx, st, interrupted, attempt)
		if err != nil {
			t.Fatal(err)
		}
		var states []string
		for _, s := range steps.Steps {
			sr, err := st.Get(ctx, s.RunID)
			if err != nil {
				t.Fatal(err)
			}
			states = append(states, sr.State)
		}
		return states
	}
	if diff := cmp.Diff([]string{"OK", "FAILED", "PENDING", "PENDING"}, stepStates(1)); diff != "" {
		t.Errorf("steps after the refused write (-want +got):\n%s", diff)
	}
	if _, err := pool.Exec(ctx, `DROP TRIGGER refuse_run_end ON workflow_step_logs`); err != nil {
		t.Fatal(err)
	}
	again, err := e.Run(ctx, wf, stepengine.RunOptions{RunsDir: runsDir, RunID: interrupted})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"OK", "FAILED", "SKIPPED", "SKIPPED"}, stepStates(1)); diff != "" {
		t.Errorf("steps of the closed attempt 1 (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"OK", "FAILED", "SKIPPED", "SKIPPED"}, stepStates(again.Attempt)); diff != "" {
		t.Errorf("steps of attempt %d (-want +got):\n%s", again.Attempt, diff)
	}
	// No step of the step engine is left PENDING.
	pending, err := st.List(ctx, store.Filter{Filter: runtime.Filter{Type: step.Type, Status: "running"}})
	if err != nil || len(pending) != 0 {
		t.Errorf("%d steps not ended: %v", len(pending), err)
	}
}

// lastTransition returns the last transition in the log of run id.
func lastTransition(t *testing.T, st *store.Store, id string) store.Step {
	t.Helper()
	hist, err := st.History(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	for i := len(hist) - 1; i >= 0; i-- {
		if hist[i].Kind == store.KindTransition {
			return hist[i]
		}
	}
	t.Fatalf("run %s has no transition", id)
	return store.Step{}
}

func TestRerunOfASucceededRunWritesTheSameFiles(t *testing.T) {
	t.Parallel()
	_, st := newEngine(t)
	ctx := context.Background()
	runsDir := t.TempDir()
	scratch := true
	wf := threeSteps(transform(func(context.Context) (stepengine.StepResult, error) {
		return stepengine.StepResult{OK: true, Outputs: map[string]any{"upper": []string{"A", "B"}}}, nil
	}))
	wf.Steps = append(wf.Steps, stepengine.Step{Name: "scratch", Run: func(ctx context.Context, rc stepengine.RunContext, st *stepengine.RunState, log *stepengine.Logger) (stepengine.StepResult, error) {
		// The first execution leaves a file the later ones do not write.
		if scratch {
			if err := os.WriteFile(filepath.Join(rc.ArtifactsDir(), "scratch.txt"), []byte("first only"), 0o644); err != nil {
				return stepengine.StepResult{}, err
			}
		}
		return stepengine.StepResult{OK: true}, nil
	}})
	// Each execution has an engine whose clock starts at the same time,
	// so that a deterministic rerun writes the same bytes.
	engine := func() *stepengine.Engine {
		return stepengine.New(st, stepengine.WithClock(stepClock()), stepengine.WithGitSHA("0123456789abcdef0123456789abcdef01234567"))
	}
	first, err := engine().Run(ctx, wf, stepengine.RunOptions{RunsDir: runsDir})
	if err != nil || first.Status != "OK" {
		t.Fatalf("first run: %v %s", err, first.Status)
	}
	want := runFiles(t, first.RunDir, first.RunID)
	if _, ok := want["artifacts/scratch.txt"]; !ok {
		t.Fatal("the first execution wrote no scratch.txt")
	}
	delete(want, "artifacts/scratch.txt")
	scratch = false

	executions := map[string]bool{first.ExecutionID: true}
	for i := range 2 {
		again, err := engine().Run(ctx, wf, stepengine.RunOptions{RunsDir: runsDir, RunID: first.RunID})
		if err != nil {
			t.Fatalf("rerun %d: %v", i+1, err)
		}
		if again.RunID != first.RunID || again.RunDir != first.RunDir || again.Status != "OK" || executions[again.ExecutionID] {
			t.Fatalf("rerun %d: run %s in %s, execution %s, %s; want run %s in %s, a new execution, OK",
				i+1, again.RunID, again.RunDir, again.ExecutionID, again.Status, first.RunID, first.RunDir)
		}
		executions[again.ExecutionID] = true
		// The same bytes, file for file, and nothing left of the first.
		if diff := cmp.Diff(want, runFiles(t, again.RunDir, again.RunID)); diff != "" {
			t.Errorf("rerun %d: files (-first execution +rerun):\n%s", i+1, diff)
		}
		// The database tells the latest execution's story, and keeps the
		// first one as it succeeded.
		checkDatabase(t, st, again, []string{"OK", "OK", "OK", "OK"})
		orig, err := st.Get(ctx, first.RunID)
		if err != nil || orig.Status != "succeeded" || orig.Attempt != 1 {
			t.Errorf("rerun %d: the first execution is now %s, attempt %d (%v)", i+1, orig.Status, orig.Attempt, err)
		}
	}
}
