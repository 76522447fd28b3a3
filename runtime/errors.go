package runtime

import (
	"errors"
	"fmt"
)

// ErrIllegalTransition is the sentinel matched by errors.Is when an event is
// fired in a state whose transition table has no row for it, including every
// event fired in a terminal state.
var ErrIllegalTransition = errors.New("illegal transition")

// ErrGuardRejected is the sentinel matched by errors.Is when the table has
// rows for the (state, event) pair but every one of them is guarded and no
// guard admitted the event.
var ErrGuardRejected = errors.New("rejected by guards")

// TransitionError reports an event that a machine refused. The machine's
// state is unchanged when it is returned.
type TransitionError struct {
	// Machine is the persisted type name of the machine.
	Machine string
	// State is the name of the state the machine was in.
	State string
	// Event is the name of the refused event, "" for a nil event.
	Event string
	// Guards lists the guards that were evaluated and refused the event, in
	// the order they were tried; empty for ErrIllegalTransition.
	Guards []string
	// Err is ErrIllegalTransition or ErrGuardRejected.
	Err error
}

// Error implements error.
func (e *TransitionError) Error() string {
	if errors.Is(e.Err, ErrGuardRejected) {
		return fmt.Sprintf("%s: event %s in state %s %s %v", e.Machine, e.Event, e.State, e.Err, e.Guards)
	}
	if e.Event == "" {
		return fmt.Sprintf("%s: %s: nil event in state %s", e.Machine, e.Err, e.State)
	}
	return fmt.Sprintf("%s: %s: state %s has no transition on event %s", e.Machine, e.Err, e.State, e.Event)
}

// Unwrap returns the sentinel, so that errors.Is(err, ErrIllegalTransition)
// and errors.Is(err, ErrGuardRejected) work.
func (e *TransitionError) Unwrap() error { return e.Err }

// ErrSignalRefused is matched by errors.Is when an event sent to a run
// from outside (a signal) is refused, and the sender is told: the run is
// finished, its state has no transition on the event, its guards refuse it,
// or the event is one only the runtime fires (a timer's). The error that
// wraps it says why; both backends report it, the PostgreSQL engine's
// workflows (machines/compliance) and the Temporal backend's Send
// (contrib/temporal), so that a sender's errors.Is holds on either.
var ErrSignalRefused = errors.New("signal refused")

// ErrUnknownState is matched by errors.Is when a state name, read from the
// database or elsewhere, is not a state of the machine: a generated
// machine's ParseState, and the store and the engine for a run whose stored
// state its definition does not have.
var ErrUnknownState = errors.New("unknown state")

// ErrUnknownEvent is matched by errors.Is when an event name is not an
// event of the machine.
var ErrUnknownEvent = errors.New("unknown event")

// ErrNotDriven is matched by errors.Is when a handler is asked for in a
// state that has none: a terminal state, or one that only waits.
var ErrNotDriven = errors.New("state has no handler")

// CodedError is a handler error with a code: the retry policy of the state
// looks the code up in its non-retryable list, and the code is stored as the
// run's error_code when the run fails.
type CodedError struct {
	Code string
	Err  error
}

// Error implements error.
func (e *CodedError) Error() string { return e.Code + ": " + e.Err.Error() }

// Unwrap returns the underlying error.
func (e *CodedError) Unwrap() error { return e.Err }

// WithCode returns err with the given code attached.
func WithCode(code string, err error) error { return &CodedError{Code: code, Err: err} }

// ErrorCode returns the code attached to err with WithCode, or "".
func ErrorCode(err error) string {
	var c *CodedError
	if errors.As(err, &c) {
		return c.Code
	}
	return ""
}

// RunError is an error about one run: the part of the runtime that reports
// it (Component: "store", "engine"), what it was doing (Op), to which run
// (RunID, empty when no run was known yet), and what went wrong (Err, which
// wraps a sentinel of that component).
type RunError struct {
	Component string
	Op        string
	RunID     string
	Err       error
}

// Error implements error: "store: start run 1b4e...: conflict: ...".
func (e *RunError) Error() string {
	if e.RunID == "" {
		return fmt.Sprintf("%s: %s: %v", e.Component, e.Op, e.Err)
	}
	return fmt.Sprintf("%s: %s run %s: %v", e.Component, e.Op, e.RunID, e.Err)
}

// Unwrap returns Err.
func (e *RunError) Unwrap() error { return e.Err }

// ErrNoRetry is matched by errors.Is when a handler's error must not be
// tried again by the retry policy of the handler's state: the work that
// failed was already tried by a policy of its own (an activity's, see
// runtime/activity), which gave up. The engine then counts the state as
// exhausted at once, as on its last allowed try: it fires the state's
// exhaustion event, or parks the run when the state names none. NoRetry
// marks an error so.
var ErrNoRetry = errors.New("not retried by the state")

// NoRetry returns err marked with ErrNoRetry: it has err's message and
// code, and matches both err's chain and ErrNoRetry. NoRetry(nil) is nil.
func NoRetry(err error) error {
	if err == nil {
		return nil
	}
	return noRetry{err}
}

type noRetry struct{ err error }

func (e noRetry) Error() string   { return e.err.Error() }
func (e noRetry) Unwrap() []error { return []error{e.err, ErrNoRetry} }

