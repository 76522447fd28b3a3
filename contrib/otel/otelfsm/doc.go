// Package otelfsm traces and measures the fsmgen engine (runtime/engine)
// with OpenTelemetry: a span per session on a run, per handler call and
// per transition, metrics of transitions, handler and claim latency, and
// gauges of the work waiting in the database. It is a module of its own,
// github.com/fsmgen/fsmgen/contrib/otel, so that the core module does not
// depend on OpenTelemetry: the engine knows only its engine.Middleware
// interface, which this package implements.
//
// # Setting up
//
// Make the middleware with the providers of the service (the global ones
// when left nil), give it to the engine, and register the backlog gauges
// in one process:
//
//	cfg := otelfsm.Config{TracerProvider: tp, MeterProvider: mp}
//	mw, err := otelfsm.NewMiddleware(cfg)
//	if err != nil { ... }
//	e, err := engine.New(st, engine.Config{
//		Middleware: []engine.Middleware{mw},
//	})
//	if err != nil { ... }
//	reg, err := otelfsm.ObserveBacklog(st, cfg) // reads the database at each collection
//	if err != nil { ... }
//	defer reg.Unregister()
//
// An engine without the middleware pays nothing for it: it makes no call
// and allocates nothing more (see engine.Middleware).
//
// # Spans
//
// A worker's session on a claimed run is a span, and so are the handler
// calls and transitions it makes, as its children, in the order they
// happen. A transition is the sibling of the handler call that chose its
// event, not its child: the engine fires the event after the handler has
// returned, and the transition's span covers the guards and the write.
// Signal and Cancel are commands, each a span in their caller's context (a
// child of an HTTP request's span, say), whose transition is its child; a
// command refused before any event is fired (a cancel by a user who does
// not own the run, an event callers may not send, a finished run) is its
// span alone, failed. Drive, the inline driving of a run, makes its
// session a child of its caller's span too; Work's sessions start traces
// of their own.
//
//	POST /orders/pay                                   (the caller's span)
//	├── fsmgen.signal Pay                              Signal
//	│   └── fsmgen.transition shop_order PENDING_PAYMENT on Pay
//	└── fsmgen.drive shop_order                        Drive (kind consumer)
//	    ├── fsmgen.handle shop_order PACKING           the handler
//	    └── fsmgen.transition shop_order PACKING on Packed
//
// # A run's thread through its sessions
//
// The middleware is an engine.TraceContext: when the engine starts a run
// in a context with a span (an HTTP request's), it stores that span's W3C
// traceparent with the run (workflow_runs.trace_parent, written by the
// statement that creates the run: no statement more), children the run
// starts take it, and every later session's fsmgen.drive span links to it
// (a span link with fsmgen.link=run.start), whichever worker claims the run
// and however long after: a run that waits a day and resumes is found from
// the request that started it, and the request's trace lists its sessions.
// The run's outbox messages carry the traceparent too; contrib/nats puts
// it in the message's traceparent header, for consumers to extract. A run
// started without a span has none, and its sessions no link.
//
// The handler's context carries its span, so what the handler traces (an
// HTTP call, a query through an instrumented pool) nests under it; the
// guards and the store's statements see the transition's.
//
// Attributes:
//
//	every span       fsmgen.run.id, fsmgen.type, fsmgen.version,
//	                 fsmgen.attempt (the try of the state, from 1),
//	                 fsmgen.run.attempt (the run's attempt, grows on a restart);
//	                 when it failed, error.type (ErrorType)
//	fsmgen.drive     fsmgen.state (as claimed), fsmgen.worker (the worker id),
//	                 and at its end fsmgen.end_state, fsmgen.status, and for a
//	                 run it parked fsmgen.parked and fsmgen.error.code
//	fsmgen.handle    fsmgen.state, fsmgen.outcome (ok, error, panic),
//	                 fsmgen.event (the event returned), fsmgen.error.code
//	                 (the code of runtime.WithCode)
//	fsmgen.transition fsmgen.from, fsmgen.event, fsmgen.to (when recorded),
//	                 fsmgen.outcome (recorded, refused, conflict, lease_lost,
//	                 error)
//	fsmgen.signal, fsmgen.cancel  fsmgen.run.id, fsmgen.command (signal,
//	                 cancel), fsmgen.event (a signal's), fsmgen.outcome (ok,
//	                 refused, error), and when the run was read fsmgen.type,
//	                 fsmgen.version and fsmgen.state (as the command left it)
//
// A failed handler, a refused or failed transition or command and an
// interrupted session have status Error with the error recorded as an
// exception event and error.type, OpenTelemetry's attribute for the class
// of an error: the code of runtime.WithCode, else the runtime's error it
// matches (not_owner, illegal_transition, guard_rejected, conflict,
// lease_lost, run_finished, panic, timeout, ...), else _OTHER; a panic's
// event carries its stack (exception.stacktrace). A
// session that ends because another process moved the run (a signal, a
// cancellation) is not an error. Claims have no span: an idle worker polls
// every PollInterval, and a span per poll would drown the traces; they are
// measured.
//
// # Metrics
//
//	fsmgen.transitions       counter {transition}: events fired on runs, by
//	                         fsmgen.type and fsmgen.outcome
//	fsmgen.handler.duration  histogram, s: handler calls, by fsmgen.type,
//	                         fsmgen.state and fsmgen.outcome
//	fsmgen.claim.duration    histogram, s: claim statements, by fsmgen.outcome
//	fsmgen.claim.runs        counter {run}: runs claimed
//	fsmgen.commands          counter {command}: callers' signals and
//	                         cancels, by fsmgen.command, fsmgen.outcome (ok,
//	                         refused, error), fsmgen.type (when the run was
//	                         read) and error.type (when it failed): a cancel
//	                         by a user who does not own the run counts as
//	                         refused, error.type=not_owner
//
// The histograms' buckets run from 1 ms to 5 min. Every attribute has a
// bounded set of values (the types, states and outcomes of the registered
// machines); run ids are on spans only.
//
// # Backlog gauges
//
// ObserveBacklog registers gauges read from the database with one
// statement (store.Store.Backlog) at each collection of the meter's
// reader, by fsmgen.type:
//
//	fsmgen.runs.due        {run}: running runs due now that no live lease
//	                       holds, waiting for a worker
//	fsmgen.runs.due.lag    s: how long the oldest of them has been due in
//	                       its current state; growing, the workers do not
//	                       keep up
//	fsmgen.runs.parked     {run}: parked runs, waiting for an operator
//	fsmgen.outbox.pending  {message}: outbox messages not yet published
//	fsmgen.outbox.lag      s: the age of the oldest of them
//
// A type that once had something waiting is reported with zeros when it
// has nothing any more. The figures are the database's: register them in
// one process, or aggregate them across processes with max, not sum.
//
// # Logging
//
// The same engine.Middleware serves logging: see the engine's
// documentation for a logging middleware in a few lines. Config.Middleware
// takes several; the first is the outermost, so a logger after this
// middleware sees the span in its context.
package otelfsm
