package temporal

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fsmgen/fsmgen/runtime"
)

// SignalName is the signal channel that carries a machine's events.
const SignalName = "fsm-event"

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
		TenantID: in.TenantID, UserID: in.UserID, Input: in.Input, Events: events}, nil
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

func run(ctx workflow.Context, d runtime.Driver, def runtime.Definition, in Start) (Result, error) {
	snap := Snapshot{State: def.Initial, Status: runtime.StatusRunning, History: []Step{}}
	var events []EventMessage
	if err := workflow.SetQueryHandler(ctx, QueryName, func() (Snapshot, error) { return snap, nil }); err != nil {
		return Result{}, err
	}
	logger := workflow.GetLogger(ctx)
	signals := workflow.GetSignalChannel(ctx, SignalName)

	// fire checks msg against the table and guards in the machine's
	// generated code and moves the state; a refused event leaves it.
	fire := func(msg EventMessage) error {
		ev, err := d.Decode(msg.Name, msg.Payload)
		if err != nil {
			return err
		}
		rt := &runtime.Run{ID: in.RunID, Type: def.Type, Version: def.Version, Input: in.Input, TenantID: in.TenantID, UserID: in.UserID}
		if rt.Events, err = decodeAll(d, events); err != nil {
			return err
		}
		var rec capture
		if err := d.Fire(context.Background(), rt, snap.State, ev, &rec); err != nil {
			return err
		}
		if rec.t == nil {
			return fmt.Errorf("%s: event %s in %s recorded no transition", def.Type, msg.Name, snap.State)
		}
		events = append(events, msg)
		snap.History = append(snap.History, Step{From: rec.t.From, To: rec.t.To, Event: rec.t.Event, At: workflow.Now(ctx)})
		snap.State, snap.Status = rec.t.To, rec.t.Status
		return nil
	}

	for {
		st, ok := def.State(snap.State)
		if !ok {
			return Result{}, temporal.NewNonRetryableApplicationError("unknown state "+snap.State, "UNKNOWN_STATE", nil)
		}
		if st.Terminal() {
			return Result{Snapshot: snap, Outcome: st.Outcome}, nil
		}
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
			sel.AddReceive(signals, func(c workflow.ReceiveChannel, _ bool) {
				var m EventMessage
				c.Receive(ctx, &m)
				got = &m
			})
			for snap.State == st.Name {
				got = nil
				sel.Select(ctx)
				if got == nil {
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
		actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			StartToCloseTimeout: DefaultActivityTimeout,
			RetryPolicy:         RetryPolicy(st.Retry),
		})
		var out EventMessage
		err := workflow.ExecuteActivity(actx, ActivityName(def.Type), handleInput{Start: in, Type: def.Type, Version: def.Version, State: st.Name, Events: slices.Clone(events)}).Get(ctx, &out)
		if err != nil {
			if st.OnExhausted == "" {
				return Result{Snapshot: snap}, fmt.Errorf("%s: state %s: %w", def.Type, st.Name, err)
			}
			out = EventMessage{Name: st.OnExhausted, Payload: json.RawMessage(`{}`)}
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
