package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/internal/diag"
	"github.com/fsmgen/fsmgen/runtime/internal/enginestore"
	"github.com/fsmgen/fsmgen/runtime/internal/pgerr"
	"github.com/fsmgen/fsmgen/runtime/internal/worker"
)

// errMoved reports that the run was moved by someone else (a signal, a
// cancellation) while the session was working on it; the session let its
// lease go and wrote nothing.
var errMoved = errors.New("the run moved under the worker")

// releaseTimeout bounds the writes that give a lease back after the
// session's own context is done.
const releaseTimeout = 10 * time.Second

// recorder records the transitions a driver's Fire makes, through
// enginestore.Advance: fenced by the session's lease when there is one, else by
// the row version alone.
type recorder struct {
	e       *Engine
	reg     *registered
	run     runtime.Run
	lease   *enginestore.Lease
	result  *runtime.Result
	effects *enginestore.Effects
	// sess is the session recording under its lease; nil for Signal and
	// Cancel.
	sess *session
	// notify announces a run the transition makes due at once to idle
	// workers (see enginestore.AdvanceParams.Notify).
	notify bool

	// fired is the timer whose event is fired, for the first transition
	// recorded (see enginestore.AdvanceParams.Fired).
	fired *enginestore.FiredTimer

	t    *runtime.Transition
	adv  enginestore.Advanced
	keep bool
}

var _ runtime.Recorder = (*recorder)(nil)

// Record implements runtime.Recorder.
func (r *recorder) Record(ctx context.Context, t runtime.Transition) error {
	to, ok := r.reg.def.StateOf(t.To)
	if !ok {
		return fmt.Errorf("%w: %s", runtime.ErrUnknownState, t.To)
	}
	p := enginestore.AdvanceParams{Lease: r.lease, RowVersion: r.run.RowVersion, Transition: t, Result: r.result, Effects: r.effects, Notify: r.notify,
		Nested: r.reg.nest != nil, Fired: r.fired}
	// A worker goes on driving the run in a state with a handler; the
	// schedule of the state entered is the store's to set. In a nested
	// machine it keeps the lease in a state that waits too: the driver
	// may record eventless moves after this one, and the session lets
	// the lease go when the run is left waiting.
	p.KeepLease = r.lease != nil && !to.Terminal() && (!to.Wait || r.reg.nest != nil)
	var (
		adv  enginestore.Advanced
		lost bool
		err  error
	)
	if r.sess != nil {
		adv, lost, err = r.sess.advance(ctx, p)
	} else {
		adv, err = r.e.es.Advance(ctx, r.run.ID, p)
	}
	if err != nil {
		return err
	}
	if r.reg.nest != nil && adv.Run.ID == "" {
		// Found in the log after its connection was lost: the timer
		// anchors and history it wrote are read back, best effort (a
		// later claim reads them anyway).
		if run, err := r.e.st.Get(ctx, r.run.ID); err == nil && run.RowVersion == adv.RowVersion {
			adv.Run = run
		}
	}
	r.t, r.adv, r.keep = &t, adv, p.KeepLease && !lost
	if !adv.NextRunAt.IsZero() {
		// A state that waits, due at its first timer.
		r.e.due.add(adv.NextRunAt.Sub(adv.At))
	}
	// The next transition of the same Fire (an eventless move) starts
	// where this one left the run.
	r.run, r.fired, r.effects = r.after(), nil, nil
	if to.Terminal() {
		r.result = nil
	}
	return nil
}

// after returns the run as the recorded transition left it: as the
// statement that wrote it returned it, or else (a transition written in a
// batch, or found in the log after its connection was lost) worked out from
// the run before it and the state entered.
func (r *recorder) after() runtime.Run {
	run := r.run
	if r.t == nil {
		return run
	}
	if r.adv.Run.ID != "" {
		return r.adv.Run
	}
	to, _ := r.reg.def.StateOf(r.t.To)
	run.State, run.Status, run.RowVersion, run.UpdatedAt = r.t.To, to.Status, r.adv.RowVersion, r.adv.At
	if run.Status == "" {
		run.Status = runtime.StatusRunning
	}
	run.StepAttempt, run.LastErrorCode, run.LastError, run.ParkedAt = 1, "", "", time.Time{}
	// The schedule the store set for the state entered (see
	// store.Store.Record): due (since it became due), at the first timer,
	// or none. A transition whose acknowledgement was lost with its
	// connection, and was found in the log, does not know it: it is
	// worked out from the state entered.
	run.NextRunAt = r.adv.NextRunAt
	switch {
	case !run.NextRunAt.IsZero():
	case to.Terminal():
	case !to.Wait:
		run.NextRunAt = r.adv.At
	default:
		if next, ok := to.FirstTimer(); ok {
			run.NextRunAt = r.adv.At.Add(next)
		}
	}
	if !r.keep {
		run.Lease.Owner, run.Lease.ExpiresAt = "", time.Time{}
	}
	return run
}

