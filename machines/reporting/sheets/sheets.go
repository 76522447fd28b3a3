package sheets

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/fsmgen/fsmgen/machines/reporting/apiclient"
)

// The operations of Replace, as errors and error artifacts name them.
const (
	OperationClear  = "sheets.spreadsheets.values.clear"
	OperationUpdate = "sheets.spreadsheets.values.update"
)

// DefaultBaseURL is the Sheets API's root.
const DefaultBaseURL = "https://sheets.googleapis.com"

// Writer replaces the values of the tabs of one spreadsheet.
type Writer struct {
	// Client sends the requests, with its retries; its HTTP client
	// carries the credentials.
	Client *apiclient.Client
	// BaseURL is the API's root; DefaultBaseURL when empty.
	BaseURL string
	// SpreadsheetID names the spreadsheet.
	SpreadsheetID string
}

// ValueRange is the body of a values update, and what a values read
// returns.
type ValueRange struct {
	Range          string  `json:"range"`
	MajorDimension string  `json:"majorDimension"`
	Values         [][]any `json:"values"`
}

// Result is what Replace did, as the API answered it.
type Result struct {
	// ClearedRange is the range the clear emptied.
	ClearedRange string
	// UpdatedRange is the range written, UpdatedRows and UpdatedCells
	// how many rows and cells hold the values.
	UpdatedRange string
	UpdatedRows  int
	UpdatedCells int
}

// Range returns the A1 notation of tab's cell cell ("A1"), or of the
// whole tab when cell is empty: the tab's name quoted, its quotes
// doubled.
func Range(tab, cell string) string {
	r := "'" + strings.ReplaceAll(tab, "'", "''") + "'"
	if cell != "" {
		r += "!" + cell
	}
	return r
}

// Replace makes tab hold exactly rows, from A1: it clears the whole tab,
// then writes the rows. An empty rows leaves the tab empty.
func (w *Writer) Replace(ctx context.Context, tab string, rows [][]any) (Result, error) {
	if w.SpreadsheetID == "" || tab == "" {
		return Result{}, fmt.Errorf("sheets: replace: a spreadsheet id and a tab are required")
	}
	base := w.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	values := strings.TrimRight(base, "/") + "/v4/spreadsheets/" + url.PathEscape(w.SpreadsheetID) + "/values/"
	var cleared struct {
		ClearedRange string `json:"clearedRange"`
	}
	whole := Range(tab, "")
	if err := w.Client.SendJSON(ctx, OperationClear, http.MethodPost, values+url.PathEscape(whole)+":clear", struct{}{}, &cleared); err != nil {
		return Result{}, err
	}
	res := Result{ClearedRange: cleared.ClearedRange}
	if len(rows) == 0 {
		return res, nil
	}
	a1 := Range(tab, "A1")
	var updated struct {
		UpdatedRange string `json:"updatedRange"`
		UpdatedRows  int    `json:"updatedRows"`
		UpdatedCells int    `json:"updatedCells"`
	}
	body := ValueRange{Range: a1, MajorDimension: "ROWS", Values: rows}
	if err := w.Client.SendJSON(ctx, OperationUpdate, http.MethodPut, values+url.PathEscape(a1)+"?valueInputOption=RAW", body, &updated); err != nil {
		return res, err
	}
	res.UpdatedRange, res.UpdatedRows, res.UpdatedCells = updated.UpdatedRange, updated.UpdatedRows, updated.UpdatedCells
	return res, nil
}
