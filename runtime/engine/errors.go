package engine

import (
	"errors"

	"github.com/fsmgen/fsmgen/runtime"
)

// runErr wraps err as the engine's error about run id; an error that is a
// *RunError already (of the store) is returned as it is, so that messages
// name one component.
func runErr(op, id string, err error) error {
	if re, ok := err.(*runtime.RunError); ok {
		return re
	}
	return &runtime.RunError{Component: "engine", Op: op, RunID: id, Err: err}
}

// refusedSignal marks err, an error of Signal, as runtime.ErrSignalRefused
// too when the run refused the event (finished, illegal in its state,
// rejected by its guards, not a caller's, unknown to the machine), as the
// Temporal backend reports a refused signal: its message is err's.
func refusedSignal(err error) error {
	var re *runtime.RunError
	if !errors.As(err, &re) {
		return err
	}
	for _, cause := range []error{runtime.ErrRunFinished, runtime.ErrIllegalTransition, runtime.ErrGuardRejected, runtime.ErrNotCallerEvent, runtime.ErrUnknownEvent} {
		if errors.Is(re.Err, cause) {
			re.Err = refused{re.Err}
			break
		}
	}
	return err
}

// refused is an error that also matches runtime.ErrSignalRefused.
type refused struct{ err error }

func (e refused) Error() string   { return e.err.Error() }
func (e refused) Unwrap() []error { return []error{e.err, runtime.ErrSignalRefused} }

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
	// what came with it, as invalid input (runtime.ErrInvalidInput: a NUL
	// character, invalid UTF-8, over a size limit) or as a payload that
	// does not encode (runtime.ErrPayload). It is not retried: the same input
	// would be refused again.
	CodeInvalidInput = "INVALID_INPUT"
)
