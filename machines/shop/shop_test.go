package shop_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgxpool"

	rog "github.com/fsmgen/fsmgen/machines/problems/retrieveorgenerate"
	"github.com/fsmgen/fsmgen/machines/shop"
	"github.com/fsmgen/fsmgen/machines/shop/order"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
	"github.com/fsmgen/fsmgen/runtime/fsmtest"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const (
	alice = "00000000-0000-4000-8000-00000000a11c"
	bob   = "00000000-0000-4000-8000-000000000b0b"
)

type warehouse struct{}

func (warehouse) Pack(_ context.Context, id string, _ []string) (string, error) {
	return "parcel-" + id, nil
}

type payments struct{}

func (payments) Refund(_ context.Context, id string, _ int64) (string, error) {
	return "refund-" + id, nil
}

type env struct {
	pool *pgxpool.Pool
	clk  *fsmtest.Clock
	st   *store.Store
	eng  *engine.Engine
}

func newEnv(t *testing.T) env {
	t.Helper()
	pool := pgtest.NewPool(t)
	clk := fsmtest.NewClock(time.Date(2026, 11, 22, 20, 0, 0, 0, time.UTC))
	st := store.New(pool, store.WithClock(clk.Now))
	eng, err := engine.New(st, engine.Config{DisableNotify: true})
	if err != nil {
		t.Fatal(err)
	}
	wf := &shop.Workflow{Warehouse: warehouse{}, Payments: payments{}}
	if err := eng.Register(context.Background(), wf.Driver()); err != nil {
		t.Fatal(err)
	}
	return env{pool: pool, clk: clk, st: st, eng: eng}
}

// schedule reads, with the database's own arithmetic, when the run is due
// next relative to its entry into its state: "STATE due +D" or "STATE not
// due".
func (v env) schedule(t *testing.T, id string) string {
	t.Helper()
	var state string
	var delayUS *int64
	err := v.pool.QueryRow(context.Background(), `
		SELECT current_state, (extract(epoch FROM next_run_at - updated_at) * 1000000)::bigint
		FROM workflow_runs WHERE id = $1`, id).Scan(&state, &delayUS)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case delayUS == nil:
		return state + " not due"
	case *delayUS < 0:
		// due since before the entry: the run was due when it entered
		return fmt.Sprintf("%s due since %v before entry", state, -time.Duration(*delayUS)*time.Microsecond)
	}
	return fmt.Sprintf("%s due +%v", state, time.Duration(*delayUS)*time.Microsecond)
}

