package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fsmgen/fsmgen/runtime"
)

// machine is a run inside its workflow: where it is, what it recorded,
// and the timers of its active states. Its moves are the generated
// machine's, through the driver (Fire, Settle, Enter); it adds none of its
// own.
type machine struct {
	ctx    workflow.Context
	d      runtime.Driver
	def    runtime.Definition
	in     Start
	logger log.Logger
	// run is the run as a handler and the guards see it: its state,
	// status, history records and events.
	run runtime.Run
	// msgs are run.Events as they were sent, for the handler activities.
	msgs []EventMessage
	snap Snapshot
	// outcome is the business outcome of the transition that ended the
	// run.
	outcome string
	// anchors hold, for each active state with timers, when it was
	// entered and which of its timers fired since.
	anchors map[string]*anchor
	// timer is the workflow timer of the next timer due, if one runs.
	timer *pendingTimer
	// eventless says the machine has eventless or completion rows.
	eventless bool
	// signals are the signal channels, one per event, in the order of
	// the definition's events.
	signals []signalChannel
	// moved wakes the main loop when an update moved the run.
	moved workflow.Channel
	// result is the result record of the move that ended the run: the
	// error that exhausted the state the run left last, its cancellation,
	// or what the handler whose event ended it set.
	result Effects
	// children are the child runs the run waits for, ended those whose
	// event is not delivered yet, and abandoned the starts of the runs
	// its handlers enqueued; started holds the workflow ids of both.
	children  []*child
	ended     []childEnd
	abandoned []workflow.ChildWorkflowFuture
	started   map[string]bool
	// rec records the run in PostgreSQL (WithRecord); nil without.
	rec *recorder
}

// child is a child run under way: what its handler asked for, and its
// workflow.
type child struct {
	Child
	id     string
	future workflow.ChildWorkflowFuture
}

// childEnd is a child that ended: its result, or the error that ended its
// workflow.
type childEnd struct {
	*child
	res Result
	err error
}

// anchor is when an active state with timers was entered, how long each of
// its timers runs, and which fired since.
type anchor struct {
	at    time.Time
	after []time.Duration
	fired []bool
}

// pendingTimer is a running workflow timer: the state and index of the
// machine's timer it times, when that falls due, and how to stop it.
type pendingTimer struct {
	state  string
	index  int
	event  string
	due    time.Time
	future workflow.Future
	cancel workflow.CancelFunc
}

type signalChannel struct {
	name string
	ch   workflow.ReceiveChannel
}

// runWorkflow is the workflow of d's machine.
func runWorkflow(ctx workflow.Context, d runtime.Driver, def runtime.Definition, in Start, o options) (Result, error) {
	m := &machine{ctx: ctx, d: d, def: def, in: in, logger: workflow.GetLogger(ctx), anchors: map[string]*anchor{},
		moved: workflow.NewBufferedChannel(ctx, 1), started: map[string]bool{}}
	if o.record != nil {
		m.rec = newRecorder(def, in)
		workflow.Go(ctx, m.rec.run)
	}
	m.run = runtime.Run{ID: in.RunID, Type: def.Type, Version: def.Version, IdempotencyKey: in.IdempotencyKey, State: def.Initial, Status: runtime.StatusRunning,
		Attempt: max(in.Attempt, 1), StepAttempt: 1, Owner: runtime.Owner{TenantID: in.TenantID, UserID: in.UserID, CorrelationID: in.CorrelationID},
		Input: in.Input, Policy: in.Policy}
	m.snap = Snapshot{State: def.Initial, Status: runtime.StatusRunning, History: []Step{}}
	m.eventless = slices.ContainsFunc(def.Transitions, func(t runtime.TransitionSpec) bool { return t.Event == "" })
	if err := m.handlers(); err != nil {
		return Result{}, err
	}
	if err := m.begin(); err != nil {
		return Result{Snapshot: m.snap}, err
	}
	for {
		if err := ctx.Err(); err != nil {
			// The workflow was cancelled (not the run: see Cancel).
			m.drain()
			return Result{Snapshot: m.snap}, err
		}
		if m.eventless {
			if err := m.settle(); err != nil {
				return Result{Snapshot: m.snap}, temporal.NewNonRetryableApplicationError(err.Error(), "TRANSITION_REFUSED", err)
			}
		}
		st, ok := def.StateOf(m.run.State)
		if !ok {
			return Result{Snapshot: m.snap}, temporal.NewNonRetryableApplicationError("unknown state "+m.run.State, "UNKNOWN_STATE", nil)
		}
		if st.Terminal() {
			m.drain()
			outcome := st.Outcome
			if outcome == "" {
				outcome = m.outcome
			}
			m.awaitStarts()
			m.rec.wait(ctx)
			return Result{Snapshot: m.snap, Outcome: outcome, ErrorCode: m.result.ErrorCode, Error: m.result.ErrorDetail,
				Output: m.result.Output, CostUSD: m.result.CostUSD}, nil
		}
		m.result = Effects{}
		if st.Wait {
			m.wait(st.Name)
			continue
		}
		if err := m.drive(m.def.Driven(st)); err != nil {
			return Result{Snapshot: m.snap}, err
		}
	}
}

