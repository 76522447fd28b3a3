package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fsmgen/fsmgen/runtime"
)

// SignalName is the signal channel that carries a machine's events.
const SignalName = "fsm-event"

// UpdateName is the update that fires an event and tells its sender
// whether the run took it (Send).
const UpdateName = "fsm-fire"

// QueryName is the query that returns a run's Snapshot.
const QueryName = "state"

// DefaultActivityTimeout bounds one try of a handler when its state's
// policy says nothing about time.
const DefaultActivityTimeout = time.Minute

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
	// Input is the run's input, as runtime.Run.Input.
	Input json.RawMessage `json:"input"`
	// TenantID and UserID own the run.
	TenantID string `json:"tenantId"`
	UserID   string `json:"userId"`
}

// EventMessage is a signal's payload: an event by name, with its payload.
type EventMessage struct {
	Name    string          `json:"name"`
	Payload json.RawMessage `json:"payload"`
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
	State   string         `json:"state"`
	Status  runtime.Status `json:"status"`
	History []Step         `json:"history"`
	// Refused are the signals the run refused, in order: events its state
	// did not accept.
	Refused []string `json:"refused,omitempty"`
}

// Result is a finished workflow's result.
type Result struct {
	Snapshot
	Outcome string `json:"outcome,omitempty"`
	// ErrorCode and Error are the code (the ApplicationError's type) and
	// message of the handler error that exhausted a state, when the run
	// ended by that state's OnExhausted event: what the PostgreSQL engine
	// stores in the run's result.
	ErrorCode string `json:"errorCode,omitempty"`
	Error     string `json:"error,omitempty"`
}

// handleInput is the handler activity's input.
type handleInput struct {
	Start
	Type    string         `json:"type"`
	Version int            `json:"version"`
	State   string         `json:"state"`
	Events  []EventMessage `json:"events"`
}

// ActivityName is the name of the handler activity of machine type typ.
func ActivityName(typ string) string { return typ + ".handle" }

// Register registers the workflow and the handler activity of d's machine.
func Register(r Registry, d runtime.Driver) {
	def := d.Definition()
	r.RegisterWorkflowWithOptions(func(ctx workflow.Context, in Start) (Result, error) {
		return run(ctx, d, def, in)
	}, workflow.RegisterOptions{Name: def.Type})
	r.RegisterActivityWithOptions(func(ctx context.Context, in handleInput) (EventMessage, error) {
		return handle(ctx, d, in)
	}, activity.RegisterOptions{Name: ActivityName(def.Type)})
}

// capture is a runtime.Recorder that keeps the transition the machine
// records.
type capture struct{ t *runtime.Transition }

func (c *capture) Record(_ context.Context, t runtime.Transition) error {
	c.t = &t
	return nil
}

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

func (in handleInput) run(d runtime.Driver) (*runtime.Run, error) {
	events, err := decodeAll(d, in.Events)
	if err != nil {
		return nil, err
	}
	return &runtime.Run{ID: in.RunID, Type: in.Type, Version: in.Version, IdempotencyKey: in.RunID, Attempt: 1, StepAttempt: 1,
		Owner: runtime.Owner{TenantID: in.TenantID, UserID: in.UserID}, Input: in.Input, Events: events}, nil
}

func handle(ctx context.Context, d runtime.Driver, in handleInput) (EventMessage, error) {
	run, err := in.run(d)
	if err != nil {
		return EventMessage{}, temporal.NewNonRetryableApplicationError(err.Error(), "INVALID_INPUT", err)
	}
	run.StepAttempt = int(activity.GetInfo(ctx).Attempt)
	ev, err := d.Handle(ctx, run, in.State)
	if err != nil {
		code := runtime.ErrorCode(err)
		if code == "" {
			code = "HANDLER_ERROR"
		}
		if errors.Is(err, runtime.ErrNoRetry) {
			// Retried by a policy of its own already: not retried again.
			return EventMessage{}, temporal.NewNonRetryableApplicationError(err.Error(), code, err)
		}
		return EventMessage{}, temporal.NewApplicationError(err.Error(), code, err)
	}
	raw, err := json.Marshal(ev)
	if err != nil {
		return EventMessage{}, temporal.NewNonRetryableApplicationError(err.Error(), "INVALID_INPUT", err)
	}
	return EventMessage{Name: ev.EventName(), Payload: raw}, nil
}

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
		NonRetryableErrorTypes: append([]string{"INVALID_INPUT"}, p.NonRetryable...)}
	if p.MaxInterval >= p.InitialInterval {
		rp.MaximumInterval = p.MaxInterval
	}
	return rp
}

