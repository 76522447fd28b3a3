package otelfsm

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
)

// ScopeName is the instrumentation scope of the tracer and the meter.
const ScopeName = "github.com/fsmgen/fsmgen/contrib/otel/otelfsm"

// The attribute keys of the spans and metrics.
const (
	KeyRunID      = attribute.Key("fsmgen.run.id")
	KeyType       = attribute.Key("fsmgen.type")
	KeyVersion    = attribute.Key("fsmgen.version")
	KeyState      = attribute.Key("fsmgen.state")
	KeyFrom       = attribute.Key("fsmgen.from")
	KeyTo         = attribute.Key("fsmgen.to")
	KeyEvent      = attribute.Key("fsmgen.event")
	KeyAttempt    = attribute.Key("fsmgen.attempt")
	KeyRunAttempt = attribute.Key("fsmgen.run.attempt")
	KeyOutcome    = attribute.Key("fsmgen.outcome")
	KeyErrorCode  = attribute.Key("fsmgen.error.code")
	KeyWorker     = attribute.Key("fsmgen.worker")
	KeyEndState   = attribute.Key("fsmgen.end_state")
	KeyStatus     = attribute.Key("fsmgen.status")
	KeyParked     = attribute.Key("fsmgen.parked")
	KeyCommand    = attribute.Key("fsmgen.command")
	// KeyErrorType is OpenTelemetry's error.type (semantic conventions):
	// the class of a failure, set on every failed span and on the failed
	// points of fsmgen.commands; see ErrorType.
	KeyErrorType = attribute.Key("error.type")
)

// The outcomes of a transition (fsmgen.outcome on fsmgen.transitions and
// on transition spans).
const (
	// OutcomeRecorded: the transition was recorded.
	OutcomeRecorded = "recorded"
	// OutcomeRefused: the machine's table, a guard or the database refused
	// the event in the run's state.
	OutcomeRefused = "refused"
	// OutcomeConflict: the run moved under the caller (a signal, a
	// cancellation, another worker).
	OutcomeConflict = "conflict"
	// OutcomeLeaseLost: the worker's lease was lost before the write.
	OutcomeLeaseLost = "lease_lost"
	// OutcomeError: any other error, a database error for one.
	OutcomeError = "error"
)

// The outcomes of a handler call and of a claim (fsmgen.outcome on
// fsmgen.handler.duration and fsmgen.claim.duration).
const (
	// OutcomeOK: the handler returned an event; the claim succeeded.
	OutcomeOK = "ok"
	// OutcomeFailed: the handler or the claim returned an error.
	OutcomeFailed = "error"
	// OutcomePanic: the handler panicked.
	OutcomePanic = "panic"
)

// Config configures a Middleware and the backlog gauges.
type Config struct {
	// TracerProvider makes the tracer of the spans. Default the global one,
	// otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
	// MeterProvider makes the meter of the metrics. Default the global
	// one, otel.GetMeterProvider().
	MeterProvider metric.MeterProvider
}

func (c Config) tracer() trace.Tracer {
	tp := c.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return tp.Tracer(ScopeName)
}

func (c Config) meter() metric.Meter {
	mp := c.MeterProvider
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	return mp.Meter(ScopeName)
}

// durationBuckets are the bucket boundaries, in seconds, of the duration
// histograms: from a millisecond (a claim) to five minutes (a handler).
var durationBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// Middleware is an engine.Middleware that traces and measures the engine's
// work with OpenTelemetry; see the package documentation for its spans and
// metrics. Give it to the engine in engine.Config.Middleware.
type Middleware struct {
	tracer          trace.Tracer
	transitions     metric.Int64Counter
	handlerDuration metric.Float64Histogram
	claimDuration   metric.Float64Histogram
	claimed         metric.Int64Counter
	commands        metric.Int64Counter
}

var (
	_ engine.Middleware   = (*Middleware)(nil)
	_ engine.TraceContext = (*Middleware)(nil)
)

// traceContext is the W3C Trace Context propagator, whatever the global
// propagator is: the engine stores a traceparent.
var traceContext = propagation.TraceContext{}