// handlers sets the query handler, one update handler and one signal
// channel per event of the machine, and the cancel update's handler.
func (m *machine) handlers() error {
	if err := workflow.SetQueryHandler(m.ctx, QueryName, func() (Snapshot, error) { return m.snap, nil }); err != nil {
		return err
	}
	for _, e := range m.def.Events {
		name := e.Name
		m.signals = append(m.signals, signalChannel{name: name, ch: workflow.GetSignalChannel(m.ctx, name)})
		err := workflow.SetUpdateHandlerWithOptions(m.ctx, name, func(ctx workflow.Context, msg EventMessage) (Snapshot, error) {
			// The validator accepted msg in this state; nothing ran in
			// between, as the handler is called at once, without blocking.
			msg.Name = name
			if err := m.fire(msg); err != nil {
				return m.snap, temporal.NewNonRetryableApplicationError(err.Error(), refusedIllegal, err)
			}
			m.moved.SendAsync(struct{}{})
			return m.snap, nil
		}, workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, msg EventMessage) error {
			msg.Name = name
			return m.check(msg)
		}})
		if err != nil {
			return err
		}
	}
	return workflow.SetUpdateHandlerWithOptions(m.ctx, CancelUpdate, func(ctx workflow.Context, req CancelRequest) (Snapshot, error) {
		msg, err := m.cancelEvent(req.UserID)
		n := m.rec.queued()
		if err == nil {
			err = m.fire(msg)
		}
		if err != nil {
			return m.snap, temporal.NewNonRetryableApplicationError(err.Error(), refusedNotCancelOK, err)
		}
		m.result = Effects{Result: true, ErrorCode: "CANCELLED", ErrorDetail: "cancelled by user " + req.UserID}
		m.rec.effects(m.def, n, m.result)
		m.moved.SendAsync(struct{}{})
		return m.snap, nil
	}, workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, req CancelRequest) error { return m.checkCancel(req.UserID) }})
}

// begin runs the entry actions of the states the run starts in (the
// driver's runtime.Starter), anchors their timers and upserts the search
// attributes.
func (m *machine) begin() error {
	if starter, ok := m.d.(runtime.Starter); ok && len(m.def.StartActions()) > 0 {
		rt := m.handlerRun()
		if err := starter.Enter(context.Background(), &rt); err != nil {
			return temporal.NewNonRetryableApplicationError(err.Error(), "START_ACTIONS", err)
		}
	}
	now := workflow.Now(m.ctx)
	for _, s := range m.active(m.run.State) {
		m.anchor(s, now, "", nil)
	}
	m.upsert(SearchTenant.ValueSet(m.in.TenantID), SearchKey.ValueSet(m.in.IdempotencyKey))
	return nil
}

// handlerRun is the run as the driver is given it: a copy, with its
// events.
func (m *machine) handlerRun() runtime.Run {
	rt := m.run
	rt.History = maps.Clone(m.run.History)
	rt.Events = slices.Clone(m.run.Events)
	return rt
}

// mover records the machine's moves in the workflow: each transition the
// generated machine records runs its exit and entry actions and moves the
// run.
type mover struct{ m *machine }

