package subscription_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/machines/subscription"
	subs "github.com/fsmgen/fsmgen/machines/subscription/subscription"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
	"github.com/fsmgen/fsmgen/runtime/fsmtest"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const (
	tenant   = "tenant-1"
	customer = "00000000-0000-4000-8000-0000000c0575"
	month    = 30 * 24 * time.Hour
	grace    = 14 * 24 * time.Hour
)

// provider is the payment provider: it declines the charges the test says
// it will, and remembers every charge by key.
type provider struct {
	mu      sync.Mutex
	decline bool
	charges []string // keys, in order
	byKey   map[string]string
}

func (p *provider) Charge(_ context.Context, key, who string, amount int64) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if who != customer || amount != 1299 {
		return "", fmt.Errorf("charge of %d to %s, want 1299 to the customer", amount, who)
	}
	if p.decline {
		return "", subscription.ErrCardDeclined
	}
	if inv, ok := p.byKey[key]; ok {
		return inv, nil
	}
	inv := fmt.Sprintf("inv-%d", len(p.charges)+1)
	p.charges = append(p.charges, key)
	p.byKey[key] = inv
	return inv, nil
}

func (p *provider) declining(d bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.decline = d
}

type fixture struct {
	clk *fsmtest.Clock
	st  *store.Store
	e   *engine.Engine
	pay *provider
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	clk := fsmtest.NewClock(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC))
	pool := pgtest.NewPool(t)
	st := store.New(pool, store.WithClock(clk.Now))
	e, err := engine.New(st, engine.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	pay := &provider{byKey: map[string]string{}}
	if err := e.Register(context.Background(), subscription.NewDriver(pay)); err != nil {
		t.Fatal(err)
	}
	return &fixture{clk: clk, st: st, e: e, pay: pay}
}

