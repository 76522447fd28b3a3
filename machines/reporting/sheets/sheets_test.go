package sheets_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/machines/reporting/apiclient"
	"github.com/fsmgen/fsmgen/machines/reporting/sheets"
	"github.com/fsmgen/fsmgen/machines/reporting/sheets/sheetstest"
)

// sleeps records the client's waits without waiting.
type sleeps struct{ d []time.Duration }

func (s *sleeps) Sleep(_ context.Context, d time.Duration) error {
	s.d = append(s.d, d)
	return nil
}

func newWriter(t *testing.T) (*sheets.Writer, *sheetstest.Server, *sleeps) {
	t.Helper()
	srv := sheetstest.NewServer("sheet-1")
	t.Cleanup(srv.Close)
	sl := &sleeps{}
	c := &apiclient.Client{HTTP: srv.Client(), Sleep: sl.Sleep, Rand: func() float64 { return 0.5 }}
	return &sheets.Writer{Client: c, BaseURL: srv.URL, SpreadsheetID: "sheet-1"}, srv, sl
}

func TestReplaceClearsThenWritesFromA1(t *testing.T) {
	t.Parallel()
	w, srv, _ := newWriter(t)
	// Rows of an earlier, longer report are in the tab.
	srv.SetTab("Q1 report", [][]any{{"region", "total"}, {"east", "1"}, {"north", "2"}, {"south", "3"}, {"west", "4"}})
	rows := [][]any{{"region", "total"}, {"north", "130.50"}, {"south", "80.00"}}
	ctx := context.Background()
	for range 2 {
		res, err := w.Replace(ctx, "Q1 report", rows)
		if err != nil {
			t.Fatal(err)
		}
		want := sheets.Result{ClearedRange: "'Q1 report'", UpdatedRange: "'Q1 report'!A1", UpdatedRows: 3, UpdatedCells: 6}
		if diff := cmp.Diff(want, res); diff != "" {
			t.Errorf("result (-want +got):\n%s", diff)
		}
		// The tab holds the rows once, and nothing of the earlier report.
		if diff := cmp.Diff(rows, srv.Tab("Q1 report")); diff != "" {
			t.Errorf("tab (-want +got):\n%s", diff)
		}
	}
	clear := sheetstest.Request{Method: "POST", Path: "/v4/spreadsheets/sheet-1/values/'Q1 report':clear", Body: `{}`}
	update := sheetstest.Request{Method: "PUT", Path: "/v4/spreadsheets/sheet-1/values/'Q1 report'!A1", Query: "valueInputOption=RAW",
		Body: `{"range":"'Q1 report'!A1","majorDimension":"ROWS","values":[["region","total"],["north","130.50"],["south","80.00"]]}`}
	if diff := cmp.Diff([]sheetstest.Request{clear, update, clear, update}, srv.Requests()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

func TestReplaceRetriesAndStopsAtAFailedClear(t *testing.T) {
	t.Parallel()
	w, srv, sl := newWriter(t)
	srv.SetTab("R", [][]any{{"old"}})
	// A rate-limited clear is retried; the rows are then written.
	srv.FailNext(http.StatusTooManyRequests)
	if _, err := w.Replace(context.Background(), "R", [][]any{{"new"}}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([][]any{{"new"}}, srv.Tab("R")); diff != "" {
		t.Errorf("tab (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]time.Duration{500 * time.Millisecond}, sl.d); diff != "" {
		t.Errorf("waits (-want +got):\n%s", diff)
	}
	// A clear refused for good writes nothing.
	srv.FailNext(http.StatusNotFound)
	before := len(srv.Requests())
	_, err := w.Replace(context.Background(), "R", [][]any{{"newer"}})
	var ae *apiclient.APIError
	if !errors.As(err, &ae) || err.Error() != "sheets.spreadsheets.values.clear: HTTP 404: scripted failure" {
		t.Fatalf("err = %v, want the clear's APIError", err)
	}
	if n := len(srv.Requests()) - before; n != 1 {
		t.Errorf("%d requests after a refused clear, want 1 (no update)", n)
	}
	if diff := cmp.Diff([][]any{{"new"}}, srv.Tab("R")); diff != "" {
		t.Errorf("tab (-want +got):\n%s", diff)
	}
}

func TestRange(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ tab, cell, want string }{
		{"Report", "", "'Report'"},
		{"Q1 sales", "A1", "'Q1 sales'!A1"},
		{"Bob's", "A1", "'Bob''s'!A1"},
	} {
		if got := sheets.Range(tc.tab, tc.cell); got != tc.want {
			t.Errorf("Range(%q, %q) = %q, want %q", tc.tab, tc.cell, got, tc.want)
		}
	}
}
