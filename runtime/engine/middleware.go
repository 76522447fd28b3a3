package engine

import (
	"context"
	"errors"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/internal/enginestore"
)

// Middleware wraps the engine's work on runs, for tracing, metrics and
// logging: each method is called around one step with a next function that
// performs it, and must call next once, with the context it was given or
// one derived from it, and return what next returned. What a middleware
// puts in the context (a span) reaches the step's code: the handler, the
// guards, the store's statements.
//
// The steps, and how they nest:
//
//   - Claim: one claim statement of Work, Drive or RunDue, which leases up
//     to ClaimInfo.Limit due runs.
//   - Drive: a session on one claimed run, from its claim until the run is
//     terminal, waits, is parked, scheduled for a retry or released.
//   - Handle: one call of a state's handler, within Drive.
//   - Transition: one event fired on a run, the machine's guards choosing
//     the row and the transition recorded: within Drive after a handler
//     (as its sibling, not its child: the engine fires the event the
//     handler returned), for a timer, an exhausted state or a finished
//     child; and within Command for Signal and Cancel.
//   - Command: a caller's Signal or Cancel of a run, from its read of the
//     run to its transition recorded or refused, in the caller's context:
//     a command refused before any event is fired (a cancel by a user
//     who does not own the run, an event callers may not send, a
//     finished run) is seen here only.
//
// Config.Middleware sets the middleware; the first in the list is the
// outermost. An engine without middleware makes none of these calls and
// allocates nothing for them. Methods are called from many goroutines at
// once. Embed MiddlewareDefaults to implement only some of the methods and
// to keep compiling when methods are added.
type Middleware interface {
	// Claim wraps a claim; next returns how many runs it claimed.
	Claim(ctx context.Context, c ClaimInfo, next func(context.Context) (int, error)) (int, error)
	// Drive wraps a session on the run as it was claimed; next returns the
	// run as the session last saw it (its state, status and, when it was
	// parked, ParkedAt and its error), and an error when the session was
	// interrupted: a lost lease, the context done, a state the engine
	// cannot drive.
	Drive(ctx context.Context, run runtime.Run, next func(context.Context) (runtime.Run, error)) (runtime.Run, error)
	// Handle wraps the call of the handler of state on run; next returns
	// the event the handler chose, or its error (a *PanicError for a
	// panic). run must not be changed.
	Handle(ctx context.Context, run *runtime.Run, state string, next func(context.Context) (runtime.Event, error)) (runtime.Event, error)
	// Transition wraps the firing of ev on run in state from; next returns
	// the transition recorded, or why there is none: an error matching
	// runtime.ErrIllegalTransition or runtime.ErrGuardRejected for an event
	// refused, runtime.ErrConflict when the run moved, runtime.ErrLeaseLost, a
	// database error. run must not be changed.
	Transition(ctx context.Context, run *runtime.Run, from string, ev runtime.Event, next func(context.Context) (runtime.Transition, error)) (runtime.Transition, error)
	// Command wraps a caller's command on a run, Signal or Cancel; next
	// returns the run as the command left it (or as it was read, when the
	// command was refused; zero when it could not be read) and the
	// command's error: runtime.ErrNotOwner for a cancel by another user,
	// runtime.ErrNotCallerEvent, runtime.ErrRunFinished, an event refused,
	// and so on.
	Command(ctx context.Context, c CommandInfo, next func(context.Context) (runtime.Run, error)) (runtime.Run, error)
}

// The commands of CommandInfo.Command.
const (
	CommandSignal = "signal"
	CommandCancel = "cancel"
)

// CommandInfo describes a command to Middleware.Command.
type CommandInfo struct {
	// Command is CommandSignal or CommandCancel.
	Command string
	// RunID is the run the command is for, as the caller gave it.
	RunID string
	// Event is the event signalled; empty for a cancel, whose event is
	// the machine's.
	Event string
	// UserID is the user a cancel is on behalf of; empty for a signal.
	UserID string
}

// TraceContext is implemented by a Middleware that traces and can carry a
// trace across a run's sessions. TraceParent returns the W3C traceparent
// of the span in ctx, "" for none: the engine stores it with each run its
// Start creates (store.WithTraceParent; children and outbox messages of
// the run take it), and gives it back to every later session on the run
// in the context of Middleware.Drive (RunTraceParent), whichever worker
// claims the run and however long after. The first middleware of
// Config.Middleware that implements it is used.
type TraceContext interface {
	TraceParent(ctx context.Context) string
}

type runTraceKey struct{}

// RunTraceParent returns, in the context Middleware.Drive is given, the
// traceparent stored with the run when it was started (see TraceContext);
// "" when none was.
func RunTraceParent(ctx context.Context) string {
	tp, _ := ctx.Value(runTraceKey{}).(string)
	return tp
}