// Refusal kinds: the type of the ApplicationError with which the update's
// validator refuses an event, mapped back to the runtime's sentinels by
// Send.
const (
	refusedFinished = "RUN_FINISHED"
	refusedIllegal  = "ILLEGAL_TRANSITION"
	refusedGuards   = "GUARD_REJECTED"
	refusedInternal = "INTERNAL_EVENT"
	refusedUnknown  = "UNKNOWN_EVENT"
)

// refusal is the detail of a refused update: the run's state and why.
type refusal struct {
	State  string `json:"state"`
	Reason string `json:"reason"`
}

func run(ctx workflow.Context, d runtime.Driver, def runtime.Definition, in Start) (Result, error) {
	snap := Snapshot{State: def.Initial, Status: runtime.StatusRunning, History: []Step{}}
	var events []EventMessage
	if err := workflow.SetQueryHandler(ctx, QueryName, func() (Snapshot, error) { return snap, nil }); err != nil {
		return Result{}, err
	}
	logger := workflow.GetLogger(ctx)
	signals := workflow.GetSignalChannel(ctx, SignalName)
	// moved wakes the main loop when an update moved the run.
	moved := workflow.NewBufferedChannel(ctx, 1)

	// apply checks msg against the table and guards in the machine's
	// generated code and returns the transition it makes, changing nothing.
	apply := func(msg EventMessage) (*runtime.Transition, error) {
		ev, err := d.Decode(msg.Name, msg.Payload)
		if err != nil {
			return nil, err
		}
		rt := &runtime.Run{ID: in.RunID, Type: def.Type, Version: def.Version, Input: in.Input, Owner: runtime.Owner{TenantID: in.TenantID, UserID: in.UserID}}
		if rt.Events, err = decodeAll(d, events); err != nil {
			return nil, err
		}
		var rec capture
		if err := d.Fire(context.Background(), rt, snap.State, ev, &rec); err != nil {
			return nil, err
		}
		if rec.t == nil {
			return nil, fmt.Errorf("%s: event %s in %s recorded no transition", def.Type, msg.Name, snap.State)
		}
		return rec.t, nil
	}
	// fire applies msg and moves the state; a refused event leaves it.
	fire := func(msg EventMessage) error {
		t, err := apply(msg)
		if err != nil {
			return err
		}
		events = append(events, msg)
		snap.History = append(snap.History, Step{From: t.From, To: t.To, Event: t.Event, At: workflow.Now(ctx)})
		snap.State, snap.Status = t.To, t.Status
		return nil
	}
	// check says whether an event sent from outside would be taken now,
	// as the PostgreSQL engine's Signal decides: not by a finished run,
	// not an event only the workflow fires, and only as the table and
	// guards allow.
	check := func(msg EventMessage) error {
		refuse := func(kind, reason string) error {
			return temporal.NewApplicationErrorWithOptions(reason, kind, temporal.ApplicationErrorOptions{
				NonRetryable: true, Details: []any{refusal{State: snap.State, Reason: reason}}})
		}
		if snap.Status.Terminal() {
			return refuse(refusedFinished, finishedReason(snap))
		}
		if why := def.CallerRefusal(snap.State, msg.Name); why != "" {
			return refuse(refusedInternal, runtime.RefuseCaller(def.Type, def.Version, snap.State, msg.Name, why).Error())
		}
		if _, err := apply(msg); err != nil {
			switch {
			case errors.Is(err, runtime.ErrGuardRejected):
				return refuse(refusedGuards, err.Error())
			case errors.Is(err, runtime.ErrIllegalTransition):
				return refuse(refusedIllegal, err.Error())
			default:
				return refuse(refusedUnknown, err.Error())
			}
		}
		return nil
	}
	err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateName, func(ctx workflow.Context, msg EventMessage) (Snapshot, error) {
		// The validator accepted msg in this state; nothing ran in
		// between, as the handler is called at once, without blocking.
		if err := fire(msg); err != nil {
			return snap, temporal.NewNonRetryableApplicationError(err.Error(), refusedIllegal, err)
		}
		moved.SendAsync(struct{}{})
		return snap, nil
	}, workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, msg EventMessage) error { return check(msg) }})
	if err != nil {
		return Result{}, err
	}

	// The error that exhausted the state the run left last, if it did.
	var failCode, failMsg string
	for {
		st, ok := def.State(snap.State)
		if !ok {
			return Result{}, temporal.NewNonRetryableApplicationError("unknown state "+snap.State, "UNKNOWN_STATE", nil)
		}
		if st.Terminal() {
			return Result{Snapshot: snap, Outcome: st.Outcome, ErrorCode: failCode, Error: failMsg}, nil
		}
		failCode, failMsg = "", ""
		if st.Wait {
			tctx, cancel := workflow.WithCancel(ctx)
			sel := workflow.NewSelector(ctx)
			var got *EventMessage
			for _, t := range st.Timers {
				name := t.Event
				sel.AddFuture(workflow.NewTimer(tctx, t.After), func(f workflow.Future) {
					if f.Get(ctx, nil) == nil {
						got = &EventMessage{Name: name, Payload: json.RawMessage(`{}`)}
					}
				})
			}
			signalled := false
			sel.AddReceive(signals, func(c workflow.ReceiveChannel, _ bool) {
				var m EventMessage
				c.Receive(ctx, &m)
				got, signalled = &m, true
			})
			sel.AddReceive(moved, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil) })
			for snap.State == st.Name {
				got, signalled = nil, false
				sel.Select(ctx)
				if got == nil {
					continue
				}
				if why := def.CallerRefusal(snap.State, got.Name); why != "" && signalled {
					err := runtime.RefuseCaller(def.Type, def.Version, snap.State, got.Name, why)
					logger.Warn("event refused", "state", snap.State, "event", got.Name, "error", err.Error())
					snap.Refused = append(snap.Refused, got.Name+": "+err.Error())
					continue
				}
				if err := fire(*got); err != nil {
					logger.Warn("event refused", "state", snap.State, "event", got.Name, "error", err.Error())
					snap.Refused = append(snap.Refused, got.Name+": "+err.Error())
				}
			}
			cancel()
			continue
		}
		actx, cancelActivity := workflow.WithCancel(workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			StartToCloseTimeout: DefaultActivityTimeout,
			RetryPolicy:         RetryPolicy(st.Retry),
		}))
		var out EventMessage
		var aerr error
		done := false
		sel := workflow.NewSelector(ctx)
		sel.AddFuture(workflow.ExecuteActivity(actx, ActivityName(def.Type), handleInput{Start: in, Type: def.Type, Version: def.Version, State: st.Name, Events: slices.Clone(events)}),
			func(f workflow.Future) { aerr, done = f.Get(ctx, &out), true })
		sel.AddReceive(moved, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil) })
		for !done && snap.State == st.Name {
			sel.Select(ctx)
		}
		if snap.State != st.Name {
			// An update moved the run while its handler ran: the handler's
			// work is cancelled and its event dropped, as the PostgreSQL
			// engine refuses a handler's transition after a signal.
			cancelActivity()
			continue
		}
		if aerr != nil {
			if st.OnExhausted == "" {
				return Result{Snapshot: snap}, fmt.Errorf("%s: state %s: %w", def.Type, st.Name, aerr)
			}
			out = EventMessage{Name: st.OnExhausted, Payload: json.RawMessage(`{}`)}
			failCode, failMsg = "HANDLER_ERROR", aerr.Error()
			var ae *temporal.ApplicationError
			if errors.As(aerr, &ae) {
				failCode, failMsg = ae.Type(), ae.Message()
			}
		}
		if err := fire(out); err != nil {
			return Result{Snapshot: snap}, temporal.NewNonRetryableApplicationError(err.Error(), "ILLEGAL_TRANSITION", err)
		}
	}
}

