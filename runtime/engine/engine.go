package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	mathrand "math/rand/v2"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/internal/diag"
	"github.com/fsmgen/fsmgen/runtime/internal/enginestore"
	"github.com/fsmgen/fsmgen/runtime/internal/pgstore"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// Config tunes an Engine. Zero fields take the defaults documented on them;
// New refuses negative ones, a Heartbeat that is not shorter than the
// Lease, and a PollInterval shorter than MinPollInterval.
type Config struct {
	// WorkerID identifies this engine in the leases it takes, readable by
	// an operator: app:host:pid:suffix. Default DefaultWorkerID("fsmgen").
	WorkerID string
	// Lease is how long a claim holds a run without a heartbeat. Default 30s.
	Lease time.Duration
	// Heartbeat is how often a running handler's lease is extended by
	// Lease; it must be shorter than Lease. Default Lease/3.
	Heartbeat time.Duration
	// PollInterval is how often an idle worker looks for due runs when no
	// notification, and no due time of a run this engine scheduled (a
	// retry, a timer), wakes it: with notifications on, a safety net for a
	// notification lost (DefaultPollInterval, 1s, by default); with
	// DisableNotify, how late a new run is picked up at most
	// (DefaultPollIntervalWithoutNotify, 100ms, by default). Each poll is
	// one claim statement, which costs the same however many runs of other
	// types are due. New refuses an interval shorter than
	// MinPollInterval, 1ms.
	PollInterval time.Duration
	// Concurrency is the number of runs Work drives at once. Default 8.
	Concurrency int
	// ShutdownGrace is how long Work takes to return after its context is
	// done, at most: running handlers may finish until its last quarter,
	// or its last second when that is shorter; then their contexts are
	// cancelled and their runs released. A handler that ignores its
	// context is left behind; its lease expires. Only a release still
	// under way when the grace is up is waited for, up to 10s more.
	// Default 10s.
	ShutdownGrace time.Duration
	// RecoveryLimit is the number of tries of a state, interrupted by
	// expired leases, after which the state counts as exhausted even when
	// its retry policy allows fewer tries. Default 3.
	RecoveryLimit int
	// DisableNotify turns LISTEN/NOTIFY off, for connections that cannot
	// LISTEN (a pooler in transaction mode): workers find due runs by
	// polling only, every PollInterval. The notifications the store sends
	// within its own statements (a start, for one) are still sent, and
	// cost nothing more without a listener.
	DisableNotify bool
	// Jitter returns numbers uniform in [0, 1) for retry jitter. Default
	// math/rand/v2's Float64.
	Jitter func() float64
	// Logger receives the engine's reports. Default slog.Default().
	Logger *slog.Logger
	// BatchSize is the most transitions of Work's sessions committed
	// together, in one statement and one transaction (group commit): the
	// transitions recorded while a batch is being written are written by
	// the next one, each with its own compare-and-set of state, row version
	// and lease, and each session is answered after the commit. A
	// transition with effects (steps, messages, started runs, a delivered
	// child) is written alone in its own transaction, as are Signal's and
	// Cancel's. 1 writes every transition alone. Default 64.
	BatchSize int
	// BatchWindow is how long a batch that holds more than one
	// transition, but fewer than BatchSize, waits for more before it is
	// written. A transition that finds no other waiting is written at once,
	// whatever the window. Default 0: no waiting beyond the batch being
	// written.
	BatchWindow time.Duration
	// Middleware wraps the engine's claims, sessions, handler calls and
	// transitions, for tracing, metrics and logging (see Middleware;
	// contrib/otel has OpenTelemetry's). The first is the outermost.
	// Default none: the engine then makes no call for it.
	Middleware []Middleware
}

// The poll intervals New uses when Config.PollInterval is zero, and the
// shortest it accepts.
const (
	DefaultPollInterval              = time.Second
	DefaultPollIntervalWithoutNotify = 100 * time.Millisecond
	MinPollInterval                  = time.Millisecond
)

