package engine_test

import (
	"context"
	"log"
	"log/slog"
	"os"
	"time"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// logged is a logging middleware: one line per handler call and per
// transition, with the logger taking the step's context.
type logged struct {
	engine.MiddlewareDefaults
	log *slog.Logger
}

func (m logged) Handle(ctx context.Context, run *runtime.Run, state string, next func(context.Context) (runtime.Event, error)) (runtime.Event, error) {
	began := time.Now()
	ev, err := next(ctx)
	if err != nil {
		m.log.WarnContext(ctx, "handler failed", "type", run.Type, "state", state, "try", run.StepAttempt, "took", time.Since(began), "err", err)
		return ev, err
	}
	m.log.InfoContext(ctx, "handled", "type", run.Type, "state", state, "try", run.StepAttempt, "took", time.Since(began), "event", ev.EventName())
	return ev, err
}

func (m logged) Transition(ctx context.Context, run *runtime.Run, from string, ev runtime.Event, next func(context.Context) (runtime.Transition, error)) (runtime.Transition, error) {
	t, err := next(ctx)
	m.log.InfoContext(ctx, "transition", "type", run.Type, "from", from, "event", ev.EventName(), "to", t.To, "err", err)
	return t, err
}

// ExampleMiddleware logs the steps of a run with a middleware: the
// engine calls it around each handler call and transition.
func ExampleMiddleware() {
	ctx := context.Background()
	pool, err := pgtest.OpenPool(ctx) // in a service: pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == "took" {
				return slog.Attr{} // no times in the example's output
			}
			return a
		},
	}))
	e, err := engine.New(store.New(pool), engine.Config{
		Middleware: []engine.Middleware{logged{log: logger}},
		Logger:     quiet,
	})
	if err != nil {
		log.Fatal(err)
	}
	d := &driver{def: jobDef("job", nil, ""), handlers: map[string]handler{
		"QUEUED": constant(event("Begin")), "WORKING": constant(event("Finish")),
	}}
	if err := e.Register(ctx, d); err != nil {
		log.Fatal(err)
	}
	res, err := e.Start(ctx, runtime.StartRequest{Type: "job", IdempotencyKey: "job-1", Owner: runtime.Owner{TenantID: "acme"}})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := e.Drive(ctx, res.Run.ID); err != nil {
		log.Fatal(err)
	}
	// Output:
	// level=INFO msg=handled type=job state=QUEUED try=1 event=Begin
	// level=INFO msg=transition type=job from=QUEUED event=Begin to=WORKING err=<nil>
	// level=INFO msg=handled type=job state=WORKING try=1 event=Finish
	// level=INFO msg=transition type=job from=WORKING event=Finish to=DONE err=<nil>
}
