package engine

import (
	"errors"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// The engine's sentinel errors. Errors about a run are *RunError values
// naming the run and wrapping one of these (or a store sentinel, or a
// context error); match them with errors.Is.
var (
	// ErrLeaseLost: the worker's lease on the run expired or another claim
	// took the run over; nothing was written. It is store.ErrLeaseLost.
	ErrLeaseLost = store.ErrLeaseLost
	// ErrOutcomeUnknown: the context of a transition ended while its group
	// commit (see Config.BatchSize) was under way: it may be recorded, or
	// not. It is store.ErrOutcomeUnknown, and comes with the context's
	// error.
	ErrOutcomeUnknown = store.ErrOutcomeUnknown
	// ErrNotOwner: a cancellation by someone who does not own the run, or
	// that the workflow's ownership guard refused. An authorization error.
	ErrNotOwner = errors.New("not authorized: not the run's owner")
	// ErrRunFinished: the run is in a terminal state; it can be neither
	// signalled nor cancelled. It is store.ErrRunFinished.
	ErrRunFinished = store.ErrRunFinished
	// ErrNotRegistered: the run's type and version are not registered with
	// this engine.
	ErrNotRegistered = errors.New("definition not registered with this engine")
	// ErrPolicy: the policy function refused to start the run.
	ErrPolicy = errors.New("policy refused the run")
	// ErrNoCancelEvent: the run's machine names no cancel event (cancel
	// EVENT in its .fsm file), so Cancel cannot cancel its runs.
	ErrNoCancelEvent = errors.New("the machine has no cancel event")
	// ErrNotCancellable: the run's state has no transition on the
	// machine's cancel event.
	ErrNotCancellable = errors.New("cannot be cancelled in its state")
	// ErrNoEngine: StartChild was called with a run that the engine is not
	// driving (its Effects are not the engine's).
	ErrNoEngine = errors.New("run is not driven by an engine")
	// ErrInvalidConfig: New was given a Config that cannot work.
	ErrInvalidConfig = errors.New("invalid config")
	// ErrPanic: workflow code the engine called panicked; the error is a
	// *PanicError with the value and the stack.
	ErrPanic = errors.New("panic")
)

// RunError is an error about a run: what was done (Op), to which run
// (RunID, empty when not known), and what went wrong (Err). It is
// runtime.RunError, with Component "engine".
type RunError = runtime.RunError

// runErr wraps err as the engine's error about run id; an error that is a
// *RunError already (of the store) is returned as it is, so that messages
// name one component.
func runErr(op, id string, err error) error {
	if re, ok := err.(*RunError); ok {
		return re
	}
	return &RunError{Component: "engine", Op: op, RunID: id, Err: err}
}

// Error codes the engine stores on runs (last_error_code, the result's
// error_code) for failures that carry no code of their own.
const (
	// CodeHandlerError: a handler error without a code.
	CodeHandlerError = "HANDLER_ERROR"
	// CodePanic: a handler, a guard or other workflow code panicked; the
	// panic's value and stack are in the run's log.
	CodePanic = "PANIC"
	// CodeLeaseExpired: the state's tries were all interrupted by expired
	// leases (the workers died or stalled).
	CodeLeaseExpired = "LEASE_EXPIRED"
	// CodeTransitionRefused: the event a handler returned was refused by
	// the machine (no row, or guards said no).
	CodeTransitionRefused = "TRANSITION_REFUSED"
	// CodeNotDriven: the state has no handler and does not wait.
	CodeNotDriven = "NOT_DRIVEN"
	// CodeChildEvent: a finished child's event could not be fired on its
	// parent.
	CodeChildEvent = "CHILD_EVENT_REFUSED"
	// CodeInvalidInput: the store refused the event a handler returned, or
	// what came with it, as invalid input (store.ErrInvalidInput: a NUL
	// character, invalid UTF-8, over a size limit) or as a payload that
	// does not encode (store.ErrPayload). It is not retried: the same input
	// would be refused again.
	CodeInvalidInput = "INVALID_INPUT"
)