// Record implements runtime.Recorder.
func (r mover) Record(ctx context.Context, t runtime.Transition) error {
	to, ok := r.m.def.StateOf(t.To)
	if !ok {
		return fmt.Errorf("%s: %w: %s", r.m.def.Type, runtime.ErrUnknownState, t.To)
	}
	if t.Actions != nil {
		if err := t.Actions(ctx); err != nil {
			return err
		}
	}
	r.m.apply(t, to)
	return nil
}

// dry is a runtime.Recorder that records nothing and runs no actions: it
// tells whether a move would be taken.
type dry struct{ moved bool }

func (r *dry) Record(context.Context, runtime.Transition) error {
	r.moved = true
	return nil
}

// apply moves the run by transition t into the state to.
func (m *machine) apply(t runtime.Transition, to runtime.StateSpec) {
	now := workflow.Now(m.ctx)
	exited, entered := t.Exited, t.Entered
	if len(exited)+len(entered) == 0 && !m.def.Nested() {
		// A flat machine's row exits its source and enters its target.
		exited, entered = []string{t.From}, []string{t.To}
	}
	m.run.History = m.def.RecordHistories(m.run.History, t.From, exited)
	for _, s := range exited {
		delete(m.anchors, s)
	}
	var raw json.RawMessage
	if t.Event != "" {
		raw, _ = json.Marshal(t.Payload)
		m.msgs = append(m.msgs, EventMessage{Name: t.Event, Payload: raw})
		if ev, ok := t.Payload.(runtime.Event); ok {
			m.run.Events = append(m.run.Events, ev)
		}
	}
	for _, s := range entered {
		m.anchor(s, now, t.Event, raw)
	}
	m.rec.transition(m.in, t, raw)
	status := t.Status
	if status == "" {
		status = to.Status
	}
	if status == "" {
		status = runtime.StatusRunning
	}
	m.run.State, m.run.Status = t.To, status
	m.snap.History = append(m.snap.History, Step{From: t.From, To: t.To, Event: t.Event, At: now})
	m.snap.State, m.snap.Status = t.To, status
	if status.Terminal() {
		m.outcome = t.Outcome
	}
	m.upsert()
}

// upsert upserts the run's state and status, and extra, as search
// attributes.
func (m *machine) upsert(extra ...temporal.SearchAttributeUpdate) {
	ups := append([]temporal.SearchAttributeUpdate{SearchState.ValueSet(m.run.State), SearchStatus.ValueSet(string(m.run.Status))}, extra...)
	if err := workflow.UpsertTypedSearchAttributes(m.ctx, ups...); err != nil {
		m.logger.Warn("search attributes not upserted", "state", m.run.State, "error", err.Error())
	}
}

// timersOf returns the timers of the state or composite named name.
func (m *machine) timersOf(name string) []runtime.Timer {
	if s, ok := m.def.State(name); ok {
		return s.Timers
	}
	c, _ := m.def.Composite(name)
	return c.Timers
}

// anchor starts the timers of the state named name, entered at now by the
// event named event with the JSON payload payload ("" and nil when the run
// started there), for the durations runtime.TimerDurations gives.
func (m *machine) anchor(name string, now time.Time, event string, payload []byte) {
	timers := m.timersOf(name)
	if len(timers) == 0 {
		return
	}
	m.anchors[name] = &anchor{at: now, after: runtime.TimerDurations(timers, event, payload), fired: make([]bool, len(timers))}
}

