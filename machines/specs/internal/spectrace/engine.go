package spectrace

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
	"github.com/fsmgen/fsmgen/runtime/fsmtest"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// Engine is a Subject: one run of the durable engine (runtime/engine) on
// a real PostgreSQL, its store on a clock the replay advances. Events are
// signals; timers fire when the clock reaches them and RunDue drives the
// run.
type Engine struct {
	e      *engine.Engine
	st     *store.Store
	clk    *fsmtest.Clock
	typ    string
	key    string
	decode func(name string, payload []byte) (runtime.Event, error)
	log    *Log
	id     string
}

// NewEngine returns an engine on a fresh database of pgtest with driver
// registered, ready to start a run of type typ with key key. decode
// rebuilds an event (the generated DecodeEvent); log is where the
// driver's actions write.
func NewEngine(t testing.TB, driver runtime.Driver, typ, key string, decode func(name string, payload []byte) (runtime.Event, error), log *Log) *Engine {
	t.Helper()
	clk := fsmtest.NewClock(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC))
	st := store.New(pgtest.NewPool(t), store.WithClock(clk.Now))
	e, err := engine.New(st, engine.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Register(context.Background(), driver); err != nil {
		t.Fatal(err)
	}
	return &Engine{e: e, st: st, clk: clk, typ: typ, key: key, decode: decode, log: log}
}

// Start implements Subject: it starts the run and drives it while it is
// due (an eventless row of its first state).
func (s *Engine) Start(ctx context.Context) error {
	res, err := s.e.Start(ctx, runtime.StartRequest{
		Type: s.typ, IdempotencyKey: s.key, Owner: runtime.Owner{TenantID: "tenant-1", UserID: "00000000-0000-4000-8000-000000000001"},
	})
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	s.id = res.Run.ID
	return s.runDue(ctx)
}

// Fire implements Subject: the event is a signal to the run.
func (s *Engine) Fire(ctx context.Context, event string, payload []byte) error {
	ev, err := s.decode(event, payload)
	if err != nil {
		return err
	}
	if _, err := s.e.Signal(ctx, s.id, ev); err != nil {
		return err
	}
	return s.runDue(ctx)
}

// Advance implements Clock.
func (s *Engine) Advance(ctx context.Context, d time.Duration) error {
	s.clk.Advance(d)
	return s.runDue(ctx)
}

// runDue drives the runs due until none is.
func (s *Engine) runDue(ctx context.Context) error {
	for range 100 {
		n, err := s.e.RunDue(ctx)
		if err != nil || n == 0 {
			return err
		}
	}
	return fmt.Errorf("run %s is still due after 100 rounds", s.id)
}

// Leaf implements Subject: the run's persisted state.
func (s *Engine) Leaf(ctx context.Context) (string, error) {
	run, err := s.st.Get(ctx, s.id)
	if err != nil {
		return "", err
	}
	return run.State, nil
}

// Actions implements Subject.
func (s *Engine) Actions() []string { return s.log.Take() }

// Moves returns the run's log, one "EVENT FROM->TO" per transition.
func (s *Engine) Moves(ctx context.Context) ([]string, error) {
	h, err := s.st.History(ctx, s.id)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, step := range h {
		if step.Kind == store.KindTransition {
			out = append(out, fmt.Sprintf("%s %s->%s", step.Event, step.From, step.To))
		}
	}
	return out, nil
}
