package stepengine

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fsmgen/fsmgen/internal/runfiles"
	"github.com/fsmgen/fsmgen/internal/safeio"
	fsmruntime "github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/stepengine/run"
	"github.com/fsmgen/fsmgen/runtime/stepengine/step"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// Errors of Run, matched with errors.Is.
var (
	// ErrInvalidWorkflow: the workflow has no name, a step without a name
	// or function, two steps of one name, or a name unfit for a file name.
	ErrInvalidWorkflow = errors.New("invalid workflow")
	// ErrOtherRun: the run id given to Run names a run that is not a
	// step-engine run of this workflow, or a cancelled one.
	ErrOtherRun = errors.New("not a run of this workflow")
	// ErrRunHeld: the run id given to Run names a run that another Run,
	// in this process or another, is running now.
	ErrRunHeld = errors.New("run held by another process")
)

// DefaultTenant is the tenant of runs when WithTenant is not given.
const DefaultTenant = "stepengine"

// Engine runs workflows, persisting each run in PostgreSQL through
// runtime/store and in its directory on disk.
type Engine struct {
	st     *store.Store
	now    func() time.Time
	tenant string
	gitSHA string
}

// Option configures an Engine.
type Option func(*Engine)

// WithClock sets the clock of the timestamps and durations in the run's
// files (the database keeps its own clock for its rows).
func WithClock(now func() time.Time) Option { return func(e *Engine) { e.now = now } }

// WithTenant sets the tenant the engine's runs belong to in the database.
func WithTenant(id string) Option { return func(e *Engine) { e.tenant = id } }

// WithGitSHA sets run.json's git_sha; without it, the vcs.revision the
// program was built from, when the build recorded one.
func WithGitSHA(sha string) Option { return func(e *Engine) { e.gitSHA = sha } }

// New returns an engine on st. Call Register once before Run.
func New(st *store.Store, opts ...Option) *Engine {
	e := &Engine{st: st, now: time.Now, tenant: DefaultTenant}
	for _, o := range opts {
		o(e)
	}
	if e.gitSHA == "" {
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" {
					e.gitSHA = s.Value
				}
			}
		}
	}
	return e
}

// Register registers the run and step machines' definitions with the
// store; it is idempotent.
func (e *Engine) Register(ctx context.Context) error {
	if err := e.st.Register(ctx, run.Definition()); err != nil {
		return err
	}
	return e.st.Register(ctx, step.Definition())
}

// RunOptions says where a run's files go and which run it is.
type RunOptions struct {
	// RunsDir holds the runs' directories; "runs" when empty.
	RunsDir string
	// RunID, when set, runs the workflow again under the id of an earlier
	// run of it, whatever its end: its directory is emptied and written
	// afresh, with the same file names, so a run id holds the files of its
	// latest execution only. In the database, a run that failed or was
	// interrupted (its process died) is restarted in place (attempt + 1);
	// a run that succeeded is kept as it is, and the new execution is a
	// run of its own, linked to it (RunResult.ExecutionID). Empty starts a
	// new run. One Run at a time runs a run id: while one holds it, Run of
	// the same id returns ErrRunHeld and changes nothing, on disk or in the
	// database; a run still RUNNING in the database that no Run holds (its
	// process died) is taken to be interrupted.
	RunID string
}

// RunResult is how a run ended.
type RunResult struct {
	RunID  string
	RunDir string
	// ExecutionID is the id, in the database, of the run that carries this
	// execution: RunID, but for the rerun of a run that had succeeded.
	ExecutionID string
	// Attempt is the execution's attempt in the database, from 1.
	Attempt int
	// Status is OK or FAILED.
	Status string
	// Summary is run.json, Steps steps.json (the steps that ran).
	Summary RunSummary
	Steps   []StepSummary
	// StepStates holds every step's final state, in the workflow's order:
	// OK, FAILED, or SKIPPED for the steps after a failure, never started.
	StepStates []string
	// State is the RunState as context.json holds it.
	State *RunState
	// Failure describes the failed step; nil when Status is OK.
	Failure *Failure
}

// Failure is a failed step: what its error artifact says.
type Failure struct {
	StepIndex int
	StepName  string
	// Type is the error type (ErrorTypeStepFailed, ErrorTypePanic, ...),
	// Message its message.
	Type    string
	Message string
	// Operation, StatusCode, Attempts and Reason are set for
	// APIRetryExhausted.
	Operation  string
	StatusCode int
	Attempts   int
	Reason     string
	// ArtifactPath is the error artifact's path in the run's directory.
	ArtifactPath string
	// Err is the step's error, or the panic's value as an error; nil for a
	// returned failure.
	Err error
}

