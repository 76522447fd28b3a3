package report_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/internal/runfiles"
	"github.com/fsmgen/fsmgen/machines/reporting/apiclient"
	"github.com/fsmgen/fsmgen/machines/reporting/report"
	"github.com/fsmgen/fsmgen/machines/reporting/sheets/sheetstest"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/stepengine"
	"github.com/fsmgen/fsmgen/runtime/store"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const sheet = `{"values":[["region","amount"],["north","120.5"],["south","80"],["north","10"]]}`

func TestReportFailsThenRerunsAndOverwrites(t *testing.T) {
	t.Parallel()
	var failing atomic.Bool
	failing.Store(true)
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if r.URL.Path != "/v4/spreadsheets/Q1%20sales/values" && r.URL.Path != "/v4/spreadsheets/Q1 sales/values" {
			http.NotFound(w, r)
			return
		}
		if failing.Load() {
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"error":{"code":429,"message":"Too many requests"}}`)
			return
		}
		fmt.Fprint(w, sheet)
	}))
	t.Cleanup(srv.Close)
	client := &apiclient.Client{HTTP: srv.Client(), Sleep: func(context.Context, time.Duration) error { return nil }}
	e := stepengine.New(store.New(pgtest.NewPool(t)))
	ctx := context.Background()
	if err := e.Register(ctx); err != nil {
		t.Fatal(err)
	}
	wf := report.Workflow(client, report.Config{BaseURL: srv.URL, Sheet: "Q1 sales"})
	runsDir := t.TempDir()
	first, err := e.Run(ctx, wf, stepengine.RunOptions{RunsDir: runsDir})
	if err != nil {
		t.Fatal(err)
	}
	if first.Status != "FAILED" || first.Failure.Type != "APIRetryExhausted" || first.Failure.Attempts != 6 || requests.Load() != 6 {
		t.Fatalf("first run: %s %+v after %d requests; want FAILED by APIRetryExhausted after 6", first.Status, first.Failure, requests.Load())
	}
	var art runfiles.ErrorArtifact
	data, err := os.ReadFile(filepath.Join(first.RunDir, "errors", "sales_report__fetch.json"))
	if err != nil || json.Unmarshal(data, &art) != nil || art.StatusCode != 429 || art.Operation != report.Operation {
		t.Fatalf("error artifact: %v %s", err, data)
	}

	failing.Store(false)
	for i := range 2 {
		// Twice: after the failed run, and after its rerun succeeded; each
		// overwrites the files of the one before.
		res, err := e.Run(ctx, wf, stepengine.RunOptions{RunsDir: runsDir, RunID: first.RunID})
		if err != nil || res.Status != "OK" {
			t.Fatalf("rerun %d: %v %s", i+1, err, res.Status)
		}
	}
	// The run's files, by their exact paths: report.csv under artifacts/,
	// nothing at the run's root but the engine's files.
	var files []string
	err = filepath.WalkDir(first.RunDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(first.RunDir, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	wantFiles := []string{"artifacts/index.json", "artifacts/report.csv", "audit.json", "context.json", "logs.jsonl", "run.json", "steps.json"}
	if diff := cmp.Diff(wantFiles, files); diff != "" {
		t.Errorf("files of the run (-want +got):\n%s", diff)
	}
	got, err := os.ReadFile(filepath.Join(runsDir, first.RunID, "artifacts", "report.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("region,total\nnorth,130.50\nsouth,80.00\n", string(got)); diff != "" {
		t.Errorf("report.csv (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(filepath.Join(first.RunDir, "errors")); !os.IsNotExist(err) {
		t.Errorf("the failed attempt's errors/ is still there: %v", err)
	}
	var index []runfiles.ArtifactRecord
	data, _ = os.ReadFile(filepath.Join(first.RunDir, "artifacts", "index.json"))
	if err := json.Unmarshal(data, &index); err != nil || len(index) != 1 || index[0].Name != "report_csv" || index[0].Path != "artifacts/report.csv" {
		t.Errorf("artifact index: %v %s", err, data)
	}
}

func TestReportToASheetTwiceLeavesNoDuplicatedRows(t *testing.T) {
	t.Parallel()
	var data atomic.Value
	data.Store(`{"values":[["region","amount"],["north","120.5"],["south","80"],["east","5"]]}`)
	source := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, data.Load().(string))
	}))
	t.Cleanup(source.Close)
	sink := sheetstest.NewServer("reports-2026")
	t.Cleanup(sink.Close)
	client := &apiclient.Client{Sleep: func(context.Context, time.Duration) error { return nil }}
	e := stepengine.New(store.New(pgtest.NewPool(t)))
	ctx := context.Background()
	if err := e.Register(ctx); err != nil {
		t.Fatal(err)
	}
	wf := report.Workflow(client, report.Config{BaseURL: source.URL, Sheet: "Q1 sales",
		Output: &report.SheetOutput{BaseURL: sink.URL, SpreadsheetID: "reports-2026", Tab: "Q1 report"}})
	runsDir := t.TempDir()
	want := [][]any{{"region", "total"}, {"east", "5.00"}, {"north", "120.50"}, {"south", "80.00"}}
	for i := range 2 {
		if i == 1 {
			// The second run has one region fewer: nothing of the first
			// run's rows may be left.
			data.Store(`{"values":[["region","amount"],["north","10"],["south","20"]]}`)
			want = [][]any{{"region", "total"}, {"north", "10.00"}, {"south", "20.00"}}
		}
		res, err := e.Run(ctx, wf, stepengine.RunOptions{RunsDir: runsDir})
		if err != nil || res.Status != "OK" {
			t.Fatalf("run %d: %v %s %+v", i+1, err, res.Status, res.Failure)
		}
		if diff := cmp.Diff([]string{"OK", "OK", "OK", "OK"}, res.StepStates); diff != "" {
			t.Errorf("run %d: step states (-want +got):\n%s", i+1, diff)
		}
		if diff := cmp.Diff(want, sink.Tab("Q1 report")); diff != "" {
			t.Errorf("run %d: the tab (-want +got):\n%s", i+1, diff)
		}
	}
	var calls []string
	for _, r := range sink.Requests() {
		calls = append(calls, r.Method+" "+r.Path+" "+r.Query)
	}
	clear := "POST /v4/spreadsheets/reports-2026/values/'Q1 report':clear "
	update := "PUT /v4/spreadsheets/reports-2026/values/'Q1 report'!A1 valueInputOption=RAW"
	if diff := cmp.Diff([]string{clear, update, clear, update}, calls); diff != "" {
		t.Errorf("requests to the sheet (-want +got):\n%s", diff)
	}
}