// timerDue is when a run that has spent elapsed in st is next due for one
// of st's timers: NotDue when st has none.
func timerDue(st runtime.StateSpec, elapsed time.Duration) enginestore.Due {
	next, ok := st.FirstTimer()
	if !ok {
		return enginestore.NotDue
	}
	return enginestore.DueIn(next - elapsed)
}

// effects collects what a handler asks of the runtime besides its event.
type effects struct {
	mu       sync.Mutex
	steps    []enginestore.StepEffect
	messages []enginestore.MessageEffect
	starts   []enginestore.StartEffect
	txs      []enginestore.TxFunc
	output   any
	cost     float64
	result   bool
	code     string
	detail   string
}

var _ runtime.Effects = (*effects)(nil)

// LogStep implements runtime.Effects.
func (f *effects) LogStep(name string, payload any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.steps = append(f.steps, enginestore.StepEffect{Name: name, Payload: payload})
}

// Emit implements runtime.Effects.
func (f *effects) Emit(topic string, payload any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.messages = append(f.messages, enginestore.MessageEffect{Topic: topic, Payload: payload})
}

// Enqueue implements runtime.Effects.
func (f *effects) Enqueue(workflowType, idempotencyKey string, input any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.starts = append(f.starts, enginestore.StartEffect{Type: workflowType, IdempotencyKey: idempotencyKey, Input: input})
}

// SetResult implements runtime.Effects.
func (f *effects) SetResult(output any, costUSD float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.output, f.cost, f.result = output, costUSD, true
}

// SetError implements runtime.Effects.
func (f *effects) SetError(code, detail string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.code, f.detail, f.result = code, detail, true
}

// StartChild implements runtime.StartChild: the child run is started in
// the same transaction as the transition that the calling handler
// returns; the parent stays parked in the wait state that transition
// leads to, unclaimed, until the child's terminal transition makes it
// due, and the worker that claims it fires c.Event. If the parent's
// transition is not recorded, no child is started.
func (f *effects) StartChild(c runtime.Child) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.starts = append(f.starts, enginestore.StartEffect{Type: c.Type, IdempotencyKey: c.IdempotencyKey, Input: c.Input, ParentEvent: c.Event})
	return nil
}

// Committed identifies the transition in whose transaction an InTx
// function is called.
type Committed struct {
	// RunID is the run that moved.
	RunID string
	// RowVersion is the run's row version after the transition.
	RowVersion int64
	// At is when the run moved, by the store's clock (the database's unless
	// the store was made with store.WithClock).
	At time.Time
}

