package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fsmgen/fsmgen/runtime"
)

// QueryName is the query that returns a run's Snapshot.
const QueryName = "state"

// CancelUpdate is the update that cancels a run on behalf of a user
// (Cancel sends it), with a CancelRequest.
const CancelUpdate = "fsm.cancel"

// DefaultActivityTimeout bounds one try of a handler when its state's
// policy says nothing about time.
const DefaultActivityTimeout = time.Minute

// HeartbeatTimeout is how long Temporal waits for a heartbeat of a
// handler's activity before it takes the try as lost and schedules the
// next one: the handler's worker died, as the PostgreSQL engine's lease
// expires. The activity heartbeats every HeartbeatInterval while its
// handler runs, without the handler's help.
const (
	HeartbeatTimeout  = 10 * time.Second
	HeartbeatInterval = 2 * time.Second
)

// Registry is what Register needs: a worker.Worker, or the testsuite's
// environment.
type Registry interface {
	RegisterWorkflowWithOptions(w interface{}, options workflow.RegisterOptions)
	RegisterActivityWithOptions(a interface{}, options activity.RegisterOptions)
}

// Start is a workflow's input.
type Start struct {
	// RunID identifies the run (the workflow id, by convention).
	RunID string `json:"runId"`
	// Type is the machine's type (the workflow type) and IdempotencyKey
	// the key the run was started with; Attempt counts the run's attempts
	// from 1 (0 is taken as 1).
	Type           string `json:"type,omitempty"`
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
	Attempt        int    `json:"attempt,omitempty"`
	// Input is the run's input, as runtime.Run.Input, and Policy the
	// snapshot of the execution policy it runs under, as runtime.Run.Policy
	// (it chooses the tries of a state whose retry policy says so, see
	// runtime.RetryPolicy.ForRun).
	Input  json.RawMessage `json:"input"`
	Policy json.RawMessage `json:"policy,omitempty"`
	// TenantID and UserID own the run; CorrelationID traces the request
	// that started it.
	TenantID      string `json:"tenantId"`
	UserID        string `json:"userId"`
	CorrelationID string `json:"correlationId,omitempty"`
}

// EventMessage is an event by name, with its payload: the argument of the
// update and the signal named by the event.
type EventMessage struct {
	Name    string          `json:"name"`
	Payload json.RawMessage `json:"payload"`
}

// CancelRequest is the argument of the update CancelUpdate: the user on
// whose behalf the run is cancelled.
type CancelRequest struct {
	UserID string `json:"userId"`
}

// Step is one transition of a run.
type Step struct {
	From  string    `json:"from"`
	To    string    `json:"to"`
	Event string    `json:"event"`
	At    time.Time `json:"at"`
}

// Snapshot is what the query returns: the run's state and its transitions.
type Snapshot struct {
	// State is the run's state: a leaf, or for a run in a parallel state
	// its configuration, the active leaf of each region joined by
	// runtime.ConfigurationSeparator.
	State   string         `json:"state"`
	Status  runtime.Status `json:"status"`
	History []Step         `json:"history"`
	// Refused are the signals the run refused, in order: events its state
	// did not accept, and those still buffered when it finished.
	Refused []string `json:"refused,omitempty"`
}

// Result is a finished workflow's result.
type Result struct {
	Snapshot
	Outcome string `json:"outcome,omitempty"`
	// ErrorCode and Error are the code (the ApplicationError's type) and
	// message of the handler error that exhausted a state, when the run
	// ended by that state's OnExhausted event, or CANCELLED and who
	// cancelled it: what the PostgreSQL engine stores in the run's result.
	ErrorCode string `json:"errorCode,omitempty"`
	Error     string `json:"error,omitempty"`
	// Output and CostUSD are the result a handler set
	// (runtime.Effects.SetResult) with the event that ended the run.
	Output  json.RawMessage `json:"output,omitempty"`
	CostUSD float64         `json:"costUSD,omitempty"`
}

