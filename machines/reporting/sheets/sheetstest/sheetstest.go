// Package sheetstest is a scripted, in-memory stand-in for the Sheets API
// v4 values endpoints, for tests and the demo: it keeps each tab's cells
// and answers the requests sheets.Writer sends, as the API does, checking
// their methods, paths, query and bodies:
//
//   - POST /v4/spreadsheets/{id}/values/{range}:clear empties the tab and
//     answers {"spreadsheetId", "clearedRange"};
//   - PUT /v4/spreadsheets/{id}/values/{range}?valueInputOption=RAW (or
//     USER_ENTERED) with {"range", "majorDimension", "values"} writes the
//     values from the range's first cell over what is there, leaving the
//     other cells as they are, and answers {"spreadsheetId",
//     "updatedRange", "updatedRows", "updatedColumns", "updatedCells"};
//   - POST /v4/spreadsheets/{id}/values/{range}:append adds the values
//     after the tab's last row (what a writer must not do on a rerun);
//   - GET /v4/spreadsheets/{id}/values/{range} answers the tab's values.
//
// Ranges are a tab name ('Tab' or Tab), or a tab and the cell A1. A
// request it cannot serve is answered with the API's error body and
// status (400, 404, 405).
package sheetstest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
)

// Request is a request the server received.
type Request struct {
	Method string
	// Path is the unescaped path, Query the raw query.
	Path  string
	Query string
	Body  string
}

// Server is the fake API, serving one spreadsheet.
type Server struct {
	*httptest.Server
	// SpreadsheetID is the spreadsheet it serves.
	SpreadsheetID string

	mu       sync.Mutex
	tabs     map[string][][]any
	requests []Request
	fail     []int
}

// NewServer starts a server for the spreadsheet id with no tab; close it
// with Close.
func NewServer(id string) *Server {
	s := &Server{SpreadsheetID: id, tabs: map[string][][]any{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// Tab returns a copy of tab's rows.
func (s *Server) Tab(tab string) [][]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([][]any, len(s.tabs[tab]))
	for i, r := range s.tabs[tab] {
		out[i] = append([]any(nil), r...)
	}
	return out
}

// SetTab replaces tab's rows.
func (s *Server) SetTab(tab string, rows [][]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tabs[tab] = rows
}

// Requests returns the requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// FailNext answers the next len(statuses) requests with these statuses
// (and an error body), in order, before serving any.
func (s *Server) FailNext(statuses ...int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = append(s.fail, statuses...)
}

func apiError(w http.ResponseWriter, status int, format string, args ...any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	body := map[string]any{"error": map[string]any{"code": status, "message": fmt.Sprintf(format, args...), "status": http.StatusText(status)}}
	json.NewEncoder(w).Encode(body)
}

func reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// parseRange splits an A1 range into its tab and cell ("" or "A1").
func parseRange(r string) (tab, cell string, err error) {
	if i := strings.LastIndex(r, "!"); i >= 0 {
		r, cell = r[:i], r[i+1:]
		if cell != "A1" {
			return "", "", fmt.Errorf("range cell %q: this server writes from A1 only", cell)
		}
	}
	if len(r) >= 2 && r[0] == '\'' && r[len(r)-1] == '\'' {
		r = strings.ReplaceAll(r[1:len(r)-1], "''", "'")
	}
	if r == "" {
		return "", "", fmt.Errorf("empty range")
	}
	return r, cell, nil
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Body: string(body)})
	if len(s.fail) > 0 {
		status := s.fail[0]
		s.fail = s.fail[1:]
		apiError(w, status, "scripted failure")
		return
	}
	prefix := "/v4/spreadsheets/" + s.SpreadsheetID + "/values/"
	if !strings.HasPrefix(r.URL.Path, prefix) {
		apiError(w, http.StatusNotFound, "Requested entity was not found.")
		return
	}
	rng, verb, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, prefix), ":")
	tab, cell, err := parseRange(rng)
	if err != nil {
		apiError(w, http.StatusBadRequest, "Unable to parse range: %s (%v)", rng, err)
		return
	}
	allow := map[string]string{"clear": http.MethodPost, "append": http.MethodPost, "": ""}[verb]
	if verb == "" {
		allow = http.MethodGet
		if r.Method == http.MethodPut {
			allow = http.MethodPut
		}
	}
	if allow == "" || r.Method != allow {
		apiError(w, http.StatusMethodNotAllowed, "%s %s is not a values method", r.Method, r.URL.Path)
		return
	}
	switch verb {
	case "clear":
		if cell != "" {
			apiError(w, http.StatusBadRequest, "this server clears whole tabs only, not %s", rng)
			return
		}
		if len(strings.TrimSpace(string(body))) > 0 && strings.TrimSpace(string(body)) != "{}" {
			apiError(w, http.StatusBadRequest, "Invalid JSON payload received: the clear request has no fields")
			return
		}
		delete(s.tabs, tab)
		reply(w, map[string]any{"spreadsheetId": s.SpreadsheetID, "clearedRange": rng})
		return
	case "":
		if r.Method == http.MethodGet {
			reply(w, map[string]any{"range": rng, "majorDimension": "ROWS", "values": s.tabs[tab]})
			return
		}
	}
	// update (PUT) and append (POST :append).
	q, _ := url.ParseQuery(r.URL.RawQuery)
	if opt := q.Get("valueInputOption"); opt != "RAW" && opt != "USER_ENTERED" {
		apiError(w, http.StatusBadRequest, "'valueInputOption' is required but not specified")
		return
	}
	var vr struct {
		Range          string  `json:"range"`
		MajorDimension string  `json:"majorDimension"`
		Values         [][]any `json:"values"`
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&vr); err != nil {
		apiError(w, http.StatusBadRequest, "Invalid JSON payload received: %v", err)
		return
	}
	if vr.Range != "" && vr.Range != rng {
		apiError(w, http.StatusBadRequest, "Invalid data[0]: the range in the body (%s) is not the range of the URL (%s)", vr.Range, rng)
		return
	}
	if vr.MajorDimension != "" && vr.MajorDimension != "ROWS" {
		apiError(w, http.StatusBadRequest, "this server writes majorDimension ROWS only, not %q", vr.MajorDimension)
		return
	}
	rows := s.tabs[tab]
	at := 0
	if verb == "append" {
		at = len(rows)
	} else if cell != "A1" {
		apiError(w, http.StatusBadRequest, "an update names its first cell (%s!A1)", tab)
		return
	}
	cols, cells := 0, 0
	for i, vals := range vr.Values {
		for len(rows) <= at+i {
			rows = append(rows, nil)
		}
		row := rows[at+i]
		for len(row) < len(vals) {
			row = append(row, "")
		}
		copy(row, vals)
		rows[at+i] = row
		cols, cells = max(cols, len(vals)), cells+len(vals)
	}
	s.tabs[tab] = rows
	updated := map[string]any{"spreadsheetId": s.SpreadsheetID, "updatedRange": rng, "updatedRows": len(vr.Values), "updatedColumns": cols, "updatedCells": cells}
	if verb == "append" {
		reply(w, map[string]any{"spreadsheetId": s.SpreadsheetID, "updates": updated})
		return
	}
	reply(w, updated)
}