// InTx asks the engine to call fn in the transaction of the transition
// that the calling handler returns, after the run has moved and before the
// transaction commits: what fn writes with tx commits with the transition
// or not at all, and an error from fn refuses the transition (the handler's
// try fails). Functions run in the order they were given. fn must not
// keep tx. A handler called outside the engine gets runtime.ErrNoEngine.
func InTx(run *runtime.Run, fn func(ctx context.Context, tx pgx.Tx, c Committed) error) error {
	f, ok := run.Effects.(*effects)
	if !ok {
		return fmt.Errorf("engine: in transaction of run %s: %w", diag.Short(run.ID), runtime.ErrNoEngine)
	}
	if fn == nil {
		return fmt.Errorf("engine: in transaction of run %s: %w: nil function", diag.Short(run.ID), runtime.ErrInvalidInput)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.txs = append(f.txs, func(ctx context.Context, tx pgx.Tx, m enginestore.Moved) error {
		return fn(ctx, tx, Committed{RunID: m.RunID, RowVersion: m.RowVersion, At: m.At})
	})
	return nil
}

// build turns the collected effects into the store's, consulting the
// policy functions of the types started, and the result record.
func (f *effects) build(ctx context.Context, e *Engine, run runtime.Run) (*enginestore.Effects, *runtime.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := &enginestore.Effects{Steps: f.steps, Messages: f.messages, Starts: f.starts, Tx: f.txs}
	for i, s := range out.Starts {
		e.mu.RLock()
		r := e.kinds[enginestore.Kind{Type: s.Type, Version: e.latest[s.Type]}]
		e.mu.RUnlock()
		if r == nil || r.policy == nil {
			continue
		}
		snap, err := callPolicy(ctx, r, runtime.StartRequest{Type: s.Type, Version: r.def.Version, IdempotencyKey: s.IdempotencyKey,
			Owner: run.Owner, Input: s.Input})
		if err != nil {
			return nil, nil, fmt.Errorf("%w: start %s: %w", runtime.ErrPolicy, diag.Short(s.Type), err)
		}
		out.Starts[i].Policy = snap
	}
	var res *runtime.Result
	if f.result {
		res = &runtime.Result{CostUSD: f.cost, ErrorCode: f.code, ErrorDetail: f.detail}
		if f.output != nil {
			raw, err := json.Marshal(f.output)
			if err != nil {
				return nil, nil, fmt.Errorf("%w: result output of type %T: %w", runtime.ErrPayload, f.output, err)
			}
			res.Output = raw
		}
	}
	return out, res, nil
}

// session is one worker's hold on one claimed run.
type session struct {
	e     *Engine
	reg   *registered
	run   runtime.Run
	lease enginestore.Lease
	held  bool
	// firing is the timer whose event the next fire fires (a nested
	// machine's).
	firing *enginestore.FiredTimer
	// leaseUntil is when the lease expires unless extended, by the local
	// clock: how long the session's statements are tried again after lost
	// connections.
	leaseUntil time.Time
	// now is the database's time of the last claim or transition.
	now    time.Time
	events []runtime.Event
	loaded bool
	// claimed holds the events the claim read with the run, when it could
	// (see enginestore.Claim.Events); loadEvents decodes them rather than
	// reading them again.
	claimed   []enginestore.LoggedEvent
	fromClaim bool
	// stop closes when no new handler may start; hbase is the handlers'
	// context, cancelled to abandon them.
	stop  <-chan struct{}
	hbase context.Context
	// handling, when not nil, counts Work's sessions inside a handler.
	handling *atomic.Int32
	// called is set while a handler has been called under the lease and
	// no outcome of that call (a transition, a retry, a parking) is
	// written: a session that gives its lease up then gives it up as
	// interrupted, so that the try is counted and logged.
	called bool
	// traceParent is the trace context stored with the run (see
	// TraceContext).
	traceParent string
}

// drive drives a claimed run until it is terminal, waits, is parked or
// scheduled for a retry, the lease is lost, or stop closes. It returns the
// run as the session last saw it.
func (e *Engine) drive(c enginestore.Claim, stop <-chan struct{}, hbase context.Context, handling *atomic.Int32) (runtime.Run, error) {
	s := &session{e: e, handling: handling, run: c.Run, lease: c.Lease, held: true, now: c.Now, stop: stop, hbase: hbase, leaseUntil: time.Now().Add(e.cfg.Lease),
		claimed: c.Events, fromClaim: c.EventsRead, traceParent: c.TraceParent}
	s.reg = e.lookup(c.Run.Type, c.Run.Version)
	if s.reg == nil {
		s.release(enginestore.KeepDue)
		return s.run, runErr("drive", c.Run.ID, s.e.notRegistered(c.Run.Type, c.Run.Version))
	}
	err := s.driveSession()
	if s.held {
		// Left with the lease in hand: a stop, an abandoned handler, an
		// outcome that could not be written for as long as the lease
		// held. The run is due again at once, for another worker; a
		// handler's try whose outcome is not written is interrupted.
		if s.called {
			s.interrupt()
		} else {
			s.release(enginestore.DueIn(0))
		}
		e.notify(context.Background(), s.run.Type)
	}
	return s.run, err
}

func (s *session) loop() error {
	ctx := s.hbase
	for {
		if err := ctx.Err(); err != nil {
			return runErr("drive", s.run.ID, err)
		}
		st, ok := s.reg.def.StateOf(s.run.State)
		if !ok {
			return s.park(ctx, CodeNotDriven, fmt.Sprintf("state %q is not a state of %s v%d", s.run.State, s.run.Type, s.run.Version))
		}
		if st.Terminal() {
			s.release(enginestore.KeepDue)
			return nil
		}
		if s.reg.nest != nil && s.reg.nest.Eventless(s.run.State) {
			// A run left in a leaf with eventless rows (its worker died
			// between two moves, or they were not enabled then) takes
			// them before anything else.
			if moved, err := s.settle(ctx, st); moved || err != nil {
				if err != nil || !s.held {
					return err
				}
				continue
			}
		}
		if fired, err := s.fireDueTimer(ctx, st); fired || err != nil {
			if err != nil || !s.held {
				return err
			}
			continue
		}
		if st.Wait {
			fired, err := s.deliverChild(ctx)
			if err != nil || (fired && !s.held) {
				return err
			}
			if fired {
				continue
			}
			if s.reg.nest != nil {
				due := enginestore.NotDue
				if t, ok := nextTimer(s.reg, s.run); ok {
					due = enginestore.DueIn(t.due.Sub(s.now))
				}
				s.release(due)
				return nil
			}
			s.release(timerDue(st, s.now.Sub(s.run.UpdatedAt)))
			return nil
		}
		st = s.reg.def.Driven(st)
		pol := policyOf(st, s.run.Policy)
		if s.run.StepAttempt > max(pol.MaxAttempts, s.e.cfg.RecoveryLimit) {
			if err := s.exhausted(ctx, st, CodeLeaseExpired,
				fmt.Sprintf("%d tries of %s were interrupted by expired leases", s.run.StepAttempt-1, st.Name)); err != nil || !s.held {
				return err
			}
			continue
		}
		select {
		case <-s.stop:
			return nil // released by drive, due at once
		default:
		}
		if err := s.handle(ctx, st); err != nil || !s.held {
			return err
		}
	}
}

// policyOf returns the state's retry policy for a run with policy
// snapshot snapshot (runtime.RetryPolicy.ForRun: its tries chosen by the
// snapshot within the state's bound): one try when it has none.
func policyOf(st runtime.StateSpec, snapshot json.RawMessage) runtime.RetryPolicy {
	if st.Retry == nil {
		return runtime.RetryPolicy{MaxAttempts: 1}
	}
	return st.Retry.ForRun(snapshot)
}

// handle calls the state's handler once and records what came of it.
func (s *session) handle(ctx context.Context, st runtime.StateSpec) error {
	if err := s.loadEvents(ctx); err != nil {
		return err
	}
	rt := handlerRun(s.run)
	rt.Events = s.events
	rt.TryKey = enginestore.TryKey(s.run.ID, s.lease.Epoch, s.run.RowVersion)
	eff := &effects{}
	rt.Effects = eff

	s.called = true
	hctx, cancel := context.WithCancelCause(ctx)
	stopHeartbeat := s.heartbeat(hctx, cancel)
	if s.handling != nil {
		s.handling.Add(1)
	}
	ev, herr := s.callHandler(hctx, &rt, st.Name)
	if s.handling != nil {
		s.handling.Add(-1)
	}
	stopHeartbeat()
	cause := context.Cause(hctx)
	cancel(nil)

	if cause != nil && errors.Is(cause, runtime.ErrLeaseLost) {
		s.held = false
		return cause
	}
	if err := ctx.Err(); err != nil {
		return runErr("drive", s.run.ID, fmt.Errorf("handler of %s abandoned: %w", st.Name, err))
	}
	if herr != nil {
		if errors.Is(herr, runtime.ErrNotDriven) {
			return s.park(ctx, CodeNotDriven, herr.Error())
		}
		if errors.Is(herr, runtime.ErrNoRetry) {
			// Retried by a policy of its own (an activity's), which gave up.
			return s.exhausted(ctx, st, codeOf(herr, CodeHandlerError), errorDetail(herr))
		}
		return s.fail(ctx, st, codeOf(herr, CodeHandlerError), errorDetail(herr))
	}
	if ev == nil {
		return s.fail(ctx, st, CodeHandlerError, fmt.Sprintf("the handler of %s returned no event and no error", st.Name))
	}
	effs, res, err := eff.build(ctx, s.e, s.run)
	if err != nil {
		if invalidInput(err) {
			// A result output that does not encode: it would on no try.
			return s.exhausted(ctx, st, CodeInvalidInput, errorDetail(err))
		}
		return s.fail(ctx, st, codeOf(err, CodeHandlerError), errorDetail(err))
	}
	return s.fireOrFail(ctx, st, ev, res, effs)
}

// codeOf returns the code of a failure: CodePanic for a panic, else the
// code attached with runtime.WithCode, else fallback.
func codeOf(err error, fallback string) string {
	if errors.Is(err, runtime.ErrPanic) {
		return CodePanic
	}
	if code := runtime.ErrorCode(err); code != "" {
		return code
	}
	return fallback
}

// loadEvents reads and decodes, once per session, the events recorded in
// the run's current attempt, which handlers and guards see as run.Events:
// those the claim read with the run, or else from the log.
func (s *session) loadEvents(ctx context.Context) error {
	if s.loaded {
		return nil
	}
	if s.fromClaim {
		s.events, s.loaded, s.claimed = s.e.decodeEvents(s.reg, s.run, s.claimed), true, nil
		return nil
	}
	events, err := retried(ctx, s.e, s.leaseUntil, "attempt events", s.run.ID, func() ([]runtime.Event, error) {
		return s.e.attemptEvents(ctx, s.reg, s.run)
	})
	if err != nil {
		return err
	}
	s.events, s.loaded = events, true
	return nil
}

// attemptEvents reads and decodes the events recorded in run's current
// attempt; one that no longer decodes is left out, with a warning.
func (e *Engine) attemptEvents(ctx context.Context, reg *registered, run runtime.Run) ([]runtime.Event, error) {
	logged, err := e.es.AttemptEvents(ctx, run.ID, run.Attempt)
	if err != nil {
		return nil, err
	}
	return e.decodeEvents(reg, run, logged), nil
}

// decodeEvents decodes the logged events of run; one that no longer
// decodes is left out, with a warning.
func (e *Engine) decodeEvents(reg *registered, run runtime.Run, logged []enginestore.LoggedEvent) []runtime.Event {
	var events []runtime.Event
	for _, l := range logged {
		if l.Name == "" {
			continue // an eventless move
		}
		ev, err := decodeLogged(reg, l.Name, l.Payload)
		if err != nil {
			e.log.Warn("a logged event does not decode; handlers will not see it", "run", run.ID, "event", l.Name, "err", err)
			continue
		}
		events = append(events, ev)
	}
	return events
}

// decode rebuilds an event with the driver, a panic in it made an error.
func decode(reg *registered, name string, payload []byte) (runtime.Event, error) {
	return protected("Decode of "+name, func() (runtime.Event, error) {
		return reg.driver.Decode(name, payload)
	})
}

// fireEvent applies ev to run in its state through the driver, a panic in
// the driver or a guard made an error.
func fireEvent(ctx context.Context, reg *registered, rt *runtime.Run, state string, ev runtime.Event, rec *recorder) error {
	err := protect(fmt.Sprintf("firing %s in %s", ev.EventName(), state), func() error {
		return reg.driver.Fire(ctx, rt, state, ev, rec)
	})
	if err != nil && rec.t != nil && errors.Is(err, runtime.ErrPanic) {
		// The transition was recorded before the panic: it stands.
		rec.e.log.Error("panic after the transition was recorded", "run", rt.ID, "event", ev.EventName(), "state", state, "err", errorDetail(err))
		return nil
	}
	return err
}

// fireOrFail fires a handler's event; a refused event or a failed write
// counts as a failed try of the state.
func (s *session) fireOrFail(ctx context.Context, st runtime.StateSpec, ev runtime.Event, res *runtime.Result, effs *enginestore.Effects) error {
	err := s.fire(ctx, ev, res, effs)
	if err == nil || s.settled(err) {
		return s.outcome(err)
	}
	if invalidInput(err) {
		// Refused again on every try: not retried.
		return s.exhausted(ctx, st, CodeInvalidInput, errorDetail(err))
	}
	code := CodeHandlerError
	var te *runtime.TransitionError
	if errors.As(err, &te) {
		code = CodeTransitionRefused
	}
	return s.fail(ctx, st, codeOf(err, code), errorDetail(err))
}

// invalidInput reports whether err refuses what a handler gave (its event,
// result or effects) as input the store cannot hold or encode, which no
// further try would change.
func invalidInput(err error) bool {
	return errors.Is(err, runtime.ErrInvalidInput) || errors.Is(err, runtime.ErrPayload)
}

// fire applies ev to the run through the driver, with the session's lease.
func (s *session) fire(ctx context.Context, ev runtime.Event, res *runtime.Result, effs *enginestore.Effects) error {
	if err := s.loadEvents(ctx); err != nil {
		return err
	}
	rt := handlerRun(s.run)
	rt.Events = s.events
	rec := &recorder{e: s.e, reg: s.reg, run: s.run, lease: &s.lease, result: res, effects: effs, sess: s, fired: s.firing}
	s.firing = nil
	err := fireThrough(ctx, s.reg, &rt, s.run.State, ev, rec)
	if rec.t != nil {
		// Recorded, at least the event's transition: a later eventless
		// move that failed is a failed try of the state it left.
		s.run, s.now, s.held, s.called = rec.after(), rec.adv.At, rec.keep, false
		s.events = append(s.events, ev)
	}
	if err != nil {
		return err
	}
	if rec.t == nil {
		return fmt.Errorf("engine: %s: Fire recorded nothing for %s in %s", s.run.Type, ev.EventName(), s.run.State)
	}
	return nil
}

// settle takes the eventless and completion rows enabled in the run's
// leaf, or configuration, through the driver's Settle (runtime.Settler),
// and reports whether it moved the run. A failed move is a failed try of
// the state.
func (s *session) settle(ctx context.Context, st runtime.StateSpec) (bool, error) {
	settler, ok := s.reg.driver.(runtime.Settler)
	if !ok {
		return false, nil
	}
	if err := s.loadEvents(ctx); err != nil {
		return false, err
	}
	rt := handlerRun(s.run)
	rt.Events = s.events
	rec := &recorder{e: s.e, reg: s.reg, run: s.run, lease: &s.lease, sess: s}
	err := protect("settling "+st.Name, func() error { return settler.Settle(ctx, &rt, s.run.State, rec) })
	if rec.t != nil {
		s.run, s.now, s.held, s.called = rec.after(), rec.adv.At, rec.keep, false
	}
	if err == nil || s.settled(err) {
		return rec.t != nil, s.outcome(err)
	}
	return true, s.fail(ctx, st, codeOf(err, CodeHandlerError), errorDetail(err))
}

// settled reports whether a write's error ends the session without
// counting as a failure: the lease is lost, the run moved, or the
// connection was lost for as long as the lease held.
func (s *session) settled(err error) bool {
	return errors.Is(err, runtime.ErrLeaseLost) || errors.Is(err, runtime.ErrConflict) || s.hbase.Err() != nil || pgerr.Unavailable(err)
}

// outcome turns a settled error into the session's result.
func (s *session) outcome(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, runtime.ErrLeaseLost):
		s.held = false
		return err
	case errors.Is(err, runtime.ErrConflict):
		// Someone else moved the run (a signal, a cancellation): let it go,
		// keeping the schedule they set.
		s.release(enginestore.KeepDue)
		return errMoved
	case pgerr.Unavailable(err):
		// The engine's own statement, not the run, failed: drive gives
		// the lease back if it can, and the run is tried again without
		// counting this try.
		return err
	}
	return err
}