// Signal sends event ev to the workflow workflowID, from any process.
func Signal(ctx context.Context, c client.Client, workflowID string, ev runtime.Event) error {
	raw, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("temporal: signal %s to %s: %w", ev.EventName(), workflowID, err)
	}
	if err := c.SignalWorkflow(ctx, workflowID, "", SignalName, EventMessage{Name: ev.EventName(), Payload: raw}); err != nil {
		return fmt.Errorf("temporal: signal %s to %s: %w", ev.EventName(), workflowID, err)
	}
	return nil
}

// RefusedError is an event that Send's run did not take. It matches
// runtime.ErrSignalRefused (errors.Is), as the PostgreSQL engine's
// workflows report a refused signal (compliance.ErrSignalRefused is that
// error), and the sentinel of the cause, Err: runtime.ErrRunFinished for a
// finished run, runtime.ErrIllegalTransition or runtime.ErrGuardRejected
// for an event the state's table or guards refuse, runtime.ErrNotCallerEvent
// for an event callers may not send (a timer's, or the event a driven
// state's handler returns; see runtime.Definition.CallerRefusal),
// runtime.ErrUnknownEvent
// for an event that does not decode.
type RefusedError struct {
	// WorkflowID and Event name the run and the refused event.
	WorkflowID string
	Event      string
	// State is the run's state when it refused the event.
	State string
	// Reason says why, in the workflow's words.
	Reason string
	// Err is the cause's sentinel.
	Err error
}