// handleInput is a handler activity's input: the run as its handler is
// told about it.
type handleInput struct {
	Start
	Version int `json:"version"`
	// State is the run's state (a configuration for a run in a parallel
	// state); the activity's own state is the leaf whose handler it calls.
	State   string            `json:"state"`
	Events  []EventMessage    `json:"events"`
	History map[string]string `json:"history,omitempty"`
}

// Handled is what a handler activity returns: the event its handler chose
// and the effects it asked for.
type Handled struct {
	Event   EventMessage `json:"event"`
	Effects Effects      `json:"effects"`
}

// RunID is the id of the run of machine type typ with idempotency key key
// on Temporal, its workflow id: a UUID (version 5, in the URL namespace, of
// "fsmgen:" + typ + "/" + key), so that a run's id is a UUID on either
// backend and the same (type, key) always names the same workflow.
func RunID(typ, key string) string {
	return uuid.NewSHA1(uuid.NameSpaceURL, []byte("fsmgen:"+typ+"/"+key)).String()
}

// ActivityName is the name of the activity that calls the handler of the
// driven state named state of machine type typ, such as
// "nyc-application-compliance.PREQUALIFICATION".
func ActivityName(typ, state string) string { return typ + "." + state }

// Register registers the workflow of d's machine, named by its type, and
// one handler activity per driven state (a leaf that neither waits nor is
// final), named by ActivityName; with WithRecord, the record activity too
// (RecordActivityName).
func Register(r Registry, d runtime.Driver, opts ...Option) {
	def := d.Definition()
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if st := o.record; st != nil {
		rec := &recordSink{st: st, def: def}
		r.RegisterActivityWithOptions(rec.record, activity.RegisterOptions{Name: RecordActivityName(def.Type)})
	}
	r.RegisterWorkflowWithOptions(func(ctx workflow.Context, in Start) (Result, error) {
		return runWorkflow(ctx, d, def, in, o)
	}, workflow.RegisterOptions{Name: def.Type})
	for _, s := range def.States {
		if s.Wait || s.Terminal() {
			continue
		}
		state := s.Name
		r.RegisterActivityWithOptions(func(ctx context.Context, in handleInput) (Handled, error) {
			return handle(ctx, d, def, state, in)
		}, activity.RegisterOptions{Name: ActivityName(def.Type, state)})
	}
}

// decodeAll decodes the events msgs with d.
func decodeAll(d runtime.Driver, msgs []EventMessage) ([]runtime.Event, error) {
	out := make([]runtime.Event, 0, len(msgs))
	for _, m := range msgs {
		ev, err := d.Decode(m.Name, m.Payload)
		if err != nil {
			return nil, err
		}
		out = append(out, ev)
	}
	return out, nil
}