func (c Config) withDefaults() Config {
	if c.WorkerID == "" {
		c.WorkerID = DefaultWorkerID("fsmgen")
	}
	if c.Lease == 0 {
		c.Lease = 30 * time.Second
	}
	if c.Heartbeat == 0 {
		c.Heartbeat = c.Lease / 3
	}
	if c.PollInterval == 0 {
		c.PollInterval = DefaultPollInterval
		if c.DisableNotify {
			c.PollInterval = DefaultPollIntervalWithoutNotify
		}
	}
	if c.Concurrency == 0 {
		c.Concurrency = 8
	}
	if c.ShutdownGrace == 0 {
		c.ShutdownGrace = 10 * time.Second
	}
	if c.RecoveryLimit == 0 {
		c.RecoveryLimit = 3
	}
	if c.Jitter == nil {
		c.Jitter = mathrand.Float64
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.BatchSize == 0 {
		c.BatchSize = 64
	}
	return c
}

// validate checks a Config with its defaults filled in.
func (c Config) validate(st *store.Store) error {
	var bad []string
	switch {
	case st == nil:
		bad = append(bad, "no store")
	case st.Pool() == nil:
		bad = append(bad, "the store has no pool")
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"lease", c.Lease}, {"heartbeat", c.Heartbeat}, {"poll interval", c.PollInterval}, {"shutdown grace", c.ShutdownGrace}} {
		if d.v < 0 {
			bad = append(bad, fmt.Sprintf("negative %s %v", d.name, d.v))
		}
	}
	if c.PollInterval > 0 && c.PollInterval < MinPollInterval {
		bad = append(bad, fmt.Sprintf("poll interval %v is shorter than %v", c.PollInterval, MinPollInterval))
	}
	if c.Concurrency < 0 {
		bad = append(bad, fmt.Sprintf("negative concurrency %d", c.Concurrency))
	}
	if c.BatchSize < 0 {
		bad = append(bad, fmt.Sprintf("negative batch size %d", c.BatchSize))
	}
	if c.BatchWindow < 0 {
		bad = append(bad, fmt.Sprintf("negative batch window %v", c.BatchWindow))
	}
	if c.RecoveryLimit < 0 {
		bad = append(bad, fmt.Sprintf("negative recovery limit %d", c.RecoveryLimit))
	}
	if c.Lease > 0 && c.Heartbeat >= c.Lease {
		bad = append(bad, fmt.Sprintf("heartbeat %v is not shorter than the lease %v", c.Heartbeat, c.Lease))
	}
	if len(bad) > 0 {
		return fmt.Errorf("engine: %w: %s", runtime.ErrInvalidConfig, strings.Join(bad, "; "))
	}
	return nil
}

// DefaultWorkerID returns a worker id of the form app:host:pid:suffix, the
// suffix random, so that two engines of one process differ.
func DefaultWorkerID(app string) string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s:%s:%d:%s", app, host, os.Getpid(), hex.EncodeToString(b))
}

// PolicyFunc resolves the execution policy of a run about to start. Start
// calls it after the idempotency check, only for a run it is about to
// create or restart, before anything is written; its result is stored on the
// run as the policy snapshot that handlers read in runtime.Run.Policy. An
// error refuses the start: it is returned wrapped in runtime.ErrPolicy.
type PolicyFunc func(ctx context.Context, p runtime.StartRequest) (json.RawMessage, error)

// RegisterOption configures a registered definition.
type RegisterOption func(*registered)

// WithPolicy sets the policy function of the type being registered.
func WithPolicy(f PolicyFunc) RegisterOption {
	return func(r *registered) { r.policy = f }
}

// ExhaustedFunc builds the event fired when the tries of a state are used
// up (its retries, or its recoveries from expired leases), in place of the
// state's OnExhausted event with an empty payload: a workflow gives it the
// payload and the result record that a handler would have given on its
// last try. It is called with the run as a handler sees it (events, policy,
// Effects), the state's name, and the code and detail of the last error
// (with invalid UTF-8 and NUL bytes made U+FFFD).
//
// What it asks of run.Effects is written with the transition, like a
// handler's effects. When it calls neither SetResult nor SetError, the
// run's result gets the last error's code and detail, as without it. When
// it returns a nil event (for a state it leaves to the default), the
// state's OnExhausted event is fired with an empty payload; when it
// returns an error or an event the state refuses, the run is parked.
type ExhaustedFunc func(ctx context.Context, run *runtime.Run, state, code, detail string) (runtime.Event, error)

