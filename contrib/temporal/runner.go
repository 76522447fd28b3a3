package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// RunnerConfig configures a Runner. NewRunner validates it.
type RunnerConfig struct {
	// TaskQueue is the task queue the runs' workflows are started on: the
	// one the workers that Register the machines poll. Required.
	TaskQueue string
	// Definitions are the machines the runner starts, one definition per
	// type (a worker registers one workflow per type, so one version of
	// each): Start refuses another type, or another version, with
	// runtime.ErrNotRegistered, and tells the run it creates in its
	// definition's initial state. At least one; each must pass
	// runtime.Definition.Validate.
	Definitions []runtime.Definition
	// DataConverter decodes the runs' memos, which Start encodes with the
	// client's data converter: give the client's, when it has one of its
	// own. Nil is converter.GetDefaultDataConverter().
	DataConverter converter.DataConverter
	// Record is the store the workers record the runs in (Register with
	// WithRecord), or nil: Execution then reads the runs' evidence ids
	// from it, as the PostgreSQL engine's execution lists them.
	Record *store.Store
}

// Runner is runtime.Runner on Temporal: a service switches its runs from
// the PostgreSQL engine to Temporal by building a Runner instead of an
// engine (the workers then Register the machines' drivers on a worker of
// the same task queue). Its methods are safe for concurrent use. See the
// package documentation ("The Runner: switching a service to Temporal") for how it maps each method onto
// Temporal, and where it differs from the PostgreSQL engine.
type Runner struct {
	c    client.Client
	cfg  RunnerConfig
	defs map[string]runtime.Definition
	// types are the definitions' types, in the order given, for List.
	types []string
}

var _ runtime.Runner = (*Runner)(nil)

// checkTimeout bounds NewRunner's check of the search attributes.
const checkTimeout = 30 * time.Second

// NewRunner returns the Runner of the machines cfg.Definitions on the
// Temporal cluster of c, in c's namespace. It checks, within 30 seconds,
// that the namespace has the search attributes the runs' workflows upsert
// (CheckSearchAttributes): an error matching ErrSearchAttributes names the
// missing ones. A config that cannot work is an error matching
// runtime.ErrInvalidConfig that lists every problem.
func NewRunner(c client.Client, cfg RunnerConfig) (*Runner, error) {
	var bad []string
	if c == nil {
		bad = append(bad, "no client")
	}
	if cfg.TaskQueue == "" {
		bad = append(bad, "no task queue")
	}
	if len(cfg.Definitions) == 0 {
		bad = append(bad, "no definitions")
	}
	r := &Runner{c: c, cfg: cfg, defs: map[string]runtime.Definition{}}
	for _, d := range cfg.Definitions {
		if err := d.Validate(); err != nil {
			bad = append(bad, fmt.Sprintf("definition %s v%d: %v", d.Type, d.Version, err))
			continue
		}
		if prev, ok := r.defs[d.Type]; ok {
			bad = append(bad, fmt.Sprintf("definitions %s v%d and v%d: one version per type", d.Type, prev.Version, d.Version))
			continue
		}
		r.defs[d.Type] = d
		r.types = append(r.types, d.Type)
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("temporal: new runner: %w: %s", runtime.ErrInvalidConfig, strings.Join(bad, "; "))
	}
	if r.cfg.DataConverter == nil {
		r.cfg.DataConverter = converter.GetDefaultDataConverter()
	}
	ctx, cancel := context.WithTimeout(context.Background(), checkTimeout)
	defer cancel()
	if err := CheckSearchAttributes(ctx, c); err != nil {
		return nil, fmt.Errorf("temporal: new runner: %w", err)
	}
	return r, nil
}

// memoKey is the memo field that holds a run's runMemo.
const memoKey = "fsm"

// runMemo is what a run's workflow carries in its memo besides its search
// attributes: what runtime.Run needs and visibility returns with each
// listed run.
type runMemo struct {
	Version       int             `json:"version"`
	Attempt       int             `json:"attempt"`
	UserID        string          `json:"userId,omitempty"`
	CorrelationID string          `json:"correlationId,omitempty"`
	CreatedAt     time.Time       `json:"createdAt"`
	Input         json.RawMessage `json:"input,omitempty"`
	Policy        json.RawMessage `json:"policy,omitempty"`
}

