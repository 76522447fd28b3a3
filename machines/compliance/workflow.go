package compliance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/fsmgen/fsmgen/machines/compliance/fcha"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/activity"
	"github.com/fsmgen/fsmgen/runtime/engine"
	"github.com/fsmgen/fsmgen/runtime/evidence"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// WorkflowName is the workflow's name, its runs' type.
const WorkflowName = fcha.Type

// SignalAuthorizationSigned is the specification's name of the signal that the
// applicant signed the background check authorization.
const SignalAuthorizationSigned = "background_check_authorization_signed"

// AuthorizationWindow is how long the workflow waits for the
// authorization in CONDITIONAL_OFFER before it denies the application.
const AuthorizationWindow = 7 * 24 * time.Hour

// The evidence kinds the workflow logs (evidence.<kind> steps), besides the
// records of the run's creation and of every transition.
const (
	EvidenceInitialization         = "initialization"
	EvidencePrequalification       = "prequalification_results"
	EvidenceConditionalOffer       = "conditional_offer_delivery"
	EvidenceAuthorization          = "background_check_authorization"
	EvidenceBackgroundCheckResults = "background_check_results"
	EvidenceAssessmentFactors      = "individualized_assessment_factors"
	EvidenceFinalDecision          = "final_decision_rationale"
)

// Errors of the workflow, matched with errors.Is.
var (
	// ErrSignalRefused: a signal the run no longer accepts, such as an
	// authorization that arrives after the 7-day window closed. It is
	// runtime.ErrSignalRefused, which the Temporal backend's Send
	// (contrib/temporal) reports too.
	ErrSignalRefused = runtime.ErrSignalRefused
	// ErrInvalidApplication: an application without an id, applicant or
	// organization.
	ErrInvalidApplication = errors.New("invalid application")
	// ErrWorkflowFailed: the run ended FAILED, an activity having failed
	// after all its retries; ExecuteWorkflowSync's error names the run, the
	// error's code and its message.
	ErrWorkflowFailed = errors.New("workflow failed")
)

// The workflow's activities, with their retry policies and idempotency keys.
var (
	prequalifyActivity = activity.Activity[Application, Prequalification]{
		Name: "prequalify", Retry: activity.Database, Timeout: 10 * time.Second,
		IdempotencyKey: func(a Application) string { return "prequalify:" + a.ApplicationID },
	}
	offerActivity = activity.Activity[Notification, Delivery]{
		Name: "deliver-conditional-offer", Retry: activity.ExternalService, Timeout: 30 * time.Second,
		IdempotencyKey: func(n Notification) string { return n.IdempotencyKey },
	}
	screeningActivity = activity.Activity[ScreeningRequest, ScreeningReport]{
		Name: "background-check", Retry: activity.ExternalService, Timeout: 30 * time.Second,
		IdempotencyKey: func(r ScreeningRequest) string { return r.IdempotencyKey },
	}
	assessmentActivity = activity.Activity[AssessmentRequest, Assessment]{
		Name: "individualized-assessment", Retry: activity.Database, Timeout: 10 * time.Second,
		IdempotencyKey: func(r AssessmentRequest) string { return "assessment:" + r.ApplicationID },
	}
)

// Workflow is the NYC Application Compliance workflow: the handlers of
// FCHA's driven states, its guards, and the specification's runtime operations
// (start, signal, get, query, execute synchronously) on a runtime.Runner,
// the PostgreSQL engine or another backend's (contrib/temporal's Runner):
// swapping one for the other is the only change, the handlers and guards
// are the same.
type Workflow struct {
	r runtime.Runner
	// eng is r when r is the PostgreSQL engine, nil otherwise.
	eng      *engine.Engine
	x        *activity.Executor
	ad       Adapters
	runs     fcha.Handle[Application]
	activity func(name string) // test hook: after each activity succeeded
}

// New returns the workflow on the runner r, executing activities with x
// and calling the services of ad. r may be nil for a workflow only used
// through Driver. On the PostgreSQL engine (an *engine.Engine), the
// workflow reads runs from its store and drives them inline
// (ExecuteWorkflowSync); on another runner it reads them through the
// runner, whose workers drive them (see GetWorkflow and Query for what
// such a read lacks). x, the activity executor of runtime/activity, works
// on the engine's database; give nil on another backend, which retries and
// records the handlers' work itself.
func New(r runtime.Runner, x *activity.Executor, ad Adapters) *Workflow {
	w := &Workflow{r: r, x: x, ad: ad}
	if eng, ok := r.(*engine.Engine); ok && eng != nil {
		w.eng = eng
	}
	if r != nil {
		w.runs = fcha.Runs[Application](r)
	}
	return w
}