// Run runs wf: it starts (or restarts) the run in the database, creates
// runs/<run_id>/, runs the steps in order, each once, and stops at the
// first that fails. A failed step is a result (Status FAILED, Failure), not
// an error; Run returns an error when the run could not be carried out:
// an invalid workflow, the database or the disk failing. Such a run is left
// RUNNING in the database; run it again with its RunID. A lost connection
// is not such a failure: while ctx lasts, the engine writes again on a new
// connection, as runtime/engine and the linear chain do, and recognises a
// write lost with its connection that had committed.
func (e *Engine) Run(ctx context.Context, wf Workflow, opts RunOptions) (RunResult, error) {
	if err := checkWorkflow(wf); err != nil {
		return RunResult{}, err
	}
	runsDir := opts.RunsDir
	if runsDir == "" {
		runsDir = "runs"
	}
	configHash := ""
	if wf.Config != nil {
		b, err := json.Marshal(wf.Config)
		if err != nil {
			return RunResult{}, fmt.Errorf("%w %s: config: %v", ErrInvalidWorkflow, wf.Name, err)
		}
		sum := sha256.Sum256(b)
		configHash = hex.EncodeToString(sum[:])
	}
	runID := opts.RunID
	var release func()
	if runID != "" {
		var err error
		if release, err = e.hold(ctx, runID); err != nil {
			return RunResult{}, fmt.Errorf("rerun %s: %w", runID, err)
		}
		defer release()
	}
	dbRun, err := e.begin(ctx, wf, runID)
	if err != nil {
		return RunResult{}, err
	}
	if runID == "" {
		runID = dbRun.ID
		// No one else knows the id yet: this takes the lock at once.
		if release, err = e.hold(ctx, runID); err != nil {
			return RunResult{}, fmt.Errorf("run %s: %w", runID, err)
		}
		defer release()
	}
	r := &runner{e: e, wf: wf, runID: runID, dbID: dbRun.ID, attempt: dbRun.Attempt, configHash: configHash}
	return r.run(ctx, runsDir)
}

// runLockKey is the first key of the advisory lock a Run holds on its run
// id ("stpe" in ASCII).
const runLockKey = 0x73747065

// hold takes the lock of run id runID for as long as a Run runs it, on a
// connection of its own (so that it takes no slot of the pool): a
// session-level advisory lock, which the server lets go when the
// connection ends, so a process that dies lets its runs go with it. It
// returns ErrRunHeld when another session holds it, and the function that
// releases it.
func (e *Engine) hold(ctx context.Context, runID string) (release func(), err error) {
	conn, _, err := retried(ctx, func() (*pgx.Conn, error) {
		return pgx.ConnectConfig(ctx, e.st.Pool().Config().ConnConfig.Copy())
	})
	if err != nil {
		return nil, err
	}
	closeConn := func() { _ = conn.Close(context.WithoutCancel(ctx)) }
	// The lock of a process that has just died is let go when the server
	// has seen its connection end: wait for that a little.
	_, err = conn.Exec(ctx, `SET lock_timeout = '`+holdTimeout+`'`)
	if err == nil {
		_, err = conn.Exec(ctx, `SELECT pg_advisory_lock($1, hashtext($2))`, runLockKey, runID)
	}
	if err != nil {
		closeConn()
		if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && pgErr.Code == "55P03" {
			return nil, ErrRunHeld
		}
		return nil, err
	}
	return closeConn, nil
}

// holdTimeout is how long hold waits for the lock of a run another session
// holds, as a PostgreSQL interval.
const holdTimeout = "2s"

func checkWorkflow(wf Workflow) error {
	if err := runfiles.CheckName(wf.Name); err != nil {
		return fmt.Errorf("%w: workflow: %v", ErrInvalidWorkflow, err)
	}
	seen := map[string]bool{}
	for i, s := range wf.Steps {
		if err := runfiles.CheckName(s.Name); err != nil {
			return fmt.Errorf("%w %s: step %d: %v", ErrInvalidWorkflow, wf.Name, i+1, err)
		}
		if seen[s.Name] {
			return fmt.Errorf("%w %s: step %d: a second step named %q", ErrInvalidWorkflow, wf.Name, i+1, s.Name)
		}
		seen[s.Name] = true
		if s.Run == nil {
			return fmt.Errorf("%w %s: step %d (%s) has no Run function", ErrInvalidWorkflow, wf.Name, i+1, s.Name)
		}
	}
	return nil
}