// handle calls the handler of the leaf named state for the run in, as the
// activity of that state.
// heartbeat records the activity's heartbeat every HeartbeatInterval
// until the function it returns is called.
func heartbeat(ctx context.Context) (stop func()) {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(HeartbeatInterval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	return func() { close(done); <-stopped }
}

func handle(ctx context.Context, d runtime.Driver, def runtime.Definition, state string, in handleInput) (Handled, error) {
	events, err := decodeAll(d, in.Events)
	if err != nil {
		return Handled{}, temporal.NewNonRetryableApplicationError(err.Error(), codeInvalidInput, err)
	}
	info := activity.GetInfo(ctx)
	run := &runtime.Run{ID: in.RunID, Type: def.Type, Version: def.Version, IdempotencyKey: in.IdempotencyKey, State: in.State, Status: runtime.StatusRunning,
		Attempt: max(in.Attempt, 1), StepAttempt: int(info.Attempt), Owner: runtime.Owner{TenantID: in.TenantID, UserID: in.UserID, CorrelationID: in.CorrelationID},
		Input: in.Input, Policy: in.Policy, History: in.History, Events: events,
		TryKey: fmt.Sprintf("%s/%s/%s/%d", info.WorkflowExecution.ID, info.WorkflowExecution.RunID, info.ActivityID, info.Attempt)}
	eff := newEffects()
	run.Effects = eff
	stop := heartbeat(ctx)
	ev, err := d.Handle(ctx, run, state)
	stop()
	if err != nil {
		code := runtime.ErrorCode(err)
		switch {
		case errors.Is(err, runtime.ErrNotDriven):
			return Handled{}, temporal.NewNonRetryableApplicationError(err.Error(), "NOT_DRIVEN", err)
		case code == "":
			code = "HANDLER_ERROR"
		}
		if errors.Is(err, runtime.ErrNoRetry) {
			// Retried by a policy of its own already: not retried again.
			return Handled{}, temporal.NewNonRetryableApplicationError(err.Error(), code, err)
		}
		return Handled{}, temporal.NewApplicationError(err.Error(), code, err)
	}
	if ev == nil {
		return Handled{}, temporal.NewApplicationError(fmt.Sprintf("the handler of %s returned no event and no error", state), "HANDLER_ERROR")
	}
	raw, err := json.Marshal(ev)
	if err != nil {
		return Handled{}, temporal.NewNonRetryableApplicationError(err.Error(), codeInvalidInput, err)
	}
	effs, err := eff.collected()
	if err != nil {
		// A payload that does not encode would not on any try.
		return Handled{}, temporal.NewNonRetryableApplicationError(err.Error(), codeInvalidInput, err)
	}
	return Handled{Event: EventMessage{Name: ev.EventName(), Payload: raw}, Effects: effs}, nil
}

// codeInvalidInput is the error type of an input no try would change.
const codeInvalidInput = "INVALID_INPUT"

// RetryPolicy converts a state's retry policy to Temporal's; nil means one
// try.
func RetryPolicy(p *runtime.RetryPolicy) *temporal.RetryPolicy {
	if p == nil {
		return &temporal.RetryPolicy{MaximumAttempts: 1}
	}
	coef := p.Coefficient
	if coef < 1 {
		coef = 1
	}
	rp := &temporal.RetryPolicy{InitialInterval: p.InitialInterval, BackoffCoefficient: coef, MaximumAttempts: int32(max(p.MaxAttempts, 1)),
		NonRetryableErrorTypes: append([]string{codeInvalidInput}, p.NonRetryable...)}
	if p.MaxInterval >= p.InitialInterval {
		rp.MaximumInterval = p.MaxInterval
	}
	return rp
}

// Refusal kinds: the type of the ApplicationError with which an update's
// validator refuses an event or a cancellation, mapped back to the
// runtime's sentinels by Send and Cancel.
const (
	refusedFinished    = "RUN_FINISHED"
	refusedIllegal     = "ILLEGAL_TRANSITION"
	refusedGuards      = "GUARD_REJECTED"
	refusedInternal    = "INTERNAL_EVENT"
	refusedUnknown     = "UNKNOWN_EVENT"
	refusedNotOwner    = "NOT_OWNER"
	refusedNoCancel    = "NO_CANCEL_EVENT"
	refusedNotCancelOK = "NOT_CANCELLABLE"
)

// sentinels maps a refusal kind to the runtime's sentinel.
var sentinels = map[string]error{
	refusedFinished:    runtime.ErrRunFinished,
	refusedIllegal:     runtime.ErrIllegalTransition,
	refusedGuards:      runtime.ErrGuardRejected,
	refusedInternal:    runtime.ErrNotCallerEvent,
	refusedUnknown:     runtime.ErrUnknownEvent,
	refusedNotOwner:    runtime.ErrNotOwner,
	refusedNoCancel:    runtime.ErrNoCancelEvent,
	refusedNotCancelOK: runtime.ErrNotCancellable,
}

// refusal is the detail of a refused update: the run's state and why.
type refusal struct {
	State  string `json:"state"`
	Reason string `json:"reason"`
}

// refuse returns the error with which a validator refuses an update.
func refuse(kind, state, reason string) error {
	return temporal.NewApplicationErrorWithOptions(reason, kind, temporal.ApplicationErrorOptions{
		NonRetryable: true, Details: []any{refusal{State: state, Reason: reason}}})
}

// Signal sends event ev to the workflow workflowID, from any process, as
// the signal named by the event. The sender is not told whether the run
// takes it: a refused one is logged in the run's Snapshot.Refused.
func Signal(ctx context.Context, c client.Client, workflowID string, ev runtime.Event) error {
	raw, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("temporal: signal %s to %s: %w", ev.EventName(), workflowID, err)
	}
	if err := c.SignalWorkflow(ctx, workflowID, "", ev.EventName(), EventMessage{Name: ev.EventName(), Payload: raw}); err != nil {
		return fmt.Errorf("temporal: signal %s to %s: %w", ev.EventName(), workflowID, err)
	}
	return nil
}