// Driver returns FCHA's driver with the workflow's handlers and guards,
// for an engine other than eng (the Temporal backend in contrib/temporal):
// a Workflow made with a nil executor calls its services directly, leaving
// retries and the record of results to that engine, and logs evidence
// only where run.Effects is given.
func (w *Workflow) Driver() runtime.Driver {
	return fcha.NewDriver(handlers{w}, func(*runtime.Run) fcha.Guards { return guards{} })
}

// Register registers FCHA with the engine and enables its evidence. On
// another runner it fails with runtime.ErrNoEngine: register Driver with
// that backend's workers instead.
func (w *Workflow) Register(ctx context.Context) error {
	if w.eng == nil {
		return fmt.Errorf("compliance: register: %w: the workflow's runner registers no drivers; register Driver() with its workers", runtime.ErrNoEngine)
	}
	if err := w.eng.Register(ctx, fcha.NewDriver(handlers{w}, func(*runtime.Run) fcha.Guards { return guards{} })); err != nil {
		return fmt.Errorf("compliance: register: %w", err)
	}
	pool := w.eng.Store().Pool()
	if err := evidence.Enable(ctx, pool, WorkflowName); err != nil {
		return fmt.Errorf("compliance: %w", err)
	}
	// The transitions that no handler makes record their evidence by
	// trigger: the signed authorization (its payload: signedAt, signedBy),
	// and the denial by the authorization timeout with its rationale.
	if err := evidence.Implied(ctx, pool, WorkflowName, "BackgroundCheckAuthorizationSigned", EvidenceAuthorization, map[string]any{}); err != nil {
		return fmt.Errorf("compliance: %w", err)
	}
	if err := evidence.Implied(ctx, pool, WorkflowName, "AuthorizationTimeout", EvidenceFinalDecision, timeoutRationale); err != nil {
		return fmt.Errorf("compliance: %w", err)
	}
	return nil
}

// timeoutRationale is the final decision rationale recorded when the
// authorization window closes without the signal.
var timeoutRationale = map[string]any{
	"decision":            "denied",
	"rationale":           "the background check authorization was not signed within the authorization window of " + AuthorizationWindow.String() + " after the conditional offer",
	"authorizationWindow": AuthorizationWindow.String(),
}

// guards are FCHA's guards: they read the events' payloads.
type guards struct{}

func (guards) PrequalFailed(_ context.Context, e fcha.PrequalificationCompleted) bool {
	return !e.Passed
}
func (guards) NoAdverseInfo(_ context.Context, e fcha.BackgroundCheckCompleted) bool {
	return !e.AdverseInfo
}
func (guards) Approved(_ context.Context, e fcha.AssessmentCompleted) bool { return e.Approved }

// handlers implements fcha.Handlers.
type handlers struct{ w *Workflow }

var _ fcha.Handlers = handlers{}

func input(run *runtime.Run) (Application, error) {
	var app Application
	if err := json.Unmarshal(run.Input, &app); err != nil {
		return app, runtime.WithCode("INVALID_INPUT", fmt.Errorf("compliance: run %s: input: %w", run.ID, err))
	}
	return app, nil
}

func exec[In, Out any](ctx context.Context, w *Workflow, run *runtime.Run, a activity.Activity[In, Out], execute func(context.Context, In) (Out, error), in In) (Out, error) {
	if w.x == nil {
		// Another engine (Temporal) retries and records the handler's work.
		return execute(ctx, in)
	}
	a.Execute = execute
	res, err := activity.ExecuteInRun(ctx, w.x, run, a, in)
	if err != nil {
		var zero Out
		return zero, err
	}
	if w.activity != nil {
		w.activity(a.Name)
	}
	return res.Output, nil
}

func logEvidence(run *runtime.Run, kind string, payload any) {
	if run.Effects != nil {
		run.Effects.LogStep("evidence."+kind, payload)
	}
}