// runInput is the input of a run in the database.
type runInput struct {
	Workflow string `json:"workflow"`
	// RerunOf is the run id an execution reruns, for the rerun of a run
	// that succeeded.
	RerunOf string `json:"rerun_of,omitempty"`
}

// begin returns the run in the database that carries the execution, RUNNING:
// a new one; or, for runID, its latest execution restarted, or a new one
// linked to it when that execution succeeded.
func (e *Engine) begin(ctx context.Context, wf Workflow, runID string) (fsmruntime.Run, error) {
	if runID == "" {
		p := fsmruntime.StartRequest{
			Type: run.Type, Version: run.Version, IdempotencyKey: rand.Text(),
			Owner: fsmruntime.Owner{TenantID: e.tenant}, Input: runInput{Workflow: wf.Name},
		}
		res, _, err := retried(ctx, func() (fsmruntime.Started, error) { return e.st.Start(ctx, p) })
		if err != nil {
			return fsmruntime.Run{}, fmt.Errorf("start a run of %s: %w", wf.Name, err)
		}
		return res.Run, nil
	}
	first, _, err := retried(ctx, func() (fsmruntime.Run, error) { return e.st.Get(ctx, runID) })
	if err != nil {
		return fsmruntime.Run{}, fmt.Errorf("rerun %s: %w", runID, err)
	}
	var in runInput
	if first.Type != run.Type || json.Unmarshal(first.Input, &in) != nil || in.Workflow != wf.Name || in.RerunOf != "" {
		return fsmruntime.Run{}, fmt.Errorf("rerun %s: %w %s: it is a run of %s (%s)", runID, ErrOtherRun, wf.Name, first.Type, in.Workflow)
	}
	var cur fsmruntime.Run
	var reruns int
	_, err = retry(ctx, func() error {
		var err error
		cur, reruns, err = runfiles.LatestExecution(ctx, e.st, runID)
		return err
	})
	if err != nil {
		return fsmruntime.Run{}, fmt.Errorf("rerun %s: %w", runID, err)
	}
	if cur.Status == fsmruntime.StatusSucceeded {
		// A new execution, under a key its number makes, so that one whose
		// process died before the link below is found again.
		p := fsmruntime.StartRequest{
			Type: run.Type, Version: run.Version, IdempotencyKey: fmt.Sprintf("%s/rerun/%d", first.IdempotencyKey, reruns+1),
			Owner: fsmruntime.Owner{TenantID: first.TenantID}, Input: runInput{Workflow: wf.Name, RerunOf: runID},
		}
		res, _, err := retried(ctx, func() (fsmruntime.Started, error) { return e.st.Start(ctx, p) })
		if err != nil {
			return fsmruntime.Run{}, fmt.Errorf("rerun %s: %w", runID, err)
		}
		if _, _, err := retried(ctx, func() (store.Step, error) { return e.st.LogLink(ctx, runID, runfiles.RerunLog, res.Run.ID) }); err != nil {
			return fsmruntime.Run{}, fmt.Errorf("rerun %s: %w", runID, err)
		}
		if res.Outcome == fsmruntime.StartCreated || res.Outcome == fsmruntime.StartRestarted {
			return res.Run, nil
		}
		cur = res.Run
	}
	switch cur.Status {
	case fsmruntime.StatusCancelled:
		return fsmruntime.Run{}, fmt.Errorf("rerun %s: %w: it was cancelled", runID, ErrOtherRun)
	case fsmruntime.StatusRunning:
		if err := e.closeInterrupted(ctx, cur); err != nil {
			return fsmruntime.Run{}, fmt.Errorf("rerun %s: close the interrupted attempt %d: %w", runID, cur.Attempt, err)
		}
	}
	p := fsmruntime.StartRequest{Type: run.Type, Version: run.Version, IdempotencyKey: cur.IdempotencyKey, Owner: fsmruntime.Owner{TenantID: cur.TenantID}}
	res, lost, err := retried(ctx, func() (fsmruntime.Started, error) { return e.st.Start(ctx, p) })
	if err != nil {
		return fsmruntime.Run{}, fmt.Errorf("rerun %s: %w", runID, err)
	}
	// A restart lost with its connection had committed when the retry
	// finds the run running its next attempt.
	restarted := res.Outcome == fsmruntime.StartRestarted ||
		(lost && res.Run.Status == fsmruntime.StatusRunning && res.Run.Attempt == cur.Attempt+1)
	if !restarted || res.Run.ID != cur.ID {
		return fsmruntime.Run{}, fmt.Errorf("rerun %s: the store did not restart it (%v, state %s)", runID, res.Outcome, res.Run.State)
	}
	return res.Run, nil
}