// maxStartRounds bounds Start's describe-then-start loop; each round ends
// only because another caller started the workflow in between.
const maxStartRounds = 16

// Start starts a run idempotently by (type, idempotency key): its
// workflow's id is RunID(type, key), and the run that workflow id names
// decides the branch, as the PostgreSQL engine's Start does:
//
//   - none: a workflow is started with the id (StartCreated, attempt 1),
//     refusing any other workflow of that id (WorkflowIDReusePolicy
//     REJECT_DUPLICATE, WorkflowIDConflictPolicy FAIL);
//   - a workflow under way: it is returned with an ETA (StartRunning);
//   - a closed workflow whose run succeeded: it is returned with its result
//     (StartCached); one that was cancelled (its machine's cancel event):
//     returned as it is (StartCancelled);
//   - a closed workflow whose run failed (a failed final state, or a
//     workflow that failed, was terminated, cancelled or timed out at
//     Temporal's level): a new workflow run of the same workflow id is
//     started (StartRestarted, WorkflowIDReusePolicy ALLOW_DUPLICATE), with
//     Attempt one more than the last run's, the first run's owner, input
//     and creation time, and the policy snapshot given or resolved anew
//     (the last run's when there is none).
//
// The run is read (DescribeWorkflowExecution) before it is started, not in
// one statement as on PostgreSQL: when two callers start the same key at
// once, the loser's start is refused by Temporal (the id is taken) and it
// reads the winner's run, so a key creates one run. Two callers restarting
// the same failed run at once may both start one, when the first's new run
// has already closed before the second starts (it is not refused then):
// the key then has one attempt more than on PostgreSQL.
//
// Started.ETA, for StartRunning, is the run's current attempt's start
// plus the median duration of the last (most recently closed) 100 runs of
// its type that succeeded, by visibility (ListWorkflow), which may not show
// the most recent ones yet; zero when there are none, or visibility
// fails.
//
// StartRequest.ResolvePolicy is called as on PostgreSQL: after the read,
// only for a run about to be created or restarted; its error refuses the
// start, and nothing is started. StartRequest.Enter cannot be honoured:
// there is no transaction that creates the run, and the run's workflow
// runs the entry actions of the states it starts in itself (the driver's
// runtime.Starter); a request with Enter is refused with
// runtime.ErrInvalidInput. Errors are *runtime.RunError values of
// component "temporal" wrapping the runtime's sentinels:
// runtime.ErrInvalidInput (no type, key or tenant; a user or correlation
// id that is not a UUID), runtime.ErrPayload, runtime.ErrNotRegistered.
func (r *Runner) Start(ctx context.Context, req runtime.StartRequest) (runtime.Started, error) {
	op := "start " + short(req.Type) + "/" + short(req.IdempotencyKey)
	def, memo, err := r.request(&req)
	if err != nil {
		return runtime.Started{}, &runtime.RunError{Component: "temporal", Op: op, Err: err}
	}
	id := RunID(req.Type, req.IdempotencyKey)
	given, input := memo.Policy, memo.Input
	var resolved json.RawMessage
	for range maxStartRounds {
		reuse := enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE
		outcome := runtime.StartCreated
		owner, previous := req.Owner, json.RawMessage(nil)
		desc, err := r.c.DescribeWorkflowExecution(ctx, id, "")
		var notFound *serviceerror.NotFound
		switch {
		case errors.As(err, &notFound):
			memo.Attempt, memo.CreatedAt, memo.Input = 1, time.Now().UTC(), input
		case err != nil:
			return runtime.Started{}, r.fail(op, id, err)
		default:
			run, _, err := r.read(ctx, desc, false)
			if err != nil {
				return runtime.Started{}, r.fail(op, id, err)
			}
			switch run.Status {
			case runtime.StatusRunning:
				return runtime.Started{Run: run, Outcome: runtime.StartRunning, ETA: r.eta(ctx, run)}, nil
			case runtime.StatusSucceeded:
				return runtime.Started{Run: run, Outcome: runtime.StartCached}, nil
			case runtime.StatusCancelled:
				return runtime.Started{Run: run, Outcome: runtime.StartCancelled}, nil
			}
			// The restart keeps the first attempt's owner, input and
			// creation, as the engine's restart of the same row does.
			reuse, outcome = enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE, runtime.StartRestarted
			memo.Attempt, memo.CreatedAt, memo.Input = run.Attempt+1, run.CreatedAt, run.Input
			owner, previous = run.Owner, run.Policy
		}
		memo.Policy = given
		if memo.Policy == nil && req.ResolvePolicy != nil {
			if resolved == nil {
				if resolved, err = req.ResolvePolicy(ctx); err != nil {
					return runtime.Started{}, &runtime.RunError{Component: "temporal", Op: op, RunID: id, Err: err}
				}
			}
			memo.Policy = resolved
		}
		if memo.Policy == nil {
			// A restart without a new snapshot keeps the last one.
			memo.Policy = previous
		}
		memo.UserID, memo.CorrelationID = owner.UserID, owner.CorrelationID
		run, err := r.start(ctx, id, def, req.IdempotencyKey, owner.TenantID, memo, reuse)
		var started *serviceerror.WorkflowExecutionAlreadyStarted
		switch {
		case errors.As(err, &started):
			continue // another caller started it first: read it again
		case err != nil:
			return runtime.Started{}, r.fail(op, id, err)
		}
		return runtime.Started{Run: run, Outcome: outcome}, nil
	}
	return runtime.Started{}, &runtime.RunError{Component: "temporal", Op: op, RunID: id,
		Err: fmt.Errorf("%w: the workflow changed under %d consecutive reads", runtime.ErrConflict, maxStartRounds)}
}

