// Package report is an example workflow on the step engine: it fetches a
// sheet of sales rows from an HTTP API (with apiclient's retries), totals
// them by region, and writes report.csv into the run's artifacts
// directory (runs/<run_id>/artifacts/report.csv), registered in the run's
// artifact index as report_csv.
//
// Its steps follow the contract's rerun rules: report.csv has a fixed name
// and is written whole (temporary file, rename), so a rerun under the same
// run id replaces it rather than appending to it. With Config.Output, a
// last step replaces a spreadsheet tab with the report (package sheets:
// clear, then write from A1), so running the workflow again never
// duplicates its rows there.
package report

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"net/url"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/fsmgen/fsmgen/internal/runfiles"
	"github.com/fsmgen/fsmgen/machines/reporting/apiclient"
	"github.com/fsmgen/fsmgen/machines/reporting/sheets"
	"github.com/fsmgen/fsmgen/runtime/stepengine"
)

// Name is the workflow's name.
const Name = "sales_report"

// Operation names the API call in errors and error artifacts.
const Operation = "sheets.spreadsheets.values.get"

// ReportPath is report.csv's path in the run's directory,
// runs/<run_id>/artifacts/report.csv, as the artifact index records it.
const ReportPath = runfiles.ArtifactsDir + "/report.csv"

// Config is what the workflow reads: the API's base URL and the sheet's
// name, and where the report goes besides report.csv. Its JSON is hashed
// into run.json's config_hash.
type Config struct {
	BaseURL string `json:"base_url"`
	Sheet   string `json:"sheet"`
	// Output, optional, is a spreadsheet tab the report is also written
	// to, by a last step publish_sheet.
	Output *SheetOutput `json:"output,omitempty"`
}

// SheetOutput is a spreadsheet tab the report replaces at every run:
// clear, then write from A1 (sheets.Writer), never append, so a workflow
// run twice leaves the tab with one copy of the report.
type SheetOutput struct {
	// BaseURL is the Sheets API's root; Config.BaseURL when empty.
	BaseURL       string `json:"base_url,omitempty"`
	SpreadsheetID string `json:"spreadsheet_id"`
	Tab           string `json:"tab"`
}

// Values is the API's answer: a header row, then rows of region and
// amount, as strings.
type Values struct {
	Values [][]string `json:"values"`
}

// Workflow returns the report workflow: fetch, summarize, write_report,
// and publish_sheet when cfg.Output is set.
func Workflow(client *apiclient.Client, cfg Config) stepengine.Workflow {
	wf := stepengine.Workflow{
		Name:   Name,
		Config: cfg,
		Steps: []stepengine.Step{
			{Name: "fetch", Run: func(ctx context.Context, rc stepengine.RunContext, st *stepengine.RunState, log *stepengine.Logger) (stepengine.StepResult, error) {
				var v Values
				u := cfg.BaseURL + "/v4/spreadsheets/" + url.PathEscape(cfg.Sheet) + "/values"
				if err := client.GetJSON(ctx, Operation, u, &v); err != nil {
					return stepengine.StepResult{}, err
				}
				if len(v.Values) == 0 {
					return stepengine.StepResult{OK: false, Error: "the sheet is empty: no header row"}, nil
				}
				rows := v.Values[1:]
				st.Data["rows"] = rows
				return stepengine.StepResult{OK: true, Outputs: map[string]any{"rows": len(rows)},
					Metrics: map[string]any{"rows": len(rows), "columns": v.Values[0]}}, nil
			}},
			{Name: "summarize", Run: func(ctx context.Context, rc stepengine.RunContext, st *stepengine.RunState, log *stepengine.Logger) (stepengine.StepResult, error) {
				rows, _ := st.Data["rows"].([][]string)
				totals := map[string]float64{}
				for i, r := range rows {
					if len(r) != 2 {
						return stepengine.StepResult{OK: false, Error: fmt.Sprintf("row %d has %d cells, want 2 (region, amount)", i+2, len(r))}, nil
					}
					amount, err := strconv.ParseFloat(r[1], 64)
					if err != nil {
						return stepengine.StepResult{OK: false, Error: fmt.Sprintf("row %d: amount %q is not a number", i+2, r[1])}, nil
					}
					totals[r[0]] += amount
				}
				st.Data["totals"] = totals
				return stepengine.StepResult{OK: true, Outputs: map[string]any{"regions": len(totals)}, Metrics: map[string]any{"regions": len(totals)}}, nil
			}},
			{Name: "write_report", Run: func(ctx context.Context, rc stepengine.RunContext, st *stepengine.RunState, log *stepengine.Logger) (stepengine.StepResult, error) {
				totals, _ := st.Data["totals"].(map[string]float64)
				regions := make([]string, 0, len(totals))
				for r := range totals {
					regions = append(regions, r)
				}
				sort.Strings(regions)
				table := reportTable(regions, totals)
				var b bytes.Buffer
				if err := csv.NewWriter(&b).WriteAll(table); err != nil {
					return stepengine.StepResult{}, err
				}
				if err := runfiles.WriteFile(filepath.Join(rc.RunDir(), filepath.FromSlash(ReportPath)), b.Bytes()); err != nil {
					return stepengine.StepResult{}, err
				}
				meta := map[string]any{"rows": len(regions), "columns": []string{"region", "total"}, "bytes": b.Len()}
				if _, err := rc.RegisterArtifact("report_csv", "csv", ReportPath, meta); err != nil {
					return stepengine.StepResult{}, err
				}
				if err := log.Log("report_written", map[string]any{"path": ReportPath, "rows": len(regions)}); err != nil {
					return stepengine.StepResult{}, err
				}
				st.Data["report"] = table
				return stepengine.StepResult{OK: true, Outputs: map[string]any{"path": ReportPath}, Metrics: meta}, nil
			}},
		},
	}
	if out := cfg.Output; out != nil {
		base := out.BaseURL
		if base == "" {
			base = cfg.BaseURL
		}
		w := &sheets.Writer{Client: client, BaseURL: base, SpreadsheetID: out.SpreadsheetID}
		wf.Steps = append(wf.Steps, stepengine.Step{Name: "publish_sheet", Run: func(ctx context.Context, rc stepengine.RunContext, st *stepengine.RunState, log *stepengine.Logger) (stepengine.StepResult, error) {
			table, _ := st.Data["report"].([][]string)
			rows := make([][]any, len(table))
			for i, r := range table {
				for _, c := range r {
					rows[i] = append(rows[i], c)
				}
			}
			res, err := w.Replace(ctx, out.Tab, rows)
			if err != nil {
				return stepengine.StepResult{}, err
			}
			if err := log.Log("sheet_replaced", map[string]any{"cleared_range": res.ClearedRange, "updated_range": res.UpdatedRange, "rows": res.UpdatedRows}); err != nil {
				return stepengine.StepResult{}, err
			}
			return stepengine.StepResult{OK: true, Outputs: map[string]any{"range": res.UpdatedRange, "rows": res.UpdatedRows},
				Metrics: map[string]any{"rows": res.UpdatedRows, "cells": res.UpdatedCells}}, nil
		}})
	}
	return wf
}

// reportTable is the report's rows, those of report.csv and of the
// sheet: the header, then a region and its total a row.
func reportTable(regions []string, totals map[string]float64) [][]string {
	rows := [][]string{{"region", "total"}}
	for _, r := range regions {
		rows = append(rows, []string{r, strconv.FormatFloat(totals[r], 'f', 2, 64)})
	}
	return rows
}