// WithExhausted sets the function that builds the events fired on
// exhausted states of the type being registered.
func WithExhausted(f ExhaustedFunc) RegisterOption {
	return func(r *registered) { r.exhausted = f }
}

type registered struct {
	driver    runtime.Driver
	def       runtime.Definition
	policy    PolicyFunc
	exhausted ExhaustedFunc
	// fields maps an event to its payload fields.
	fields map[string]map[string]bool
	// defaults holds, by event, the payload defaults of the upgrades
	// into this version; upgraded reports that runs may have moved here
	// from an older version.
	defaults map[string][]runtime.FieldDefault
	upgraded bool
	// nest indexes the hierarchy of a nested machine; nil for a flat one.
	nest *pgstore.Nesting
	// starter runs the entry actions of the states a run starts in; nil
	// when they have none.
	starter runtime.Starter
}

// Engine drives runs of registered machines durably. It is safe for
// concurrent use; one process may run several.
type Engine struct {
	pool *pgxpool.Pool
	st   *store.Store
	es   *enginestore.Store
	cfg  Config
	log  *slog.Logger

	mu     sync.RWMutex
	kinds  map[enginestore.Kind]*registered
	latest map[string]int

	// listening is closed once Work's listener receives notifications;
	// tests wait on it.
	listenReady sync.Once
	listening   chan struct{}

	hooks hooks
	// mw is Config.Middleware as one, nil without any.
	mw Middleware
	// traceParent is the TraceParent of the first middleware that
	// implements TraceContext, nil for none.
	traceParent func(context.Context) string
	// batch commits the sessions' transitions together.
	batch *batcher
	// due holds when the runs this engine scheduled fall due, for Work to
	// wake up then.
	due dueTimes
}

// New returns an engine on st and its pool (give the store
// store.WithClock to stub the clock in tests). The schema must be migrated.
// A Config that cannot work (a negative duration or count, a heartbeat not
// shorter than the lease, a poll interval under MinPollInterval) is refused
// with an error matching runtime.ErrInvalidConfig.
func New(st *store.Store, cfg Config) (*Engine, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(st); err != nil {
		return nil, err
	}
	e := &Engine{
		pool: st.Pool(), st: st, es: enginestore.New(st), cfg: cfg, log: cfg.Logger.With("worker", cfg.WorkerID),
		kinds: make(map[enginestore.Kind]*registered), latest: make(map[string]int),
		listening: make(chan struct{}),
	}
	e.batch = newBatcher(e)
	e.mw = middlewareOf(cfg.Middleware)
	e.traceParent = traceContextOf(cfg.Middleware)
	return e, nil
}

// WorkerID returns the id the engine's leases carry.
func (e *Engine) WorkerID() string { return e.cfg.WorkerID }

// Store returns the engine's store.
func (e *Engine) Store() *store.Store { return e.st }