// RefusedError is an event that Send's run did not take, or a
// cancellation that Cancel's run refused. A refused event matches
// runtime.ErrSignalRefused (errors.Is), as the PostgreSQL engine's
// workflows report a refused signal (compliance.ErrSignalRefused is that
// error), and the sentinel of the cause, Err: runtime.ErrRunFinished for a
// finished run, runtime.ErrIllegalTransition or runtime.ErrGuardRejected
// for an event the state's table or guards refuse, runtime.ErrNotCallerEvent
// for an event callers may not send (a timer's, or the event a driven
// state's handler returns; see runtime.Definition.CallerRefusal),
// runtime.ErrUnknownEvent for an event the machine does not have or that
// does not decode. A refused cancellation matches the sentinel the
// PostgreSQL engine's Cancel returns: runtime.ErrNotOwner,
// runtime.ErrNoCancelEvent, runtime.ErrNotCancellable or
// runtime.ErrRunFinished.
type RefusedError struct {
	// WorkflowID and Event name the run and the refused event (the
	// machine's cancel event for a cancellation, when the run names it).
	WorkflowID string
	Event      string
	// Cancel marks a refused cancellation.
	Cancel bool
	// State is the run's state when it refused the event.
	State string
	// Reason says why, in the workflow's words.
	Reason string
	// Err is the cause's sentinel.
	Err error
}

// Error implements error.
func (e *RefusedError) Error() string {
	if e.Cancel {
		return fmt.Sprintf("temporal: cancel %s: %s", e.WorkflowID, e.Reason)
	}
	return fmt.Sprintf("temporal: send %s to %s: %v: %s", e.Event, e.WorkflowID, runtime.ErrSignalRefused, e.Reason)
}

// Unwrap returns the cause's sentinel, and runtime.ErrSignalRefused for a
// refused event.
func (e *RefusedError) Unwrap() []error {
	if e.Cancel {
		return []error{e.Err}
	}
	return []error{runtime.ErrSignalRefused, e.Err}
}

// Send fires event ev on workflow workflowID, from any process, as the
// update named by the event, and returns the run's snapshot once the run
// took it. Unlike Signal, which the workflow buffers and may refuse
// without the sender knowing, the workflow checks ev against its current
// state first (the update's validator, which writes nothing to the history
// when it refuses): a refused event is a *RefusedError. A run whose
// workflow has closed is refused with runtime.ErrRunFinished and the state
// and last transition of its result.
func Send(ctx context.Context, c client.Client, workflowID string, ev runtime.Event) (Snapshot, error) {
	raw, err := json.Marshal(ev)
	if err != nil {
		return Snapshot{}, fmt.Errorf("temporal: send %s to %s: %w", ev.EventName(), workflowID, err)
	}
	return update(ctx, c, workflowID, ev.EventName(), EventMessage{Name: ev.EventName(), Payload: raw}, false)
}

// Cancel cancels the run of workflow workflowID on behalf of userID, from
// any process, as the update CancelUpdate, and returns the run's snapshot
// once the run took the machine's cancel event: as the PostgreSQL engine's
// Cancel, only the run's owner may (runtime.ErrNotOwner otherwise, and when
// the machine's guards refuse the event), the machine must name a cancel
// event (runtime.ErrNoCancelEvent) that the run's state has a row on
// (runtime.ErrNotCancellable), and a finished run is refused with
// runtime.ErrRunFinished. A refusal is a *RefusedError matching the
// sentinel. A handler in flight for the run is cancelled, and its event
// dropped.
func Cancel(ctx context.Context, c client.Client, workflowID, userID string) (Snapshot, error) {
	return update(ctx, c, workflowID, CancelUpdate, CancelRequest{UserID: userID}, true)
}