// request checks req, fills in its version and correlation id, and
// returns the definition it starts and the memo of its run without its
// attempt and creation time.
func (r *Runner) request(req *runtime.StartRequest) (runtime.Definition, runMemo, error) {
	if req.Type == "" || req.IdempotencyKey == "" || req.TenantID == "" {
		return runtime.Definition{}, runMemo{}, fmt.Errorf("%w: type, idempotency key and tenant id are required", runtime.ErrInvalidInput)
	}
	if req.Enter != nil {
		return runtime.Definition{}, runMemo{}, fmt.Errorf("%w: StartRequest.Enter is not supported on Temporal: a run's workflow runs the entry actions of its initial states itself", runtime.ErrInvalidInput)
	}
	for _, f := range [...]struct{ what, v string }{{"user id", req.UserID}, {"correlation id", req.CorrelationID}} {
		if _, err := uuid.Parse(f.v); f.v != "" && err != nil {
			return runtime.Definition{}, runMemo{}, fmt.Errorf("%w: %s %s is not a UUID", runtime.ErrInvalidInput, f.what, strconv.Quote(f.v))
		}
	}
	def, ok := r.defs[req.Type]
	switch {
	case !ok:
		return def, runMemo{}, fmt.Errorf("%w: %s (the runner starts %s)", runtime.ErrNotRegistered, short(req.Type), strings.Join(r.types, ", "))
	case req.Version == 0:
		req.Version = def.Version
	case req.Version != def.Version:
		return def, runMemo{}, fmt.Errorf("%w: %s v%d (the runner starts v%d)", runtime.ErrNotRegistered, req.Type, req.Version, def.Version)
	}
	if req.CorrelationID == "" {
		req.CorrelationID = uuid.NewString()
	}
	memo := runMemo{Version: def.Version, UserID: req.UserID, CorrelationID: req.CorrelationID}
	var err error
	if memo.Input, err = runtime.EncodeJSON("input", req.Input); err != nil {
		return def, memo, err
	}
	if memo.Policy, err = runtime.EncodeJSON("policy", req.Policy); err != nil {
		return def, memo, err
	}
	return def, memo, nil
}

