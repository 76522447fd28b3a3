// Package store persists runs of fsmgen-generated state machines in
// PostgreSQL, so that a machine survives restarts, concurrent writers and
// hand-written SQL without ever holding a state its table forbids.
//
// # Setting up
//
// Migrate the schema once per start (it is idempotent and safe from several
// processes at once), create a Store on a pgx pool, and register every
// machine the process runs:
//
//	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
//	if err != nil { ... }
//	if err := db.Migrate(ctx, pool); err != nil { ... }
//	st := store.New(pool)
//	if err := st.Register(ctx, order.Definition()); err != nil { ... }
//
// Register writes the definition's states and transition table to the
// database, where a trigger checks every change of a run's current_state
// against it, and the whole definition as JSON, with a digest of everything
// in it that changes how runs behave or what is stored for them.
//
// # Versions
//
// A registered (type, version) is immutable. Registering it again with a
// different definition, from this process or another, fails with
// runtime.ErrDefinitionConflict and names what differs:
//
//	store: register order v1: registered definition differs: state WORK: retry 3 in the database, retry 1 here; bump the version
//
// Doc comments and the Go name may change freely; states, outcomes, wait
// flags, retry policies, exhausted events, timers, event fields, external
// flags, the cancel event and the transition rows (guards and order
// included) may not. To ship a changed machine:
//
//  1. bump the version in the .fsm file and keep the old version's machine
//     beside it in the same file, renamed (OrderV1, with the same type and
//     version 1): go generate writes a package for each;
//  2. declare in the new version how live runs of the old one move to it,
//     "upgrade from 1 { ... }", or that they drain, "upgrade from 1 drain"
//     (see package dsl); fsmgen check proves that no run is stranded;
//  3. register both versions in every process that drives runs: a run
//     follows the version it was started with, new runs start on the
//     latest (engine.Engine.Start), and the new version's Definition
//     carries its upgrades, which the engine registers (RegisterUpgrade);
//  4. PlanUpgrade counts the live runs each rule would move and lists
//     those it cannot; Upgrade moves them, each in a transaction of its
//     own, with a log row of kind KindUpgraded, checked by the database
//     against the registered upgrade (fsmctl versions plan and upgrade);
//  5. when Versions shows no live run of the old version, stop registering
//     it (engine.Engine.Deregister refuses while runs of it live) and
//     delete its machine block. Its definition stays in the database, for
//     the history of its runs.
//
// Rolling deploys follow from this: a process of the old release registers
// only v1 and keeps driving v1 runs; a process of the new release registers
// both and drives either. Upgrade the runs once every process runs the new
// release.
//
// An upgraded run keeps its id, key, attempt, input and log. Its schedule
// follows its new state: a retry under way in a state kept by name keeps
// its due time and its count of tries; a driven state is due at once; a
// wait state's timers count from the run's entry into its old state
// (timers keep) or from the upgrade (timers restart). A parked run stays
// parked. The events it carries from the old version are decoded with the
// new version's types: the engine fills the fields the upgrade gives a
// default for, and drops the fields the new version no longer has.
//
// # Starting a run
//
// Start is idempotent per (type, idempotency key), with the branches of the
// platform's contract, told apart by runtime.Started.Outcome:
//
//	res, err := st.Start(ctx, runtime.StartRequest{
//		Type: "order", Version: 1, IdempotencyKey: cmd.Key, Owner: runtime.Owner{TenantID: cmd.Tenant}, Input: cmd,
//	})
//	switch res.Outcome {
//	case runtime.StartCreated, runtime.StartRestarted: // drive res.Run
//	case runtime.StartRunning:   // already under way; res.ETA
//	case runtime.StartCached:    // succeeded before; res.Run.Result
//	case runtime.StartCancelled: // cancelled before; final for this key
//	}
//
// A failed run is restarted in place: the same row and id, attempt_no + 1,
// back in the initial state (of the version given to Start). A cancelled
// run is not restarted: a cancellation is the owner's decision and a
// replayed command must not undo it; start with a new key to run again.
// Any number of concurrent callers with the same key get the same run: the
// unique index decides who inserts, the row version who restarts.
//
// # Driving a run with a generated machine
//
// Load a run, rebuild the machine in the run's state, and give it the
// Recorder bound to the run. The machine records every transition before
// it applies it:
//
//	run, rec, err := st.Load(ctx, id, order.Definition())
//	if err != nil { ... }
//	state, err := order.ParseState(run.State)
//	if err != nil { ... }
//	m := order.New(guards, order.WithState(state), order.WithRecorder(rec))
//	rec.SetResult(runtime.Result{Output: out, CostUSD: cost}) // for the terminal transition
//	err = m.Ship(ctx, order.Ship{...})
//
// Each transition is one statement, one round trip: the run's row moves only
// if it is still in the state and row version the recorder read, and the log
// row (states before and after, event, payload as JSON, attempt, the row
// version produced) is inserted by the same statement. A transition to a
// terminal state stores the result record in that statement too.
//
// A transition with entry or exit actions (runtime.Transition.Actions, a
// nested machine's) is written in a transaction of its own, or the
// caller's with RecordTx: the actions run after the run moved and before
// the commit, Tx(ctx) gives them the transaction, and their error rolls
// the transition back and comes back from Record. A nested machine's
// transition also keeps the run's timer anchors and history
// (runtime.Run.TimerAnchors, History) and logs the states it exited and
// entered (Step.Exited, Entered), in the same statement.
//
// A writer that lost a race gets an error matching runtime.ErrConflict and
// writes nothing: reload the run and decide again. A transition that was
// committed although its caller never heard back (a timeout, a dropped
// connection) can simply be retried with the same row version, event and
// payload: it is recognised as already applied (Recorded.AlreadyApplied)
// rather than reported as a conflict.
//
// Without a generated machine, call Record and Finish with the row version
// you read, or RecordTx, FinishTx, LogStepTx and EmitTx inside your own
// transaction so that a transition, its sub-steps, its outbox messages and
// your own rows commit together:
//
//	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
//		if _, err := st.RecordTx(ctx, tx, run.ID, run.RowVersion, t); err != nil {
//			return err
//		}
//		_, err := st.EmitTx(ctx, tx, run.ID, "order.shipped", evt)
//		return err
//	})
//
// A finished run's log and outbox are closed: LogStep and Emit on a run that
// was succeeded, failed or cancelled before fail with
// runtime.ErrRunFinished, naming the run, its status and its state, and
// write nothing; inside the transaction that finishes the run, as above,
// they still write. The one row a finished run's log takes afterwards is a
// link to another run (LogLink), such as the step engine's rerun of a
// succeeded run.
//
// # Workers
//
// Durable driving (workers that claim due runs under leases, fenced
// transitions, retries with backoff, parking, timers, child runs) is
// package runtime/engine's. Its operations on the tables are internal to
// the runtime; a program drives runs through an engine.Engine, and reaches
// the same runs here to start, read and record them. Resume makes a parked
// run due again, Retry restarts a failed run by its id as Start does by its
// key (same row, attempt_no + 1, initial state), and NotifyChannel is where
// due runs are announced.
//
// A transition recorded here leaves the run scheduled as the engine's own
// do: due at once in a state with a handler, at the first timer of a state
// that waits (counted from the entry into it), and not due in a state that
// waits without a timer or in a terminal state. The schedule comes from the
// registered definition, so a machine rebuilt with Load and moved through
// its Recorder keeps no timer of the state it left. A run that was already
// due when it enters a state with a handler stays due from when it became
// so (Run.NextRunAt does not move): among due runs the claim takes the
// oldest first, and a transition between two running states changes no
// indexed column, which lets PostgreSQL update the row in place (a HOT
// update) without touching any of the table's indexes.
//
// # Reading
//
// Get reads a run, History its whole log oldest first (creation,
// transitions, restarts and logged steps), Outbox its messages (which
// package runtime/relay publishes to a broker), and List selects runs by
// type, states, status, tenant and creation time, a page at a time. Backlog
// counts, per type, the work waiting in the database: due runs no worker has
// claimed and how long the oldest has waited, parked runs, and unpublished
// outbox messages with the age of the oldest; contrib/otel reports it as
// gauges. Execution and Executions read runs with their state history and
// evidence ids (the compliance workflow's WorkflowExecution, from the view
// workflow_executions), one statement per call; a selection by type, status
// and tenant is served by the index workflow_runs_query_idx.
//
// # Errors
//
// Every error about a run is a *runtime.RunError carrying the run's id and
// the operation, wrapping one of package runtime's sentinels
// (runtime.ErrConflict, runtime.ErrTransitionRefused,
// runtime.ErrRunNotFound, runtime.ErrInvalidID,
// runtime.ErrUnknownDefinition, runtime.ErrUnknownState, runtime.ErrPayload,
// runtime.ErrClosed, ...) or a context error; match them with errors.Is. The
// engine's errors wrap the same sentinels. Nothing is half-written: a
// transition that fails, for any reason, leaves the run and its log as they
// were. The database's own guards raise errors with SQLSTATEs of class FS
// (see package db) for SQL that goes around the store: a move the table
// lacks, a change of state without its log row or a log row without its
// change (runtime.ErrUnlogged), status, row version or result set by hand, a
// registered table extended; Translate maps them (and a few others) to the
// same sentinels for code that sends SQL itself.
//
// # Runs another runtime executes
//
// A run that another runtime executes (contrib/temporal's workflows) can
// be recorded here, so that its log, evidence, outbox, activity cache and
// reads are those of a run of the engine: StartExternal records the start
// of each of its attempts, with that runtime's run id, and RecordExternal
// each transition with the steps, messages and result of the handler that
// made it, in one transaction, idempotent by row version (see External).
// The database keeps such runs from the engine: they are never due, and
// any other write of them fails with runtime.ErrOtherExecutor.
//
// # Limits
//
// Every payload (a run's input and policy snapshot, an event's payload, a
// step's or a message's, a result's output) and every key or name a caller
// gives (idempotency key, type, tenant id, step name, topic, outcome) is
// checked before it is written: a JSON document over Limits.MaxPayload
// (1 MiB by default), a key over Limits.MaxKey (512 bytes), invalid UTF-8
// (in raw JSON, or in a Go string of a value, which encoding/json would
// otherwise store with U+FFFD in place of the bad bytes), a \u escape of a
// lone UTF-16 surrogate (\ud800), or a NUL character (a NUL byte in a key,
// \u0000 in a JSON string), none of which PostgreSQL stores as given, fail
// with runtime.ErrInvalidInput and write nothing.
// Set the limits with WithLimits. Error messages quote at most the first 32
// bytes of an input. The engine does not retry an event refused this way.
//
// # Time
//
// Every time the store compares or writes comes from the database's clock.
// WithClock substitutes a fixed or advancing clock, for tests, by passing
// the time as a query parameter; without it that parameter is NULL and the
// queries use now().
package store
