package engine

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/internal/enginestore"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// nopDriver is a driver whose calls allocate nothing.
type nopDriver struct{ ev runtime.Event }

func (d nopDriver) Definition() runtime.Definition { return runtime.Definition{} }
func (d nopDriver) Handle(context.Context, *runtime.Run, string) (runtime.Event, error) {
	return d.ev, nil
}
func (d nopDriver) Decode(string, []byte) (runtime.Event, error) { return d.ev, nil }
func (d nopDriver) Fire(context.Context, *runtime.Run, string, runtime.Event, runtime.Recorder) error {
	return nil
}

type nopEvent struct{}

func (nopEvent) EventName() string { return "Next" }

// TestNoMiddlewareAllocatesNothing: without middleware, each of the
// engine's steps (a claim, a session, a handler call, a firing) allocates
// exactly what the call it wraps does: the instrumentation adds nothing
// to the hot path of an engine without middleware.
func TestNoMiddlewareAllocatesNothing(t *testing.T) {
	pool, err := pgxpool.New(context.Background(), "postgres://nobody@127.0.0.1:1/none?connect_timeout=1")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	st := store.New(pool)
	e := &Engine{pool: pool, st: st, es: enginestore.New(st), cfg: Config{}.withDefaults()}
	if e.mw != nil {
		t.Fatal("an engine without middleware has one")
	}
	reg := &registered{driver: nopDriver{ev: nopEvent{}}}
	rt := &runtime.Run{ID: "r1", Type: "t", Version: 1}
	s := &session{e: e, reg: reg, run: runtime.Run{ID: "r1", Type: "t", State: "A"}}
	rec := &recorder{e: e, reg: reg}
	ctx := context.Background()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	// A session whose context is done ends before its first statement.
	s.hbase = cancelled
	claimP := enginestore.ClaimParams{Owner: "w", Limit: 1, TTL: 1}

	for _, c := range []struct {
		name          string
		wrapped, bare func()
	}{
		{"claim", func() { _, _ = e.claim(cancelled, claimP) }, func() { _, _ = e.es.Claim(cancelled, claimP) }},
		{"session", func() { _ = s.driveSession() }, func() { _ = s.loop() }},
		{"handler", func() { _, _ = s.callHandler(ctx, rt, "A") }, func() { _, _ = reg.handler(ctx, rt, "A") }},
		{"transition", func() { _ = fireThrough(ctx, reg, rt, "A", nopEvent{}, rec) }, func() { _ = fireEvent(ctx, reg, rt, "A", nopEvent{}, rec) }},
	} {
		wrapped, bare := testing.AllocsPerRun(200, c.wrapped), testing.AllocsPerRun(200, c.bare)
		if wrapped != bare {
			t.Errorf("%s: %v allocations through the middleware's step without middleware, %v without the step", c.name, wrapped, bare)
		}
	}
}