// start starts the workflow of the run id, of def's machine, and returns
// the run as it starts.
func (r *Runner) start(ctx context.Context, id string, def runtime.Definition, key, tenant string, memo runMemo, reuse enumspb.WorkflowIdReusePolicy) (runtime.Run, error) {
	state, status := initial(def)
	opts := client.StartWorkflowOptions{
		ID: id, TaskQueue: r.cfg.TaskQueue,
		WorkflowIDReusePolicy:                    reuse,
		WorkflowIDConflictPolicy:                 enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		Memo:                                     map[string]any{memoKey: memo},
		// The workflow upserts them too; set here, a run is listed before
		// a worker takes it.
		TypedSearchAttributes: temporal.NewSearchAttributes(SearchState.ValueSet(state), SearchStatus.ValueSet(string(status)),
			SearchTenant.ValueSet(tenant), SearchKey.ValueSet(key)),
	}
	in := Start{RunID: id, Type: def.Type, IdempotencyKey: key, Attempt: memo.Attempt, Input: memo.Input, Policy: memo.Policy,
		TenantID: tenant, UserID: memo.UserID, CorrelationID: memo.CorrelationID}
	if _, err := r.c.ExecuteWorkflow(ctx, opts, def.Type, in); err != nil {
		return runtime.Run{}, err
	}
	now := time.Now().UTC()
	return runtime.Run{ID: id, Type: def.Type, Version: def.Version, IdempotencyKey: key, State: state, Status: status,
		Attempt: memo.Attempt, StepAttempt: 1, Owner: runtime.Owner{TenantID: tenant, UserID: memo.UserID, CorrelationID: memo.CorrelationID},
		Input: memo.Input, Policy: memo.Policy, CreatedAt: memo.CreatedAt, UpdatedAt: now, StartedAt: now}, nil
}

// initial returns the state a run of def starts in and its status.
func initial(def runtime.Definition) (string, runtime.Status) {
	st, _ := def.StateOf(def.Initial)
	if st.Status == "" {
		return def.Initial, runtime.StatusRunning
	}
	return def.Initial, st.Status
}

// eta returns when run's current attempt is expected to end: see Start.
func (r *Runner) eta(ctx context.Context, run runtime.Run) time.Time {
	resp, err := r.c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{PageSize: 100,
		Query: "WorkflowType = " + quote(run.Type) + " AND ExecutionStatus = 'Completed' AND " + SearchStatus.GetName() + " = " + quote(string(runtime.StatusSucceeded))})
	if err != nil || len(resp.GetExecutions()) == 0 {
		return time.Time{}
	}
	var took []time.Duration
	for _, e := range resp.GetExecutions() {
		took = append(took, e.GetCloseTime().AsTime().Sub(e.GetStartTime().AsTime()))
	}
	slices.Sort(took)
	n := len(took)
	median := took[n/2]
	if n%2 == 0 {
		median = (took[n/2-1] + took[n/2]) / 2
	}
	return run.StartedAt.Add(median)
}

// Signal fires e on the run as the update named by the event (Send): the
// run checks it against its state, its table and guards before it takes
// it, and the run is returned as it is once it took it. A refused event is
// an error matching runtime.ErrSignalRefused and the cause's sentinel
// (runtime.ErrRunFinished, runtime.ErrIllegalTransition,
// runtime.ErrGuardRejected, runtime.ErrNotCallerEvent,
// runtime.ErrUnknownEvent; a *RefusedError with errors.As); an unknown run
// is runtime.ErrRunNotFound, an id that is not a UUID
// runtime.ErrInvalidID. Its workflow must have a worker: Signal waits for
// one until ctx is done.
func (r *Runner) Signal(ctx context.Context, runID string, e runtime.Event) (runtime.Run, error) {
	if e == nil {
		return runtime.Run{}, &runtime.RunError{Component: "temporal", Op: "signal", RunID: runID, Err: fmt.Errorf("%w: nil event", runtime.ErrInvalidInput)}
	}
	op := "signal " + e.EventName()
	return r.update(ctx, op, runID, func(id string) (Snapshot, error) { return Send(ctx, r.c, id, e) })
}

// Cancel cancels the run on behalf of userID with the update CancelUpdate
// (Cancel): as on PostgreSQL, only the run's owner may
// (runtime.ErrNotOwner), the machine must name a cancel event
// (runtime.ErrNoCancelEvent) that the run's state takes
// (runtime.ErrNotCancellable), and a finished run is refused with
// runtime.ErrRunFinished. The run is returned as it is once it took the
// cancel event.
func (r *Runner) Cancel(ctx context.Context, runID, userID string) (runtime.Run, error) {
	return r.update(ctx, "cancel", runID, func(id string) (Snapshot, error) { return Cancel(ctx, r.c, id, userID) })
}