// Register registers the machine d drives, in the store (see
// store.Store.Register) and with the engine, so that Work, Drive, Signal
// and Cancel can handle its runs. Registering the same (type, version)
// again replaces its driver and options.
func (e *Engine) Register(ctx context.Context, d runtime.Driver, opts ...RegisterOption) error {
	def := d.Definition()
	// A machine whose runs start with entry actions needs a driver that
	// runs them (every generated driver of such a machine does).
	starter, _ := d.(runtime.Starter)
	if acts := def.StartActions(); len(acts) == 0 {
		starter = nil
	} else if starter == nil {
		return fmt.Errorf("%w: machine %s v%d: a run starts with entry actions (%s), and its driver does not run them: it is not a runtime.Starter",
			runtime.ErrInvalidInput, diag.Short(def.Type), def.Version, strings.Join(acts, ", "))
	}
	if err := e.st.Register(ctx, def); err != nil {
		return err
	}
	if err := e.registerUpgrades(ctx, def); err != nil {
		return err
	}
	r := &registered{driver: d, def: def, fields: map[string]map[string]bool{}, nest: pgstore.NestingOf(def), starter: starter}
	r.upgradeDefaults()
	for _, o := range opts {
		o(r)
	}
	for _, ev := range def.Events {
		f := map[string]bool{}
		for _, x := range ev.Fields {
			f[x.Name] = true
		}
		r.fields[ev.Name] = f
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.kinds[enginestore.Kind{Type: def.Type, Version: def.Version}] = r
	if def.Version > e.latest[def.Type] {
		e.latest[def.Type] = def.Version
	}
	return nil
}

func (e *Engine) lookup(typ string, version int) *registered {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.kinds[enginestore.Kind{Type: typ, Version: version}]
}

func (e *Engine) registeredKinds() []enginestore.Kind {
	e.mu.RLock()
	defer e.mu.RUnlock()
	out := make([]enginestore.Kind, 0, len(e.kinds))
	for k := range e.kinds {
		out = append(out, k)
	}
	return out
}

func (e *Engine) handles(typ string) bool {
	e.mu.RLock()
	defer e.mu.RUnlock()
	_, ok := e.latest[typ]
	return ok
}

// Start starts a run idempotently (see store.Store.Start for the branches).
// The idempotency check comes first: a run with the key that succeeded,
// is under way or was cancelled is returned without consulting the type's
// PolicyFunc, so that a policy engine that is down does not refuse a cached
// result. Only a run about to be created, or restarted because it failed,
// has its policy resolved and its snapshot stored; then idle workers are
// notified. A policy error refuses the start and writes nothing.
func (e *Engine) Start(ctx context.Context, p runtime.StartRequest) (runtime.Started, error) {
	op := fmt.Sprintf("start %s/%s", diag.Short(p.Type), diag.Short(p.IdempotencyKey))
	e.mu.RLock()
	if p.Version == 0 {
		p.Version = e.latest[p.Type]
	}
	r := e.kinds[enginestore.Kind{Type: p.Type, Version: p.Version}]
	e.mu.RUnlock()
	if r == nil {
		return runtime.Started{}, runErr(op, "", fmt.Errorf("%w: %s v%d", runtime.ErrNotRegistered, diag.Short(p.Type), p.Version))
	}
	var policyErr error
	if r.policy != nil && p.Policy == nil && p.ResolvePolicy == nil {
		params := p
		p.ResolvePolicy = func(ctx context.Context) (json.RawMessage, error) {
			snap, err := callPolicy(ctx, r, params)
			policyErr = err
			return snap, err
		}
	}
	if r.starter != nil && p.Enter == nil {
		p.Enter = func(ctx context.Context, run runtime.Run) error { return r.starter.Enter(ctx, &run) }
	}
	if e.traceParent != nil {
		if tp := e.traceParent(ctx); tp != "" {
			ctx = store.WithTraceParent(ctx, tp)
		}
	}
	// The store announces a created or restarted run in the statement
	// that writes it.
	res, err := e.st.Start(ctx, p)
	if policyErr != nil {
		return res, runErr(op, "", fmt.Errorf("%w: %w", runtime.ErrPolicy, policyErr))
	}
	if err == nil && res.Run.NextRunAt.After(res.Run.UpdatedAt) {
		// An initial state that waits for a timer: Work wakes up for it.
		e.due.add(res.Run.NextRunAt.Sub(res.Run.UpdatedAt))
	}
	return res, err
}

// callPolicy calls the policy function of r, a panic in it made an error.
func callPolicy(ctx context.Context, r *registered, p runtime.StartRequest) (json.RawMessage, error) {
	return protected("PolicyFunc of "+p.Type, func() (json.RawMessage, error) {
		return r.policy(ctx, p)
	})
}

func (e *Engine) notify(ctx context.Context, typ string) {
	if e.cfg.DisableNotify {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), notifyTimeout)
	defer cancel()
	_, err := e.retryConn(ctx, time.Time{}, "notify", "", func() error { return e.st.Notify(ctx, typ) })
	if err != nil {
		e.log.Warn("notify failed; workers will find the run by polling", "type", typ, "err", err)
	}
}

