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
// database or elsewhere, is not a state of the machine.
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
