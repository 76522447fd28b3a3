// Package engine drives runs of fsmgen-generated machines durably on
// PostgreSQL: workers claim due runs with leases, call the handler of each
// run's current state, record the transition the handler returns, and go
// on until the run is terminal or waits. A run survives the death of its
// worker, a late write of a worker that lost its lease is refused, failed
// handlers are retried by the state's policy with the next try scheduled in
// the database, and runs can be signalled, cancelled and timed out from any
// process.
//
// # Setting up
//
// Migrate the schema (db.Migrate), make a store on a pool and an engine on
// the store, and register every machine the process drives, with the
// handlers and guards of its workflow:
//
//	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
//	if err != nil { ... }
//	if err := db.Migrate(ctx, pool); err != nil { ... }
//	e, err := engine.New(store.New(pool), engine.Config{
//		WorkerID: engine.DefaultWorkerID("solver"), // app:host:pid:suffix
//	})
//	if err != nil { ... } // runtime.ErrInvalidConfig: a Config that cannot work
//	err = e.Register(ctx, retrieveorgenerate.NewDriver(handlers, guards),
//		engine.WithPolicy(policies.Resolve))
//
// Register records the definition in the database (see store.Register) and
// tells the engine which driver runs it. WithPolicy sets the type's policy
// function, which Start consults first.
//
// # Starting, working, driving inline
//
// Start starts a run idempotently per (type, idempotency key), with the
// branches of store.Start (runtime.StartOutcome: created, cached, running
// with an ETA, restarted after a failure, cancelled). The policy function is
// called before anything is written and its snapshot stored on the run;
// handlers read it in runtime.Run.Policy. A new or restarted run wakes idle
// workers.
//
//	res, err := e.Start(ctx, runtime.StartRequest{
//		Type: "retrieve_or_generate", IdempotencyKey: key,
//		Owner: runtime.Owner{TenantID: tenant, UserID: user}, Input: cmd,
//	})
//
// Work runs workers in the background until its context is done:
//
//	go func() { errc <- e.Work(ctx) }()
//
// Drive drives one run inline, in the caller's goroutine, for a
// synchronous request: it claims the run like a worker (lease and
// heartbeats included) and returns once the run is terminal, waits for an
// event or a timer, or is parked; it sleeps through retries.
//
//	res, err := e.Start(ctx, params)
//	run, err := e.Drive(ctx, res.Run.ID)
//	if run.Terminal() { return run.Result }
//
// Wait waits for a run to finish, whoever drives it (a run of a machine
// without final states never finishes: Wait returns when its context is
// done). RunDue claims and
// drives the runs due now once, in the caller's goroutine: useful in tests
// with a stubbed clock.
//
// # Handlers
//
// The engine calls the generated Handle of the run's current state with a
// runtime.Run: the run's identity, input, policy snapshot, attempt and
// StepAttempt (the try of this state, from 1), the events recorded in this
// attempt, and Effects. What a handler asks of Effects is written in the
// same transaction as the transition it returns, and dropped if that
// transition is not recorded:
//
//   - LogStep: an observable sub-step in the run's log;
//   - Emit: a message in the outbox;
//   - Enqueue: a background run of another type, started idempotently by
//     key, with the run's tenant, user and correlation, without waiting;
//   - SetResult: output and cost for the result record that a transition to
//     a terminal state stores (with status, outcome, attempt, duration and
//     error code and detail).
//
// StartChild starts a child run the same way and parks the parent until
// the child finishes: the handler calls it and returns an event that leads
// to a state that waits; when the child reaches a terminal state, the
// parent becomes due, and the worker that claims it fires the named event
// with a payload made of the child's id, status, outcome, output, cost and
// error (the fields the event declares).
//
// A run started by Enqueue or StartChild follows the latest registered
// version of its type and is scheduled as Engine.Start schedules one: due
// at once when its initial state has a handler, at the first timer when
// that state waits with timers, and never when it waits without one (only
// an event moves it).
//
// A handler returns an event, or an error. An error is a failed try of the
// state: runtime.WithCode gives it a code for the retry policy and the
// run's record.
//
// A panic in a handler, a guard, the driver's Decode or Fire, a PolicyFunc
// or an ExhaustedFunc is recovered. In a worker it is a failed try of the
// run's state with code PANIC (CodePanic), the panic's value and stack in
// the run's log, counted by the state's retry policy like any other error;
// the worker goes on with its other runs. From Start, Signal or Cancel it is
// returned to the caller as a *PanicError, matching runtime.ErrPanic.
//
// # Retries and exhaustion
//
// A state's retry policy (from the .fsm file: a preset such as
// runtime.RetryDatabase, or its own numbers, such as RetrieveOrGenerate's
// 1 s, 4 s, 16 s) decides what follows
// a failed try n: if n < MaxAttempts and the code is not NonRetryable, the
// run is released and due again after InitialInterval * Coefficient^(n-1),
// capped at MaxInterval and spread by ±Jitter, never past MaxInterval.
// The next try is a time in the database (next_run_at), not a sleeping
// goroutine: any worker takes it.
// Every failed try is logged as an attempt_failed step with its code and
// error: a retried one with "retry": true, its delay and due time; the one
// that exhausts the state with "retry": false, written with the event the
// state then fires (or as the parked step), so that the log always tells
// why a run left a state. An error's code and text are logged with invalid
// UTF-8 and NUL bytes made U+FFFD, which PostgreSQL can store. A state
// without a policy is tried once. A state whose policy the .fsm writes
// retry up to N (runtime.RetryPolicy.FromPolicy) is tried as often as the
// run's policy snapshot says, retry_max + 1 times, within N: each run's
// policy chooses its retries, the machine bounds them.
//
// A handler error that matches runtime.ErrNoRetry (runtime.NoRetry) is not
// retried by the state's policy whatever tries are left: it reports work
// that a policy of its own already retried and gave up on, an activity's
// (runtime/activity), so the state is exhausted on that try. Retries of an
// activity run by a state's handler therefore do not multiply.
//
// What a handler gives that the store cannot hold or encode (an event, a
// result output or an effect's payload with a NUL character, over the
// store's size limits, or that does not encode to JSON) is not retried: the
// state is exhausted at once with code INVALID_INPUT (CodeInvalidInput).
//
// When the tries are used up, or the code is not retryable, the state's
// OnExhausted event is fired with an empty payload, and the error's code and
// detail go into the run's result. A state that names no such event parks
// the run: it keeps its state, last_error_code and last_error, is claimed by
// no worker and is logged as parked, until an operator calls Resume (a fresh
// series of tries) or Cancel.
//
// A workflow that wants the exhausted event to carry a payload and a
// result (a fallback answer, say) registers an ExhaustedFunc with
// WithExhausted: the engine calls it with the run, the state and the last
// error instead of firing the empty event, and writes what it asks of
// run.Effects with the transition, as a handler's.
//
// # Leases, fencing and crash recovery
//
// A worker claims due runs with one statement (FOR UPDATE SKIP LOCKED, so
// that concurrent workers never claim the same run) that sets lease_owner to
// its WorkerID, lease_expires_at to the database's now plus Lease, and adds
// one to lease_epoch. While a handler runs, a heartbeat extends the lease
// every Heartbeat. Every write the worker makes under the lease (a
// transition, a retry, a parking, a release) carries the lease's owner and
// epoch and requires the lease to be live, in the same statement as the
// write: a worker whose lease expired or was taken over writes nothing and
// gets runtime.ErrLeaseLost, and its handler's context is cancelled with
// that cause at the next heartbeat.
//
// A run whose worker died is claimed again once its lease has expired (never
// because of the time it has spent in its state), and resumes in its last
// recorded state: the interrupted try counts as a try (step_attempt + 1, a
// lease_expired step in the log), the handler runs again, and its
// transition is recorded once. A state interrupted more than
// max(MaxAttempts, RecoveryLimit) times is exhausted with code
// LEASE_EXPIRED. Handlers should therefore be idempotent, or check what
// their previous try did.
//
// # Tries and try keys
//
// Every call of a handler is a try of its state, and is visible in the
// run's log afterwards: by the transition it chose, its attempt_failed
// step, the parked step, or, when its outcome was never written, a
// lease_expired step. A try is interrupted when its worker dies, when its
// handler is abandoned at shutdown, or when the server cannot take its
// outcome for as long as the lease holds: the session then gives the lease
// up as interrupted (made to expire at once rather than cleared), or the
// lease expires, and the next claim counts the try (step_attempt + 1) and
// logs it, in the claim statement. Lost writes thus never hand a run back
// with the try uncounted. An interrupted try counts against the state's
// MaxAttempts like a failed one (a failing handler gets no more tries for
// the outages it met), but exhausts the state only past
// max(MaxAttempts, RecoveryLimit), so that a handler that succeeds is not
// failed by fewer than RecoveryLimit outages in a row.
//
// runtime.Run.TryKey identifies each call: "<run id>/<lease epoch>/<row
// version>", the epoch of the claim the handler is called under and the
// run's row version at the call. A session calls a handler at most once per
// row version and every claim has an epoch of its own, so no two calls of
// any handler share a key; the lease_expired step of an interrupted try
// names its key ("try_key"). A handler whose side effects must not be
// repeated by the same try dedupes them on the key.
//
// # Lost connections and an unavailable server
//
// The engine's own statements (a claim, a transition, the scheduling of a
// retry, a parking, the extension and the release of a lease, a
// notification, and its reads of a run's events and children) are tried
// again on a new connection when the server cannot serve them: their
// connection is lost or refused, the server is shutting down or starting
// up, or it lacks a resource (SQLSTATE class 08 and class 53, among them
// 53300 too_many_connections, and 57P01, 57P02, 57P03, 57P05; a connection
// refused, reset or closed: one classification, pgerr.Unavailable, for
// every statement). They back off from 10 ms to 1 s for as long as the
// lease holds (a release, for 10 s; a notification, for 2 s), and the
// lease's fencing keeps a late try from writing anything. An unavailable
// server is never counted as a failed try of the handler: a transition
// that committed although its connection was lost is found in the run's
// log, and when the lease runs out first, the try is interrupted (see Tries
// and try keys). Wait and Drive ride out a restart of the server until
// their context is done. Start, Signal and Cancel return the error to
// their caller; a signal whose connection was lost may have been recorded,
// which the run tells.
//
// # Waking workers
//
// A new run, a run woken by a signal, a released run and a parent whose
// child finished are announced with NOTIFY on store.NotifyChannel (a
// start, a signal and a cancellation do so in the statement that writes the
// run); Work LISTENs on a
// connection of its own and claims at once. Notifications are a shortcut
// only: every PollInterval a worker looks for due runs anyway, so runs
// complete with notifications lost or turned off (DisableNotify). The
// interval is DefaultPollInterval (1s) with notifications and
// DefaultPollIntervalWithoutNotify (100ms) without, unless set.
//
// Work that falls due later does not wait for the poll either: an engine
// remembers, by its own clock, when the runs it scheduled fall due (a
// retry's backoff, the first timer of a state a run enters or starts in, a
// lease given back with a delay), and Work wakes up for the earliest of
// them and claims then, so that a `backoff 200ms` retry or an `after
// 500ms` timer starts within a few milliseconds of its due time. Each time
// is taken once the statement that scheduled the run has returned, so the
// claim never comes before the database's due time. Runs that another
// process scheduled are found by the poll, or by this engine's next claim.
// At most 4096 due times are remembered; polling finds the others.
//
// A claim reads each (type, version) the engine drives from an index of
// its own, oldest due first, and brings the events of each run's current
// attempt with it: its cost does not grow with the due runs of types other
// workers drive.
//
// # Signals, cancellation and timers
//
// Signal fires a caller's event on a run from any process, checked by the
// machine's table and guards, fenced by the run's row version (the
// signaller holds no lease). If the run enters a state with a handler it is
// due at once; a handler in flight for the previous state finds its own
// transition refused and writes nothing. Signal refuses, with an error
// matching runtime.ErrNotCallerEvent that names the machine, the state,
// the event and who sends it, the events callers may not send to the run
// in its state (runtime.Definition.CallerRefusal): the event a driven
// state's handler returns, so that no caller pre-empts the handler; the
// events of timers and exhausted states; the completion event of one of
// the run's children. A wait state's events are callers', and so is, in
// every state, an event the machine declares external (a timeout that an
// operator may also trigger, say).
//
// Signal and Cancel send two statements: one read of the run with what
// deciding on the event takes (whether one of its children names the
// event, and the events of its current attempt when a row from its state
// on the event has a guard, which may read them in runtime.Run.Events),
// and one write, the transition, which returns the run as it left it and
// announces it to idle workers when it is due at once. A refused event
// costs the read only.
//
// Cancel cancels a run on behalf of a user by firing the machine's cancel
// event, the one its .fsm file names with cancel EVENT
// (runtime.Definition.Cancel), with the payload {"userID": ...}. It is fired
// like any event: its guards are asked and its row from the run's state
// decides where the run goes, a cancelled final state or a state that undoes
// work first (an order being packed goes to REFUNDING, whose handler
// refunds). A user who does not own the run gets runtime.ErrNotOwner (an
// authorization error), as does an owner whom the workflow's guard
// (UserOwnsRun) refuses; a machine that names no cancel event gives
// runtime.ErrNoCancelEvent, a state without a row on it
// runtime.ErrNotCancellable (naming the run, the state and the event), a
// terminal run runtime.ErrRunFinished. The cancellation releases the run's
// lease, so a handler in flight learns at its next heartbeat or transition
// and writes nothing else.
//
// A state's timers are scheduled in the database when a run enters it: a
// state that waits is due when its first timer is, and the worker that
// claims it then fires the timer's event (FCHA's seven-day authorization
// timeout). Timers count from the run's entry into the state (updated_at;
// for a nested machine, see below).
// The schedule is set by the store in the statement that records the
// transition, from the registered definition, whoever fires the event: a
// worker, Signal, Cancel, a typed handle, or a machine moved outside the
// engine through store.Load and its Recorder. A state with a handler is due
// at once; one that waits without a timer is not due until an event moves
// it; a timer of the state left never fires in the next.
//
// # Nested machines
//
// A nested machine's run is in one leaf; the composite states above it are
// active with it. Its moves are leaf to leaf, each one transition with one
// log row, which names the states it exited (innermost first) and entered
// (outermost first) (store.Step.Exited and Entered; the evidence chain
// covers them). The database checks every move against the registered
// table, where a row to a history is listed once per leaf it may reach.
//
// Timers on composites: the run row keeps, for each active state with
// timers, when the run entered it (runtime.Run.TimerAnchors), written by
// the statement that records each transition. A state that a transition
// neither exits nor enters keeps its anchor, so a composite's timer runs
// while the run moves below it, and an internal row keeps its state's
// timers running; an external self-row exits and re-enters its state and
// restarts them. A run that waits is due at the first timer of its leaf
// and the composites above it, and the worker that claims it fires that
// timer's event to the leaf, from which it bubbles; a timer fires once per
// entry of its state. A timer whose duration comes from an event takes the
// value of the event that entered the state, clamped to its bounds.
//
// History after a crash: the records of the run's history pseudostates
// (runtime.Run.History) are written by the statement that records the
// transition exiting their composite, and handed to the driver's Fire and
// Settle with the run: a worker that takes over the run of a worker that
// died goes back to the recorded state.
//
// The entry actions of the states a run starts in run in the transaction
// that creates or restarts it: Start calls the driver's Enter
// (runtime.Starter) after writing the run and before the commit, so they
// run once per attempt, and their error refuses the start.
//
// Entry and exit actions run in the transition's transaction: the engine's
// recorder calls runtime.Transition.Actions after the run moved and before
// the commit, and Tx gives an action the transaction. An action's error
// rolls the transition back whole (state, anchors, history, log and
// effects): Signal returns it, and in a worker it is a failed try of the
// state, retried by its policy or parked like a handler's error.
//
// Eventless and completion rows are taken by the driver right after the
// transition that enables them, each as a transition of its own. A run
// left in a leaf with such rows (its process died between two moves) is
// due at once, and the worker that claims it takes them first, through the
// driver's Settle (runtime.Settler), before it fires a timer or calls a
// handler.
//
// # Parallel states
//
// A run inside a parallel state is in one leaf of each of its regions and
// persists them in region order joined by "|" (Run.State "Pending|Running";
// see runtime.Definition.Configuration). The driver's Fire and Settle are
// given that configuration, and one step (the rows the regions take on
// one event, at most one each) is one transition, from configuration to
// configuration, with one log row naming every state it exited and
// entered, region by region. The database checks each region's move
// against the registered table (see db/migrations/0016_parallel.sql).
//
// Handlers: the engine calls the handler of the leaf of the first region,
// in region order, that has one (a leaf that neither waits nor is final);
// its event is fired to the configuration as its own transition, and the
// engine looks again from the first region. The run's tries (StepAttempt)
// belong to that leaf: a failing handler is retried by its state's policy,
// and no other region's handler runs until its event moves the run (or its
// tries give up: its OnExhausted event, or the run is parked). A
// configuration whose leaves all wait is due at the first timer of its
// active states: each region's leaf and the composites above it, the
// parallel state and those above it. A move of one region keeps the
// anchors of the others, so a region's timers count from when its own leaf
// was entered. A caller may send the events of the rows of a wait leaf of
// the configuration and those written on the parallel state.
//
// # Typed handles
//
// Every generated package has a typed handle on its durable runs (runs.go)
// over a runtime.Runner, which *Engine is: Runs[In](eng) starts runs with an
// input of type In, fires the machine's events (one method per event callers
// may signal, and Signal for any of them), cancels with the machine's cancel
// event, and reads runs as a Snapshot whose State is the package's State:
//
//	orders := order.Runs[shop.Input](eng)
//	started, err := orders.Start(ctx, "order-1042", shop.Input{TotalCents: 4200},
//		runtime.Owner{TenantID: "acme", UserID: userID}) // started.Outcome
//	o, err := orders.Pay(ctx, started.ID, order.Pay{PaymentRef: ref})
//	if o.State == order.StatePacking { ... }
//	o, err = orders.Cancel(ctx, o.ID, userID)
//
// An event of another machine does not compile. The handle calls the
// engine's Start, Signal, Cancel, Get and Wait, the runtime.Runner
// methods, which take and return runtime's plain types (runtime.Run,
// runtime.Started); call them directly where a machine's type is known
// only at run time.
//
// # Shutdown
//
// When Work's context is done, no new handler starts, and Work returns
// within ShutdownGrace. Running handlers have until its last quarter, or
// its last second when that is shorter, to finish and record their
// transitions; then their contexts are cancelled, their leases given up as
// interrupted (the abandoned try counts as a try) and their runs made due at
// once for other workers (a release still under way when the grace is up is
// waited for, up to 10 s more). A handler that
// ignores its context does not hold Work up: it is left behind when the
// grace is up, its lease is no longer extended, and once the lease has
// expired another worker resumes the run, counting the interrupted try.
// Drive releases its lease when its context is done.
//
// # Middleware: tracing, metrics, logging
//
// Config.Middleware wraps the engine's steps, each in a call that gets the
// step's context and a next function performing it (see Middleware):
// Claim around a claim statement; Drive around a session on one claimed
// run; Handle around a handler call and Transition around the firing of
// an event, both within Drive; Command around a caller's Signal or Cancel,
// in the caller's context, with its Transition inside (a command refused
// before any event is fired, a cancel by a user who does not own the run,
// is seen by Command only). What a middleware puts in the context (a span, a
// logger) reaches the handler, the guards and the store's statements. A
// middleware that implements TraceContext has the engine keep the trace
// context of the span that started each run with the run, and give it to
// every later session on the run (RunTraceParent), so that the sessions of
// a run that waits and resumes elsewhere are linked.
// contrib/otel implements it with OpenTelemetry spans and metrics; a
// logging middleware is a few lines (ExampleMiddleware runs one):
//
//	type logged struct {
//		engine.MiddlewareDefaults
//		log *slog.Logger
//	}
//
//	func (m logged) Handle(ctx context.Context, run *runtime.Run, state string,
//		next func(context.Context) (runtime.Event, error)) (runtime.Event, error) {
//		began := time.Now()
//		ev, err := next(ctx)
//		m.log.InfoContext(ctx, "handler", "run", run.ID, "state", state, "try", run.StepAttempt,
//			"took", time.Since(began), "err", err)
//		return ev, err
//	}
//
//	e, err := engine.New(st, engine.Config{Middleware: []engine.Middleware{logged{log: logger}}})
//
// Middleware observes: what next returns stands, whatever the middleware
// returns, and a panic in a middleware is recovered like one in a handler.
// An engine without middleware makes none of these calls and allocates
// nothing more for them.
//
// # Time
//
// Every time compared or stored comes from the database's clock: leases,
// due times, timers, durations. A store made with store.WithClock
// substitutes a clock of the test's, and the engine follows it.
//
// # Errors
//
// Errors about a run are *RunError values naming the operation and the run
// and wrapping a sentinel (runtime.ErrLeaseLost, runtime.ErrNotOwner,
// runtime.ErrRunFinished, runtime.ErrNotRegistered, runtime.ErrPolicy,
// runtime.ErrNoCancelEvent, runtime.ErrNotCancellable, runtime.ErrNoEngine,
// runtime.ErrPanic) or an error of the machine
// (runtime.ErrIllegalTransition, runtime.ErrGuardRejected); match them with
// errors.Is. Errors of the store (runtime.ErrConflict,
// runtime.ErrRunNotFound, ...) are returned as the store reports them, so
// that a message names one component. New refuses a Config that cannot work
// with runtime.ErrInvalidConfig.
//
// # Versions
//
// One engine drives runs of several versions of a machine: register the
// driver of each (the new version's package and the old one's, kept beside
// it in the same .fsm file). A run follows the version it started with;
// Start without a version starts on the latest registered. Registering a
// version whose Definition declares upgrades from older versions registers
// those upgrades too (store.Store.RegisterUpgrade), once the older version
// is registered in the database; store.Store.Upgrade (fsmctl versions
// upgrade) then moves live runs between versions, and the engine drives each
// on the version it is on, decoding the events it carries from the old
// version with the upgrade's defaults. Deregister stops driving a version,
// and is refused while runs of it are live. A run of a version the engine
// does not drive fails with runtime.ErrNotRegistered, saying whether to keep
// registering the old version or to deploy the new one.
package engine