// Prequalification checks the application, records the initialization and
// prequalification evidence and, when it passed, delivers the conditional
// offer (recorded too); when it failed, records the denial's rationale.
func (h handlers) Prequalification(ctx context.Context, run *runtime.Run) (fcha.PrequalificationEvent, error) {
	app, err := input(run)
	if err != nil {
		return nil, err
	}
	logEvidence(run, EvidenceInitialization, map[string]any{"application": app, "workflowName": WorkflowName, "workflowVersion": "1.0.0", "actorId": run.UserID})
	pq, err := exec(ctx, h.w, run, prequalifyActivity, h.w.ad.Prequalifier.Prequalify, app)
	if err != nil {
		return nil, err
	}
	logEvidence(run, EvidencePrequalification, pq)
	if !pq.Passed {
		logEvidence(run, EvidenceFinalDecision, map[string]any{"decision": "denied", "rationale": "prequalification failed: " + pq.Reason})
		return fcha.PrequalificationCompleted{Passed: false, Reason: pq.Reason}, nil
	}
	n := Notification{ApplicationID: app.ApplicationID, ApplicantID: app.ApplicantID, Kind: "conditional_offer", IdempotencyKey: "conditional-offer:" + app.ApplicationID}
	d, err := exec(ctx, h.w, run, offerActivity, h.w.ad.Notifier.Notify, n)
	if err != nil {
		return nil, err
	}
	logEvidence(run, EvidenceConditionalOffer, map[string]any{"deliveryId": d.DeliveryID, "authorizationWindow": AuthorizationWindow.String()})
	return fcha.PrequalificationCompleted{Passed: true, Reason: pq.Reason}, nil
}

// BackgroundCheckAllowed runs the background check the applicant
// authorized and records its results; with no adverse information it
// records the approval's rationale.
func (h handlers) BackgroundCheckAllowed(ctx context.Context, run *runtime.Run) (fcha.BackgroundCheckAllowedEvent, error) {
	app, err := input(run)
	if err != nil {
		return nil, err
	}
	auth, _ := runtime.Last[fcha.BackgroundCheckAuthorizationSigned](run)
	req := ScreeningRequest{ApplicationID: app.ApplicationID, ApplicantID: app.ApplicantID, AuthorizedAt: auth.SignedAt.UTC(), AuthorizedBy: auth.SignedBy,
		IdempotencyKey: "screening:" + app.ApplicationID}
	rep, err := exec(ctx, h.w, run, screeningActivity, h.w.ad.Screening.Check, req)
	if err != nil {
		return nil, err
	}
	logEvidence(run, EvidenceBackgroundCheckResults, rep)
	if !rep.AdverseInfo {
		logEvidence(run, EvidenceFinalDecision, map[string]any{"decision": "approved", "rationale": "the background check found no adverse information"})
	}
	return fcha.BackgroundCheckCompleted{AdverseInfo: rep.AdverseInfo, Findings: rep.Findings}, nil
}

// IndividualizedAssessment weighs the factors on record against the
// findings and records the factors and the decision's rationale.
func (h handlers) IndividualizedAssessment(ctx context.Context, run *runtime.Run) (fcha.IndividualizedAssessmentEvent, error) {
	app, err := input(run)
	if err != nil {
		return nil, err
	}
	check, _ := runtime.Last[fcha.BackgroundCheckCompleted](run)
	as, err := exec(ctx, h.w, run, assessmentActivity, h.w.ad.Assessor.Assess,
		AssessmentRequest{ApplicationID: app.ApplicationID, ApplicantID: app.ApplicantID, Findings: check.Findings})
	if err != nil {
		return nil, err
	}
	logEvidence(run, EvidenceAssessmentFactors, map[string]any{"factors": as.Factors, "findings": check.Findings})
	decision := "denied"
	if as.Approved {
		decision = "approved"
	}
	logEvidence(run, EvidenceFinalDecision, map[string]any{"decision": decision, "rationale": as.Rationale})
	return fcha.AssessmentCompleted{Approved: as.Approved, Factors: as.Factors, Rationale: as.Rationale}, nil
}

// StartWorkflow starts the workflow for app on behalf of actorID (a user's
// UUID, or empty), idempotently by application id: starting the same
// application again returns its run. The run belongs to the application's
// organization. It returns the run's id.
func (w *Workflow) StartWorkflow(ctx context.Context, app Application, actorID string) (string, error) {
	if app.ApplicationID == "" || app.ApplicantID == "" || app.OrganizationID == "" {
		return "", fmt.Errorf("compliance: start: %w: applicationId, applicantId and organizationId are required", ErrInvalidApplication)
	}
	s, err := w.runs.Start(ctx, app.ApplicationID, app, runtime.Owner{TenantID: app.OrganizationID, UserID: actorID})
	if err != nil {
		return "", fmt.Errorf("compliance: start application %s: %w", app.ApplicationID, err)
	}
	return s.ID, nil
}