// NewMiddleware returns a middleware with the tracer and the meter of cfg.
// It fails only when the meter refuses an instrument.
func NewMiddleware(cfg Config) (*Middleware, error) {
	m := &Middleware{tracer: cfg.tracer()}
	meter := cfg.meter()
	var err, e error
	m.transitions, e = meter.Int64Counter("fsmgen.transitions", metric.WithUnit("{transition}"),
		metric.WithDescription("Events fired on runs, by workflow type and outcome (recorded, refused, conflict, lease_lost, error)."))
	err = errors.Join(err, e)
	m.handlerDuration, e = meter.Float64Histogram("fsmgen.handler.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of handler calls, by workflow type, state and outcome (ok, error, panic)."),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	err = errors.Join(err, e)
	m.claimDuration, e = meter.Float64Histogram("fsmgen.claim.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of the claim statements of workers, by outcome (ok, error)."),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	err = errors.Join(err, e)
	m.claimed, e = meter.Int64Counter("fsmgen.claim.runs", metric.WithUnit("{run}"),
		metric.WithDescription("Runs claimed by workers."))
	err = errors.Join(err, e)
	m.commands, e = meter.Int64Counter("fsmgen.commands", metric.WithUnit("{command}"),
		metric.WithDescription("Callers' commands on runs (signal, cancel), by command, outcome (ok, refused, error) and error.type."))
	err = errors.Join(err, e)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// Claim implements engine.Middleware: it measures the claim.
func (m *Middleware) Claim(ctx context.Context, _ engine.ClaimInfo, next func(context.Context) (int, error)) (int, error) {
	began := time.Now()
	n, err := next(ctx)
	outcome := OutcomeOK
	if err != nil {
		outcome = OutcomeFailed
	}
	m.claimDuration.Record(ctx, time.Since(began).Seconds(), metric.WithAttributes(KeyOutcome.String(outcome)))
	if n > 0 {
		m.claimed.Add(ctx, int64(n))
	}
	return n, err
}

// TraceParent implements engine.TraceContext: the W3C traceparent of the
// span in ctx, "" when there is none. The engine stores it with a run it
// starts, and the run's later sessions link to that span.
func (m *Middleware) TraceParent(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	carrier := propagation.MapCarrier{}
	traceContext.Inject(ctx, carrier)
	return carrier.Get("traceparent")
}

// RunLink returns the link to the span that started the run of a session
// whose context is ctx (engine.RunTraceParent), and whether there is one.
func RunLink(ctx context.Context) (trace.Link, bool) {
	tp := engine.RunTraceParent(ctx)
	if tp == "" {
		return trace.Link{}, false
	}
	sc := trace.SpanContextFromContext(traceContext.Extract(context.Background(), propagation.MapCarrier{"traceparent": tp}))
	if !sc.IsValid() {
		return trace.Link{}, false
	}
	return trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{KeyLink.String(LinkRunStart)}}, true
}

// KeyLink is the attribute of a session's link to the span that started
// its run: fsmgen.link=run.start (LinkRunStart).
const (
	KeyLink      = attribute.Key("fsmgen.link")
	LinkRunStart = "run.start"
)

// Drive implements engine.Middleware: a span fsmgen.drive around the
// session on a claimed run, linked to the span that started the run when
// the run was started with tracing.
func (m *Middleware) Drive(ctx context.Context, run runtime.Run, next func(context.Context) (runtime.Run, error)) (runtime.Run, error) {
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(
		KeyRunID.String(run.ID), KeyType.String(run.Type), KeyVersion.Int(run.Version), KeyState.String(run.State),
		KeyAttempt.Int(run.StepAttempt), KeyRunAttempt.Int(run.Attempt), KeyWorker.String(run.Lease.Owner),
	)}
	if link, ok := RunLink(ctx); ok {
		opts = append(opts, trace.WithLinks(link))
	}
	ctx, span := m.tracer.Start(ctx, "fsmgen.drive "+run.Type, opts...)
	defer span.End()
	after, err := next(ctx)
	if after.ID != "" {
		span.SetAttributes(KeyEndState.String(after.State), KeyStatus.String(string(after.Status)))
		if !after.ParkedAt.IsZero() {
			span.SetAttributes(KeyParked.Bool(true), KeyErrorCode.String(after.LastErrorCode))
		}
	}
	failed(span, err)
	return after, err
}