// The sentinel errors of the store and the engine. Every error about a run
// is a *RunError naming the run and wrapping one of these (or a context
// error), so that errors.Is(err, runtime.ErrConflict) and errors.As(err,
// &runErr) both work, whichever of store and engine reported it.
var (
	// ErrRunNotFound: no run has the given id.
	ErrRunNotFound = errors.New("run not found")
	// ErrInvalidID: a run id is not a UUID.
	ErrInvalidID = errors.New("malformed run id")
	// ErrInvalidInput: a parameter is missing or malformed (an empty
	// idempotency key, a user id that is not a UUID, a result for a
	// non-terminal state, ...).
	ErrInvalidInput = errors.New("invalid input")
	// ErrPayload: a payload, input or output does not encode to JSON, or a
	// stored one does not decode into the value given.
	ErrPayload = errors.New("bad payload")
	// ErrConflict: the run is no longer in the state and row version the
	// caller read; another writer moved it first. Reload the run and decide
	// again.
	ErrConflict = errors.New("conflict: the run moved since it was read")
	// ErrTransitionRefused: the transition is not in the registered table of
	// the run's type and version; raised by the store before it writes, and
	// by the database's trigger for any writer.
	ErrTransitionRefused = errors.New("transition refused")
	// ErrLogImmutable: an UPDATE, DELETE or TRUNCATE of the step log.
	ErrLogImmutable = errors.New("the step log is append-only")
	// ErrRunImmutable: a change of a run's identity, attempt or definition
	// version outside the reset of a failed run; status or row_version set
	// by hand; a result or finished_at on a run in a running state.
	ErrRunImmutable = errors.New("immutable run field")
	// ErrUnlogged: a change of a run's state without its log row, or a log
	// row of a change of state that did not happen; raised by the database
	// for SQL that writes one without the other.
	ErrUnlogged = errors.New("state change and log row do not match")
	// ErrDefinitionImmutable: an UPDATE or DELETE of a registered
	// definition, or rows added to its states or transitions.
	ErrDefinitionImmutable = errors.New("registered definitions are immutable")
	// ErrUnknownDefinition: no definition of that type and version is
	// registered.
	ErrUnknownDefinition = errors.New("unknown definition")
	// ErrInvalidDefinition: a definition given to Register fails
	// Definition.Validate.
	ErrInvalidDefinition = errors.New("invalid definition")
	// ErrDefinitionConflict: the (type, version) is registered already with a
	// different state or transition table. Bump the version.
	ErrDefinitionConflict = errors.New("registered definition differs")
	// ErrDefinitionMismatch: the run follows another type or version than
	// the definition or transition given for it.
	ErrDefinitionMismatch = errors.New("run follows another definition")
	// ErrNoUpgrade: no upgrade is registered between the two versions.
	ErrNoUpgrade = errors.New("no upgrade registered")
	// ErrUpgradeConflict: an upgrade between the two versions is
	// registered already with different rules. A registered upgrade is
	// immutable.
	ErrUpgradeConflict = errors.New("registered upgrade differs")
	// ErrLiveRuns: the version still has runs in a non-terminal state.
	ErrLiveRuns = errors.New("the version has live runs")
	// ErrRunFinished: the run is succeeded, failed or cancelled; its log
	// and outbox take no more rows, and it can be neither signalled nor
	// cancelled.
	ErrRunFinished = errors.New("run is finished")
	// ErrLeaseLost: a fenced write of a worker whose lease on the run has
	// expired or was taken over by another claim (the lease epoch moved on).
	// Nothing was written; the worker must stop working on the run.
	ErrLeaseLost = errors.New("lease lost")
	// ErrOutcomeUnknown: the caller's context ended after its transition
	// was handed to a group commit and before that commit was over: the
	// transition may be recorded, or not. Recording it again tells: a
	// recorded one is reported as already applied, a fenced write gets
	// ErrConflict or ErrLeaseLost. It comes with the context's error.
	ErrOutcomeUnknown = errors.New("outcome unknown: the transition was sent and may be recorded")
	// ErrClosed: the pool the store uses is closed.
	ErrClosed = errors.New("store's pool is closed")
	// ErrNotOwner: a cancellation by someone who does not own the run, or
	// that the workflow's ownership guard refused. An authorization error.
	ErrNotOwner = errors.New("not authorized: not the run's owner")
	// ErrNotRegistered: the run's type and version are not registered with
	// the engine.
	ErrNotRegistered = errors.New("definition not registered with this engine")
	// ErrPolicy: the policy function refused to start the run.
	ErrPolicy = errors.New("policy refused the run")
	// ErrNoCancelEvent: the run's machine names no cancel event (cancel
	// EVENT in its .fsm file), so Cancel cannot cancel its runs.
	ErrNoCancelEvent = errors.New("the machine has no cancel event")
	// ErrNotCancellable: the run's state has no transition on the
	// machine's cancel event.
	ErrNotCancellable = errors.New("cannot be cancelled in its state")
	// ErrNoEngine: a child run was started for a run that no engine is
	// driving (its Effects are not the engine's).
	ErrNoEngine = errors.New("run is not driven by an engine")
	// ErrOtherExecutor: the run is executed by another runtime than the
	// writer's: a run that another runtime executes and the store records
	// (store.External), which the engine never claims, signals, cancels,
	// resumes or upgrades; or, for the recorder of such runs, a run of
	// the engine or of another executor.
	ErrOtherExecutor = errors.New("run is executed by another runtime")
	// ErrInvalidConfig: the engine was given a Config that cannot work.
	ErrInvalidConfig = errors.New("invalid config")
	// ErrPanic: workflow code the engine called panicked; the error that
	// wraps it carries the value and the stack.
	ErrPanic = errors.New("panic")
)

// ErrOtherMachine is matched by errors.Is when a typed handle is given the
// id of a run of another machine.
var ErrOtherMachine = errors.New("run of another machine")