// fail handles a failed try: a retry scheduled by the state's policy, or
// exhaustion. The error's code and detail are cleaned for storing first
// (see diag.Sanitize), as for every failure the engine logs.
func (s *session) fail(ctx context.Context, st runtime.StateSpec, code, detail string) error {
	code, detail = diag.Sanitize(code), diag.Sanitize(detail)
	pol := policyOf(st, s.run.Policy)
	n := s.run.StepAttempt
	if pol.Retryable(code, n) {
		delay := pol.Jittered(pol.Delay(n), s.e.cfg.Jitter())
		lostConn, err := s.retry(ctx, "schedule retry", func() error {
			_, err := s.e.es.ScheduleRetry(ctx, s.lease, s.run.RowVersion, n, delay, code, detail)
			return err
		})
		if err != nil && !(lostConn && errors.Is(err, runtime.ErrLeaseLost)) {
			return s.outcome(err)
		}
		s.e.due.add(delay)
		// Scheduled; or a try lost with its connection released the lease
		// (or it expired meanwhile): the run is out of the session's hands.
		s.held, s.called = false, false
		return nil
	}
	return s.exhausted(ctx, st, code, detail)
}

// exhausted fires the state's OnExhausted event with the error in the
// run's result, or parks the run when the state names none (or it is
// refused). The error's code and detail are cleaned first (invalid UTF-8
// and NUL bytes made U+FFFD), so that the log row of the failure is not
// refused for the text of the error.
func (s *session) exhausted(ctx context.Context, st runtime.StateSpec, code, detail string) error {
	code, detail = diag.Sanitize(code), diag.Sanitize(detail)
	if st.OnExhausted != "" {
		ev, res, effs, err := s.exhaustedEvent(ctx, st, code, detail)
		if err == nil {
			err = s.fire(ctx, ev, res, withFailure(effs, s.run.StepAttempt, code, detail))
		}
		if err == nil || s.settled(err) {
			return s.outcome(err)
		}
		detail = fmt.Sprintf("%s; %s not fired: %s", detail, st.OnExhausted, errorDetail(err))
	}
	return s.park(ctx, code, detail)
}

