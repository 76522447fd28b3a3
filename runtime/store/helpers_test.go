package store_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// orderDef is a small machine with every generic status:
//
//	INITIATED -> WORKING on Begin
//	WORKING   -> SUCCEEDED on Finish (outcome "done")
//	INITIATED, WORKING -> FAILED on Fail
//	INITIATED, WORKING -> CANCELLED on Cancel
func orderDef(version int) runtime.Definition {
	return runtime.Definition{
		Machine: "Order", Type: "order", Version: version, Initial: "INITIATED",
		States: []runtime.StateSpec{
			{Name: "INITIATED", Initial: true, Status: runtime.StatusRunning},
			{Name: "WORKING", Status: runtime.StatusRunning},
			{Name: "SUCCEEDED", Status: runtime.StatusSucceeded, Outcome: "done"},
			{Name: "FAILED", Status: runtime.StatusFailed},
			{Name: "CANCELLED", Status: runtime.StatusCancelled},
		},
		Events: []runtime.EventSpec{{Name: "Begin"}, {Name: "Finish"}, {Name: "Fail"}, {Name: "Cancel"}},
		Transitions: []runtime.TransitionSpec{
			{From: "INITIATED", To: "WORKING", Event: "Begin"},
			{From: "WORKING", To: "SUCCEEDED", Event: "Finish", Outcome: "done"},
			{From: "INITIATED", To: "FAILED", Event: "Fail"},
			{From: "WORKING", To: "FAILED", Event: "Fail"},
			{From: "INITIATED", To: "CANCELLED", Event: "Cancel"},
			{From: "WORKING", To: "CANCELLED", Event: "Cancel"},
		},
	}
}

// tr builds the transition a generated machine of orderDef(1) would record.
func tr(from, event, to string, payload any) runtime.Transition {
	def := orderDef(1)
	st, _ := def.State(to)
	return runtime.Transition{Machine: def.Type, Version: def.Version, From: from, To: to, Event: event,
		Payload: payload, Status: st.Status, Outcome: st.Outcome}
}

type env struct {
	pool *pgxpool.Pool
	st   *store.Store
	ctx  context.Context
}

// newEnv gives the test a fresh database with orderDef(1) registered.
func newEnv(t *testing.T, opts ...store.Option) env {
	t.Helper()
	return newEnvPool(t, pgtest.NewPool(t), opts...)
}

func newEnvPool(t *testing.T, pool *pgxpool.Pool, opts ...store.Option) env {
	t.Helper()
	ctx := context.Background()
	st := store.New(pool, opts...)
	if err := st.Register(ctx, orderDef(1)); err != nil {
		t.Fatal(err)
	}
	return env{pool: pool, st: st, ctx: ctx}
}

func (e env) start(t *testing.T, key string) runtime.Started {
	t.Helper()
	res, err := e.st.Start(e.ctx, runtime.StartRequest{Type: "order", Version: 1, IdempotencyKey: key, Owner: runtime.Owner{TenantID: "t1"}})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func (e env) record(t *testing.T, run runtime.Run, from, event, to string) runtime.Run {
	t.Helper()
	if _, err := e.st.Record(e.ctx, run.ID, run.RowVersion, tr(from, event, to, nil)); err != nil {
		t.Fatal(err)
	}
	return e.get(t, run.ID)
}

func (e env) get(t *testing.T, id string) runtime.Run {
	t.Helper()
	run, err := e.st.Get(e.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func (e env) history(t *testing.T, id string) []store.Step {
	t.Helper()
	h, err := e.st.History(e.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// moves summarises a history as "kind from->to/event@rowversion aN" lines.
func moves(h []store.Step) []string {
	var out []string
	for _, s := range h {
		out = append(out, fmt.Sprintf("%s %s->%s/%s@%d a%d", s.Kind, s.From, s.To, s.Event, s.RowVersion, s.Attempt))
	}
	return out
}