// update sends the run the update that send sends and returns the run as
// the update left it.
func (r *Runner) update(ctx context.Context, op, runID string, send func(id string) (Snapshot, error)) (runtime.Run, error) {
	id, err := workflowID(op, runID)
	if err != nil {
		return runtime.Run{}, err
	}
	snap, err := send(id)
	if err != nil {
		return runtime.Run{}, r.fail(op, id, err)
	}
	desc, err := r.c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return runtime.Run{}, r.fail(op, id, err)
	}
	run := r.fromInfo(desc.GetWorkflowExecutionInfo())
	if run.Status == runtime.StatusRunning {
		withPending(&run, desc.GetPendingActivities())
	}
	withSnapshot(&run, snap)
	return run, nil
}

// Get reads the run: its workflow's description (DescribeWorkflowExecution:
// status, times, memo and search attributes), and, for a workflow under
// way, the query QueryName (its transitions, for UpdatedAt and RowVersion;
// a worker must answer it, and Get waits for one until ctx is done), or,
// for a closed one, its result, read from the history without a worker.
// Fields the PostgreSQL record alone holds are zero: Lease, NextRunAt,
// ParkedAt, ParentID, ParentEvent, History, TimerAnchors. StepAttempt,
// LastError and LastErrorCode are those of the pending handler activity.
// A workflow that failed, was terminated, cancelled or timed out at
// Temporal's level is a failed run, in the state it stopped in, with a
// Result whose ErrorCode is WORKFLOW_FAILED, WORKFLOW_TERMINATED,
// WORKFLOW_CANCELED or WORKFLOW_TIMED_OUT and whose ErrorDetail is the
// failure's message.
func (r *Runner) Get(ctx context.Context, runID string) (runtime.Run, error) {
	id, err := workflowID("get", runID)
	if err != nil {
		return runtime.Run{}, err
	}
	run, _, err := r.get(ctx, "get", id)
	return run, err
}

// get is Get of the run id, for op, with the run's transitions in this
// attempt when they could be read.
func (r *Runner) get(ctx context.Context, op, id string) (runtime.Run, []Step, error) {
	desc, err := r.c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return runtime.Run{}, nil, r.fail(op, id, err)
	}
	run, steps, err := r.read(ctx, desc, true)
	if err != nil {
		return run, nil, r.fail(op, id, err)
	}
	return run, steps, nil
}

// Execution reads the run as the store reads the execution of a run of
// the PostgreSQL engine (store.Execution, what machines/compliance's
// GetWorkflow and Query read): the run as Get reads it, and its
// transitions in its current attempt, from the query for a run under way
// or from the result of a closed one. StateHistory is empty for a
// workflow that closed without a result (it failed, was terminated,
// cancelled or timed out at Temporal's level). EvidenceIDs are the ids of
// the run's evidence records in the PostgreSQL record (runtime/evidence)
// when RunnerConfig.Record is set, read from it (store.Execution): those
// of the transitions recorded so far, all of them once the run has ended;
// empty without a Record, or before the run's start is recorded.
func (r *Runner) Execution(ctx context.Context, runID string) (store.Execution, error) {
	const op = "read execution"
	id, err := workflowID(op, runID)
	if err != nil {
		return store.Execution{}, err
	}
	run, steps, err := r.get(ctx, op, id)
	x := store.Execution{Run: run, StateHistory: make([]store.StateChange, 0, len(steps))}
	for _, s := range steps {
		x.StateHistory = append(x.StateHistory, store.StateChange(s))
	}
	if err != nil || r.cfg.Record == nil {
		return x, err
	}
	rec, err := r.cfg.Record.Execution(ctx, id)
	switch {
	case errors.Is(err, runtime.ErrRunNotFound):
	case err != nil:
		return x, fmt.Errorf("temporal: %s %s: evidence ids: %w", op, id, err)
	default:
		x.EvidenceIDs = rec.EvidenceIDs
	}
	return x, nil
}

// Wait waits until the run's workflow closes (its result, a long poll on
// its history) and returns the run as Get does, or until ctx is done,
// with ctx's error. The run of a machine without final states never ends:
// Wait returns only when ctx is done.
func (r *Runner) Wait(ctx context.Context, runID string) (runtime.Run, error) {
	id, err := workflowID("wait", runID)
	if err != nil {
		return runtime.Run{}, err
	}
	// The result, or the error that closed the workflow: either way, it
	// closed.
	werr := r.c.GetWorkflow(ctx, id, "").Get(ctx, nil)
	var closed *temporal.WorkflowExecutionError
	switch {
	case ctx.Err() != nil:
		return runtime.Run{}, r.fail("wait", id, ctx.Err())
	case werr != nil && !errors.As(werr, &closed):
		return runtime.Run{}, r.fail("wait", id, werr)
	}
	run, _, err := r.get(ctx, "wait", id)
	return run, err
}