// closeInterrupted ends, in the database, the attempt of a run whose
// process stopped during it, in one transaction: its RUNNING step FAILED,
// its PENDING steps SKIPPED, the run FAILED, with ErrorTypeInterrupted and
// no summary.
func (e *Engine) closeInterrupted(ctx context.Context, prev fsmruntime.Run) error {
	const msg = "the process running this attempt stopped before it finished; the run was run again"
	steps, _, err := retried(ctx, func() (runfiles.StepRuns, error) { return runfiles.StepRunsOf(ctx, e.st, prev.ID, prev.Attempt) })
	if err != nil {
		return err
	}
	failed := run.StepFailed{ErrorType: ErrorTypeInterrupted, ErrorMessage: msg}
	var running *fsmruntime.Run
	var pending []fsmruntime.Run
	for _, s := range steps.Steps {
		sr, _, err := retried(ctx, func() (fsmruntime.Run, error) { return e.st.Get(ctx, s.RunID) })
		if err != nil {
			return err
		}
		switch sr.State {
		case step.StateRunning.String():
			running = &sr
			failed.StepIndex, failed.StepName = s.Index, s.Name
		case step.StatePending.String():
			pending = append(pending, sr)
		}
	}
	cur, _, err := retried(ctx, func() (fsmruntime.Run, error) { return e.st.Get(ctx, prev.ID) })
	if err != nil {
		return err
	}
	st, err := run.ParseState(cur.State)
	if err != nil {
		return err
	}
	res := fsmruntime.Result{ErrorCode: ErrorTypeInterrupted, ErrorDetail: msg}
	return e.failRun(ctx, cur, st, res, failed, pending, func(tx pgx.Tx) error {
		if running == nil {
			return nil
		}
		m := step.New(stepGuards{}, step.WithState(step.StateRunning), step.WithRecorder(e.inTx(tx, *running, res)))
		return m.StepError(ctx, step.StepError{ErrorType: ErrorTypeInterrupted, ErrorMessage: msg})
	})
}

// failRun ends a run FAILED in one transaction with everything that ends
// with it: first the caller's own transitions (before, may be nil), then
// each step not started (pending) SKIPPED by RunStopped, then the run,
// from state from, FAILED by failed with result res. Either all of them
// are recorded or none is, so that no step of a failed run is left
// PENDING. The transaction is written with a context ctx's end does not
// cut short, again on a new connection when one is lost while ctx lasts;
// when a try lost with its connection had committed, the next is refused
// as a conflict, and failRun finds the run's StepFailed in its log.
func (e *Engine) failRun(ctx context.Context, r fsmruntime.Run, from run.State, res fsmruntime.Result, failed run.StepFailed, pending []fsmruntime.Run, before func(pgx.Tx) error) error {
	dbctx := context.WithoutCancel(ctx)
	lost, err := retry(ctx, func() error { return e.failTx(dbctx, r, from, res, failed, pending, before) })
	if err == nil || !lost || !errors.Is(err, fsmruntime.ErrConflict) {
		return err
	}
	t := fsmruntime.Transition{Event: failed.EventName(), From: from.String(), To: run.StateFailed.String()}
	if ok, lerr := e.logged(ctx, r.ID, r.RowVersion, t); lerr != nil || !ok {
		return err
	}
	return nil
}

// failTx is one try of failRun's transaction.
func (e *Engine) failTx(ctx context.Context, r fsmruntime.Run, from run.State, res fsmruntime.Result, failed run.StepFailed, pending []fsmruntime.Run, before func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, e.st.Pool(), func(tx pgx.Tx) error {
		if before != nil {
			if err := before(tx); err != nil {
				return err
			}
		}
		skipped := fsmruntime.Result{ErrorCode: ErrorTypeSkipped, ErrorDetail: fmt.Sprintf("not started: the run stopped at step %d %s", failed.StepIndex, failed.StepName)}
		for _, p := range pending {
			m := step.New(stepGuards{}, step.WithState(step.StatePending), step.WithRecorder(e.inTx(tx, p, skipped)))
			if err := m.RunStopped(ctx, step.RunStopped{StepIndex: failed.StepIndex, StepName: failed.StepName}); err != nil {
				return err
			}
		}
		return run.New(run.WithState(from), run.WithRecorder(e.inTx(tx, r, res))).StepFailed(ctx, failed)
	})
}