// active returns the active states of a run in state, outermost first:
// for each of its leaves (one per region of a configuration, in region
// order), the composites above it not listed yet, then the leaf.
func (m *machine) active(state string) []string {
	var out []string
	for _, leaf := range m.def.Configuration(state) {
		for _, a := range slices.Backward(m.def.Ancestors(leaf)) {
			if !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
		out = append(out, leaf)
	}
	return out
}

// nextTimer returns the timer of the run's active states that falls due
// first: timers due at the same instant in the order their states were
// entered, outermost first, and for one state in declaration order. A
// timer fires once per entry of its state.
func (m *machine) nextTimer() (pendingTimer, bool) {
	var next pendingTimer
	found := false
	for _, s := range m.active(m.run.State) {
		a, ok := m.anchors[s]
		if !ok {
			continue
		}
		timers := m.timersOf(s)
		for i, d := range a.after {
			if a.fired[i] {
				continue
			}
			due := a.at.Add(d)
			if !found || due.Before(next.due) {
				next, found = pendingTimer{state: s, index: i, event: timers[i].Event, due: due}, true
			}
		}
	}
	return next, found
}

// armTimer keeps a workflow timer running for the next timer due, and
// returns it; nil when no timer of the run's active states is pending. A
// timer already running for it is kept.
func (m *machine) armTimer() *pendingTimer {
	next, ok := m.nextTimer()
	if m.timer != nil && (!ok || m.timer.state != next.state || m.timer.index != next.index || !m.timer.due.Equal(next.due)) {
		m.timer.cancel()
		m.timer = nil
	}
	if !ok || m.timer != nil {
		return m.timer
	}
	tctx, cancel := workflow.WithCancel(m.ctx)
	next.future, next.cancel = workflow.NewTimer(tctx, max(next.due.Sub(workflow.Now(m.ctx)), 0)), cancel
	m.timer = &next
	return m.timer
}

// stopTimer stops the workflow timer, if one runs.
func (m *machine) stopTimer() {
	if m.timer != nil {
		m.timer.cancel()
		m.timer = nil
	}
}

// settle takes the eventless and completion rows enabled where the run
// is, through the driver's Settle.
func (m *machine) settle() error {
	settler, ok := m.d.(runtime.Settler)
	if !ok {
		return nil
	}
	rt := m.handlerRun()
	return settler.Settle(context.Background(), &rt, m.run.State, mover{m})
}

// fire applies msg through the generated machine and moves the run; a
// refused event leaves it.
func (m *machine) fire(msg EventMessage) error {
	ev, err := m.d.Decode(msg.Name, msg.Payload)
	if err != nil {
		return err
	}
	before := len(m.snap.History)
	rt := m.handlerRun()
	err = m.d.Fire(context.Background(), &rt, m.run.State, ev, mover{m})
	if err == nil && len(m.snap.History) == before {
		return fmt.Errorf("%s: event %s in %s recorded no transition", m.def.Type, msg.Name, m.run.State)
	}
	if err != nil && len(m.snap.History) > before {
		// The event's transition stands; a later eventless move failed.
		m.logger.Warn("an eventless move after the event failed", "event", msg.Name, "state", m.run.State, "error", err.Error())
		return nil
	}
	return err
}

// try checks msg against the table and guards in the machine's
// generated code, changing nothing.
func (m *machine) try(msg EventMessage) error {
	ev, err := m.d.Decode(msg.Name, msg.Payload)
	if err != nil {
		return err
	}
	rt := m.handlerRun()
	var rec dry
	err = m.d.Fire(context.Background(), &rt, m.run.State, ev, &rec)
	switch {
	case rec.moved:
		// The event's transition is taken, even when a later eventless
		// move fails (see fire).
		return nil
	case err != nil:
		return err
	}
	return fmt.Errorf("%s: event %s in %s recorded no transition", m.def.Type, msg.Name, m.run.State)
}

// check says whether an event sent from outside would be taken now, as
// the PostgreSQL engine's Signal decides: not by a finished run, not an
// event only the workflow fires, and only as the table and guards allow.
func (m *machine) check(msg EventMessage) error {
	if m.run.Status.Terminal() {
		return refuse(refusedFinished, m.run.State, finishedReason(m.snap))
	}
	if err := m.callerRefusal(msg.Name); err != nil {
		return refuse(refusedInternal, m.run.State, err.Error())
	}
	if err := m.try(msg); err != nil {
		switch {
		case errors.Is(err, runtime.ErrGuardRejected):
			return refuse(refusedGuards, m.run.State, err.Error())
		case errors.Is(err, runtime.ErrIllegalTransition):
			return refuse(refusedIllegal, m.run.State, err.Error())
		default:
			return refuse(refusedUnknown, m.run.State, err.Error())
		}
	}
	return nil
}

// callerRefusal returns the error that refuses the event named name from
// a caller, as the PostgreSQL engine's Signal refuses it: one the machine's
// definition says callers may not send (runtime.Definition.CallerRefusal),
// or the event of a child the run waits for; nil when callers may send it.
func (m *machine) callerRefusal(name string) error {
	if why := m.def.CallerRefusal(m.run.State, name); why != "" {
		return runtime.RefuseCaller(m.def.Type, m.def.Version, m.run.State, name, why)
	}
	if m.childOf(name) {
		return runtime.RefuseCaller(m.def.Type, m.def.Version, m.run.State, name, "fired by the engine when a child run finishes")
	}
	return nil
}

// cancelEvent returns the machine's cancel event fired on behalf of
// userID, with the payload {"userID": userID} when the event declares the
// field, as the PostgreSQL engine's Cancel fires it.
func (m *machine) cancelEvent(userID string) (EventMessage, error) {
	payload := map[string]any{}
	for _, e := range m.def.Events {
		if e.Name == m.def.Cancel && slices.ContainsFunc(e.Fields, func(f runtime.FieldSpec) bool { return f.Name == "userID" }) {
			payload["userID"] = userID
		}
	}
	raw, err := json.Marshal(payload)
	return EventMessage{Name: m.def.Cancel, Payload: raw}, err
}

// checkCancel says whether the run would take its cancellation by userID
// now, as the PostgreSQL engine's Cancel decides.
func (m *machine) checkCancel(userID string) error {
	state := m.run.State
	switch {
	case m.run.Status.Terminal():
		return refuse(refusedFinished, state, fmt.Sprintf("%v: %s", runtime.ErrRunFinished, finishedReason(m.snap)))
	case m.def.Cancel == "":
		return refuse(refusedNoCancel, state, fmt.Sprintf("%v: %s v%d declares none", runtime.ErrNoCancelEvent, m.def.Type, m.def.Version))
	case m.in.UserID == "" || !strings.EqualFold(m.in.UserID, userID):
		return refuse(refusedNotOwner, state, fmt.Sprintf("%v: user %q may not cancel a run of user %q", runtime.ErrNotOwner, userID, m.in.UserID))
	case !m.def.Accepts(state, m.def.Cancel):
		return refuse(refusedNotCancelOK, state, fmt.Sprintf("%v: state %s of %s v%d has no transition on the cancel event %s",
			runtime.ErrNotCancellable, state, m.def.Type, m.def.Version, m.def.Cancel))
	}
	msg, err := m.cancelEvent(userID)
	if err == nil {
		err = m.try(msg)
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, runtime.ErrGuardRejected):
		return refuse(refusedNotOwner, state, fmt.Sprintf("%v: %v", runtime.ErrNotOwner, err))
	default:
		return refuse(refusedNotCancelOK, state, fmt.Sprintf("%v: %v", runtime.ErrNotCancellable, err))
	}
}

