package stepengine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fsmgen/fsmgen/internal/runfiles"
)

// The on-disk records of a run, as package runfiles defines them.
type (
	// RunSummary is run.json.
	RunSummary = runfiles.RunSummary
	// StepSummary is one step of steps.json.
	StepSummary = runfiles.StepSummary
	// Audit is audit.json, {run, steps}.
	Audit = runfiles.Audit
	// ArtifactRecord is one record of artifacts/index.json.
	ArtifactRecord = runfiles.ArtifactRecord
	// ErrorArtifact is errors/<workflow>__<step>.json.
	ErrorArtifact = runfiles.ErrorArtifact
)

// Workflow is a name and the steps it runs, in order.
type Workflow struct {
	// Name names the workflow in run.json, the logs and error artifacts'
	// file names: letters, digits, '.', '-' and '_'.
	Name  string
	Steps []Step
	// Config, when not nil, is the workflow's configuration: run.json's
	// config_hash is the SHA-256 of its JSON encoding.
	Config any
}

// Step is a single unit of work, run at most once per run of its workflow.
type Step struct {
	// Name is unique in the workflow, with the characters of Workflow.Name.
	Name string
	// Run does the step's work. It reads and changes state, and logs with
	// log. A failure is a StepResult with OK false and Error set, or an
	// error, or a panic; the engine records each the same way and stops.
	Run func(ctx context.Context, rc RunContext, state *RunState, log *Logger) (StepResult, error)
}

// StepResult is what a step returns. The zero StepResult is invalid (the
// Go counterpart of returning None): a failed result must say why in
// Error, so OK false with an empty Error fails the step as
// InvalidStepResult.
type StepResult struct {
	// OK is true for success, false for failure.
	OK bool
	// Outputs are recorded under the step's name in RunState.StepOutputs;
	// they must encode to JSON.
	Outputs map[string]any
	// Error is the human-readable failure reason, required when OK is false.
	Error string
	// Metrics, optional, go to the step's summary in steps.json: row
	// counts, bytes, calls made; they must encode to JSON.
	Metrics map[string]any
}

// APIDetails are the details of an API request whose failure failed a
// step. A step's error that is, or wraps, an error with a method
// APIDetails() APIDetails (machines/reporting/apiclient's
// *APIRetryExhausted has one) puts them into the step's Failure, its error
// artifact (operation, status_code, attempts, reason), its step_error and
// step_failed log lines and its record in the database.
type APIDetails struct {
	// Operation is the API operation (sheets.spreadsheets.values.get).
	Operation string
	// StatusCode is the last response's HTTP status.
	StatusCode int
	// Attempts counts the requests sent: the initial one and the retries.
	Attempts int
	// Reason is the rate-limit reason of a 403, empty otherwise.
	Reason string
}

// Error types of a failed step, in its error artifact, steps.json's
// error_code and the logs. An error returned by a step that has a method
// ErrorType() string has that type (machines/reporting/apiclient's errors
// do).
const (
	// ErrorTypeStepFailed: the step returned OK false with an Error.
	ErrorTypeStepFailed = "StepFailed"
	// ErrorTypeInvalidResult: the step returned a zero or invalid
	// StepResult, or outputs or metrics that do not encode.
	ErrorTypeInvalidResult = "InvalidStepResult"
	// ErrorTypePanic: the step panicked.
	ErrorTypePanic = "Panic"
	// ErrorTypeError: the step returned an error without an ErrorType.
	ErrorTypeError = "Error"
	// ErrorTypeAPIRetryExhausted: an API request's retries ran out.
	ErrorTypeAPIRetryExhausted = "APIRetryExhausted"
	// ErrorTypeInterrupted closes, in the database, the attempt of a run
	// whose process stopped before it finished, when the run is run again.
	ErrorTypeInterrupted = "RunInterrupted"
	// ErrorTypeSkipped is the error code, in the database, of a step that
	// never started because the run stopped at an earlier one.
	ErrorTypeSkipped = "Skipped"
)

// RunContext is a run's identity and place on disk, the same for every
// step; its fields are read through methods, so a step cannot change them.
type RunContext struct {
	runID, runDir, logsPath string
	idx                     *artifactIndex
}

// RunID is the run's id: its id in the database, and its directory's name.
func (rc RunContext) RunID() string { return rc.runID }

// RunDir is the run's directory, runs/<run_id>. Steps may write files in
// it; reruns of the run start from an empty directory.
func (rc RunContext) RunDir() string { return rc.runDir }