// Authorization is the payload of the signal
// background_check_authorization_signed.
type Authorization struct {
	SignedAt time.Time `json:"signedAt"`
	SignedBy string    `json:"signedBy"`
}

// SendSignal sends the signal name with its payload to run runID, from any
// process. The workflow knows one signal, SignalAuthorizationSigned, with
// an Authorization. A signal the run no longer accepts (the window closed
// and the application was denied, or the authorization was given already)
// is refused with an error matching ErrSignalRefused that says why.
func (w *Workflow) SendSignal(ctx context.Context, runID, name string, payload Authorization) error {
	if name != SignalAuthorizationSigned {
		return fmt.Errorf("compliance: signal %q to run %s: %w: the workflow knows only %s", name, runID, ErrSignalRefused, SignalAuthorizationSigned)
	}
	_, err := w.runs.BackgroundCheckAuthorizationSigned(ctx, runID, fcha.BackgroundCheckAuthorizationSigned{SignedAt: payload.SignedAt, SignedBy: payload.SignedBy})
	if err == nil {
		return nil
	}
	if errors.Is(err, runtime.ErrRunFinished) || errors.Is(err, runtime.ErrIllegalTransition) {
		x, gerr := w.execution(ctx, runID)
		if gerr != nil {
			return fmt.Errorf("compliance: signal %s to run %s: %w: %w", name, runID, ErrSignalRefused, err)
		}
		why := fmt.Sprintf("the run is in %s", x.State)
		for _, s := range x.StateHistory {
			if s.Event == "AuthorizationTimeout" {
				why = fmt.Sprintf("the authorization window of %s closed at %s and the application was denied", AuthorizationWindow, s.At.UTC().Format(time.RFC3339))
			}
		}
		return fmt.Errorf("compliance: signal %s to run %s: %w: %s: %w", name, runID, ErrSignalRefused, why, err)
	}
	return fmt.Errorf("compliance: signal %s to run %s: %w", name, runID, err)
}

// Output is the workflow's output: the decision and the ids of the
// evidence records of the run.
type Output struct {
	RunID       string  `json:"runId"`
	Approved    bool    `json:"approved"`
	Decision    string  `json:"decision"`
	EvidenceIDs []int64 `json:"evidenceIds"`
}

// StateChange is one entry of a run's state history.
type StateChange struct {
	From  string    `json:"from"`
	To    string    `json:"to"`
	Event string    `json:"event"`
	At    time.Time `json:"at"`
}

// Execution is a run as the specification's WorkflowExecution describes it.
type Execution struct {
	ID              string         `json:"id"`
	WorkflowID      string         `json:"workflowId"`
	RunID           string         `json:"runId"`
	WorkflowName    string         `json:"workflowName"`
	WorkflowVersion string         `json:"workflowVersion"`
	Status          runtime.Status `json:"status"`
	Input           Application    `json:"input"`
	Output          *Output        `json:"output,omitempty"`
	Error           string         `json:"error,omitempty"`
	ErrorCode       string         `json:"errorCode,omitempty"`
	CurrentStep     string         `json:"currentStep"`
	StateHistory    []StateChange  `json:"stateHistory"`
	ActorID         string         `json:"actorId,omitempty"`
	OrganizationID  string         `json:"organizationId"`
	StartedAt       time.Time      `json:"startedAt"`
	CompletedAt     *time.Time     `json:"completedAt,omitempty"`
}

// GetWorkflow returns run runID as an Execution; runtime.ErrRunNotFound
// when there is none. On the engine it is one read of the view
// workflow_executions. A succeeded run has an Output; a failed one (status
// failed, in FAILED) has its error's message in Error and its code in
// ErrorCode. On another runner it reads the run with the runner's
// Execution method when it has one (contrib/temporal's Runner: the run and
// its transitions, and the Output's EvidenceIDs when the Runner reads the
// PostgreSQL record its workers write, RunnerConfig.Record), else with Get,
// which gives no StateHistory and no EvidenceIDs.
func (w *Workflow) GetWorkflow(ctx context.Context, runID string) (Execution, error) {
	x, err := w.execution(ctx, runID)
	if err != nil {
		return Execution{}, fmt.Errorf("compliance: get workflow %s: %w", runID, err)
	}
	return execution(x)
}