// refused logs an event the run refused, in the workflow's log and its
// snapshot.
func (m *machine) refused(name string, err error) {
	m.logger.Warn("event refused", "state", m.run.State, "event", name, "error", err.Error())
	m.snap.Refused = append(m.snap.Refused, name+": "+err.Error())
}

// wait waits in the wait state named state for a signal, an update or a
// timer of its active states, until the run leaves it.
func (m *machine) wait(state string) {
	for m.run.State == state && m.ctx.Err() == nil {
		if len(m.ended) > 0 {
			// The event of the first child that ended, as the PostgreSQL
			// engine delivers them, one at a time in a state that waits.
			c := m.ended[0]
			m.ended = m.ended[1:]
			if err := m.fire(m.childEvent(c)); err != nil {
				m.refused(c.Event, fmt.Errorf("child run %s (%s) ended: %w", c.id, c.Type, err))
			}
			continue
		}
		var got *EventMessage
		signalled, timed := false, false
		sel := workflow.NewSelector(m.ctx)
		for _, c := range m.children {
			sel.AddFuture(c.future, func(f workflow.Future) {
				end := childEnd{child: c}
				end.err = f.Get(m.ctx, &end.res)
				m.ended = append(m.ended, end)
				m.children = slices.DeleteFunc(m.children, func(x *child) bool { return x == c })
			})
		}
		if t := m.armTimer(); t != nil {
			sel.AddFuture(t.future, func(f workflow.Future) {
				if f.Get(m.ctx, nil) == nil {
					got = &EventMessage{Name: t.event, Payload: json.RawMessage(`{}`)}
				}
				timed = true
			})
		}
		for _, s := range m.signals {
			sel.AddReceive(s.ch, func(c workflow.ReceiveChannel, _ bool) {
				var msg EventMessage
				c.Receive(m.ctx, &msg)
				msg.Name = s.name
				got, signalled = &msg, true
			})
		}
		sel.AddReceive(m.moved, func(c workflow.ReceiveChannel, _ bool) { c.Receive(m.ctx, nil) })
		sel.Select(m.ctx)
		if timed {
			if got != nil {
				m.anchors[m.timer.state].fired[m.timer.index] = true
			}
			m.timer = nil
		}
		if got == nil {
			continue
		}
		if err := m.callerRefusal(got.Name); err != nil && signalled {
			m.refused(got.Name, err)
			continue
		}
		if err := m.fire(*got); err != nil {
			m.refused(got.Name, err)
		}
	}
	m.stopTimer()
}