// Handle implements engine.Middleware: a span fsmgen.handle around the
// handler call, and its duration.
func (m *Middleware) Handle(ctx context.Context, run *runtime.Run, state string, next func(context.Context) (runtime.Event, error)) (runtime.Event, error) {
	ctx, span := m.tracer.Start(ctx, "fsmgen.handle "+run.Type+" "+state, trace.WithAttributes(
		KeyRunID.String(run.ID), KeyType.String(run.Type), KeyVersion.Int(run.Version), KeyState.String(state),
		KeyAttempt.Int(run.StepAttempt), KeyRunAttempt.Int(run.Attempt),
	))
	defer span.End()
	began := time.Now()
	ev, err := next(ctx)
	took := time.Since(began)
	outcome := OutcomeOK
	switch {
	case errors.Is(err, runtime.ErrPanic):
		outcome = OutcomePanic
	case err != nil:
		outcome = OutcomeFailed
	case ev != nil:
		span.SetAttributes(KeyEvent.String(ev.EventName()))
	}
	span.SetAttributes(KeyOutcome.String(outcome))
	if code := runtime.ErrorCode(err); code != "" {
		span.SetAttributes(KeyErrorCode.String(code))
	}
	failed(span, err)
	m.handlerDuration.Record(ctx, took.Seconds(), metric.WithAttributes(KeyType.String(run.Type), KeyState.String(state), KeyOutcome.String(outcome)))
	return ev, err
}

// Transition implements engine.Middleware: a span fsmgen.transition around
// the firing of an event, and its count by outcome.
func (m *Middleware) Transition(ctx context.Context, run *runtime.Run, from string, ev runtime.Event, next func(context.Context) (runtime.Transition, error)) (runtime.Transition, error) {
	name := ev.EventName()
	ctx, span := m.tracer.Start(ctx, "fsmgen.transition "+run.Type+" "+from+" on "+name, trace.WithAttributes(
		KeyRunID.String(run.ID), KeyType.String(run.Type), KeyVersion.Int(run.Version), KeyFrom.String(from),
		KeyEvent.String(name), KeyAttempt.Int(run.StepAttempt), KeyRunAttempt.Int(run.Attempt),
	))
	defer span.End()
	t, err := next(ctx)
	outcome := TransitionOutcome(err)
	if err == nil {
		span.SetAttributes(KeyTo.String(t.To))
	}
	span.SetAttributes(KeyOutcome.String(outcome))
	failed(span, err)
	m.transitions.Add(ctx, 1, metric.WithAttributes(KeyType.String(run.Type), KeyOutcome.String(outcome)))
	return t, err
}

// Command implements engine.Middleware: a span fsmgen.signal EVENT or
// fsmgen.cancel around a caller's command, and its count by outcome.
func (m *Middleware) Command(ctx context.Context, c engine.CommandInfo, next func(context.Context) (runtime.Run, error)) (runtime.Run, error) {
	name := "fsmgen." + c.Command
	attrs := []attribute.KeyValue{KeyRunID.String(c.RunID), KeyCommand.String(c.Command)}
	if c.Event != "" {
		name += " " + c.Event
		attrs = append(attrs, KeyEvent.String(c.Event))
	}
	ctx, span := m.tracer.Start(ctx, name, trace.WithAttributes(attrs...))
	defer span.End()
	run, err := next(ctx)
	if run.ID != "" {
		span.SetAttributes(KeyType.String(run.Type), KeyVersion.Int(run.Version), KeyState.String(run.State))
	}
	outcome := CommandOutcome(err)
	span.SetAttributes(KeyOutcome.String(outcome))
	failed(span, err)
	counted := []attribute.KeyValue{KeyCommand.String(c.Command), KeyOutcome.String(outcome)}
	if run.Type != "" {
		counted = append(counted, KeyType.String(run.Type))
	}
	if err != nil {
		counted = append(counted, KeyErrorType.String(ErrorType(err)))
	}
	m.commands.Add(ctx, 1, metric.WithAttributes(counted...))
	return run, err
}