// executionReader is a runtime.Runner that reads a run as the store's
// Execution, with its transitions (contrib/temporal's Runner).
type executionReader interface {
	Execution(ctx context.Context, runID string) (store.Execution, error)
}

// execution reads run runID: from the engine's store, with the runner's
// Execution, or from its Get.
func (w *Workflow) execution(ctx context.Context, runID string) (store.Execution, error) {
	if w.eng != nil {
		return w.eng.Store().Execution(ctx, runID)
	}
	if r, ok := w.r.(executionReader); ok {
		return r.Execution(ctx, runID)
	}
	run, err := w.r.Get(ctx, runID)
	return store.Execution{Run: run, StateHistory: []store.StateChange{}}, err
}

// execution converts the store's execution of a run of the workflow,
// naming its fields as the specification does: the run's idempotency key is its
// workflowId, its type the workflowName, its state the currentStep, its
// tenant the organizationId and its user the actorId.
func execution(x store.Execution) (Execution, error) {
	e := Execution{
		ID: x.ID, WorkflowID: x.IdempotencyKey, RunID: x.ID, WorkflowName: x.Type, WorkflowVersion: strconv.Itoa(x.Version),
		Status: x.Status, CurrentStep: x.State, ActorID: x.UserID, OrganizationID: x.TenantID,
		StartedAt: x.CreatedAt, StateHistory: make([]StateChange, 0, len(x.StateHistory)),
	}
	if x.Result != nil {
		e.Error, e.ErrorCode = x.Result.ErrorDetail, x.Result.ErrorCode
	}
	if err := json.Unmarshal(x.Input, &e.Input); err != nil {
		return e, fmt.Errorf("compliance: run %s: input: %w", x.ID, err)
	}
	for _, s := range x.StateHistory {
		e.StateHistory = append(e.StateHistory, StateChange(s))
	}
	if x.Status.Terminal() {
		t := x.FinishedAt
		e.CompletedAt = &t
	}
	if x.Status == runtime.StatusSucceeded {
		out := output(x)
		e.Output = &out
	}
	return e, nil
}

// output is a finished run's Output.
func output(x store.Execution) Output {
	var decision string
	if x.Result != nil {
		decision = x.Result.Outcome
	}
	return Output{RunID: x.ID, Approved: x.State == fcha.StateApproved.String(), Decision: decision, EvidenceIDs: x.EvidenceIDs}
}

// Query selects runs as the specification's workflowStore.query does; empty fields
// match everything.
type Query struct {
	WorkflowName   string
	Status         runtime.Status
	OrganizationID string
	// Limit caps the number of runs; 0 means 100.
	Limit int
}