// drive runs the handler of the driven leaf st as its activity, with the
// state's retry policy, and fires the event it returns; when its tries
// are used up, the state's OnExhausted event. An update that moves the
// run meanwhile cancels the activity, whose event is dropped.
func (m *machine) drive(st runtime.StateSpec) error {
	var rp *runtime.RetryPolicy
	if st.Retry != nil {
		p := st.Retry.ForRun(m.in.Policy)
		rp = &p
	}
	// seq counts the run's transitions: an update that moves the run,
	// even to the state it is in, makes the handler's work stale.
	state, seq := m.run.State, len(m.snap.History)
	actx, cancelActivity := workflow.WithCancel(workflow.WithActivityOptions(m.ctx, workflow.ActivityOptions{
		StartToCloseTimeout: DefaultActivityTimeout,
		HeartbeatTimeout:    HeartbeatTimeout,
		RetryPolicy:         RetryPolicy(rp),
	}))
	in := handleInput{Start: m.in, Version: m.def.Version, State: state, Events: slices.Clone(m.msgs), History: maps.Clone(m.run.History)}
	in.Type = m.def.Type
	var out Handled
	var aerr error
	done := false
	sel := workflow.NewSelector(m.ctx)
	sel.AddFuture(workflow.ExecuteActivity(actx, ActivityName(m.def.Type, st.Name), in), func(f workflow.Future) { aerr, done = f.Get(m.ctx, &out), true })
	sel.AddReceive(m.moved, func(c workflow.ReceiveChannel, _ bool) { c.Receive(m.ctx, nil) })
	for !done && len(m.snap.History) == seq {
		sel.Select(m.ctx)
	}
	if len(m.snap.History) != seq {
		// An update moved the run while its handler ran: the handler's
		// work is cancelled and its event dropped, as the PostgreSQL
		// engine refuses a handler's transition after a signal.
		cancelActivity()
		return nil
	}
	ev, effs := out.Event, out.Effects
	if aerr != nil {
		if st.OnExhausted == "" {
			return fmt.Errorf("%s: state %s: %w", m.def.Type, st.Name, aerr)
		}
		ev = EventMessage{Name: st.OnExhausted, Payload: json.RawMessage(`{}`)}
		effs = Effects{Result: true, ErrorCode: "HANDLER_ERROR", ErrorDetail: aerr.Error()}
		var ae *temporal.ApplicationError
		if errors.As(aerr, &ae) {
			effs.ErrorCode, effs.ErrorDetail = ae.Type(), ae.Message()
		}
	}
	n := m.rec.queued()
	if err := m.fire(ev); err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), refusedIllegal, err)
	}
	m.rec.effects(m.def, n, effs)
	if effs.Result {
		m.result = effs
	}
	m.startRuns(effs)
	return nil
}

// childStart is the input of the workflow of a run started by this one,
// with id: owned by the same tenant and user, traced by the same
// correlation id.
func (m *machine) childStart(e Enqueued, id string) Start {
	return Start{RunID: id, Type: e.Type, IdempotencyKey: e.IdempotencyKey, Attempt: 1, Input: e.Input,
		TenantID: m.in.TenantID, UserID: m.in.UserID, CorrelationID: m.in.CorrelationID}
}

