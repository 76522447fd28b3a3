package runfiles

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"time"
)

// File names under a run's directory.
const (
	RunFile      = "run.json"
	StepsFile    = "steps.json"
	ContextFile  = "context.json"
	LogsFile     = "logs.jsonl"
	AuditFile    = "audit.json"
	AuditCSVFile = "audit.csv"
	ArtifactsDir = "artifacts"
	IndexFile    = "artifacts/index.json"
	ErrorsDir    = "errors"
)

// Statuses of a run and of a step as the summaries write them. A step not
// started yet is PENDING, and SKIPPED once the run stopped before it; the
// summaries list only the steps that ran, so they hold OK and FAILED only.
const (
	StatusPending = "PENDING"
	StatusRunning = "RUNNING"
	StatusOK      = "OK"
	StatusFailed  = "FAILED"
	StatusSkipped = "SKIPPED"
)

// TimeLayout is the layout of every timestamp in a run's files: UTC, ISO
// 8601, milliseconds.
const TimeLayout = "2006-01-02T15:04:05.000Z"

// FormatTime formats t in TimeLayout, in UTC.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeLayout) }

// RunSummary is run.json: the run-level summary.
type RunSummary struct {
	RunID        string `json:"run_id"`
	WorkflowName string `json:"workflow_name"`
	// Status is OK or FAILED.
	Status     string `json:"status"`
	StartedAt  string `json:"started_at"`
	FinishedAt string `json:"finished_at"`
	DurationMS int64  `json:"duration_ms"`
	// ConfigHash is the SHA-256 of the workflow's configuration, GitSHA the
	// revision the program was built from, ErrorSummary the failure's type
	// and message; each is left out when unknown.
	ConfigHash   string `json:"config_hash,omitempty"`
	GitSHA       string `json:"git_sha,omitempty"`
	ErrorSummary string `json:"error_summary,omitempty"`
}

// StepSummary is one element of steps.json: the summary of a step that ran.
type StepSummary struct {
	// StepIndex is the step's position in the workflow, from 1.
	StepIndex int    `json:"step_index"`
	StepName  string `json:"step_name"`
	// Status is OK or FAILED.
	Status     string `json:"status"`
	StartedAt  string `json:"started_at"`
	FinishedAt string `json:"finished_at"`
	DurationMS int64  `json:"duration_ms"`
	// ErrorCode and ErrorMessage describe a failure: the error's type and
	// its message.
	ErrorCode    string `json:"error_code,omitempty"`
	ErrorMessage string `json:"error_message,omitempty"`
	// Metrics are the step's metrics, any JSON object, compact.
	Metrics json.RawMessage `json:"metrics,omitempty"`
}

// Audit is audit.json: the bundle {run, steps}.
type Audit struct {
	Run   RunSummary    `json:"run"`
	Steps []StepSummary `json:"steps"`
}

// ArtifactRecord is one record of artifacts/index.json.
type ArtifactRecord struct {
	// Name is a stable key (report_csv), Type the file's kind (csv, json,
	// txt, ...).
	Name string `json:"name"`
	Type string `json:"type"`
	// Path is relative to the run's directory, with forward slashes.
	Path      string `json:"path"`
	CreatedAt string `json:"created_at"`
	// Metadata are free-form metrics: row counts, schema columns, ...
	Metadata map[string]any `json:"metadata"`
}

// ErrorArtifact is errors/<workflow>__<step>.json. Operation, StatusCode,
// Attempts and Reason are those of an API error whose retries ran out, and
// are left out for every other error.
type ErrorArtifact struct {
	RunID        string `json:"run_id"`
	Workflow     string `json:"workflow"`
	Step         string `json:"step"`
	Status       string `json:"status"`
	ErrorType    string `json:"error_type"`
	ErrorMessage string `json:"error_message"`
	Operation    string `json:"operation,omitempty"`
	StatusCode   int    `json:"status_code,omitempty"`
	Attempts     int    `json:"attempts,omitempty"`
	Reason       string `json:"reason,omitempty"`
	TS           string `json:"ts"`
}

// ErrorArtifactPath is the path of a step's error artifact, relative to the
// run's directory: errors/<workflow>__<step>.json.
func ErrorArtifactPath(workflow, step string) string {
	return path.Join(ErrorsDir, workflow+"__"+step+".json")
}

// CheckName reports whether name can be a workflow's or a step's name: it
// becomes part of a file name, so it is not empty, is at most 100 bytes and
// holds only letters, digits, '.', '-' and '_' (and is not "." or "..").
func CheckName(name string) error {
	if name == "" {
		return fmt.Errorf("empty name")
	}
	if len(name) > 100 {
		return fmt.Errorf("name %.20q... is longer than 100 bytes", name)
	}
	if name == "." || name == ".." || strings.Contains(name, "__") {
		return fmt.Errorf("name %q: not a file name part (\".\", \"..\" and \"__\" are reserved)", name)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_') {
			return fmt.Errorf("name %q has %q: use letters, digits, '.', '-' and '_'", name, r)
		}
	}
	return nil
}

// EncodeJSON encodes v as the files of a run are written: indented by two
// spaces, HTML characters not escaped, with a final newline.
func EncodeJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// CompactJSON returns the canonical compact form of a JSON document: object
// keys sorted, no insignificant space, numbers as written. Metrics pass
// through it, so that they read the same from a file and from the database
// (whose jsonb reorders keys and adds spaces). Empty input, and null, give
// nil.
func CompactJSON(raw []byte) (json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after the JSON value")
	}
	if v == nil {
		return nil, nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}