// ClaimInfo describes a claim to Middleware.Claim.
type ClaimInfo struct {
	// WorkerID is the engine's worker id, which the leases taken carry.
	WorkerID string
	// Limit is the most runs the claim may take.
	Limit int
	// RunID is the run Drive claims; empty for the claims of Work and
	// RunDue, which take any due runs.
	RunID string
}

// MiddlewareDefaults implements every method of Middleware by calling
// next. Embed it in a middleware and override the methods it needs.
type MiddlewareDefaults struct{}

// Claim implements Middleware by calling next.
func (MiddlewareDefaults) Claim(ctx context.Context, _ ClaimInfo, next func(context.Context) (int, error)) (int, error) {
	return next(ctx)
}

// Drive implements Middleware by calling next.
func (MiddlewareDefaults) Drive(ctx context.Context, _ runtime.Run, next func(context.Context) (runtime.Run, error)) (runtime.Run, error) {
	return next(ctx)
}

// Handle implements Middleware by calling next.
func (MiddlewareDefaults) Handle(ctx context.Context, _ *runtime.Run, _ string, next func(context.Context) (runtime.Event, error)) (runtime.Event, error) {
	return next(ctx)
}

// Transition implements Middleware by calling next.
func (MiddlewareDefaults) Transition(ctx context.Context, _ *runtime.Run, _ string, _ runtime.Event, next func(context.Context) (runtime.Transition, error)) (runtime.Transition, error) {
	return next(ctx)
}

// Command implements Middleware by calling next.
func (MiddlewareDefaults) Command(ctx context.Context, _ CommandInfo, next func(context.Context) (runtime.Run, error)) (runtime.Run, error) {
	return next(ctx)
}

var _ Middleware = MiddlewareDefaults{}

// chain is a list of middleware as one, the first outermost.
type chain []Middleware

// middlewareOf returns the middleware of a list: nil for none, so that the
// engine's steps make no call at all.
func middlewareOf(list []Middleware) Middleware {
	var out chain
	for _, m := range list {
		if m != nil {
			out = append(out, m)
		}
	}
	switch len(out) {
	case 0:
		return nil
	case 1:
		return out[0]
	}
	return out
}

func (c chain) Claim(ctx context.Context, info ClaimInfo, next func(context.Context) (int, error)) (int, error) {
	if len(c) == 0 {
		return next(ctx)
	}
	return c[0].Claim(ctx, info, func(ctx context.Context) (int, error) { return c[1:].Claim(ctx, info, next) })
}

func (c chain) Drive(ctx context.Context, run runtime.Run, next func(context.Context) (runtime.Run, error)) (runtime.Run, error) {
	if len(c) == 0 {
		return next(ctx)
	}
	return c[0].Drive(ctx, run, func(ctx context.Context) (runtime.Run, error) { return c[1:].Drive(ctx, run, next) })
}

func (c chain) Handle(ctx context.Context, run *runtime.Run, state string, next func(context.Context) (runtime.Event, error)) (runtime.Event, error) {
	if len(c) == 0 {
		return next(ctx)
	}
	return c[0].Handle(ctx, run, state, func(ctx context.Context) (runtime.Event, error) { return c[1:].Handle(ctx, run, state, next) })
}

func (c chain) Transition(ctx context.Context, run *runtime.Run, from string, ev runtime.Event, next func(context.Context) (runtime.Transition, error)) (runtime.Transition, error) {
	if len(c) == 0 {
		return next(ctx)
	}
	return c[0].Transition(ctx, run, from, ev, func(ctx context.Context) (runtime.Transition, error) {
		return c[1:].Transition(ctx, run, from, ev, next)
	})
}

func (c chain) Command(ctx context.Context, info CommandInfo, next func(context.Context) (runtime.Run, error)) (runtime.Run, error) {
	if len(c) == 0 {
		return next(ctx)
	}
	return c[0].Command(ctx, info, func(ctx context.Context) (runtime.Run, error) { return c[1:].Command(ctx, info, next) })
}

// traceContextOf returns the TraceParent of the first middleware of list
// that implements TraceContext, nil for none.
func traceContextOf(list []Middleware) func(context.Context) string {
	for _, m := range list {
		if t, ok := m.(TraceContext); ok {
			return t.TraceParent
		}
	}
	return nil
}

// The engine's steps, each through the middleware when there is one. The
// calls without middleware are those the engine made before it had any,
// and the paths with middleware are functions of their own, so that the
// closures they make cost nothing to an engine without.

// claim runs one claim statement.
func (e *Engine) claim(ctx context.Context, p enginestore.ClaimParams) ([]enginestore.Claim, error) {
	if e.mw == nil {
		return e.es.Claim(ctx, p)
	}
	return e.claimObserved(ctx, p)
}