// inTx records a machine's transition of r, to a terminal state, in tx,
// with the result res.
func (e *Engine) inTx(tx pgx.Tx, r fsmruntime.Run, res fsmruntime.Result) fsmruntime.Recorder {
	return fsmruntime.RecorderFunc(func(ctx context.Context, t fsmruntime.Transition) error {
		_, err := e.st.FinishTx(ctx, tx, r.ID, r.RowVersion, t, res)
		return err
	})
}

// stepGuards are the step machine's guards.
type stepGuards struct{}

// ResultOK admits a StepEnd whose result is OK.
func (stepGuards) ResultOK(_ context.Context, e step.StepEnd) bool { return e.Ok }

// runner carries out one attempt of a run.
type runner struct {
	e  *Engine
	wf Workflow
	// runID names the run's files; dbID is the run in the database that
	// carries this execution, attempt its attempt.
	runID      string
	dbID       string
	attempt    int
	configHash string

	runDir  string
	log     *Logger
	state   *RunState
	steps   []StepSummary
	started time.Time
}

func (r *runner) run(ctx context.Context, runsDir string) (res RunResult, err error) {
	e := r.e
	// The database is written with a context that a cancelled caller does
	// not cut short, so that what the files say is recorded too.
	dbctx := context.WithoutCancel(ctx)
	r.runDir = filepath.Join(runsDir, r.runID)
	if err := os.MkdirAll(runsDir, 0o755); err != nil {
		return res, fmt.Errorf("run %s: %w", r.runID, err)
	}
	// A rerun starts from an empty directory: nothing of the earlier
	// attempt is left to be mistaken for this one's.
	if err := os.RemoveAll(r.runDir); err != nil {
		return res, fmt.Errorf("run %s: clear %s: %w", r.runID, r.runDir, err)
	}
	if err := os.MkdirAll(filepath.Join(r.runDir, runfiles.ArtifactsDir), 0o755); err != nil {
		return res, fmt.Errorf("run %s: %w", r.runID, err)
	}
	if err := safeio.SyncDir(runsDir); err != nil {
		return res, fmt.Errorf("run %s: %w", r.runID, err)
	}
	logsPath := filepath.Join(r.runDir, runfiles.LogsFile)
	f, err := os.OpenFile(logsPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC|os.O_APPEND, 0o644)
	if err != nil {
		return res, fmt.Errorf("run %s: %w", r.runID, err)
	}
	defer func() {
		if serr := f.Sync(); serr != nil && err == nil {
			err = fmt.Errorf("run %s: sync %s: %w", r.runID, logsPath, serr)
		}
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("run %s: %w", r.runID, cerr)
		}
	}()
	r.log = &Logger{w: &logFile{f: f, now: e.now, runID: r.runID}, component: "engine"}
	rc := RunContext{runID: r.runID, runDir: r.runDir, logsPath: logsPath, idx: &artifactIndex{now: e.now}}
	r.state = &RunState{Data: map[string]any{}, StepOutputs: map[string]map[string]any{}}
	r.started = e.now()

	// Every step is a run of the step machine, created PENDING now; the
	// steps a failure leaves unstarted end SKIPPED with the run.
	stepRuns := runfiles.StepRuns{Attempt: r.attempt, Steps: make([]runfiles.StepRun, len(r.wf.Steps))}
	for i, s := range r.wf.Steps {
		p := fsmruntime.StartRequest{
			Type: step.Type, Version: step.Version, Owner: fsmruntime.Owner{TenantID: e.tenant, CorrelationID: r.runID},
			IdempotencyKey: fmt.Sprintf("%s/%d/%d", r.dbID, r.attempt, i+1),
			Input:          map[string]any{"run_id": r.runID, "workflow": r.wf.Name, "step_index": i + 1, "step_name": s.Name},
		}
		sr, lost, err := retried(ctx, func() (fsmruntime.Started, error) { return e.st.Start(dbctx, p) })
		if err != nil {
			return res, fmt.Errorf("run %s: step %d %s: %w", r.runID, i+1, s.Name, err)
		}
		// The key is this attempt's: a run of it that exists already was
		// created by a try lost with its connection.
		if sr.Outcome != fsmruntime.StartCreated && !(lost && sr.Run.State == step.StatePending.String()) {
			return res, fmt.Errorf("run %s: step %d %s: its run %s exists already (%v)", r.runID, i+1, s.Name, sr.Run.ID, sr.Outcome)
		}
		stepRuns.Steps[i] = runfiles.StepRun{Index: i + 1, Name: s.Name, RunID: sr.Run.ID}
	}
	if _, err := retry(ctx, func() error {
		_, err := e.st.LogStep(dbctx, r.dbID, runfiles.StepRunsLog, stepRuns)
		return err
	}); err != nil {
		return res, fmt.Errorf("run %s: %w", r.runID, err)
	}
	runRec, err := e.load(ctx, dbctx, r.dbID, run.Definition())
	if err != nil {
		return res, fmt.Errorf("run %s: %w", r.runID, err)
	}
	rm := run.New(run.WithState(run.StateRunning), run.WithRecorder(runRec))

	// The files say nothing of the attempts before: a rerun writes the
	// same bytes as the first execution did, given the same clock.
	if err := r.log.Log("run_start", map[string]any{"workflow": r.wf.Name, "steps": len(r.wf.Steps)}); err != nil {
		return res, err
	}
	if err := r.writeContext(); err != nil {
		return res, err
	}
	states := make([]string, len(r.wf.Steps))
	for i := range states {
		states[i] = runfiles.StatusPending
	}
	var failure *Failure
	for i, s := range r.wf.Steps {
		sum, fail, err := r.runStep(ctx, dbctx, rc, i+1, s, stepRuns.Steps[i].RunID)
		if err != nil {
			return res, err
		}
		states[i] = sum.Status
		r.steps = append(r.steps, sum)
		// After each step, and so after the failed one too.
		if err := r.writeContext(); err != nil {
			return res, err
		}
		if err := runfiles.WriteJSON(filepath.Join(r.runDir, runfiles.StepsFile), r.steps); err != nil {
			return res, fmt.Errorf("run %s: %w", r.runID, err)
		}
		if fail != nil {
			failure = fail
			break
		}
		if err := rm.StepOK(dbctx, run.StepOK{StepIndex: i + 1, StepName: s.Name}); err != nil {
			return res, fmt.Errorf("run %s: step %d %s: %w", r.runID, i+1, s.Name, err)
		}
	}

	finished := e.now()
	summary := RunSummary{
		RunID: r.runID, WorkflowName: r.wf.Name, Status: runfiles.StatusOK,
		StartedAt: runfiles.FormatTime(r.started), FinishedAt: runfiles.FormatTime(finished),
		DurationMS: finished.Sub(r.started).Milliseconds(), ConfigHash: r.configHash, GitSHA: e.gitSHA,
	}
	result := fsmruntime.Result{DurationMS: summary.DurationMS}
	if failure != nil {
		summary.Status = runfiles.StatusFailed
		summary.ErrorSummary = fmt.Sprintf("step %d %s failed: %s: %s", failure.StepIndex, failure.StepName, failure.Type, failure.Message)
		result.ErrorCode, result.ErrorDetail = failure.Type, summary.ErrorSummary
	}
	out, err := json.Marshal(summary)
	if err != nil {
		return res, fmt.Errorf("run %s: %w", r.runID, err)
	}
	result.Output = out
	// The summaries are written before the run's last transition: a process
	// that dies between the two leaves the run RUNNING in the database, and
	// running it again rewrites the directory. In the other order, a run
	// recorded OK whose files were never finished could not be run again.
	steps := r.steps
	if steps == nil {
		steps = []StepSummary{}
	}
	if err := runfiles.WriteJSON(filepath.Join(r.runDir, runfiles.StepsFile), steps); err != nil {
		return res, fmt.Errorf("run %s: %w", r.runID, err)
	}
	if err := runfiles.WriteJSON(filepath.Join(r.runDir, runfiles.RunFile), summary); err != nil {
		return res, fmt.Errorf("run %s: %w", r.runID, err)
	}
	audit, err := runfiles.AuditJSON(Audit{Run: summary, Steps: steps})
	if err != nil {
		return res, fmt.Errorf("run %s: %w", r.runID, err)
	}
	if err := runfiles.WriteFile(filepath.Join(r.runDir, runfiles.AuditFile), audit); err != nil {
		return res, fmt.Errorf("run %s: %w", r.runID, err)
	}
	if failure != nil {
		// The steps after the failed one end SKIPPED, with the run.
		var pending []fsmruntime.Run
		for i, s := range stepRuns.Steps[failure.StepIndex:] {
			sr, _, err := retried(ctx, func() (fsmruntime.Run, error) { return e.st.Get(dbctx, s.RunID) })
			if err != nil {
				return res, fmt.Errorf("run %s: step %d %s: %w", r.runID, s.Index, s.Name, err)
			}
			pending = append(pending, sr)
			states[failure.StepIndex+i] = runfiles.StatusSkipped
		}
		cur := fsmruntime.Run{ID: r.dbID, RowVersion: runRec.RowVersion()}
		failed := run.StepFailed{StepIndex: failure.StepIndex, StepName: failure.StepName, ErrorType: failure.Type, ErrorMessage: failure.Message}
		err = e.failRun(ctx, cur, run.StateRunning, result, failed, pending, nil)
	} else {
		runRec.SetResult(result)
		err = rm.AllStepsOK(dbctx, run.AllStepsOK{})
	}
	if err != nil {
		return res, fmt.Errorf("run %s: finish: %w", r.runID, err)
	}
	end := map[string]any{"status": summary.Status, "duration_ms": summary.DurationMS}
	if summary.ErrorSummary != "" {
		end["error_summary"] = summary.ErrorSummary
	}
	if err := r.log.Log("run_end", end); err != nil {
		return res, err
	}
	return RunResult{
		RunID: r.runID, RunDir: r.runDir, ExecutionID: r.dbID, Attempt: r.attempt, Status: summary.Status,
		Summary: summary, Steps: steps, StepStates: states, State: r.state, Failure: failure,
	}, nil
}

