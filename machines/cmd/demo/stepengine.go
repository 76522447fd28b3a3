package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/internal/runfiles"
	"github.com/fsmgen/fsmgen/machines/reporting/apiclient"
	"github.com/fsmgen/fsmgen/machines/reporting/report"
	"github.com/fsmgen/fsmgen/machines/reporting/sheets/sheetstest"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/stepengine"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// api is the scripted sheet API: it answers each request with the next
// status of its script (200 serves the sheet), the last one for every
// request after.
type api struct {
	mu     sync.Mutex
	script []int
	calls  int
}

func (a *api) set(script ...int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.script, a.calls = script, 0
}

func (a *api) requests() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.calls
}

func (a *api) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	status := a.script[min(a.calls, len(a.script)-1)]
	a.calls++
	a.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if status == http.StatusOK {
		fmt.Fprint(w, `{"values":[["region","amount"],["north","120.50"],["south","80"],["east","42.25"],["north","10"]]}`)
		return
	}
	fmt.Fprintf(w, `{"error":{"code":%d,"message":"%s"}}`, status, http.StatusText(status))
}

// stepEngineDemo runs the step engine's report workflow three times
// against a scripted local HTTP API on pool, whose schema is migrated, with
// the runs' directories under runsDir, and prints each run and its audit.
// keepFiles and keepDB say whether runsDir and the database outlive the
// demo, so that fsmctl export can read the runs from them afterwards: it
// names only the commands that will work.
func stepEngineDemo(ctx context.Context, w io.Writer, pool *pgxpool.Pool, runsDir string, keepFiles, keepDB bool) error {
	eng := stepengine.New(store.New(pool))
	if err := eng.Register(ctx); err != nil {
		return err
	}

	sheet := &api{}
	srv := httptest.NewServer(sheet)
	defer srv.Close()
	client := &apiclient.Client{HTTP: srv.Client(), Retry: &runtime.RetryPolicy{
		MaxAttempts: 4, InitialInterval: 20 * time.Millisecond, Coefficient: 2, MaxInterval: 100 * time.Millisecond, Jitter: 0.2,
	}}
	sink := sheetstest.NewServer("demo-reports")
	defer sink.Close()
	wf := report.Workflow(client, report.Config{BaseURL: srv.URL, Sheet: "Q1 sales",
		Output: &report.SheetOutput{BaseURL: sink.URL, SpreadsheetID: sink.SpreadsheetID, Tab: "Q1 report"}})
	fmt.Fprintf(w, "\n== Step engine: workflow %s: fetch (GET %s/v4/spreadsheets/Q1%%20sales/values), summarize, write_report,\n", wf.Name, srv.URL)
	fmt.Fprintf(w, "publish_sheet (clear, then write from A1, tab 'Q1 report' of a scripted Sheets API at %s).\n", sink.URL)
	fmt.Fprintf(w, "Runs go under %s.\n", runsDir)

	fmt.Fprintln(w, "\n-- 1. The API answers 503 once, then the sheet: the fetch retries, the run ends OK")
	sheet.set(http.StatusServiceUnavailable, http.StatusOK)
	ok, err := eng.Run(ctx, wf, stepengine.RunOptions{RunsDir: runsDir})
	if err != nil {
		return err
	}
	if err := show(w, wf, ok, sheet.requests()); err != nil {
		return err
	}

	fmt.Fprintln(w, "\n-- 2. The API answers 429 to every request: retries run out, the run fails at step 1 of 4")
	sheet.set(http.StatusTooManyRequests)
	failed, err := eng.Run(ctx, wf, stepengine.RunOptions{RunsDir: runsDir})
	if err != nil {
		return err
	}
	if err := show(w, wf, failed, sheet.requests()); err != nil {
		return err
	}

	fmt.Fprintln(w, "\n-- 3. The API is back: the failed run runs again under its run id")
	sheet.set(http.StatusOK)
	again, err := eng.Run(ctx, wf, stepengine.RunOptions{RunsDir: runsDir, RunID: failed.RunID})
	if err != nil {
		return err
	}
	if err := show(w, wf, again, sheet.requests()); err != nil {
		return err
	}

	fmt.Fprintf(w, "\nThe tab 'Q1 report' after the three runs (two OK runs, each cleared it first: no duplicated row):\n")
	for _, row := range sink.Tab("Q1 report") {
		fmt.Fprintf(w, "    %v\n", row)
	}
	if ok.Status != "OK" || failed.Status != "FAILED" || again.Status != "OK" || again.Attempt != 2 {
		return fmt.Errorf("unexpected outcomes: %s, %s, %s (attempt %d); want OK, FAILED, OK (attempt 2)", ok.Status, failed.Status, again.Status, again.Attempt)
	}
	if !keepFiles && !keepDB {
		fmt.Fprintf(w, "\nThe runs' directories are removed at the end with the throwaway cluster: demo -runs-dir DIR keeps them for fsmctl export.\n")
		return nil
	}
	fmt.Fprintf(w, "\nExport a run again, from its files or from the database:\n")
	if keepFiles {
		fmt.Fprintf(w, "  go run ./cmd/fsmctl export %s --format csv --runs-dir %s --out -\n", ok.RunID, runsDir)
	}
	if keepDB {
		fmt.Fprintf(w, "  go run ./cmd/fsmctl export %s --from-db --format json\n", ok.RunID)
	}
	return nil
}

// show prints a run: its status, steps, files, its export as CSV (written
// to audit.csv, as fsmctl export does) and report.csv or the error
// artifact.
func show(w io.Writer, wf stepengine.Workflow, res stepengine.RunResult, calls int) error {
	fmt.Fprintf(w, "run %s attempt %d: %s after %d API requests\n", res.RunID, res.Attempt, res.Status, calls)
	for i, s := range res.StepStates {
		fmt.Fprintf(w, "  step %d %-13s %s\n", i+1, wf.Steps[i].Name+":", s)
	}
	if res.Failure != nil {
		fmt.Fprintf(w, "  error: %s\n", res.Summary.ErrorSummary)
	}
	var files []string
	err := filepath.WalkDir(res.RunDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(res.RunDir, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		return err
	}
	a, err := runfiles.ReadSummaries(filepath.Dir(res.RunDir), res.RunID)
	if err != nil {
		return err
	}
	audit, err := runfiles.AuditCSV(a)
	if err != nil {
		return err
	}
	if err := runfiles.WriteFile(filepath.Join(res.RunDir, runfiles.AuditCSVFile), audit); err != nil {
		return err
	}
	files = append(files, runfiles.AuditCSVFile+" (exported)")
	sort.Strings(files)
	fmt.Fprintf(w, "  files in %s:\n    %s\n", res.RunDir, strings.Join(files, "\n    "))
	fmt.Fprintf(w, "  audit.csv:\n%s", indent(string(audit)))
	name := report.ReportPath
	if res.Failure != nil {
		name = res.Failure.ArtifactPath
	}
	data, err := os.ReadFile(filepath.Join(res.RunDir, filepath.FromSlash(name)))
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "  %s:\n%s", name, indent(string(data)))
	return nil
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n    ") + "\n"
}