// LogsPath is runs/<run_id>/logs.jsonl.
func (rc RunContext) LogsPath() string { return rc.logsPath }

// ArtifactsDir is runs/<run_id>/artifacts, created when the run starts:
// the directory of the workflow's artifacts (report.csv), which have fixed
// names, so that a rerun under the same run id writes the same files.
func (rc RunContext) ArtifactsDir() string {
	return filepath.Join(rc.runDir, runfiles.ArtifactsDir)
}

type artifactIndex struct {
	mu  sync.Mutex
	now func() time.Time
}

// RegisterArtifact appends a record to the run's artifact index,
// artifacts/index.json: name is a stable key (report_csv), typ the kind of
// file (csv, json, txt), relPath the file's path relative to the run's
// directory (forward slashes, inside the directory; the file must exist),
// metadata free-form (row counts, columns). The index only grows during a
// run, and is written crash-safely. It returns the record written.
func (rc RunContext) RegisterArtifact(name, typ, relPath string, metadata map[string]any) (ArtifactRecord, error) {
	if rc.idx == nil {
		return ArtifactRecord{}, errors.New("register artifact: not a run's context")
	}
	if name == "" || typ == "" {
		return ArtifactRecord{}, fmt.Errorf("register artifact %q: name and type are required", name)
	}
	clean := filepath.ToSlash(filepath.Clean(filepath.FromSlash(relPath)))
	if relPath == "" || filepath.IsAbs(relPath) || clean == ".." || strings.HasPrefix(clean, "../") {
		return ArtifactRecord{}, fmt.Errorf("register artifact %q: path %q is not inside the run's directory", name, relPath)
	}
	if _, err := os.Stat(filepath.Join(rc.runDir, filepath.FromSlash(clean))); err != nil {
		return ArtifactRecord{}, fmt.Errorf("register artifact %q: %w", name, err)
	}
	if metadata == nil {
		metadata = map[string]any{}
	}
	if _, err := json.Marshal(metadata); err != nil {
		return ArtifactRecord{}, fmt.Errorf("register artifact %q: metadata: %w", name, err)
	}
	rc.idx.mu.Lock()
	defer rc.idx.mu.Unlock()
	rec := ArtifactRecord{Name: name, Type: typ, Path: clean, CreatedAt: runfiles.FormatTime(rc.idx.now()), Metadata: metadata}
	if err := runfiles.AppendArtifact(rc.runDir, rec); err != nil {
		return ArtifactRecord{}, fmt.Errorf("register artifact %q: %w", name, err)
	}
	return rec, nil
}

// RunState is the state a run's steps share, persisted to context.json
// after each step and again on failure.
type RunState struct {
	// Data is the workflow's free-form shared state; it must encode to JSON.
	Data map[string]any `json:"data"`
	// StepOutputs are the outputs of the steps that succeeded, by name.
	StepOutputs map[string]map[string]any `json:"step_outputs"`
}

// Logger writes JSON lines to a run's logs.jsonl: each line has ts (UTC),
// component, event and run_id, then the fields given. It is safe for
// concurrent use.
type Logger struct {
	w         *logFile
	component string
	fields    map[string]any
}

type logFile struct {
	mu    sync.Mutex
	f     *os.File
	now   func() time.Time
	runID string
}

// With returns a logger that writes component and adds fields to every
// line.
func (l *Logger) With(component string, fields map[string]any) *Logger {
	m := make(map[string]any, len(l.fields)+len(fields))
	for k, v := range l.fields {
		m[k] = v
	}
	for k, v := range fields {
		m[k] = v
	}
	return &Logger{w: l.w, component: component, fields: m}
}

// Log writes one line for event with fields. The keys ts, component, event
// and run_id are the logger's own.
func (l *Logger) Log(event string, fields map[string]any) error {
	line := make(map[string]any, len(l.fields)+len(fields)+4)
	for k, v := range l.fields {
		line[k] = v
	}
	for k, v := range fields {
		line[k] = v
	}
	l.w.mu.Lock()
	defer l.w.mu.Unlock()
	line["ts"] = runfiles.FormatTime(l.w.now())
	line["component"] = l.component
	line["event"] = event
	line["run_id"] = l.w.runID
	b, err := json.Marshal(line)
	if err != nil {
		return fmt.Errorf("log %s: %w", event, err)
	}
	// One write per line: a process killed while writing leaves whole
	// lines behind it.
	if _, err := l.w.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("log %s: %w", event, err)
	}
	return nil
}