// Error implements error.
func (e *RefusedError) Error() string {
	return fmt.Sprintf("temporal: send %s to %s: %v: %s", e.Event, e.WorkflowID, runtime.ErrSignalRefused, e.Reason)
}

// Unwrap returns runtime.ErrSignalRefused and the cause's sentinel.
func (e *RefusedError) Unwrap() []error { return []error{runtime.ErrSignalRefused, e.Err} }

// Send fires event ev on workflow workflowID, from any process, as the
// update UpdateName, and returns the run's snapshot once the run took it.
// Unlike Signal, which the workflow buffers and may refuse without the
// sender knowing, the workflow checks ev against its current state first
// (the update's validator, which writes nothing to the history when it
// refuses): a refused event is a *RefusedError. A run whose workflow has
// closed is refused with runtime.ErrRunFinished and the state and last
// transition of its result.
func Send(ctx context.Context, c client.Client, workflowID string, ev runtime.Event) (Snapshot, error) {
	raw, err := json.Marshal(ev)
	if err != nil {
		return Snapshot{}, fmt.Errorf("temporal: send %s to %s: %w", ev.EventName(), workflowID, err)
	}
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: workflowID, UpdateName: UpdateName,
		Args: []any{EventMessage{Name: ev.EventName(), Payload: raw}}, WaitForStage: client.WorkflowUpdateStageCompleted})
	var snap Snapshot
	if err == nil {
		err = h.Get(ctx, &snap)
	}
	if err == nil {
		return snap, nil
	}
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		var r refusal
		_ = app.Details(&r)
		refused := &RefusedError{WorkflowID: workflowID, Event: ev.EventName(), State: r.State, Reason: app.Message()}
		switch app.Type() {
		case refusedFinished:
			refused.Err = runtime.ErrRunFinished
		case refusedIllegal:
			refused.Err = runtime.ErrIllegalTransition
		case refusedGuards:
			refused.Err = runtime.ErrGuardRejected
		case refusedInternal:
			refused.Err = runtime.ErrNotCallerEvent
		case refusedUnknown:
			refused.Err = runtime.ErrUnknownEvent
		default:
			return Snapshot{}, fmt.Errorf("temporal: send %s to %s: %w", ev.EventName(), workflowID, err)
		}
		return Snapshot{}, refused
	}
	if closed, cerr := finished(ctx, c, workflowID, ev.EventName()); cerr == nil && closed != nil {
		return Snapshot{}, closed
	}
	return Snapshot{}, fmt.Errorf("temporal: send %s to %s: %w", ev.EventName(), workflowID, err)
}

// finished returns the refusal of event to a closed workflow, nil when
// the workflow still runs.
func finished(ctx context.Context, c client.Client, workflowID, event string) (*RefusedError, error) {
	desc, err := c.DescribeWorkflowExecution(ctx, workflowID, "")
	if err != nil {
		return nil, err
	}
	info := desc.GetWorkflowExecutionInfo()
	if info.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return nil, nil
	}
	refused := &RefusedError{WorkflowID: workflowID, Event: event, Err: runtime.ErrRunFinished,
		Reason: "the workflow is closed: " + info.GetStatus().String()}
	var res Result
	if err := c.GetWorkflow(ctx, workflowID, info.GetExecution().GetRunId()).Get(ctx, &res); err == nil {
		refused.State, refused.Reason = res.State, finishedReason(res.Snapshot)
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
// generated package's ParseState), and its snapshot.
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