func (e *Engine) claimObserved(ctx context.Context, p enginestore.ClaimParams) ([]enginestore.Claim, error) {
	var (
		claims []enginestore.Claim
		err    error
		called bool
	)
	_, merr := protected("middleware around a claim", func() (int, error) {
		return e.mw.Claim(ctx, ClaimInfo{WorkerID: p.Owner, Limit: p.Limit, RunID: p.RunID}, func(ctx context.Context) (int, error) {
			called = true
			claims, err = e.es.Claim(ctx, p)
			return len(claims), err
		})
	})
	if !called {
		if merr == nil {
			merr = errors.New("the middleware did not claim")
		}
		return nil, merr
	}
	// What the claim returned stands, whatever the middleware made of it.
	return claims, err
}

// callHandler calls the handler of state on rt.
func (s *session) callHandler(ctx context.Context, rt *runtime.Run, state string) (runtime.Event, error) {
	if s.e.mw == nil {
		return s.reg.handler(ctx, rt, state)
	}
	return s.callHandlerObserved(ctx, rt, state)
}

func (s *session) callHandlerObserved(ctx context.Context, rt *runtime.Run, state string) (runtime.Event, error) {
	var (
		ev     runtime.Event
		herr   error
		called bool
	)
	_, err := protected("middleware around the handler of "+state, func() (runtime.Event, error) {
		return s.e.mw.Handle(ctx, rt, state, func(ctx context.Context) (runtime.Event, error) {
			called = true
			ev, herr = s.reg.handler(ctx, rt, state)
			return ev, herr
		})
	})
	if !called {
		if err == nil {
			err = errors.New("the middleware did not call the handler of " + state)
		}
		return nil, err
	}
	// What the handler returned stands, whatever the middleware made of it.
	return ev, herr
}

// handler calls the handler of state on rt, a panic in it made an error.
func (r *registered) handler(ctx context.Context, rt *runtime.Run, state string) (runtime.Event, error) {
	return protected("handler of "+state, func() (runtime.Event, error) {
		return r.driver.Handle(ctx, rt, state)
	})
}

// driveSession drives the session's run through the middleware; it
// returns loop's error.
func (s *session) driveSession() error {
	if s.e.mw == nil {
		return s.loop()
	}
	return s.driveObserved()
}

func (s *session) driveObserved() error {
	var (
		err    error
		called bool
	)
	ctx := s.hbase
	if s.traceParent != "" {
		ctx = context.WithValue(ctx, runTraceKey{}, s.traceParent)
	}
	_, merr := protected("middleware around a session", func() (runtime.Run, error) {
		return s.e.mw.Drive(ctx, s.run, func(ctx context.Context) (runtime.Run, error) {
			called = true
			s.hbase = ctx
			err = s.loop()
			if errors.Is(err, errMoved) {
				// Another process moved the run: not a failure.
				return s.run, nil
			}
			return s.run, err
		})
	})
	if !called {
		if merr == nil {
			merr = errors.New("the middleware did not drive the session")
		}
		return runErr("drive", s.run.ID, merr)
	}
	return err
}

// fireThrough fires ev on rt in state through the middleware, recording
// with rec.
func fireThrough(ctx context.Context, reg *registered, rt *runtime.Run, state string, ev runtime.Event, rec *recorder) error {
	if rec.e.mw == nil {
		return fireEvent(ctx, reg, rt, state, ev, rec)
	}
	return fireObserved(ctx, reg, rt, state, ev, rec)
}

func fireObserved(ctx context.Context, reg *registered, rt *runtime.Run, state string, ev runtime.Event, rec *recorder) error {
	var (
		err    error
		called bool
	)
	_, merr := protected("middleware around firing "+ev.EventName(), func() (runtime.Transition, error) {
		return rec.e.mw.Transition(ctx, rt, state, ev, func(ctx context.Context) (runtime.Transition, error) {
			called = true
			err = fireEvent(ctx, reg, rt, state, ev, rec)
			if err == nil && rec.t != nil {
				return *rec.t, nil
			}
			return runtime.Transition{}, err
		})
	})
	if !called {
		if merr == nil {
			merr = errors.New("the middleware did not fire " + ev.EventName())
		}
		return merr
	}
	// What the driver returned stands, whatever the middleware made of it.
	return err
}

// command runs a caller's command through the middleware.
func (e *Engine) command(ctx context.Context, info CommandInfo, run func(context.Context) (runtime.Run, error)) (runtime.Run, error) {
	if e.mw == nil {
		return run(ctx)
	}
	var (
		out    runtime.Run
		err    error
		called bool
	)
	_, merr := protected("middleware around a "+info.Command, func() (runtime.Run, error) {
		return e.mw.Command(ctx, info, func(ctx context.Context) (runtime.Run, error) {
			called = true
			out, err = run(ctx)
			return out, err
		})
	})
	if !called {
		if merr == nil {
			merr = errors.New("the middleware did not run the " + info.Command)
		}
		return runtime.Run{}, runErr(info.Command, info.RunID, merr)
	}
	// What the command returned stands, whatever the middleware made of it.
	return out, err
}
