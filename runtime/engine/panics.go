package engine

import (
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/fsmgen/fsmgen/runtime"
)

// PanicError reports that workflow code the engine called (a handler, a
// guard, a Decode or Fire of the driver, a PolicyFunc or ExhaustedFunc)
// panicked. The engine recovers the panic: in a worker it is a failed try
// of the run's state with code CodePanic, its value and stack in the run's
// log; from Signal, Cancel or Start it is returned to the caller. It
// matches runtime.ErrPanic with errors.Is, and the panic value too when that is an
// error.
type PanicError struct {
	// Where names the code that panicked: "handler of WORKING", ...
	Where string
	// Value is the value passed to panic.
	Value any
	// Stack is the goroutine's stack at the panic.
	Stack []byte
}

// Error implements error: "panic in handler of WORKING: boom".
func (e *PanicError) Error() string { return fmt.Sprintf("panic in %s: %v", e.Where, e.Value) }

// Unwrap returns runtime.ErrPanic, and the panic value when it is an error.
func (e *PanicError) Unwrap() []error {
	if err, ok := e.Value.(error); ok {
		return []error{runtime.ErrPanic, err}
	}
	return []error{runtime.ErrPanic}
}

// protect calls f and turns a panic in it into a *PanicError naming where.
func protect(where string, f func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Where: where, Value: v, Stack: debug.Stack()}
		}
	}()
	return f()
}

// protected is protect for an f that returns a value.
func protected[T any](where string, f func() (T, error)) (T, error) {
	var v T
	err := protect(where, func() error {
		var err error
		v, err = f()
		return err
	})
	return v, err
}

// errorDetail is the detail kept in the run's log and record for a failed
// try: the error's message, and for a panic its stack as well.
func errorDetail(err error) string {
	var p *PanicError
	if errors.As(err, &p) {
		return err.Error() + "\n\n" + string(p.Stack)
	}
	return err.Error()
}