// withFailure adds to effs, first, the log row of the failed try that
// exhausted the state, as ScheduleRetry logs a retried one: so that every
// failure, retried or not, leaves its code and message in the run's log.
func withFailure(effs *enginestore.Effects, stepAttempt int, code, detail string) *enginestore.Effects {
	out := &enginestore.Effects{}
	if effs != nil {
		*out = *effs
	}
	failed := enginestore.StepEffect{Name: "attempt_failed", Payload: map[string]any{
		"step_attempt": stepAttempt, "error_code": code, "error": detail, "retry": false,
	}}
	out.Steps = append([]enginestore.StepEffect{failed}, out.Steps...)
	return out
}

// exhaustedEvent returns the event to fire on an exhausted state, with the
// result and effects to write with it: the registered ExhaustedFunc's, or
// the state's OnExhausted event with an empty payload and the error in the
// result.
func (s *session) exhaustedEvent(ctx context.Context, st runtime.StateSpec, code, detail string) (runtime.Event, *runtime.Result, *enginestore.Effects, error) {
	res := &runtime.Result{ErrorCode: code, ErrorDetail: detail}
	if s.reg.exhausted != nil {
		if err := s.loadEvents(ctx); err != nil {
			return nil, nil, nil, err
		}
		rt := handlerRun(s.run)
		rt.Events = s.events
		eff := &effects{}
		rt.Effects = eff
		ev, err := protected("ExhaustedFunc of "+st.Name, func() (runtime.Event, error) {
			return s.reg.exhausted(ctx, &rt, st.Name, code, detail)
		})
		if err != nil {
			var pe *PanicError
			if !errors.As(err, &pe) {
				err = fmt.Errorf("ExhaustedFunc of %s: %w", st.Name, err)
			}
			return nil, nil, nil, err
		}
		if ev != nil {
			effs, hres, err := eff.build(ctx, s.e, s.run)
			if err != nil {
				return nil, nil, nil, err
			}
			if hres != nil {
				res = hres
			}
			return ev, res, effs, nil
		}
	}
	ev, err := decode(s.reg, st.OnExhausted, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	return ev, res, nil, nil
}

// park parks the run with its error for an operator.
func (s *session) park(ctx context.Context, code, detail string) error {
	lostConn, err := s.retry(ctx, "park", func() error {
		return s.e.es.Park(ctx, s.lease, s.run.RowVersion, code, detail)
	})
	if err != nil {
		if lostConn && errors.Is(err, runtime.ErrLeaseLost) {
			// A try lost with its connection parked the run, or the lease
			// expired meanwhile: the run is out of the session's hands.
			s.held = false
			return nil
		}
		return s.outcome(err)
	}
	s.held, s.called = false, false
	s.run.ParkedAt, s.run.LastErrorCode, s.run.LastError = s.now, code, detail
	s.e.log.Warn("run parked", "run", s.run.ID, "type", s.run.Type, "state", s.run.State, "code", code, "error", detail)
	return nil
}

// fireDueTimer fires the first of the state's timers that is due.
func (s *session) fireDueTimer(ctx context.Context, st runtime.StateSpec) (bool, error) {
	if s.reg.nest != nil {
		return s.fireDueNested(ctx)
	}
	elapsed := s.now.Sub(s.run.UpdatedAt)
	var due *runtime.Timer
	for i, t := range st.Timers {
		if t.After <= elapsed && (due == nil || t.After < due.After) {
			due = &st.Timers[i]
		}
	}
	if due == nil {
		return false, nil
	}
	ev, err := decode(s.reg, due.Event, nil)
	if err == nil {
		err = s.fire(ctx, ev, nil, nil)
		if err == nil || s.settled(err) {
			return true, s.outcome(err)
		}
	}
	return true, s.park(ctx, codeOf(err, CodeTransitionRefused), fmt.Sprintf("timer %s after %v: %s", due.Event, due.After, errorDetail(err)))
}

// deliverChild fires the event of the first finished child not yet
// delivered.
func (s *session) deliverChild(ctx context.Context) (bool, error) {
	children, err := retried(ctx, s.e, s.leaseUntil, "finished children", s.run.ID, func() ([]enginestore.Child, error) {
		return s.e.es.FinishedChildren(ctx, s.run.ID)
	})
	if err != nil || len(children) == 0 {
		return false, err
	}
	c := children[0]
	raw, err := runtime.ChildEnd{RunID: c.ID, Type: c.Type, State: c.State, Status: c.Status, Result: c.Result}.Payload(&s.reg.def, c.Event)
	var ev runtime.Event
	if err == nil {
		ev, err = decode(s.reg, c.Event, raw)
	}
	if err == nil {
		err = s.fire(ctx, ev, nil, &enginestore.Effects{Delivered: []string{c.ID}})
		if err == nil || s.settled(err) {
			return true, s.outcome(err)
		}
	}
	return true, s.park(ctx, codeOf(err, CodeChildEvent), fmt.Sprintf("child %s (%s, %s): event %s: %s", c.ID, c.Type, c.Status, c.Event, errorDetail(err)))
}

// heartbeat extends the lease every Heartbeat while a handler runs, and
// cancels the handler's context with runtime.ErrLeaseLost when the lease is lost,
// or when no extension succeeded for a whole lease (worker.Heartbeat).
func (s *session) heartbeat(ctx context.Context, cancel context.CancelCauseFunc) (stop func()) {
	return worker.Heartbeat{
		Every: s.e.cfg.Heartbeat, Lease: s.e.cfg.Lease,
		Extend: func(ctx context.Context) error {
			began := time.Now()
			l, err := s.e.es.ExtendLease(ctx, s.lease, s.e.cfg.Lease)
			if err == nil {
				s.lease, s.leaseUntil = l, began.Add(s.e.cfg.Lease)
			}
			return err
		},
		Lost: func(err error) bool { return errors.Is(err, runtime.ErrLeaseLost) },
		Expired: func(err error) error {
			return runErr("heartbeat", s.run.ID, fmt.Errorf("%w: no extension succeeded for %v: %w", runtime.ErrLeaseLost, s.e.cfg.Lease, err))
		},
		Beat: func(err error) {
			if s.e.hooks.heartbeat != nil {
				s.e.hooks.heartbeat(s.run.ID, err)
			}
		},
		Warn: func(err error) { s.e.log.Warn("heartbeat failed", "run", s.run.ID, "err", err) },
		Retrying: func(wait time.Duration, err error) {
			s.e.log.Warn("server unavailable; trying again", "op", "extend lease", "run", s.run.ID, "in", wait, "err", err)
		},
	}.Start(ctx, cancel)
}

// release gives the lease back, with a context of its own so that it
// happens also when the session's context is done.
func (s *session) release(due enginestore.Due) {
	s.giveUp("release lease", func(ctx context.Context) error {
		err := s.e.es.ReleaseLease(ctx, s.lease, due)
		if d, ok := due.Delay(); ok && err == nil {
			s.e.due.add(d)
		}
		return err
	})
}

// interrupt gives the lease back after a handler's try whose outcome could
// not be written: the run is due at once, and its next claim counts the try
// and logs it (see enginestore.InterruptLease). If this write is lost too,
// the lease expires, with the same result.
func (s *session) interrupt() {
	s.giveUp("interrupt lease", func(ctx context.Context) error {
		return s.e.es.InterruptLease(ctx, s.lease)
	})
}

// giveUp lets the lease go with op, tried again while the server is
// unavailable, with a context of its own so that it happens also when the
// session's context is done.
func (s *session) giveUp(what string, op func(ctx context.Context) error) {
	if !s.held {
		return
	}
	s.held = false
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.hbase), releaseTimeout)
	defer cancel()
	_, err := s.e.retryConn(ctx, time.Time{}, what, s.run.ID, func() error { return op(ctx) })
	if err != nil && !errors.Is(err, runtime.ErrLeaseLost) {
		s.e.log.Warn("giving the lease up failed; it will expire", "op", what, "run", s.run.ID, "err", err)
	}
}