// update sends the update name with arg to workflow workflowID and maps a
// refusal to a *RefusedError; cancel says it is a cancellation.
func update(ctx context.Context, c client.Client, workflowID, name string, arg any, cancel bool) (Snapshot, error) {
	op := "send " + name + " to " + workflowID
	if cancel {
		op = "cancel " + workflowID
	}
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: workflowID, UpdateName: name,
		Args: []any{arg}, WaitForStage: client.WorkflowUpdateStageCompleted})
	var snap Snapshot
	if err == nil {
		err = h.Get(ctx, &snap)
	}
	if err == nil {
		return snap, nil
	}
	refused := &RefusedError{WorkflowID: workflowID, Cancel: cancel}
	if !cancel {
		refused.Event = name
	}
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		var r refusal
		_ = app.Details(&r)
		refused.State, refused.Reason = r.State, app.Message()
		if sentinel, ok := sentinels[app.Type()]; ok {
			refused.Err = sentinel
			return Snapshot{}, refused
		}
		if !cancel && strings.HasPrefix(app.Message(), "unknown update "+name+".") {
			// The workflow has no update of that name: the machine has no
			// such event. The run's state is read for the error, if it can be.
			refused.Err, refused.Reason = runtime.ErrUnknownEvent, fmt.Sprintf("unknown event %q", name)
			if v, err := c.QueryWorkflow(ctx, workflowID, "", QueryName); err == nil {
				var snap Snapshot
				if v.Get(&snap) == nil {
					refused.State = snap.State
				}
			}
			return Snapshot{}, refused
		}
		return Snapshot{}, fmt.Errorf("temporal: %s: %w", op, err)
	}
	if closed, cerr := finished(ctx, c, workflowID, refused); cerr == nil && closed != nil {
		return Snapshot{}, closed
	}
	return Snapshot{}, fmt.Errorf("temporal: %s: %w", op, err)
}

// finished fills refused in as the refusal of an update by a closed
// workflow and returns it, or nil when the workflow still runs.
func finished(ctx context.Context, c client.Client, workflowID string, refused *RefusedError) (*RefusedError, error) {
	desc, err := c.DescribeWorkflowExecution(ctx, workflowID, "")
	if err != nil {
		return nil, err
	}
	info := desc.GetWorkflowExecutionInfo()
	if info.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return nil, nil
	}
	refused.Err, refused.Reason = runtime.ErrRunFinished, "the workflow is closed: "+info.GetStatus().String()
	var res Result
	if err := c.GetWorkflow(ctx, workflowID, info.GetExecution().GetRunId()).Get(ctx, &res); err == nil {
		refused.State, refused.Reason = res.State, finishedReason(res.Snapshot)
	}
	if refused.Cancel {
		refused.Reason = fmt.Sprintf("%v: %s", runtime.ErrRunFinished, refused.Reason)
	}
	return refused, nil
}

// finishedReason says in which state and by which transition a run
// finished.
func finishedReason(snap Snapshot) string {
	why := "the run finished in " + snap.State
	if n := len(snap.History); n > 0 {
		last := snap.History[n-1]
		why += fmt.Sprintf(" on %s at %s", last.Event, last.At.UTC().Format(time.RFC3339))
	}
	return why
}

// QueryState returns the state of workflow workflowID, typed by parse (a
// generated package's ParseState, or ParseConfig for a machine with
// parallel states), and its snapshot.
func QueryState[S any](ctx context.Context, c client.Client, workflowID string, parse func(string) (S, error)) (S, Snapshot, error) {
	var zero S
	v, err := c.QueryWorkflow(ctx, workflowID, "", QueryName)
	if err != nil {
		return zero, Snapshot{}, fmt.Errorf("temporal: query %s: %w", workflowID, err)
	}
	var snap Snapshot
	if err := v.Get(&snap); err != nil {
		return zero, snap, fmt.Errorf("temporal: query %s: %w", workflowID, err)
	}
	s, err := parse(snap.State)
	if err != nil {
		return zero, snap, fmt.Errorf("temporal: query %s: %w", workflowID, err)
	}
	return s, snap, nil
}