// startRuns starts the children a handler asked for as child workflows,
// and the runs it enqueued as child workflows the run abandons when it
// ends, each with the workflow id RunID(type, key), once per id.
func (m *machine) startRuns(effs Effects) {
	for _, c := range effs.Children {
		id := RunID(c.Type, c.IdempotencyKey)
		if m.started[id] {
			continue
		}
		m.started[id] = true
		cctx := workflow.WithChildOptions(m.ctx, workflow.ChildWorkflowOptions{WorkflowID: id})
		m.children = append(m.children, &child{Child: c, id: id, future: workflow.ExecuteChildWorkflow(cctx, c.Type, m.childStart(c.Enqueued, id))})
	}
	for _, e := range effs.Enqueued {
		id := RunID(e.Type, e.IdempotencyKey)
		if m.started[id] {
			continue
		}
		m.started[id] = true
		cctx := workflow.WithChildOptions(m.ctx, workflow.ChildWorkflowOptions{WorkflowID: id, ParentClosePolicy: enumspb.PARENT_CLOSE_POLICY_ABANDON})
		m.abandoned = append(m.abandoned, workflow.ExecuteChildWorkflow(cctx, e.Type, m.childStart(e, id)))
	}
}

// awaitStarts waits until the workflows of the runs the run enqueued have
// started (or were started already, by another run with the same key),
// so that they outlive it.
func (m *machine) awaitStarts() {
	for _, f := range m.abandoned {
		var exec workflow.Execution
		if err := f.GetChildWorkflowExecution().Get(m.ctx, &exec); err != nil {
			m.logger.Warn("an enqueued run did not start", "error", err.Error())
		}
	}
	m.abandoned = nil
}

// childEvent returns the event fired on the run when c ended: its payload
// holds the fields of the event named childRunID, childType, state,
// status, outcome, output, costUSD, errorCode and errorDetail, from the
// child's result, as on the PostgreSQL engine.
func (m *machine) childEvent(c childEnd) EventMessage {
	end := runtime.ChildEnd{RunID: c.id, Type: c.Type, State: c.res.State, Status: c.res.Status, Result: &runtime.Result{
		Outcome: c.res.Outcome, Output: c.res.Output, CostUSD: c.res.CostUSD, ErrorCode: c.res.ErrorCode, ErrorDetail: c.res.Error}}
	if c.err != nil {
		// The child's workflow failed, or was terminated: a failed run.
		end.Status, end.Result.ErrorCode, end.Result.ErrorDetail = runtime.StatusFailed, "CHILD_FAILED", c.err.Error()
		var ae *temporal.ApplicationError
		if errors.As(c.err, &ae) {
			end.Result.ErrorCode, end.Result.ErrorDetail = ae.Type(), ae.Message()
		}
	}
	raw, _ := end.Payload(&m.def, c.Event)
	return EventMessage{Name: c.Event, Payload: raw}
}

// childOf reports whether the event named name is that of a child the
// run waits for: only the workflow fires it.
func (m *machine) childOf(name string) bool {
	return slices.ContainsFunc(m.children, func(c *child) bool { return c.Event == name }) ||
		slices.ContainsFunc(m.ended, func(c childEnd) bool { return c.Event == name })
}

// drain refuses the signals still buffered when the run finished, so that
// none is left unhandled: the events' as sent to a finished run, then
// those of names the machine has no event of, as unknown events.
func (m *machine) drain() {
	for _, s := range m.signals {
		for s.ch.ReceiveAsync(nil) {
			m.refused(s.name, fmt.Errorf("%w: %s", runtime.ErrRunFinished, finishedReason(m.snap)))
		}
	}
	unknown := workflow.GetUnhandledSignalNames(m.ctx)
	slices.Sort(unknown)
	for _, name := range unknown {
		ch := workflow.GetSignalChannel(m.ctx, name)
		for ch.ReceiveAsync(nil) {
			m.refused(name, fmt.Errorf("%s: %w %q", m.def.Type, runtime.ErrUnknownEvent, name))
		}
	}
}