// Query returns the runs that match q. On the engine they come oldest
// first, in one read of the view workflow_executions (store.Executions): a
// query by workflow name, status and organization (the run's tenant) is
// served by the index workflow_runs_query_idx. On another runner they come
// from its List (in the order and with the delay its documentation says),
// each read as GetWorkflow reads it.
func (w *Workflow) Query(ctx context.Context, q Query) ([]Execution, error) {
	var xs []store.Execution
	var err error
	if w.eng != nil {
		xs, err = w.eng.Store().Executions(ctx, store.ExecutionFilter{Type: q.WorkflowName, Status: q.Status, TenantID: q.OrganizationID, Limit: q.Limit})
	} else {
		xs, err = w.list(ctx, q)
	}
	if err != nil {
		return nil, fmt.Errorf("compliance: query: %w", err)
	}
	out := make([]Execution, 0, len(xs))
	for _, x := range xs {
		e, err := execution(x)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// list returns the executions of the runs the runner lists for q.
func (w *Workflow) list(ctx context.Context, q Query) ([]store.Execution, error) {
	runs, err := w.r.List(ctx, runtime.Filter{Type: q.WorkflowName, Status: q.Status, TenantID: q.OrganizationID, Limit: q.Limit})
	if err != nil {
		return nil, err
	}
	xs := make([]store.Execution, 0, len(runs))
	for _, run := range runs {
		x, err := w.execution(ctx, run.ID)
		if err != nil {
			return nil, err
		}
		xs = append(xs, x)
	}
	return xs, nil
}

// finished returns the output of finished run id, or ErrWorkflowFailed
// with the run's error when it failed.
func (w *Workflow) finished(ctx context.Context, id string) (Output, error) {
	x, err := w.execution(ctx, id)
	if err != nil {
		return Output{}, fmt.Errorf("compliance: execute %s: %w", id, err)
	}
	if x.Status != runtime.StatusSucceeded {
		var code, detail string
		if x.Result != nil {
			code, detail = x.Result.ErrorCode, x.Result.ErrorDetail
		}
		return Output{}, fmt.Errorf("compliance: execute %s: %w in %s: %s: %s", id, ErrWorkflowFailed, x.State, code, detail)
	}
	return output(x), nil
}

// SyncOption configures ExecuteWorkflowSync.
type SyncOption func(*syncOptions)

type syncOptions struct {
	waiting func(ctx context.Context, runID, state string) error
}

// OnWaiting sets what ExecuteWorkflowSync does when the run waits for a
// signal (CONDITIONAL_OFFER): f is called with the run's id and state, and
// may send the signal; an error from f ends ExecuteWorkflowSync with it.
func OnWaiting(f func(ctx context.Context, runID, state string) error) SyncOption {
	return func(o *syncOptions) { o.waiting = f }
}

// ExecuteWorkflowSync starts the workflow for app and drives it to its
// end, returning its output: on the engine inline, in this process (its
// handlers run here); on another runner its workers drive it, and
// ExecuteWorkflowSync waits for it (Wait). When the run waits for the
// authorization, the OnWaiting function is told (on another runner, once
// Get sees the run in a state that waits); if the run still waits after
// it, it is waited for (a signal from another process, or the timeout,
// fired by the engine's workers) until ctx is done. A run that ended
// FAILED gives an error matching ErrWorkflowFailed.
func (w *Workflow) ExecuteWorkflowSync(ctx context.Context, app Application, actorID string, opts ...SyncOption) (Output, error) {
	var o syncOptions
	for _, f := range opts {
		f(&o)
	}
	id, err := w.StartWorkflow(ctx, app, actorID)
	if err != nil {
		return Output{}, err
	}
	if w.eng == nil {
		return w.await(ctx, id, o)
	}
	for notified := false; ; {
		run, err := w.eng.Drive(ctx, id)
		if err != nil {
			return Output{}, fmt.Errorf("compliance: execute %s: %w", id, err)
		}
		if run.Terminal() {
			return w.finished(ctx, id)
		}
		if o.waiting != nil && !notified {
			notified = true
			if err := o.waiting(ctx, id, run.State); err != nil {
				return Output{}, err
			}
			continue
		}
		if _, err = w.eng.Wait(ctx, id); err != nil {
			return Output{}, fmt.Errorf("compliance: execute %s: %w", id, err)
		}
		return w.finished(ctx, id)
	}
}

// await waits for run id on a runner other than the engine, telling
// o.waiting when the run waits, and returns its output.
func (w *Workflow) await(ctx context.Context, id string, o syncOptions) (Output, error) {
	if o.waiting != nil {
		run, err := w.waits(ctx, id)
		if err != nil {
			return Output{}, fmt.Errorf("compliance: execute %s: %w", id, err)
		}
		if !run.Terminal() {
			if err := o.waiting(ctx, id, run.State); err != nil {
				return Output{}, err
			}
		}
	}
	if _, err := w.r.Wait(ctx, id); err != nil {
		return Output{}, fmt.Errorf("compliance: execute %s: %w", id, err)
	}
	return w.finished(ctx, id)
}

// waits reads run id until it is in a state that waits, or terminal, or
// ctx is done: from every 10 ms at first to every 500 ms.
func (w *Workflow) waits(ctx context.Context, id string) (runtime.Run, error) {
	def := fcha.Definition()
	for delay := 10 * time.Millisecond; ; delay = min(2*delay, 500*time.Millisecond) {
		run, err := w.r.Get(ctx, id)
		if err != nil {
			return run, err
		}
		if st, ok := def.StateOf(run.State); run.Terminal() || ok && st.Wait {
			return run, nil
		}
		select {
		case <-ctx.Done():
			return run, ctx.Err()
		case <-time.After(delay):
		}
	}
}
