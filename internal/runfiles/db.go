package runfiles

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// The persisted types of the step engine's machines (runtime/stepengine's
// run and step packages; their tests check that these agree).
const (
	RunType  = "step_engine_run"
	StepType = "step_engine_step"
)

// StepRunsLog is the name of the log row the engine writes on a run at the
// start of each attempt, listing the runs of the step machine that hold the
// attempt's steps (a StepRuns payload).
const StepRunsLog = "steps"

// StepRuns is the payload of the StepRunsLog row: the attempt and its steps
// in order, each with the id of its run of the step machine.
type StepRuns struct {
	Attempt int       `json:"attempt"`
	Steps   []StepRun `json:"steps"`
}

// RerunLog is the name of the log row written on a run that succeeded when
// it is run again under its id: the database keeps a succeeded run as it
// is, so the new execution is a run of its own, which the row's Rerun
// payload names. The last such row names the run's latest execution.
const RerunLog = "rerun"

// Rerun is the payload of a RerunLog row, which store.LogLink writes.
type Rerun struct {
	// RunID is the id, in the database, of the run that carries the new
	// execution.
	RunID string `json:"run_id"`
}

// LatestExecution returns the run that carries the latest execution of
// the step-engine run runID: runID itself, or the run its last RerunLog
// row names; and how many RerunLog rows runID has.
func LatestExecution(ctx context.Context, st *store.Store, runID string) (runtime.Run, int, error) {
	first, err := st.Get(ctx, runID)
	if err != nil {
		return runtime.Run{}, 0, err
	}
	hist, err := st.History(ctx, runID)
	if err != nil {
		return runtime.Run{}, 0, err
	}
	latest, n := "", 0
	for _, h := range hist {
		if h.Kind != store.KindStep || h.Name != RerunLog {
			continue
		}
		var rr Rerun
		if err := json.Unmarshal(h.Payload, &rr); err != nil {
			return runtime.Run{}, 0, fmt.Errorf("run %s: log row %d (%s): %w: %v", runID, h.ID, RerunLog, ErrSummaryCorrupt, err)
		}
		latest, n = rr.RunID, n+1
	}
	if latest == "" {
		return first, 0, nil
	}
	cur, err := st.Get(ctx, latest)
	if err != nil {
		return runtime.Run{}, 0, fmt.Errorf("run %s: its latest execution: %w", runID, err)
	}
	return cur, n, nil
}

// StepRun is one step of a StepRuns row.
type StepRun struct {
	Index int    `json:"step_index"`
	Name  string `json:"step_name"`
	RunID string `json:"run_id"`
}

// ErrRunNotFinished is the error of a run that is still running (or was interrupted and not
// run again), so it has no summary yet.
var ErrRunNotFinished = errors.New("run has not finished")

// FromStore reads the audit of the run runID from the database, from its
// latest execution (LatestExecution): run.json is the run's result output,
// steps.json the result outputs of the step runs of its last attempt that
// ran. It gives the audit that ReadSummaries gives for the same run, so
// that AuditJSON and AuditCSV encode the same bytes.
func FromStore(ctx context.Context, st *store.Store, runID string) (Audit, error) {
	first, err := st.Get(ctx, runID)
	if err != nil {
		return Audit{}, err
	}
	if first.Type != RunType {
		return Audit{}, fmt.Errorf("run %s is a run of %s, not of the step engine (%s)", runID, first.Type, RunType)
	}
	run, _, err := LatestExecution(ctx, st, runID)
	if err != nil {
		return Audit{}, err
	}
	if !run.Terminal() || run.Result == nil || len(run.Result.Output) == 0 {
		return Audit{}, fmt.Errorf("run %s: %w: it is %s", runID, ErrRunNotFinished, run.State)
	}
	var a Audit
	if err := json.Unmarshal(run.Result.Output, &a.Run); err != nil {
		return Audit{}, fmt.Errorf("run %s: result: %w: %v", runID, ErrSummaryCorrupt, err)
	}
	steps, err := StepRunsOf(ctx, st, run.ID, run.Attempt)
	if err != nil {
		return Audit{}, err
	}
	a.Steps = []StepSummary{}
	for _, s := range steps.Steps {
		sr, err := st.Get(ctx, s.RunID)
		if err != nil {
			return Audit{}, fmt.Errorf("run %s: step %d %s: %w", runID, s.Index, s.Name, err)
		}
		if !sr.Terminal() {
			continue // PENDING: never ran
		}
		if sr.Result == nil || len(sr.Result.Output) == 0 {
			continue // SKIPPED, or closed after an interruption: no summary
		}
		var sum StepSummary
		if err := json.Unmarshal(sr.Result.Output, &sum); err != nil {
			return Audit{}, fmt.Errorf("run %s: step run %s: result: %w: %v", runID, s.RunID, ErrSummaryCorrupt, err)
		}
		a.Steps = append(a.Steps, sum)
	}
	sort.SliceStable(a.Steps, func(i, j int) bool { return a.Steps[i].StepIndex < a.Steps[j].StepIndex })
	if err := a.Check(runID); err != nil {
		return Audit{}, fmt.Errorf("run %s in the database: %w", runID, err)
	}
	return a, nil
}

// StepRunsOf returns the StepRuns row of attempt of the run runID; a run
// whose attempt has none (it was interrupted before it was written) has no
// steps.
func StepRunsOf(ctx context.Context, st *store.Store, runID string, attempt int) (StepRuns, error) {
	hist, err := st.History(ctx, runID)
	if err != nil {
		return StepRuns{}, err
	}
	out := StepRuns{Attempt: attempt}
	for _, h := range hist {
		if h.Kind != store.KindStep || h.Name != StepRunsLog || h.Attempt != attempt {
			continue
		}
		if err := json.Unmarshal(h.Payload, &out); err != nil {
			return StepRuns{}, fmt.Errorf("run %s: log row %d (%s): %w: %v", runID, h.ID, StepRunsLog, ErrSummaryCorrupt, err)
		}
	}
	return out, nil
}