func (r *runner) writeContext() error {
	if err := runfiles.WriteJSON(filepath.Join(r.runDir, runfiles.ContextFile), r.state); err != nil {
		return fmt.Errorf("run %s: context: %w", r.runID, err)
	}
	return nil
}

// apiDetails copies into fail the details of the failed API request err
// is or wraps, if any (see APIDetails).
func apiDetails(err error, fail *Failure) {
	var x interface{ APIDetails() APIDetails }
	if errors.As(err, &x) {
		d := x.APIDetails()
		fail.Operation, fail.StatusCode, fail.Attempts, fail.Reason = d.Operation, d.StatusCode, d.Attempts, d.Reason
	}
}

// runStep carries out step number index (from 1): PENDING -> RUNNING ->
// OK | FAILED on its run of the step machine, with its log lines, its
// summary and, when it fails, its error artifact.
func (r *runner) runStep(ctx, dbctx context.Context, rc RunContext, index int, s Step, stepRunID string) (StepSummary, *Failure, error) {
	e := r.e
	where := fmt.Sprintf("run %s: step %d %s", r.runID, index, s.Name)
	rec, err := e.load(ctx, dbctx, stepRunID, step.Definition())
	if err != nil {
		return StepSummary{}, nil, fmt.Errorf("%s: %w", where, err)
	}
	m := step.New(stepGuards{}, step.WithState(step.StatePending), step.WithRecorder(rec))
	started := e.now()
	if err := m.StepStart(dbctx, step.StepStart{}); err != nil {
		return StepSummary{}, nil, fmt.Errorf("%s: %w", where, err)
	}
	fields := map[string]any{"step": s.Name, "step_index": index}
	if err := r.log.Log("step_start", fields); err != nil {
		return StepSummary{}, nil, err
	}
	stepLog := r.log.With("step", fields)
	result, stepErr := call(ctx, s, rc, r.state, stepLog)
	finished := e.now()

	sum := StepSummary{
		StepIndex: index, StepName: s.Name, Status: runfiles.StatusOK,
		StartedAt: runfiles.FormatTime(started), FinishedAt: runfiles.FormatTime(finished),
		DurationMS: finished.Sub(started).Milliseconds(),
	}
	var fail *Failure
	var outputs, metrics json.RawMessage
	switch {
	case stepErr != nil:
		fail = &Failure{Type: ErrorTypeError, Message: stepErr.Error(), Err: stepErr}
		var p *panicError
		var ex interface {
			error
			ErrorType() string
		}
		if errors.As(stepErr, &p) {
			fail.Type, fail.Message = ErrorTypePanic, p.Error()
		} else if errors.As(stepErr, &ex) {
			fail.Type = ex.ErrorType()
		}
		apiDetails(stepErr, fail)
	case !result.OK && result.Error == "":
		fail = &Failure{Type: ErrorTypeInvalidResult, Message: "the step returned a zero or invalid StepResult: OK is false and Error is empty"}
	default:
		var err1, err2 error
		outputs, err1 = json.Marshal(result.Outputs)
		if result.Outputs == nil {
			outputs = nil
		}
		if result.Metrics != nil {
			var b []byte
			b, err2 = json.Marshal(result.Metrics)
			if err2 == nil {
				metrics, err2 = runfiles.CompactJSON(b)
			}
		}
		switch {
		case err1 != nil:
			fail = &Failure{Type: ErrorTypeInvalidResult, Message: "the step's outputs do not encode to JSON: " + err1.Error()}
		case err2 != nil:
			fail = &Failure{Type: ErrorTypeInvalidResult, Message: "the step's metrics do not encode to JSON: " + err2.Error()}
		case !result.OK:
			fail = &Failure{Type: ErrorTypeStepFailed, Message: result.Error}
		}
	}
	sum.Metrics = metrics

	if fail == nil {
		out, err := json.Marshal(sum)
		if err != nil {
			return StepSummary{}, nil, fmt.Errorf("%s: %w", where, err)
		}
		rec.SetResult(fsmruntime.Result{Output: out, DurationMS: sum.DurationMS})
		if err := m.StepEnd(dbctx, step.StepEnd{Ok: true, Outputs: outputs}); err != nil {
			return StepSummary{}, nil, fmt.Errorf("%s: %w", where, err)
		}
		if result.Outputs != nil {
			r.state.StepOutputs[s.Name] = result.Outputs
		}
		if err := r.log.Log("step_end", map[string]any{"step": s.Name, "step_index": index, "status": sum.Status, "duration_ms": sum.DurationMS}); err != nil {
			return StepSummary{}, nil, err
		}
		return sum, nil, nil
	}

	fail.StepIndex, fail.StepName = index, s.Name
	fail.ArtifactPath = runfiles.ErrorArtifactPath(r.wf.Name, s.Name)
	sum.Status = runfiles.StatusFailed
	sum.ErrorCode, sum.ErrorMessage = fail.Type, fail.Message
	art := ErrorArtifact{
		RunID: r.runID, Workflow: r.wf.Name, Step: s.Name, Status: runfiles.StatusFailed,
		ErrorType: fail.Type, ErrorMessage: fail.Message,
		Operation: fail.Operation, StatusCode: fail.StatusCode, Attempts: fail.Attempts, Reason: fail.Reason,
		TS: runfiles.FormatTime(finished),
	}
	artPath := filepath.Join(r.runDir, filepath.FromSlash(fail.ArtifactPath))
	if err := os.MkdirAll(filepath.Dir(artPath), 0o755); err != nil {
		return StepSummary{}, nil, fmt.Errorf("%s: %w", where, err)
	}
	if err := runfiles.WriteJSON(artPath, art); err != nil {
		return StepSummary{}, nil, fmt.Errorf("%s: %w", where, err)
	}
	out, err := json.Marshal(sum)
	if err != nil {
		return StepSummary{}, nil, fmt.Errorf("%s: %w", where, err)
	}
	rec.SetResult(fsmruntime.Result{Output: out, DurationMS: sum.DurationMS, ErrorCode: fail.Type, ErrorDetail: fail.Message})
	if fail.Type == ErrorTypeStepFailed {
		err = m.StepEnd(dbctx, step.StepEnd{Ok: false, Outputs: outputs, Error: fail.Message})
	} else {
		err = m.StepError(dbctx, step.StepError{
			ErrorType: fail.Type, ErrorMessage: fail.Message, Operation: fail.Operation,
			StatusCode: fail.StatusCode, Attempts: fail.Attempts, Reason: fail.Reason, ArtifactPath: fail.ArtifactPath,
		})
	}
	if err != nil {
		return StepSummary{}, nil, fmt.Errorf("%s: %w", where, err)
	}
	// step_error records the failure's details; step_failed the same
	// details and the error artifact's path, once the artifact is written.
	details := map[string]any{"step": s.Name, "step_index": index, "error_type": fail.Type, "error_message": fail.Message}
	if fail.Operation != "" || fail.StatusCode != 0 {
		details["operation"], details["status_code"], details["attempts"] = fail.Operation, fail.StatusCode, fail.Attempts
		if fail.Reason != "" {
			details["reason"] = fail.Reason
		}
	}
	if err := r.log.Log("step_error", details); err != nil {
		return StepSummary{}, nil, err
	}
	details["artifact_path"] = fail.ArtifactPath
	if err := r.log.Log("step_failed", details); err != nil {
		return StepSummary{}, nil, err
	}
	if err := r.log.Log("step_end", map[string]any{"step": s.Name, "step_index": index, "status": sum.Status, "duration_ms": sum.DurationMS}); err != nil {
		return StepSummary{}, nil, err
	}
	return sum, fail, nil
}

// panicError is a step's panic, as an error.
type panicError struct{ v any }

func (p *panicError) Error() string { return fmt.Sprintf("panic: %v", p.v) }

// call runs the step, turning a panic into a *panicError.
func call(ctx context.Context, s Step, rc RunContext, state *RunState, log *Logger) (res StepResult, err error) {
	defer func() {
		if v := recover(); v != nil {
			res, err = StepResult{}, &panicError{v: v}
		}
	}()
	return s.Run(ctx, rc, state, log)
}
