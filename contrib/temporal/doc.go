// Package temporal runs fsmgen-generated machines as Temporal workflows,
// with the Go SDK: the engine to grow into when one PostgreSQL is no longer
// enough. A run is the same machine as on the PostgreSQL engine
// (runtime/engine): its moves are made by the generated code, through the
// machine's runtime.Driver, inside the workflow.
//
// # Registering a machine
//
// Register(w, driver) registers, for a machine's runtime.Driver (the
// generated NewDriver with the workflow's handlers, guards and actions),
// with a worker (or the testsuite's environment, or a replayer):
//
//   - one workflow, named by the machine's type (fcha.Type), whose input
//     is a Start: the run's id (the workflow id, by convention), type,
//     idempotency key, attempt, input, policy snapshot and owner;
//   - one activity per driven state (a leaf that neither waits nor is
//     final), named ActivityName(type, state):
//     "nyc-application-compliance.PREQUALIFICATION". It calls the state's
//     handler with the run as the PostgreSQL engine gives it (its events,
//     attempt, owner, input, policy, history records; TryKey is unique per
//     try) and returns the event the handler chose (Handled).
//
// # What the workflow does
//
// The workflow holds the run's state and enforces the machine's table:
//
//   - a state with a handler runs it as its activity, with the state's
//     retry policy as the activity's (initial interval, coefficient,
//     maximum interval, maximum attempts as the run's policy snapshot
//     chooses them, non-retryable codes as error types); the event it
//     returns is fired through the generated machine, guards included;
//     when the tries are used up, the state's OnExhausted event is fired
//     (the Result then carries the error's code and message), or the
//     workflow fails; a handler error matching runtime.ErrNoRetry is not
//     tried again. The activity heartbeats while its handler runs; a try
//     whose worker died is taken as lost after HeartbeatTimeout (10 s)
//     and tried again, as the engine's lease expires. In a parallel state the handler that runs is that of
//     the first region, in region order, whose leaf has one, as on the
//     PostgreSQL engine; each region's handler runs in turn;
//   - a state that waits takes the events sent to it (see below) and runs
//     a workflow timer for the next timer of its active states (FCHA's
//     seven days in CONDITIONAL_OFFER; in a nested machine the timers of
//     the composites above the leaf too, each counted from when its own
//     state was entered, its duration taken from the entering event's
//     field when the .fsm says so; a timer fires once per entry of its
//     state);
//   - eventless and completion rows are taken as the generated machine
//     takes them after each event, and where the run starts (the driver's
//     Settle, runtime.Settler);
//   - a terminal state ends the workflow with a Result.
//
// A run of a machine with parallel states is in a configuration: its
// State is the active leaf of each region joined by "|"
// ("ApiRunning|WorkerWaiting"); an event moves each region that takes it,
// as one transition.
//
// Entry and exit actions, and the entry actions of the states a run
// starts in (runtime.Starter), run inside the workflow, as the generated
// machine calls them while it moves: on every replay of the workflow's
// history too. On Temporal they must be deterministic and make no calls
// out (no I/O, no clock, no randomness); work with effects belongs in
// handlers.
//
// # Sending events
//
// Every event of the machine is an update and a signal, both named by the
// event, with an EventMessage argument. Send fires an event as the update:
// its validator checks the event against the run's current state (the
// machine's table and guards, and not an event only the workflow fires)
// before anything is written to the history, as the PostgreSQL engine's
// Signal does. A refused event is a *RefusedError matching
// runtime.ErrSignalRefused, the error machines/compliance reports for a
// late authorization (compliance.ErrSignalRefused is that error), and the
// cause's sentinel: runtime.ErrRunFinished, runtime.ErrIllegalTransition,
// runtime.ErrGuardRejected, runtime.ErrNotCallerEvent or
// runtime.ErrUnknownEvent (an event whose payload does not decode, or one
// the machine does not have: the workflow has no update of that name). An
// accepted event moves the run before Send returns the run's Snapshot.
// Sent while a driven state's handler runs, an external event the state
// accepts cancels that activity, whose event is dropped, as the PostgreSQL
// engine refuses a handler's transition after a signal.
//
// Signal sends the signal instead: fire-and-forget. The workflow reads an
// event's signal while its run waits; an event the state does not accept,
// or one only the workflow fires (a timer's), is refused and logged in the
// snapshot's Refused, and the run keeps waiting. Signals still buffered
// when the run finishes are refused there as sent to a finished run, so
// that the workflow leaves no signal unhandled.
//
// # Cancelling a run
//
// Cancel sends the update CancelUpdate ("fsm.cancel", a CancelRequest),
// which fires the machine's cancel event (cancel EVENT in the .fsm file)
// as the PostgreSQL engine's Cancel does: with the payload {"userID": ...}
// when the event declares the field, checked with the machine's guards,
// only for the run's owner (Start.UserID). It is refused, with a
// *RefusedError matching the engine's sentinel, for another user or when
// the guards refuse it (runtime.ErrNotOwner), for a machine that names no
// cancel event (runtime.ErrNoCancelEvent), in a state without a row on it
// (runtime.ErrNotCancellable) and for a finished run
// (runtime.ErrRunFinished). A run that ends by its cancellation has
// CANCELLED and who cancelled it in its Result.
//
// # Reading a run
//
// The query QueryName returns the run's Snapshot: its state, status, every
// transition and the refused signals (QueryState types its state with the
// generated ParseState or ParseConfig). The workflow upserts the search
// attributes SearchState, SearchStatus, SearchTenant and SearchKey when it
// starts and after every transition, so that runs can be listed by state,
// status, tenant and idempotency key; the server must have them registered
// as Keyword attributes (devserver.Start does). Every transition is an
// event in Temporal's history (the activity's completion, the update or
// signal, the timer), each named by the state or the event.
//
// # The Runner: switching a service to Temporal
//
// Runner is runtime.Runner on Temporal, so that a service switches its
// runs from the PostgreSQL engine to Temporal by changing one constructor;
// the typed handles of generated code (fcha.Runs[compliance.Application](r))
// take either:
//
//	r, err := temporal.NewRunner(c, temporal.RunnerConfig{
//		TaskQueue:   "compliance",
//		Definitions: []runtime.Definition{driver.Definition()},
//	}) // was: r := engine.New(...); r.Register(driver)
//	w := worker.New(c, "compliance", worker.Options{})
//	temporal.Register(w, driver)
//
// NewRunner checks that the client's namespace has the search attributes
// the workflows upsert, and names the missing ones; an operator creates
// them once per namespace with the command CreateSearchAttributesCommand
// returns (temporal operator search-attribute create --namespace NS --name
// FsmState --type Keyword ...). runtime.Drain(eng, r) moves a service
// over while its runs under way finish on the engine.
//
// Each method maps onto Temporal as follows; the methods' documentation
// has the details.
//
//   - Start: the run of (type, key) is the workflow of id RunID(type, key);
//     a Describe of it picks the branch of runtime.StartOutcome: none,
//     created (WorkflowIDReusePolicy REJECT_DUPLICATE, so that of two
//     concurrent starts one creates and the other reads); under way,
//     running; closed with its run succeeded, cached; cancelled (by the
//     machine's cancel event), cancelled; failed (a failed final state, or
//     a workflow that failed, was terminated, cancelled or timed out at
//     Temporal's level), restarted as a new workflow run of the same id
//     (ALLOW_DUPLICATE) with Attempt one more than the last run's, the
//     first run's owner and input, and the last run's policy snapshot
//     unless a new one is given or resolved. Attempt
//     is thus how many runs the workflow id has had, carried in the
//     workflow's input (Start.Attempt) and memo. The run's owner, version,
//     attempt, creation time, input and policy snapshot are in the memo,
//     its state, status, tenant and key in the search attributes.
//   - Signal and Cancel: the update named by the event (Send) and the
//     update CancelUpdate (Cancel); a worker must run the workflow.
//   - Get: Describe, the search attributes and the memo, with the query
//     QueryName for a run under way (a worker answers it) or the result for
//     a closed one (read from the history: no worker needed).
//   - Wait: the workflow's result (a long poll), then Get.
//   - List: visibility (ListWorkflow), with a query on WorkflowType and the
//     search attributes whose values are quoted, each run returned checked
//     against the filter.
//
// Where it differs from the PostgreSQL engine:
//
//   - Start reads, then starts: not one statement. Two concurrent restarts
//     of one failed run may both start one when the first's new run has
//     closed before the second starts, one attempt more than on
//     PostgreSQL. After the namespace's retention period Temporal forgets a
//     closed workflow, and its key starts a new run (created).
//   - StartRequest.Enter is refused (runtime.ErrInvalidInput): no
//     transaction creates the run, and the workflow runs the entry actions
//     of the states it starts in itself. ResolvePolicy is called as on
//     PostgreSQL, after the read, for a run about to be created or
//     restarted only.
//   - Started.ETA is the current attempt's start plus the median duration
//     of the last 100 runs of the type that succeeded, most recently
//     closed first, as visibility lists them (it may not show the latest).
//   - Run fields the PostgreSQL record alone holds are zero: Lease,
//     NextRunAt, ParkedAt, ParentID, ParentEvent, History and
//     TimerAnchors. RowVersion is the number of transitions of the current
//     attempt; UpdatedAt the last one's time; StepAttempt, LastError and
//     LastErrorCode those of the pending handler activity.
//   - A workflow that fails at Temporal's level (a state's tries used up
//     with no OnExhausted event, where the engine parks the run) is a
//     failed run, with the error code WORKFLOW_FAILED (WORKFLOW_TERMINATED,
//     WORKFLOW_CANCELED, WORKFLOW_TIMED_OUT) and the failure's message.
//   - List is eventually consistent and lists in visibility's order (runs
//     under way, then the most recently closed), not oldest first; listed
//     runs have no Result. A run whose tenant or key holds a backslash, a
//     double quote or a control character may not be found by the dev
//     server's SQLite visibility, which reads those its own way.
//   - Signal, Cancel and Get of a run under way wait for a worker until
//     their context ends; a run's id must be a UUID (runtime.ErrInvalidID).
//
// # Effects and child runs
//
// A handler runs with run.Effects set to a collector whose Effects (log
// steps, outbox messages, enqueued runs, children, result) its activity
// returns with the event (Handled), so that they are in the history. Once
// the event moved the run, the workflow starts each child
// (runtime.StartChild) as a child workflow, and each enqueued run
// (run.Effects.Enqueue) as a child workflow it abandons when it ends, both
// with the workflow id RunID(type, idempotency key) and the parent's
// owner, once per id; the types must be registered with a worker of the
// same task queue. The run waits for its children in a wait state: when a
// child ends, the workflow fires the child's Event on it with the payload
// the PostgreSQL engine builds (the event's fields named childRunID,
// childType, state, status, outcome, output, costUSD, errorCode and
// errorDetail), one child at a time; callers may not send that event. A
// result the handler set (SetResult, SetError) is the Result's when its
// event ended the run. Without a record (below), the run's log steps and
// outbox messages are in its history only.
//
// # The record in PostgreSQL
//
// Registered with WithRecord(st), a machine's runs are recorded in the
// PostgreSQL tables of st (a store.Store of the runtime role is enough),
// as the engine records its own, so that the evidence chain
// (runtime/evidence, fsmctl evidence verify), the outbox relay
// (runtime/relay, contrib/nats), the activity cache (runtime/activity) and
// the reads (store.Execution, the console, fsmctl runs show) work for them:
//
//	temporal.Register(w, driver, temporal.WithRecord(st))
//
// A Runner given the same database (RunnerConfig.Record) reads the runs'
// evidence ids there (Runner.Execution, machines/compliance's GetWorkflow).
//
// The workflow runs the local activity RecordActivityName(type), type + ".record",
// once when it starts and once after each transition, in order, one at a
// time, each tried until it succeeds (every second, then up to every
// minute). The start's record creates the run with the workflow's run id
// and attempt (store.StartExternal); a transition's writes, in one
// transaction (store.RecordExternal): the steps its handler logged, before
// it; the transition (its log row, hence its evidence record, and the
// implied evidence of its event); its handler's outbox messages; a step
// named "enqueued" or "child" for each run the handler started (type, key,
// run id, event); the cached activity results the handler used
// (activity.ExecuteInRun with an Executor on the same database), marked
// consumed by it; and, for the transition that ends the run, the result.
// The records are idempotent by row version: a record written by a try
// whose acknowledgement was lost is found written by the next try, which
// writes nothing (a message keeps its outbox id, so a relay publishes it
// once). A record that no try would write (the run there is another
// attempt, or moved otherwise, or is the engine's) is refused
// (RECORD_REFUSED): the workflow logs it and records no more; the run
// goes on.
//
// What the chain holds, and when: every transition of the run, in order,
// with the steps of the handler whose event made it, once its record is
// written. The record follows the transition: the workflow moves first,
// then records, and does not wait for the record to go on, so that the
// record lags the run by the records not written yet (none while the
// database is up, but for the one being written), and a database that is
// down delays the records, not the run. A workflow whose run ended
// completes only once every record of the run is written, so that a run
// whose workflow completed is recorded whole (a workflow that fails or is
// cancelled, which ends no run, does not wait). A transition is in the record with its
// effects or not at all; the steps of a handler whose event was dropped
// (an update moved the run meanwhile) are in neither the history's moves
// nor the record.
//
// A run recorded for Temporal is never the PostgreSQL engine's, even on
// an engine that registered its type: it is never due there (no claim, no
// timer), and any other write of it (a signal, a cancel, a resume, an
// upgrade) fails with runtime.ErrOtherExecutor (see store.External).
package temporal