// Signal fires a caller's event on a run from any process: it is
// checked against the run's current state with the workflow's guards and
// recorded, fenced by the run's row version (not by a lease, which the
// signaller does not hold). A run woken into a state with a handler becomes
// due at once and idle workers are notified; a handler in flight for the
// run's previous state finds its own transition refused. Signalling a
// terminal run fails with runtime.ErrRunFinished; an event the state does not
// accept fails with an error matching runtime.ErrIllegalTransition or
// runtime.ErrGuardRejected. An event callers may not send to the run in
// its state (runtime.Definition.CallerRefusal: the event a driven state's
// handler returns, a timer's or an exhausted state's event, unless the
// machine declares it external; and a child's completion event, see
// StartChild) is refused with an error matching runtime.ErrNotCallerEvent
// that names the machine, the state, the event and who sends it. Each of
// these refusals, and an event the machine does not know, also matches
// runtime.ErrSignalRefused, as on the Temporal backend. The run
// the driver's Fire is given holds the events of the run's current attempt
// (runtime.Run.Events), for guards, when a row from its state on the event
// has a guard; otherwise none are read. Signal sends two statements, a
// read and the write, which returns the run it gives back.
func (e *Engine) Signal(ctx context.Context, runID string, ev runtime.Event) (runtime.Run, error) {
	if ev == nil {
		return runtime.Run{}, runErr("signal", diag.Short(runID), fmt.Errorf("%w: nil event", runtime.ErrInvalidInput))
	}
	name := ev.EventName()
	eventOf := func(runtime.Definition) string { return name }
	return e.command(ctx, CommandInfo{Command: CommandSignal, RunID: runID, Event: name}, func(ctx context.Context) (runtime.Run, error) {
		run, err := e.fireExternal(ctx, "signal "+name, runID, name, eventOf, func(run runtime.Run, r *registered, childEvent bool) (runtime.Event, *runtime.Result, error) {
			if err := signallable(r, run, name, childEvent); err != nil {
				return nil, nil, err
			}
			return ev, nil, nil
		})
		return run, refusedSignal(err)
	})
}

// Cancel cancels a run on behalf of userID, from any process. Only the
// run's owner may: another user gets runtime.ErrNotOwner, and so does the owner
// when the workflow's guards refuse the cancel event. The cancel event is
// the one the machine names in its definition (cancel EVENT in the .fsm
// file); it is fired with the payload {"userID": userID} (fields the event
// does not declare are left out) and checked like any event: with its
// guards, from the run's state, to whichever state its row leads (a
// cancelled final state, or a state that undoes work first). A machine that
// names no cancel event fails with runtime.ErrNoCancelEvent; a run whose state has
// no transition on it fails with runtime.ErrNotCancellable; a terminal run with
// runtime.ErrRunFinished. A handler in flight for the run loses its lease: its
// context is cancelled at its next heartbeat, and its transition, if it
// returns one, is refused, so it writes nothing else.
func (e *Engine) Cancel(ctx context.Context, runID, userID string) (runtime.Run, error) {
	return e.command(ctx, CommandInfo{Command: CommandCancel, RunID: runID, UserID: userID}, func(ctx context.Context) (runtime.Run, error) {
		return e.cancel(ctx, runID, userID)
	})
}

func (e *Engine) cancel(ctx context.Context, runID, userID string) (runtime.Run, error) {
	eventOf := func(d runtime.Definition) string { return d.Cancel }
	return e.fireExternal(ctx, "cancel", runID, "", eventOf, func(run runtime.Run, r *registered, _ bool) (runtime.Event, *runtime.Result, error) {
		name := r.def.Cancel
		if name == "" {
			return nil, nil, fmt.Errorf("%w: %s v%d declares none", runtime.ErrNoCancelEvent, run.Type, run.Version)
		}
		if run.UserID == "" || !strings.EqualFold(run.UserID, userID) {
			return nil, nil, fmt.Errorf("%w: user %q may not cancel a run of user %q", runtime.ErrNotOwner, userID, run.UserID)
		}
		if !r.def.Accepts(run.State, name) {
			return nil, nil, fmt.Errorf("%w: state %s of %s v%d has no transition on the cancel event %s", runtime.ErrNotCancellable, run.State, run.Type, run.Version, name)
		}
		payload := map[string]any{}
		if r.fields[name]["userID"] {
			payload["userID"] = userID
		}
		raw, err := json.Marshal(payload)
		if err != nil {
			return nil, nil, err
		}
		ev, err := r.driver.Decode(name, raw)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: cancel event %s: %w", runtime.ErrPayload, name, err)
		}
		return ev, &runtime.Result{ErrorCode: "CANCELLED", ErrorDetail: "cancelled by user " + userID}, nil
	})
}

