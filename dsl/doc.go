// Package dsl reads .fsm files: the lexer and grammar, an AST that keeps
// every position, the semantic checks that turn an AST into a validated
// [Spec], and the formatter.
//
// # The language
//
// A .fsm file holds one or more machines. Comments start with // and run to
// the end of the line; the comment lines directly above a machine, state,
// event, guard or transition (no blank line between) are its documentation
// and flow into the generated Go doc comments and diagram notes.
//
//	// RetrieveOrGenerate serves a stored solution or generates a new one.
//	machine RetrieveOrGenerate {
//	    type "retrieve_or_generate" // persisted type name (default: snake_case of the machine name)
//	    version 1                   // definition version (default 1)
//	    package rog                 // Go package name (default: the machine name in lower case)
//	    cancel Cancel               // the event a run's owner cancels a run with (default: none)
//
//	    initial INITIATED
//	    state   INGESTING  retry 3 backoff 1s factor 4 max 16s jitter 0.2 nonretryable "MEDIA_REJECTED"
//	    state   GENERATING retry externalService
//	    state   AWAITING   wait after 7d Timeout
//	    final   SUCCEEDED  succeeded
//	    final   DENIED     succeeded outcome "denied"
//	    final   FAILED     failed
//	    final   CANCELLED  cancelled
//
//	    event Start
//	    event Ingested     { signature string; at time.Time }
//	    event RetrievalHit { confidence float64; amount "example.com/money".Amount }
//	    event Generated
//	    event Reject       { reason string }
//	    event Timeout      external
//	    event Cancel       { userID string }
//
//	    guard AboveThreshold
//	    guard Locked
//
//	    INITIATED             -> INGESTING  on Start
//	    INGESTING             -> AWAITING   on Ingested
//	    AWAITING              -> SUCCEEDED  on RetrievalHit when AboveThreshold outcome "hit"
//	    AWAITING              -> GENERATING on RetrievalHit
//	    AWAITING              -> DENIED     on Timeout
//	    GENERATING            -> SUCCEEDED  on Generated                        outcome "new"
//	    INGESTING, GENERATING -> FAILED     on Reject
//	    *                     -> CANCELLED  on Cancel       unless Locked
//	}
//
// States. Exactly one state is declared with initial; plain states with
// state; terminal states with final, followed by the generic status the
// runtime knows (succeeded, failed or cancelled) and optionally the business
// outcome the state stands for. A machine needs no final state: one without
// any models an entity that lives for good (a subscription, a door, a
// connection), whose runs never finish. A non-terminal state takes options,
// in any number:
//
//   - wait: the state only waits for an external event or a timer; the
//     runtime parks runs there and the generated Handlers interface has no
//     method for it. Every other non-terminal state is driven: the runtime
//     calls its handler, which does the work and returns the next event.
//   - retry N [backoff D] [factor F] [max D] [jitter J] [nonretryable "CODE", ...] [else EVENT]:
//     how the state's handler is retried, the options in this order: at
//     most N attempts in all, the first wait D (default 1s), each following
//     wait F times longer (default 2), capped at max (default: no cap),
//     spread by ±J of itself (0 to 1, default 0); errors with a listed code
//     are not retried. retry up to N makes N a bound: each run is tried as
//     often as its policy snapshot says (its retry_max + 1 attempts), at
//     most N, and N times without one. retry PRESET
//     names one of the runtime's policies instead: validation, database,
//     externalService, payment or background. else EVENT, after either form,
//     names the event the runtime fires, with an empty payload, when the
//     policy gives up; the state must have a transition on it.
//   - after D EVENT: once a run has spent D in the state, EVENT fires. The
//     event must carry no payload and the state must have a transition on it.
//
// Durations are Go durations (500ms, 1m30s) plus d for days (7d), at most
// 2562047h (106751d).
//
// Cancellation. cancel EVENT names the event that the runtime's Cancel
// fires when a run's owner cancels it: exactly that event, with its guards
// asked, from whichever state the run is in, and only from states with a
// transition on it (it may lead to any state: a cancelled final state, or
// a state that refunds first). Its payload's userID field, if it has one,
// is filled with the cancelling user's id and must be a string. A machine
// that declares no cancel event cannot be cancelled through the runtime.
//
// Who sends an event. Every event has senders, and the runtime refuses an
// event from a caller (a Signal, a typed handle's method, fsmctl runs
// signal) who is not one of them:
//
//   - the events of a wait state's rows are sent by callers;
//   - the events of a driven state's rows are returned by its handler: a
//     caller cannot send one while the run is in that state, nor anywhere
//     when no wait state takes it;
//   - timers' events and retry policies' else events are fired by the
//     runtime, in every state;
//   - the cancel event is sent by the run's owner, through Cancel, from
//     every state with a row on it.
//
// Declared external, an event is also a caller's, in every state: event
// Timeout external lets an operator end a wait early, event Abort external
// lets callers stop a driven state's work. The typed handle has a method
// for each event callers may send somewhere; fsmgen check warns about a
// wait state without a timer whose events no caller may send.
//
// Events carry typed payload fields, separated by newlines, ; or ,. A field
// type is a Go scalar (bool, string, int, int8 to int64, uint, uint8 to
// uint64, float32, float64, byte, rune), time.Time, time.Duration, []T for
// any of these, or a named type from another package written as its quoted
// import path, a dot and the type name: "example.com/money".Amount.
//
// Guards are declared with guard NAME and implemented in Go: the generated
// Guards interface has one method per guard, taking the event it is used
// with (or the Event interface when one guard serves several events or an
// eventless row).
//
// Transitions read FROM -> TO on EVENT, optionally followed by when GUARD,
// when !GUARD or unless GUARD, and by outcome "x" when TO is terminal. FROM
// is a state, a comma-separated list of states, or * for every non-terminal
// top-level state. on E1, E2 stands for one row per event. Several transitions may share a (state, event) pair only when
// guards tell them apart; they are tried in the order written and the first
// whose guard admits the event wins.
//
// # Nested states
//
// A state with a block is a composite: its children, inside the braces,
// are states (composites too, up to the nesting limit below), final
// states and history pseudostates. Names are unique across the machine;
// events, guards, actions and rows stay at the machine level.
//
//	machine Player {
//	    initial STOPPED wait
//	    state ACTIVE after 30m IdleTimeout entry StartClock exit StopClock {
//	        initial PLAYING wait
//	        state   PAUSED  wait after 5m Stop
//	        state   POLLING wait after Polled.interval min 1s max 10m Tick
//	        history      RESUME // shallow history
//	        deep history LAST   // deep history
//	        final ENDED         // completes ACTIVE
//	        final BROKEN failed // ends the run
//	    }
//	    final OFF succeeded
//
//	    action StartClock
//	    action StopClock
//	    ...
//
//	    STOPPED -> ACTIVE  on Play             // enters ACTIVE, then PLAYING
//	    PAUSED  -> PLAYING on Pause, Play      // one row per event
//	    ACTIVE  -> STOPPED on Stop             // from every state inside ACTIVE
//	    STOPPED -> RESUME  on Resume           // back where ACTIVE was left
//	    PLAYING -> PLAYING on Tick internal    // no exit, no entry
//	    ACTIVE  -> OFF     on done             // once ACTIVE is in ENDED
//	    PAUSED  -> STOPPED when Expired        // no event: as soon as Expired holds
//	}
//
// A composite has exactly one initial child. Its options are timers and
// entry and exit actions; wait and retry belong to leaves, the states
// without children. A final child without a status is a leaf where the
// run waits (no handler runs) until a completion row or a row of an
// ancestor moves it; a final child with a status ends the run, as a
// top-level final state does.
//
// Configuration. A run is always in one leaf, the state it persists; it is
// also in each composite around that leaf. A transition to a composite
// enters its initial child, and that child's initial child, down to a
// leaf; the machine's initial state is followed down the same way.
//
// Bubbling. An event in leaf L is tried on the rows of L, then on those of
// L's parent, and so on outwards: the first row, innermost source first
// and in the order written within one source, whose guard admits the
// event is taken; when none does, the event is refused. A row written on
// a composite thus applies in every state inside it, unless a state
// closer to the leaf takes the event first. [Machine.Transitions] lists
// the rows flattened onto leaves in exactly that order.
//
// Order of a transition. A row's domain is, for an external row, the
// innermost composite that contains both its source and its target
// without being either (none: the whole machine); for an internal row,
// its source. The run leaves the states below the domain that it is in,
// innermost first, running their exit actions; then enters the states
// below the domain down to the target, outermost first, and the initial
// children below the target down to a leaf, running their entry actions.
// All exit actions run before any entry action. The persisted move is
// from leaf to leaf, and one transition is one atomic step: on the
// durable engine, the actions run inside the transaction that records it.
//
// Internal and external. Rows are external by default: a row S -> S exits
// and re-enters S, runs its exit and entry actions and restarts its
// timers, and a row from a composite to a state inside it exits and
// re-enters the composite. A row ending in internal does not exit its
// source: its target must be the source or a state inside it. An internal
// row to its own source moves nothing and runs no action (the run stays
// in its leaf); one to a state inside the source exits and enters only
// states inside the source. fsmgen check warns about an external row that
// re-enters a state with a timer, since the timer restarts.
//
// Entry and exit actions. entry ACTION and exit ACTION, options of any
// non-terminal state (repeatable, run in the order written), name actions
// declared with action NAME and implemented in Go through the generated
// Actions interface, as guards are. An action that returns an error
// aborts its transition.
// The states a run starts in (the initial leaf and the composites above
// it) are entered with their entry actions, outermost first, as XState and
// SCXML do: the engine runs them in the transaction that creates or
// restarts the run, and the generated Machine's Enter runs them where the
// machine is used without the engine.
//
// Timers. A state's timer starts when the state is entered and stops when
// it is exited; a state that a transition neither exits nor enters keeps
// its timers running, counted from when it was entered. A composite's
// timer runs as long as the run is anywhere inside it. A timer's event is
// fired to the run like any other event: it bubbles from the run's leaf.
// Timers due at the same instant fire in the order their states were
// entered, outermost first, and for one state in declaration order (as
// SCXML queues delayed events).
// after EVENT.field min D max D EVENT2 takes the duration from the
// time.Duration field of EVENT carried by the row that entered the state,
// clamped to [min, max]: every row entering the state must be on EVENT,
// and a run may not start there.
//
// History. When a composite is exited, each of its history pseudostates
// records where the run was: history NAME the child of the composite that
// was active, deep history NAME the leaf. A row to a history enters the
// composite and then the recorded child (down through its initial
// children if it is a composite) or the recorded leaf; with no record
// yet, the composite's initial leaf. The records are part of a run's
// persisted data: on the durable engine they are written with the
// transition that makes them and hold after a crash or a restart.
//
// Eventless and completion rows. A row without "on" is eventless: it is
// taken, if its guard holds, as soon as its source is active (a guard used
// on such a row takes the Event interface and is given nil). A row on done is a completion
// row of a composite with a final child without status: it is taken when
// the run enters that final child. After every transition, and when a run
// starts, the machine looks for an enabled eventless or completion row of
// the active states, innermost first, takes it and looks again, at most
// 64 times in a row (then the move fails with an "eventless rows loop"
// error). fsmgen check rejects a loop of unguarded eventless rows, and two
// unguarded eventless rows from one state. done is a reserved word: no
// event may be named done.
//
// # Parallel states
//
// A composite declared with the option parallel is a parallel state: its
// children are its regions, all active at once, and a run inside it is in
// one leaf of each region, a configuration:
//
//	state Open parallel {
//	    state Review {                 // a region
//	        initial Pending wait
//	        state   Approved wait
//	        final   Accepted           // completes its region
//	    }
//	    state Checks {
//	        initial Queued wait
//	        final   Passed
//	    }
//	}
//	Draft    -> Open     on Submit                  // enters Pending and Queued
//	Pending  -> Approved on Approve when In(Passed) // a test of another region
//	Open     -> Merged   on Merge                   // leaves both regions
//	Open     -> Merged   on done                    // once both are final
//
// Regions. A parallel state has two or more children, each a composite
// with its own initial child (a region may nest composites); none is
// marked initial, since all are entered. A parallel state may not be
// inside a region of another, and no history may be declared in, of or
// above a parallel state. Leaf names are unique in a machine, so the
// persisted form of a configuration, its leaves in region order joined by
// "|" (Pending|Queued), reads back without ambiguity.
//
// Entering. A row that enters a parallel state enters it, then every
// region in declaration order: the region holding the row's target down to
// that target, each other region at its initial child, down to a leaf.
// Entry actions run in that order: the parallel state's, then region by
// region, outermost first within each. [Transition.Config] lists the leaf
// entered in each region; a run may start in a parallel state the same
// way ([Machine.InitialConfig]).
//
// Events. An event is offered to every region in declaration order; in a
// region the row is found innermost first up to the region, as in any
// nested machine, and a region takes at most one row. The rows written on
// the parallel state or above it apply only when no region took the
// event. Two rows conflict when either leaves the parallel state (its
// target is outside it, or it is written on the parallel state or above):
// a region's row is taken unless it conflicts with a row already taken in
// the step, so the first region whose row leaves the parallel state
// preempts the later regions, and a later region's leaving row is dropped
// when an earlier region took a row. The rows taken in one step are one
// transition: the exits of all of them first (innermost first, region by
// region), then the entries. A row may not cross regions: its target is
// in its own region, the parallel state itself, or outside it.
//
// Guards on the configuration. when In(S) and unless In(S) (also
// when !In(S)) test whether the state S, a leaf or a composite, possibly
// in another region, is active, reading the configuration from before the
// step, as SCXML and XState do; [Transition.In] holds S. fsmgen check
// warns about an In(S) that always holds where its row can fire (S is the
// row's source or above it) or never does (S is neither inside the source
// nor in another region of a parallel state around it).
//
// Completion. A final child without status completes its region; the
// parallel state completes, enabling its rows on done, once every region
// is in such a final child. Eventless rows are as in any nested machine.
//
// Timers. A timer of a parallel state, of a region or of a leaf in a
// region runs while its state is active, as any other.
//
// Rows in the model. [Machine.Transitions] flattens a row written inside a
// region, or outside any parallel state, onto leaves as usual. A row
// written on a parallel state or on a composite above it is listed once
// for the parallel state, with [Transition.From] the parallel state (one
// row for every configuration, never one per configuration); so is a
// completion row of a parallel state. fsmgen generate writes machines with
// parallel states and In(S) guards; fsmgen sql refuses them. Runs of
// such a machine are not moved by upgrade rules yet: an upgrade from or to
// it drains.
//
// # Versions and upgrades
//
// A changed machine gets a new version, and its old version stays in the
// file beside it, as long as runs of it live: the same type, the old
// version number, and another machine name (its generated package is
// named after it), such as RetrieveOrGenerateV1. Both generate, both
// compile, and one engine drives runs of both. The newer machine says how
// live runs of the older one move to it:
//
//	upgrade from 1 {
//	    INDEXING   -> EMBEDDING                       // a state split in two
//	    GENERATING -> REVIEWING when SolutionDrafted  // by the run's history
//	    GENERATING -> GENERATING
//	    AWAITING   -> AWAITING timers restart         // its timer changed
//	    PUBLISHING drain                              // these finish on version 1
//	    default MediaNormalized.language "en"         // a new payload field
//	}
//
// or that none moves: upgrade from 1 drain. Each rule maps a state of the
// older version to a state of this one, or leaves its runs to drain on
// the older version (drain). A rule may have a condition on the run's
// stored history: when EVENT admits the runs whose current attempt has
// fired EVENT (an event of the older version), unless EVENT the others;
// the rules of a state are tried in the order written and the first that
// admits a run decides. A state that this version keeps under the same
// name, as a state that is not final, needs no rule: its runs stay in it.
// Without any upgrade declaration, runs of an older version drain on it.
//
// [Check] proves that an upgrade strands no run: every non-terminal
// state of the older version is mapped, kept by name or left to drain,
// and conditional rules end with an unconditional one; every target
// exists and is not final; a run waiting in a wait state moves to a
// state that still takes the events it waits for (or to a driven one);
// the events a moved run carries (those of the rows leading to its state)
// decode with this version's types: a field this version added needs a
// default, default EVENT.field VALUE (a string, a number, a duration, true
// or false), and a field whose type changed is
// an error; and a target with timers its source does not have says how
// they count: timers keep (from when the run entered its state) or
// timers restart (from the upgrade). Every error names its position,
// with a "did you mean" for a mistyped state or event. A state kept by
// name that this version enters from other states than the older one did
// draws a warning: its meaning may have changed (a step split in two), and
// a rule that names it, even "X -> X", says that keeping it is intended.
//
// # Syntax errors
//
// [Parse] reports each syntax error at the first token the grammar cannot
// read past, saying what it found and everything the grammar accepts
// there, as in
//
//	t.fsm:3:20: syntax error: unexpected token "success", expected a status (succeeded, failed or cancelled), parallel, wait, entry, exit, retry, after, "{" or the end of the declaration
//
// or, where a declaration ends with its line too soon, "unexpected end of
// line"; a machine's block left open is reported with where it opened.
// After an error it resumes at the next declaration or row (a line that
// starts with a declaration's keyword or holds ->), so one run reports
// every broken declaration, up to [MaxErrors], sorted by position. A
// character the lexer cannot read is reported and skipped, so it hides no
// error before or after it.
//
// # Limits
//
// Names (of machines, states, events, guards and fields) are ASCII: a letter
// or an underscore, then letters, digits and underscores; a string literal
// (a type name, an outcome, a comment) may hold any UTF-8. A machine has at
// most 65,535 states, since a generated State is a uint16.
//
// A file is refused, with one diagnostic at the place the limit is
// crossed, before the parser builds anything, when it is larger than
// [MaxFileSize] (4 MiB), holds a name longer than [MaxNameLength] (255
// bytes), a string literal longer than [MaxStringLength] (4096 bytes),
// more than [MaxTokens] (250,000) tokens, more than [MaxItems] (50,000)
// declarations and transition rows, or braces nested deeper than
// [MaxNesting] (4: composites nest three deep). Reading stops after [MaxErrors] (100) characters the
// lexer cannot read. A machine whose rows expand (FROM lists, several
// events, rows of composites applied to each of their leaves) to more
// than [MaxTransitions] (250,000) transitions is refused. A file at the
// limits takes a few seconds and some hundred megabytes.
//
// # Checks
//
// [Check] reports, each with its position: unknown names (with a "did you
// mean" when a declared name is close), names declared twice (the type,
// version, package and cancel declarations included), no or several
// initial states, a machine with no transitions at all, a final state
// without a status, transitions out of a
// terminal state, two unguarded transitions on one (state, event),
// transitions that can never fire because an earlier one always wins,
// states unreachable from the initial state, unused events and guards, a
// cancel event without a transition or whose userID field is not a string,
// timers on events their state does not handle, invalid retry settings,
// unknown field types, and two declarations whose generated Go names
// collide (with each other or with the identifiers every generated
// package, tests included, declares: [ReservedNames]; [GoNames] lists all
// of a machine's). Two things draw a warning only, and do not stop
// generation: a (state, event) pair with two or more guarded alternatives
// and no unguarded fallback (when every guard refuses, the event is
// rejected at run time), and a dead end among the reachable states (a run
// that gets there never ends, which may be intended; a dead end that is
// driven has a handler that can only return an error). In a machine that
// has final states, a dead end is a state from which none of them can be
// reached. In a machine without final states, whose runs are meant to go on
// for good (cycling between its states), a dead end is a state without a
// transition out, where a run can never move again, or a state from which
// every path leads into one of those; the warning names them. A state
// with a transition out, even back to itself, can still move, and a cycle
// is never a dead end.
//
// In a nested machine these checks are made on the leaves, with each
// composite's rows counted for its leaves and a row to a history counted
// as reaching every leaf of its composite. A parallel state counts as one
// node, never as the product of its regions: a row entering it reaches it
// and the leaf it enters in each region, and each of its leaves reaches it
// (its rows apply in every configuration); so a leaf of a region is
// reachable when it is within its region once the parallel state is; no
// final state can be reached from it when neither its region's rows nor
// the parallel state's lead to one; and in a machine without final states
// it is stuck only when every region can get stuck and the parallel
// state's rows lead nowhere else. Besides, [Check] reports a
// composite without exactly one initial child, a history outside a
// composite or used as a row's source, a completion row on a state
// without a final child without status, an internal row whose target is
// outside its source, an unknown action (unused ones draw a warning), a
// composite's row that fires for none of its leaves because each takes
// the event first (a leaf taking it first is ordinary bubbling, not an
// error), a loop of unguarded eventless rows, the rules of parallel
// states (two or more regions, each a composite not marked initial, no
// parallel state inside another, no history in, of or above one, no row
// across regions, no internal row on a parallel state, a completion row
// only when every region has a final child without status, an In(S) of a
// declared state, a row of a parallel state on an event that one of its
// regions takes first in every one of its leaves), and a timer on an event field that is not a
// time.Duration, with min not below max, or entered
// by a row on another event. An external row that re-enters a state with
// a timer draws a warning:
//
//	state S: the row S -> S on E re-enters S and restarts its timer "after 32s Timeout"; add "internal" to keep it running
//
// An error is reported where it is made, and the checks that would only
// echo it are not made: a transition row, timer, retry else or upgrade rule
// that names an unknown state, event or guard is reported once, at the
// unknown name, and its state and event then draw no "timer fires E in
// state S, which has no transition on E", no unmapped or unreachable
// state, no unused declaration of the kind misspelt (an event, a guard)
// and no warning about guarded rows without a fallback. The diagnostics
// are sorted by position.
//
// A machine without a cancel declaration whose table leads into a
// cancelled final state on two or more events that callers fire (events
// that are neither timer nor retry else events) draws a warning too: which
// of them cancels a run cannot be told without guessing, so the runtime
// cancels none of its runs until "cancel EVENT" names one. With one such
// event, or none, no warning is given.
//
// # Formatting
//
// [Format] prints a file in its one canonical layout; it is idempotent and
// keeps every comment.
//
// # Editors
//
// [ParsePartial] parses a file being typed: with a syntax error it still
// returns every machine and every declaration and row that parses, for an
// outline, navigation and completion on the rest of the file. [Refs] lists
// every occurrence of a state, event or guard name, declarations and uses,
// each with its span and the machine whose name it is (an upgrade rule's
// OLD state and condition belong to the older version); [RefAt] finds the
// one at a position and [Decl] its declaration. A [Diagnostic]'s End is
// where the text it is about ends, and its Suggestion the name its "did
// you mean" proposes. fsmgen lsp is built on them.
package dsl