// handlerRun is run as a handler is told about it: a copy, with the try
// of its state counted from 1, that the handler's call fills with its
// events, try key and effects.
func handlerRun(run runtime.Run) runtime.Run {
	run.StepAttempt = max(run.StepAttempt, 1)
	return run
}

// activeTimer is a timer of one of the run's active states and when it
// falls due.
type activeTimer struct {
	state string
	index int
	timer runtime.Timer
	due   time.Time
}

// nextTimer returns the timer of a nested machine's run that falls due
// first, among those of its leaf and the composites above it, from the
// run's timer anchors. Timers due at the same instant fire in the order
// their states were entered: outermost first, and for one state in
// declaration order (as SCXML queues delayed events). A state without one
// counts from the run's updated_at (it was entered when the attempt
// started, or the run was upgraded). A timer that fired while its state
// stayed active is not counted.
func nextTimer(reg *registered, run runtime.Run) (activeTimer, bool) {
	var next activeTimer
	found := false
	active := reg.nest.Active(run.State)
	for k := len(active) - 1; k >= 0; k-- {
		name := active[k]
		timers := reg.nest.Timers(name)
		if len(timers) == 0 {
			continue
		}
		a, ok := run.TimerAnchors[name]
		if !ok {
			a = runtime.TimerAnchor{At: run.UpdatedAt, After: runtime.TimerDurations(timers, "", nil)}
		}
		for i, t := range timers {
			if i >= len(a.After) || a.After[i] < 0 {
				continue
			}
			due := a.At.Add(a.After[i])
			if !found || due.Before(next.due) {
				next, found = activeTimer{state: name, index: i, timer: t, due: due}, true
			}
		}
	}
	return next, found
}

// fireDueNested fires the timer of a nested machine's run that is due,
// if one is: its event is fired to the run's leaf, from which it bubbles
// to the composite that declares the timer.
func (s *session) fireDueNested(ctx context.Context) (bool, error) {
	due, ok := nextTimer(s.reg, s.run)
	if !ok || due.due.After(s.now) {
		return false, nil
	}
	ev, err := decode(s.reg, due.timer.Event, nil)
	if err == nil {
		s.firing = &enginestore.FiredTimer{State: due.state, Index: due.index}
		err = s.fire(ctx, ev, nil, nil)
		if err == nil || s.settled(err) {
			return true, s.outcome(err)
		}
	}
	return true, s.park(ctx, codeOf(err, CodeTransitionRefused), fmt.Sprintf("timer %s of %s after %v: %s", due.timer.Event, due.state,
		due.due.Sub(s.anchorOf(due.state)), errorDetail(err)))
}

// anchorOf returns when the run entered the active state name, as its
// timers count.
func (s *session) anchorOf(name string) time.Time {
	if a, ok := s.run.TimerAnchors[name]; ok {
		return a.At
	}
	return s.run.UpdatedAt
}