// read returns the run of the workflow desc describes, and its
// transitions in this attempt when they were read: for a closed workflow,
// with its result (from its history); for one under way, with the query's
// snapshot when query is set and a worker answers.
func (r *Runner) read(ctx context.Context, desc *workflowservice.DescribeWorkflowExecutionResponse, query bool) (runtime.Run, []Step, error) {
	info := desc.GetWorkflowExecutionInfo()
	run := r.fromInfo(info)
	id, runID := info.GetExecution().GetWorkflowId(), info.GetExecution().GetRunId()
	if info.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		withPending(&run, desc.GetPendingActivities())
		if !query {
			return run, nil, nil
		}
		v, err := r.c.QueryWorkflow(ctx, id, runID, QueryName)
		var notReady *serviceerror.WorkflowNotReady
		switch {
		case errors.As(err, &notReady):
			// No workflow task has run yet: the run is in its initial
			// state, as its search attributes say.
			return run, []Step{}, nil
		case err != nil:
			return run, nil, err
		}
		var snap Snapshot
		if err := v.Get(&snap); err != nil {
			return run, nil, fmt.Errorf("%w: query %s: %w", runtime.ErrPayload, QueryName, err)
		}
		withSnapshot(&run, snap)
		return run, snap.History, nil
	}
	var res Result
	err := r.c.GetWorkflow(ctx, id, runID).Get(ctx, &res)
	if info.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
		if err != nil {
			run.Result.ErrorDetail, run.LastError = failure(err), failure(err)
		}
		return run, nil, nil
	}
	if err != nil {
		return run, nil, err
	}
	withSnapshot(&run, res.Snapshot)
	// The run finished with its last transition; the workflow closed
	// just after.
	run.FinishedAt = run.UpdatedAt
	run.Result = &runtime.Result{Status: res.Status, Outcome: res.Outcome, Output: res.Output, RunID: run.ID, Attempt: run.Attempt, CostUSD: res.CostUSD,
		DurationMS: run.FinishedAt.Sub(run.StartedAt).Milliseconds(), ErrorCode: res.ErrorCode, ErrorDetail: res.Error}
	return run, res.History, nil
}

// failure returns the message of the failure that closed a workflow:
// the cause of the workflow's execution error.
func failure(err error) string {
	var we *temporal.WorkflowExecutionError
	if errors.As(err, &we) && errors.Unwrap(we) != nil {
		return errors.Unwrap(we).Error()
	}
	return err.Error()
}

// fromInfo returns the run of the workflow info describes, from its
// memo, its search attributes and its execution status, as visibility and
// DescribeWorkflowExecution return them.
func (r *Runner) fromInfo(info *workflowpb.WorkflowExecutionInfo) runtime.Run {
	start := info.GetStartTime().AsTime()
	run := runtime.Run{ID: info.GetExecution().GetWorkflowId(), Type: info.GetType().GetName(), Attempt: 1, StepAttempt: 1,
		CreatedAt: start, UpdatedAt: start, StartedAt: start}
	if p := info.GetMemo().GetFields()[memoKey]; p != nil {
		var m runMemo
		if r.cfg.DataConverter.FromPayload(p, &m) == nil {
			run.Version, run.Attempt, run.UserID, run.CorrelationID = m.Version, max(m.Attempt, 1), m.UserID, m.CorrelationID
			run.Input, run.Policy = m.Input, m.Policy
			if !m.CreatedAt.IsZero() {
				run.CreatedAt = m.CreatedAt
			}
		}
	}
	fields := info.GetSearchAttributes().GetIndexedFields()
	keyword := func(k temporal.SearchAttributeKeyKeyword) string {
		var s string
		if p := fields[k.GetName()]; p != nil {
			_ = converter.GetDefaultDataConverter().FromPayload(p, &s)
		}
		return s
	}
	run.State, run.Status = keyword(SearchState), runtime.Status(keyword(SearchStatus))
	run.TenantID, run.IdempotencyKey = keyword(SearchTenant), keyword(SearchKey)
	if def, ok := r.defs[run.Type]; ok && run.State == "" {
		run.State, run.Status = initial(def)
	}
	if run.Status == "" {
		run.Status = runtime.StatusRunning
	}
	status := info.GetStatus()
	if status == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return run
	}
	run.FinishedAt = info.GetCloseTime().AsTime()
	run.UpdatedAt = run.FinishedAt
	if status != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
		code := "WORKFLOW_" + strings.TrimPrefix(status.String(), "WORKFLOW_EXECUTION_STATUS_")
		run.Status, run.LastErrorCode = runtime.StatusFailed, code
		run.Result = &runtime.Result{Status: runtime.StatusFailed, RunID: run.ID, Attempt: run.Attempt,
			DurationMS: run.FinishedAt.Sub(run.StartedAt).Milliseconds(), ErrorCode: code}
	}
	return run
}