// runDue drives the runs due now, in the test's goroutine, and checks how
// many there were.
func (v env) runDue(t *testing.T, want int) {
	t.Helper()
	n, err := v.eng.RunDue(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n != want {
		t.Fatalf("RunDue drove %d runs, want %d", n, want)
	}
}

func (v env) start(t *testing.T, orders order.Handle[shop.Input], key string) order.Started {
	t.Helper()
	o, err := orders.Start(context.Background(), key, shop.Input{Items: []string{"book"}, TotalCents: 4200},
		runtime.Owner{TenantID: "acme", UserID: alice})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestTypedHandle drives orders through the typed handle and the engine's
// workers, and checks after each step the typed state and the schedule the
// state entered sets: the handle's event methods and Signal (the engine's
// Signal), its Cancel (the engine's Cancel), and a handler's event returned
// in a worker.
func TestTypedHandle(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	orders := order.Runs[shop.Input](v.eng)

	o := v.start(t, orders, "o-1")
	var in shop.Input
	if err := json.Unmarshal(o.Input, &in); err != nil {
		t.Fatal(err)
	}
	if o.State != order.StatePendingPayment || o.Outcome != runtime.StartCreated || in.TotalCents != 4200 {
		t.Fatalf("started: %s %s %s", o.State, o.Outcome, o.Input)
	}
	again := v.start(t, orders, "o-1")
	if again.ID != o.ID || again.Outcome != runtime.StartRunning {
		t.Errorf("started again: %s %s, want %s running", again.ID, again.Outcome, o.ID)
	}
	v.runDue(t, 0) // it waits for the payment; Start armed its timer
	steps := []struct {
		name string
		do   func() (order.Snapshot, error)
		want order.State
		due  string
	}{
		{"Pay", func() (order.Snapshot, error) { return orders.Pay(ctx, o.ID, order.Pay{PaymentRef: "pay-1"}) }, order.StatePacking, "PACKING due +0s"},
		{"worker", func() (order.Snapshot, error) { v.runDue(t, 1); return orders.Get(ctx, o.ID) }, order.StateInTransit, "IN_TRANSIT due +72h0m0s"},
		{"Delivered", func() (order.Snapshot, error) { return orders.Delivered(ctx, o.ID, order.Delivered{}) }, order.StateDelivered, "DELIVERED due +336h0m0s"},
		{"Signal Returned", func() (order.Snapshot, error) { return orders.Signal(ctx, o.ID, order.Returned{}) }, order.StateRefunding, "REFUNDING due +0s"},
		{"worker", func() (order.Snapshot, error) { v.runDue(t, 1); return orders.Wait(ctx, o.ID) }, order.StateRefunded, "REFUNDED not due"},
	}
	for _, s := range steps {
		v.clk.Advance(2 * time.Second)
		got, err := s.do()
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got.State != s.want || got.Run.State != s.want.String() {
			t.Errorf("%s: state %s (%s), want %s", s.name, got.State, got.Run.State, s.want)
		}
		if due := v.schedule(t, o.ID); due != s.due {
			t.Errorf("%s: %s, want %s", s.name, due, s.due)
		}
	}
	done, err := orders.Get(ctx, o.ID)
	if err != nil {
		t.Fatal(err)
	}
	if done.Result == nil || done.Result.Outcome != "refunded" || !done.Terminal() {
		t.Errorf("finished order: %+v", done.Result)
	}

	// Cancel fires the cancel event where the owner is: before the
	// payment the order ends, while it is packed it is refunded.
	early := v.start(t, orders, "o-2")
	if _, err := orders.Cancel(ctx, early.ID, bob); !errors.Is(err, runtime.ErrNotOwner) {
		t.Errorf("Cancel by another user: %v, want ErrNotOwner", err)
	}
	got, err := orders.Cancel(ctx, early.ID, alice)
	if err != nil || got.State != order.StateCancelled || v.schedule(t, early.ID) != "CANCELLED not due" {
		t.Errorf("Cancel before the payment: %s %v, %s", got.State, err, v.schedule(t, early.ID))
	}
	paid := v.start(t, orders, "o-3")
	if _, err := orders.Pay(ctx, paid.ID, order.Pay{PaymentRef: "pay-3"}); err != nil {
		t.Fatal(err)
	}
	v.clk.Advance(time.Second)
	got, err = orders.Cancel(ctx, paid.ID, alice)
	if err != nil || got.State != order.StateRefunding || v.schedule(t, paid.ID) != "REFUNDING due since 1s before entry" {
		t.Errorf("Cancel while packing: %s %v, %s", got.State, err, v.schedule(t, paid.ID))
	}
	if _, err := orders.Cancel(ctx, paid.ID, alice); !errors.Is(err, runtime.ErrNotCancellable) {
		t.Errorf("Cancel while refunding: %v, want ErrNotCancellable", err)
	}

	// An event the state does not take is refused, typed or not.
	if _, err := orders.Delivered(ctx, paid.ID, order.Delivered{}); !errors.Is(err, runtime.ErrIllegalTransition) {
		t.Errorf("Delivered while refunding: %v, want ErrIllegalTransition", err)
	}
	// The event REFUNDING's handler returns is not a caller's: the handle
	// has no method for it, and Signal refuses it.
	_, err = orders.Signal(ctx, paid.ID, order.Refunded{RefundRef: "forged"})
	want := "engine: signal Refunded run " + paid.ID + ": callers may not send the event: shop_order v1 in state REFUNDING: Refunded is returned by the handler of REFUNDING; declare it external to let callers send it"
	if !errors.Is(err, runtime.ErrNotCallerEvent) || err.Error() != want {
		t.Errorf("Signal(Refunded) while refunding: %v\nwant %s", err, want)
	}
}

// TestTypedHandleRefusesRunsOfAnotherMachine: a handle reads only runs of
// its own machine.
func TestTypedHandleRefusesRunsOfAnotherMachine(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	if err := v.st.Register(ctx, rog.Definition()); err != nil {
		t.Fatal(err)
	}
	other, err := v.st.Start(ctx, runtime.StartRequest{Type: rog.Type, Version: rog.Version, IdempotencyKey: "p-1", Owner: runtime.Owner{TenantID: "acme"}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = order.Runs[shop.Input](v.eng).Get(ctx, other.Run.ID)
	if !errors.Is(err, runtime.ErrOtherMachine) {
		t.Fatalf("Get of a run of another machine: %v, want ErrOtherMachine", err)
	}
	want := fmt.Sprintf("shop_order: run %s is a run of retrieve_or_generate: run of another machine", other.Run.ID)
	if err.Error() != want {
		t.Errorf("error:\n%s\nwant:\n%s", err, want)
	}
}

// TestLoadedMachine moves an order with the generated machine rebuilt from
// the store (store.Load and its Recorder), the path a service takes
// outside the engine, and checks that each transition leaves the schedule
// of the state entered: the payment's twenty-second timer does not hold a
// paid order back, and a delivered order waits fourteen days for a
// return, not its transit's three.
func TestLoadedMachine(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	orders := order.Runs[shop.Input](v.eng)
	o := v.start(t, orders, "o-1")
	v.runDue(t, 0)
	if due := v.schedule(t, o.ID); due != "PENDING_PAYMENT due +20s" {
		t.Fatalf("waiting for the payment: %s", due)
	}
	v.clk.Advance(2 * time.Second)

	load := func() *order.Machine {
		t.Helper()
		run, rec, err := v.st.Load(ctx, o.ID, order.Definition())
		if err != nil {
			t.Fatal(err)
		}
		state, err := order.ParseState(run.State)
		if err != nil {
			t.Fatal(err)
		}
		rt := run
		return order.New(shop.Guards(&rt), order.WithState(state), order.WithRecorder(rec))
	}
	steps := []struct {
		name string
		fire func(m *order.Machine) error
		due  string
	}{
		{"Pay", func(m *order.Machine) error { return m.Pay(ctx, order.Pay{PaymentRef: "pay-1"}) }, "PACKING due +0s"},
		{"Packed", func(m *order.Machine) error { return m.Packed(ctx, order.Packed{ParcelID: "p-1"}) }, "IN_TRANSIT due +72h0m0s"},
		{"Delivered", func(m *order.Machine) error { return m.Delivered(ctx, order.Delivered{}) }, "DELIVERED due +336h0m0s"},
	}
	for _, s := range steps {
		if err := s.fire(load()); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if due := v.schedule(t, o.ID); due != s.due {
			t.Errorf("%s: %s, want %s", s.name, due, s.due)
		}
		v.clk.Advance(time.Second)
	}

	// The engine honours that schedule: nothing is due before the return
	// window closes, and then a worker closes the order.
	v.clk.Advance(14*24*time.Hour - 2*time.Second)
	v.runDue(t, 0)
	v.clk.Advance(time.Second)
	v.runDue(t, 1)
	done, err := orders.Get(ctx, o.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"PENDING_PAYMENT", "PACKING", "IN_TRANSIT", "DELIVERED", "COMPLETED"}
	h, err := v.st.History(ctx, o.ID)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range h {
		if s.Kind != store.KindStep {
			got = append(got, s.To)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" || done.State != order.StateCompleted {
		t.Errorf("order in %s; states (-want +got):\n%s", done.State, diff)
	}
}