// maxExternalRounds bounds the read-fire loop of Signal and Cancel; each
// round ends only because the run moved in between.
const maxExternalRounds = 8

// fireExternal fires, on behalf of a caller, the event build returns for
// the run, in two statements: one read of the run with what build and the
// guards need (enginestore.ReadForEvent: whether a child names childEvent,
// when it is not empty; the attempt's events when the run is in a state
// whose rows on the event eventOf names have guards), and one write that
// returns the run as it left it and announces it to idle workers when it
// made it due at once. A write refused because the run moved meanwhile
// starts again with a new read.
func (e *Engine) fireExternal(ctx context.Context, op, runID, childEvent string, eventOf func(runtime.Definition) string,
	build func(run runtime.Run, r *registered, childEvent bool) (runtime.Event, *runtime.Result, error)) (runtime.Run, error) {
	guarded := e.guarded(eventOf)
	for range maxExternalRounds {
		read, err := e.es.ReadForEvent(ctx, runID, childEvent, guarded)
		run := read.Run
		if err != nil {
			return run, err
		}
		if run.Terminal() {
			return run, runErr(op, runID, fmt.Errorf("%w: it is %s in %s", runtime.ErrRunFinished, run.Status, run.State))
		}
		r := e.lookup(run.Type, run.Version)
		if r == nil {
			return run, runErr(op, runID, e.notRegistered(run.Type, run.Version))
		}
		var ev runtime.Event
		var res *runtime.Result
		err = protect(op, func() error {
			var err error
			ev, res, err = build(run, r, read.ChildEvent)
			return err
		})
		if err != nil {
			return run, runErr(op, runID, err)
		}
		rt := handlerRun(run)
		if read.EventsRead {
			rt.Events = e.decodeEvents(r, run, read.Events)
		}
		rec := &recorder{e: e, reg: r, run: run, result: res, notify: !e.cfg.DisableNotify}
		err = fireThrough(ctx, r, &rt, run.State, ev, rec)
		switch {
		case err == nil:
			return rec.after(), nil
		case rec.t != nil:
			// The event's transition was recorded and a later move (an
			// eventless row of a nested machine) was not: the event
			// stands, and the run, due at once in the state it entered,
			// is taken on by a worker (see Settle).
			e.log.Warn("an eventless move after the event failed; a worker takes it on", "run", runID, "event", ev.EventName(), "state", rec.run.State, "err", errorDetail(err))
			return rec.after(), nil
		case errors.Is(err, runtime.ErrConflict):
			continue // the run moved: decide again
		case op == "cancel" && errors.Is(err, runtime.ErrGuardRejected):
			return run, runErr(op, runID, fmt.Errorf("%w: %w", runtime.ErrNotOwner, err))
		default:
			return run, runErr(op, runID, err)
		}
	}
	return runtime.Run{}, runErr(op, runID, fmt.Errorf("%w: the run moved under %d consecutive tries", runtime.ErrConflict, maxExternalRounds))
}

// Resume makes a parked run due again, with a fresh attempt counter, and
// notifies idle workers.
func (e *Engine) Resume(ctx context.Context, runID string) error {
	return e.st.Resume(ctx, runID)
}

// Wait waits until the run is terminal and returns it, or until ctx is done.
// A run of a machine without final states never is: Wait on it returns only
// when ctx is done, with ctx's error. Wait rides out lost connections (a
// restart of the server): it tries again until ctx is done.
func (e *Engine) Wait(ctx context.Context, runID string) (runtime.Run, error) {
	delay := 5 * time.Millisecond
	for {
		run, err := retried(ctx, e, time.Time{}, "wait", runID, func() (runtime.Run, error) {
			return e.st.Get(ctx, runID)
		})
		if err != nil {
			return run, err
		}
		if run.Terminal() {
			return run, nil
		}
		select {
		case <-ctx.Done():
			return run, runErr("wait", runID, ctx.Err())
		case <-time.After(delay):
		}
		delay = min(2*delay, e.cfg.PollInterval, 250*time.Millisecond)
	}
}