// withPending sets the run's StepAttempt and last error from its pending
// handler activity, if one is pending.
func withPending(run *runtime.Run, pending []*workflowpb.PendingActivityInfo) {
	for _, a := range pending {
		run.StepAttempt = max(int(a.GetAttempt()), 1)
		if f := a.GetLastFailure(); f != nil {
			run.LastError, run.LastErrorCode = f.GetMessage(), f.GetApplicationFailureInfo().GetType()
		}
	}
}

// withSnapshot sets the run's state, status, UpdatedAt and RowVersion (its
// number of transitions in this attempt) from the workflow's snapshot.
func withSnapshot(run *runtime.Run, snap Snapshot) {
	if snap.State == "" {
		return
	}
	run.State, run.Status, run.RowVersion = snap.State, snap.Status, int64(len(snap.History))
	if n := len(snap.History); n > 0 {
		run.UpdatedAt = snap.History[n-1].At
	}
}

// List returns the runs f selects, at most f.Limit (100 when zero, at most
// 10000), through Temporal's visibility (ListWorkflow) with a query on
// WorkflowType (the runner's types when f.Type is empty), the search
// attributes and ExecutionStatus. Every value is a quoted literal (quote),
// so that no string (a tenant's name, a key) ends it; and every run
// visibility returns is checked against f before it is listed, so that a
// visibility store that matches a literal loosely never lists another
// tenant's run. The dev server's SQLite visibility is one: it matches a
// value holding a backslash, a double quote or a control character with
// other values (a\b with a\\b), and may not find the run of such a value
// at all; plain values and single quotes are matched exactly.
//
// Runs come in visibility's order, not oldest first: runs under way, then
// closed ones, most recently closed first. Visibility is eventually
// consistent: a transition shows in the list after the server has indexed
// it (on the dev server, within moments), so a run may be listed in the
// state it left. Listed runs carry their memo (input, policy, owner,
// attempt) and search attributes, and no Result (Get reads it). A failed
// attempt that a later Start restarted is not listed (a Describe tells,
// for each failed run listed): its workflow id lists its current run.
func (r *Runner) List(ctx context.Context, f runtime.Filter) ([]runtime.Run, error) {
	limit := f.Limit
	switch {
	case limit < 0 || limit > 10000:
		return nil, &runtime.RunError{Component: "temporal", Op: "list", Err: fmt.Errorf("%w: limit %d, want 0..10000", runtime.ErrInvalidInput, limit)}
	case limit == 0:
		limit = 100
	}
	q := r.query(f)
	out := []runtime.Run{}
	var token []byte
	for len(out) < limit {
		resp, err := r.c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{PageSize: int32(limit - len(out)), NextPageToken: token, Query: q})
		if err != nil {
			return nil, r.fail("list", "", err)
		}
		for _, info := range resp.GetExecutions() {
			run := r.fromInfo(info)
			if !r.selects(f, run) {
				continue
			}
			if run.Status == runtime.StatusFailed {
				latest, err := r.c.DescribeWorkflowExecution(ctx, run.ID, "")
				if err != nil {
					return nil, r.fail("list", run.ID, err)
				}
				if latest.GetWorkflowExecutionInfo().GetExecution().GetRunId() != info.GetExecution().GetRunId() {
					continue // restarted: its current run is listed, or not, on its own
				}
			}
			if len(out) < limit {
				out = append(out, run)
			}
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	return out, nil
}

// selects reports whether f selects run, as List's query should have.
func (r *Runner) selects(f runtime.Filter, run runtime.Run) bool {
	switch {
	case f.Type != "" && run.Type != f.Type,
		f.Type == "" && !slices.Contains(r.types, run.Type),
		len(f.States) > 0 && !slices.Contains(f.States, run.State),
		f.Status != "" && run.Status != f.Status,
		f.TenantID != "" && run.TenantID != f.TenantID,
		f.IdempotencyKey != "" && run.IdempotencyKey != f.IdempotencyKey:
		return false
	}
	return true
}

// query returns the visibility query of f.
func (r *Runner) query(f runtime.Filter) string {
	var and []string
	if f.Type != "" {
		and = append(and, "WorkflowType = "+quote(f.Type))
	} else {
		and = append(and, "WorkflowType IN ("+quoteAll(r.types)+")")
	}
	if len(f.States) > 0 {
		and = append(and, SearchState.GetName()+" IN ("+quoteAll(f.States)+")")
	}
	status := SearchStatus.GetName()
	switch f.Status {
	case "":
	case runtime.StatusRunning:
		and = append(and, status+" = 'running' AND ExecutionStatus = 'Running'")
	case runtime.StatusFailed:
		and = append(and, "("+status+" = 'failed' OR ExecutionStatus IN ('Failed', 'Terminated', 'Canceled', 'TimedOut'))")
	default:
		and = append(and, status+" = "+quote(string(f.Status))+" AND ExecutionStatus = 'Completed'")
	}
	if f.TenantID != "" {
		and = append(and, SearchTenant.GetName()+" = "+quote(f.TenantID))
	}
	if f.IdempotencyKey != "" {
		and = append(and, SearchKey.GetName()+" = "+quote(f.IdempotencyKey))
	}
	return strings.Join(and, " AND ")
}

// quote returns s as a string literal of Temporal's visibility query
// language, whose parser reads a literal as MySQL does: in single quotes,
// with backslashes and single quotes escaped by a backslash, so that
// nothing in s ends the literal.
func quote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// quoteAll returns the literals of ss, separated by commas.
func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = quote(s)
	}
	return strings.Join(q, ", ")
}

