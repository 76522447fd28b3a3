package runfiles

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/fsmgen/fsmgen/internal/safeio"
)

// Errors of ReadSummaries, matched with errors.Is.
var (
	// ErrRunDirNotFound: the run's directory does not exist.
	ErrRunDirNotFound = errors.New("run directory not found")
	// ErrSummaryMissing: run.json or steps.json is not in the run's
	// directory (the run has not finished, or the directory is incomplete).
	ErrSummaryMissing = errors.New("summary file missing")
	// ErrSummaryCorrupt: run.json or steps.json is not valid JSON, or lacks
	// a required field, or names another run.
	ErrSummaryCorrupt = errors.New("summary file corrupt")
)

// CSVColumns are the columns of audit.csv, in order.
var CSVColumns = []string{
	"run_id",
	"workflow_name",
	"run_status",
	"run_started_at",
	"run_finished_at",
	"run_duration_ms",
	"step_index",
	"step_name",
	"step_status",
	"step_started_at",
	"step_finished_at",
	"step_duration_ms",
	"step_error_code",
	"step_error_message",
	"step_metrics_json",
}

// ReadSummaries reads run.json and steps.json of the run runID under
// runsDir (runsDir/runID) and checks them: a missing directory is
// ErrRunDirNotFound, a missing file ErrSummaryMissing, a file that does not
// decode or lacks a required field ErrSummaryCorrupt; every error names
// the directory or file.
func ReadSummaries(runsDir, runID string) (Audit, error) {
	if err := CheckRunID(runID); err != nil {
		return Audit{}, err
	}
	dir := filepath.Join(runsDir, runID)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			return Audit{}, fmt.Errorf("%s: %w: no run %s under %s", dir, ErrRunDirNotFound, runID, runsDir)
		}
		return Audit{}, fmt.Errorf("%s: %w", dir, err)
	}
	var a Audit
	if err := readJSON(filepath.Join(dir, RunFile), &a.Run); err != nil {
		return Audit{}, err
	}
	if err := readJSON(filepath.Join(dir, StepsFile), &a.Steps); err != nil {
		return Audit{}, err
	}
	if err := a.check(runID, dir); err != nil {
		return Audit{}, err
	}
	return a, nil
}

// CheckRunID reports whether id can name a run's directory: not empty, no
// path separator, not "." or "..".
func CheckRunID(id string) error {
	if id == "" || id == "." || id == ".." || filepath.Base(id) != id || len(id) > 200 {
		return fmt.Errorf("invalid run id %q: want a single directory name", id)
	}
	return nil
}

// MaxFileSize is the largest file of a run directory read back (64 MiB).
const MaxFileSize = 64 << 20

func readJSON(name string, v any) error {
	data, err := safeio.ReadFile(name, MaxFileSize)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: %w (the run has not finished, or its directory is incomplete)", name, ErrSummaryMissing)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w: %v", name, ErrSummaryCorrupt, err)
	}
	return nil
}

// Check reports whether the audit is whole: run.json with every required
// field and the run id runID (when not empty), steps.json a list of steps
// with theirs. Its errors name the file at fault and wrap
// ErrSummaryCorrupt.
func (a *Audit) Check(runID string) error { return a.check(runID, "") }

// check is Check, naming the files in dir.
func (a *Audit) check(runID, dir string) error {
	r := a.Run
	bad := func(file, format string, args ...any) error {
		if dir != "" {
			file = filepath.Join(dir, file)
		}
		return fmt.Errorf("%s: %w: %s", file, ErrSummaryCorrupt, fmt.Sprintf(format, args...))
	}
	switch {
	case r.RunID == "":
		return bad(RunFile, "no run_id")
	case runID != "" && r.RunID != runID:
		return bad(RunFile, "run_id is %q, not %q", r.RunID, runID)
	case r.WorkflowName == "":
		return bad(RunFile, "no workflow_name")
	case r.Status != StatusOK && r.Status != StatusFailed:
		return bad(RunFile, "status %q: want OK or FAILED", r.Status)
	}
	if err := checkTime(r.StartedAt); err != nil {
		return bad(RunFile, "started_at: %v", err)
	}
	if err := checkTime(r.FinishedAt); err != nil {
		return bad(RunFile, "finished_at: %v", err)
	}
	if a.Steps == nil {
		return bad(StepsFile, "not a list of steps")
	}
	for i, s := range a.Steps {
		switch {
		case s.StepIndex < 1:
			return bad(StepsFile, "step %d: step_index %d: want 1 or more", i+1, s.StepIndex)
		case s.StepName == "":
			return bad(StepsFile, "step %d: no step_name", i+1)
		case s.Status != StatusOK && s.Status != StatusFailed:
			return bad(StepsFile, "step %d: status %q: want OK or FAILED", i+1, s.Status)
		}
		if err := checkTime(s.StartedAt); err != nil {
			return bad(StepsFile, "step %d: started_at: %v", i+1, err)
		}
		if err := checkTime(s.FinishedAt); err != nil {
			return bad(StepsFile, "step %d: finished_at: %v", i+1, err)
		}
		m, err := CompactJSON(s.Metrics)
		if err != nil {
			return bad(StepsFile, "step %d: metrics: %v", i+1, err)
		}
		a.Steps[i].Metrics = m
	}
	return nil
}

func checkTime(s string) error {
	if s == "" {
		return errors.New("missing")
	}
	if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
		return fmt.Errorf("%q is not an ISO 8601 time", s)
	}
	return nil
}

// AuditJSON encodes the audit as audit.json: {run, steps}, indented.
func AuditJSON(a Audit) ([]byte, error) {
	if a.Steps == nil {
		a.Steps = []StepSummary{}
	}
	return EncodeJSON(a)
}

// AuditCSV encodes the audit as audit.csv: a header of CSVColumns, then one
// row per step with the run's fields repeated, metrics as compact JSON.
// A run with no step has the header only. A text cell that a spreadsheet
// would read as a formula is neutralised (NeutraliseFormula).
func AuditCSV(a Audit) ([]byte, error) {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	if err := w.Write(CSVColumns); err != nil {
		return nil, err
	}
	r := a.Run
	for _, s := range a.Steps {
		m, err := CompactJSON(s.Metrics)
		if err != nil {
			return nil, fmt.Errorf("step %d metrics: %w", s.StepIndex, err)
		}
		n := NeutraliseFormula
		row := []string{
			n(r.RunID), n(r.WorkflowName), n(r.Status), n(r.StartedAt), n(r.FinishedAt), strconv.FormatInt(r.DurationMS, 10),
			strconv.Itoa(s.StepIndex), n(s.StepName), n(s.Status), n(s.StartedAt), n(s.FinishedAt), strconv.FormatInt(s.DurationMS, 10),
			n(s.ErrorCode), n(s.ErrorMessage), n(string(m)),
		}
		if err := w.Write(row); err != nil {
			return nil, err
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// NeutraliseFormula returns a CSV cell that no spreadsheet runs as a
// formula, as OWASP's CSV injection guidance says: a cell that starts with
// =, +, -, @, a tab or a carriage return gets a single quote in front, so
// that Excel, LibreOffice and Google Sheets show it as text. Other cells
// are returned as they are. Numbers the export formats itself (durations,
// step indexes) are not passed through it.
func NeutraliseFormula(cell string) string {
	if cell != "" && strings.IndexByte("=+-@\t\r", cell[0]) >= 0 {
		return "'" + cell
	}
	return cell
}