// CommandOutcome classifies the error of a command: OutcomeOK for nil,
// OutcomeRefused when the command was refused (its caller may not send
// it, the run is finished or cannot take it: ErrorType says which), and
// OutcomeError otherwise (the run not found, a database error).
func CommandOutcome(err error) string {
	switch {
	case err == nil:
		return OutcomeOK
	case errors.Is(err, runtime.ErrNotOwner), errors.Is(err, runtime.ErrSignalRefused), errors.Is(err, runtime.ErrRunFinished),
		errors.Is(err, runtime.ErrNotCancellable), errors.Is(err, runtime.ErrNoCancelEvent), TransitionOutcome(err) == OutcomeRefused:
		return OutcomeRefused
	}
	return OutcomeError
}

// errorTypes are the runtime's errors ErrorType names, the more specific
// first (a refused cancel matches ErrNotOwner and ErrGuardRejected).
var errorTypes = []struct {
	err  error
	name string
}{
	{runtime.ErrNotOwner, "not_owner"},
	{runtime.ErrNotCallerEvent, "not_caller_event"},
	{runtime.ErrUnknownEvent, "unknown_event"},
	{runtime.ErrNotCancellable, "not_cancellable"},
	{runtime.ErrNoCancelEvent, "no_cancel_event"},
	{runtime.ErrRunFinished, "run_finished"},
	{runtime.ErrIllegalTransition, "illegal_transition"},
	{runtime.ErrGuardRejected, "guard_rejected"},
	{runtime.ErrTransitionRefused, "transition_refused"},
	{runtime.ErrConflict, "conflict"},
	{runtime.ErrLeaseLost, "lease_lost"},
	{runtime.ErrRunNotFound, "run_not_found"},
	{runtime.ErrInvalidID, "invalid_id"},
	{runtime.ErrInvalidInput, "invalid_input"},
	{runtime.ErrPayload, "payload"},
	{runtime.ErrNotRegistered, "not_registered"},
	{runtime.ErrPolicy, "policy"},
	{runtime.ErrPanic, "panic"},
	{context.DeadlineExceeded, "timeout"},
	{context.Canceled, "canceled"},
}

// ErrorType is the value of error.type for err, a bounded set: the code
// a handler gave its error (runtime.WithCode: CLOSED, say), else the name
// of the runtime's error it matches (not_owner, illegal_transition,
// guard_rejected, conflict, lease_lost, run_finished, panic, timeout,
// ...), else _OTHER, as the semantic conventions have it; "" for nil.
func ErrorType(err error) string {
	if err == nil {
		return ""
	}
	if code := runtime.ErrorCode(err); code != "" {
		return code
	}
	for _, t := range errorTypes {
		if errors.Is(err, t.err) {
			return t.name
		}
	}
	return "_OTHER"
}

// TransitionOutcome classifies the error of a firing: OutcomeRecorded for
// nil, OutcomeRefused, OutcomeConflict, OutcomeLeaseLost or OutcomeError.
func TransitionOutcome(err error) string {
	switch {
	case err == nil:
		return OutcomeRecorded
	case errors.Is(err, runtime.ErrIllegalTransition), errors.Is(err, runtime.ErrGuardRejected), errors.Is(err, runtime.ErrTransitionRefused):
		return OutcomeRefused
	case errors.Is(err, runtime.ErrConflict):
		return OutcomeConflict
	case errors.Is(err, runtime.ErrLeaseLost):
		return OutcomeLeaseLost
	}
	return OutcomeError
}

// failed marks span as failed with err, if any, error.type set.
func failed(span trace.Span, err error) {
	if err == nil {
		return
	}
	span.SetAttributes(KeyErrorType.String(ErrorType(err)))
	var pe *engine.PanicError
	if errors.As(err, &pe) {
		span.RecordError(err, trace.WithAttributes(attribute.String("exception.stacktrace", string(pe.Stack))))
	} else {
		span.RecordError(err)
	}
	span.SetStatus(codes.Error, err.Error())
}