// workflowID returns the workflow id of the run runID: the UUID in its
// canonical form; an error matching runtime.ErrInvalidID when it is not a
// UUID.
func workflowID(op, runID string) (string, error) {
	u, err := uuid.Parse(runID)
	if err != nil {
		return "", &runtime.RunError{Component: "temporal", Op: op, RunID: short(runID), Err: fmt.Errorf("%w: %w", runtime.ErrInvalidID, err)}
	}
	return u.String(), nil
}

// fail returns err, from Temporal, as the runtime's error about the run
// id: a *runtime.RunError wrapping runtime.ErrRunNotFound for a workflow
// Temporal does not know, the context's error for a call Temporal gave up
// on when the caller's deadline passed or its context was cancelled, the
// refusal for a *RefusedError, err otherwise.
func (r *Runner) fail(op, id string, err error) error {
	var notFound *serviceerror.NotFound
	var refused *RefusedError
	var deadline *serviceerror.DeadlineExceeded
	var canceled *serviceerror.Canceled
	switch {
	case errors.As(err, &refused):
		err = refusedRun{refused}
	case errors.As(err, &notFound):
		err = runtime.ErrRunNotFound
	case errors.As(err, &deadline):
		err = context.DeadlineExceeded
	case errors.As(err, &canceled):
		err = context.Canceled
	}
	return &runtime.RunError{Component: "temporal", Op: op, RunID: id, Err: err}
}

// refusedRun is a *RefusedError inside a runtime.RunError, which names the
// run and the operation already: its message is the refusal's reason.
type refusedRun struct{ *RefusedError }

func (e refusedRun) Error() string {
	if strings.Contains(e.Reason, e.Err.Error()) {
		return e.Reason
	}
	return e.Err.Error() + ": " + e.Reason
}

func (e refusedRun) Unwrap() error { return e.RefusedError }

// short returns s as it is when it is short and printable, else quoted
// and cut, for an error message.
func short(s string) string {
	if len(s) <= 64 && !strings.ContainsFunc(s, func(c rune) bool { return !unicode.IsPrint(c) }) {
		return s
	}
	if len(s) > 64 {
		return strconv.Quote(s[:64]) + "…"
	}
	return strconv.Quote(s)
}