// runDue drives the runs due now and checks how many there were.
func (f *fixture) runDue(t *testing.T, want int) {
	t.Helper()
	n, err := f.e.RunDue(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n != want {
		t.Fatalf("RunDue drove %d runs, want %d", n, want)
	}
}

// state checks that the run is in state and still running, with no result.
func (f *fixture) state(t *testing.T, id string, want subs.State) runtime.Run {
	t.Helper()
	run, err := f.st.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if run.State != want.String() || run.Status != runtime.StatusRunning || run.Terminal() || run.Result != nil {
		t.Fatalf("run in %s, status %s, result %+v; want %s, running, no result", run.State, run.Status, run.Result, want)
	}
	return run
}

func (f *fixture) signal(t *testing.T, id string, ev subs.Event) {
	t.Helper()
	if _, err := f.e.Signal(context.Background(), id, ev); err != nil {
		t.Fatal(err)
	}
}

// moves is the run's log, one "event FROM->TO" per transition.
func (f *fixture) moves(t *testing.T, id string) []string {
	t.Helper()
	h, err := f.st.History(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range h {
		switch s.Kind {
		case store.KindCreated:
			out = append(out, "created "+s.To)
		case store.KindTransition:
			out = append(out, fmt.Sprintf("%s %s->%s", s.Event, s.From, s.To))
		}
	}
	return out
}

// TestSubscriptionCyclesForever drives a subscription on the engine through
// every row of its table, twice round ACTIVE, PAST_DUE and PAUSED, by its
// timers (renewal, grace period) and by signals (card updated, pause,
// resume). The run never finishes: after each step it is running, with no
// result; starting it again finds it running; Cancel has no cancel event
// to fire; Wait waits until its context is done.
func TestSubscriptionCyclesForever(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	res, err := f.e.Start(ctx, runtime.StartRequest{
		Type: subs.Type, IdempotencyKey: "sub-1", Owner: runtime.Owner{TenantID: tenant, UserID: customer},
		Input: subscription.Plan{Customer: customer, AmountCents: 1299},
	})
	if err != nil {
		t.Fatal(err)
	}
	id := res.Run.ID
	f.state(t, id, subs.StateActive)

	// Wait, from now on, on a run that never finishes.
	waitCtx, stopWaiting := context.WithCancel(ctx)
	type waited struct {
		run runtime.Run
		err error
	}
	waitDone := make(chan waited, 1)
	go func() {
		run, err := f.e.Wait(waitCtx, id)
		waitDone <- waited{run, err}
	}()

	// A new run waits in ACTIVE until its renewal: it is not due before.
	f.runDue(t, 0)
	f.state(t, id, subs.StateActive)
	for round := 1; round <= 2; round++ {
		// The renewal falls due and is paid.
		f.clk.Advance(month - time.Second)
		f.runDue(t, 0)
		f.clk.Advance(time.Second)
		f.runDue(t, 1)
		f.state(t, id, subs.StateActive)

		// The next one is declined: PAST_DUE at once, without retries.
		f.pay.declining(true)
		f.clk.Advance(month)
		f.runDue(t, 1)
		f.state(t, id, subs.StatePastDue)

		// The customer updates the card; Drive charges it inline and
		// returns once the run waits again.
		f.pay.declining(false)
		f.signal(t, id, subs.CardUpdated{})
		run, err := f.e.Drive(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if run.State != subs.StateActive.String() || run.Terminal() {
			t.Fatalf("Drive returned the run in %s (%s)", run.State, run.Status)
		}

		// The customer pauses; a paused subscription is never due.
		f.signal(t, id, subs.Pause{Reason: "holiday"})
		f.state(t, id, subs.StatePaused)
		f.clk.Advance(3 * month)
		f.runDue(t, 0)

		// Resumed: charged at once.
		f.signal(t, id, subs.Resume{})
		f.runDue(t, 1)
		f.state(t, id, subs.StateActive)

		// Declined again, and the grace period runs out: paused.
		f.pay.declining(true)
		f.clk.Advance(month)
		f.runDue(t, 1)
		f.state(t, id, subs.StatePastDue)
		f.clk.Advance(grace - time.Second)
		f.runDue(t, 0)
		f.clk.Advance(time.Second)
		f.runDue(t, 1)
		f.state(t, id, subs.StatePaused)

		f.pay.declining(false)
		f.signal(t, id, subs.Resume{})
		f.runDue(t, 1)
		f.state(t, id, subs.StateActive)
	}

	cycle := []string{
		"RenewalDue ACTIVE->CHARGING", "PaymentSucceeded CHARGING->ACTIVE",
		"RenewalDue ACTIVE->CHARGING", "PaymentFailed CHARGING->PAST_DUE",
		"CardUpdated PAST_DUE->CHARGING", "PaymentSucceeded CHARGING->ACTIVE",
		"Pause ACTIVE->PAUSED",
		"Resume PAUSED->CHARGING", "PaymentSucceeded CHARGING->ACTIVE",
		"RenewalDue ACTIVE->CHARGING", "PaymentFailed CHARGING->PAST_DUE",
		"GraceExpired PAST_DUE->PAUSED",
		"Resume PAUSED->CHARGING", "PaymentSucceeded CHARGING->ACTIVE",
	}
	want := append(append([]string{"created ACTIVE"}, cycle...), cycle...)
	if diff := cmp.Diff(want, f.moves(t, id)); diff != "" {
		t.Errorf("the run's log (-want +got):\n%s", diff)
	}
	// One charge per paid renewal, each with a key of its own.
	if got := len(f.pay.charges); got != 8 {
		t.Errorf("%d charges %v, want 8", got, f.pay.charges)
	}

	// The same subscription started again is the same run, running.
	again, err := f.e.Start(ctx, runtime.StartRequest{Type: subs.Type, IdempotencyKey: "sub-1", Owner: runtime.Owner{TenantID: tenant, UserID: customer}})
	if err != nil {
		t.Fatal(err)
	}
	if again.Outcome != runtime.StartRunning || again.Run.ID != id || !again.ETA.IsZero() {
		t.Errorf("Start again: %s, run %s, ETA %v; want running, run %s, no ETA", again.Outcome, again.Run.ID, again.ETA, id)
	}
	running, err := f.st.List(ctx, store.Filter{Filter: runtime.Filter{Type: subs.Type, Status: runtime.StatusRunning}})
	if err != nil {
		t.Fatal(err)
	}
	if len(running) != 1 || running[0].ID != id {
		t.Errorf("running subscriptions: %+v", running)
	}

	// Nothing to cancel with: the machine names no cancel event.
	if _, err := f.e.Cancel(ctx, id, customer); !errors.Is(err, runtime.ErrNoCancelEvent) {
		t.Errorf("Cancel: %v, want ErrNoCancelEvent", err)
	}
	f.state(t, id, subs.StateActive)

	// Wait has not returned through all of this; it returns when its
	// context is done, with the context's error.
	select {
	case w := <-waitDone:
		t.Fatalf("Wait returned on a run that never finishes: %+v, %v", w.run, w.err)
	default:
	}
	stopWaiting()
	w := <-waitDone
	if !errors.Is(w.err, context.Canceled) {
		t.Errorf("Wait after its context was cancelled: %v, want context.Canceled", w.err)
	}
}
