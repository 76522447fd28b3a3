package engine_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
)

// shopDef is an e-commerce order: it waits 20s for the payment, packs,
// ships and delivers; a cancelled order that was paid is refunded first.
// The timer's row into CANCELLED comes before the cancel row, and REFUNDED
// is a cancelled state reached by an event that is not the cancel event:
// the rows a cancellation must not pick.
func shopDef() runtime.Definition {
	pending := running("PENDING_PAYMENT")
	pending.Wait = true
	pending.Timers = []runtime.Timer{{After: 20 * time.Second, Event: "PaymentExpired"}}
	transit := running("IN_TRANSIT")
	transit.Wait = true
	transit.Timers = []runtime.Timer{{After: 72 * time.Hour, Event: "Lost"}}
	refunding := running("REFUNDING")
	refunding.Retry = &runtime.RetryPolicy{MaxAttempts: 3, InitialInterval: time.Second, Coefficient: 2}
	refunded := final("REFUNDED", runtime.StatusCancelled)
	refunded.Outcome = "refunded"
	d := def("shop",
		[]runtime.StateSpec{pending, running("PACKING"), transit, refunding,
			final("DELIVERED", runtime.StatusSucceeded), final("CANCELLED", runtime.StatusCancelled), refunded},
		[]string{"PENDING_PAYMENT", "Pay", "PACKING"},
		[]string{"PENDING_PAYMENT", "PaymentExpired", "CANCELLED"},
		[]string{"PENDING_PAYMENT", "Cancel", "CANCELLED", "UserOwnsRun"},
		[]string{"PACKING", "Shipped", "IN_TRANSIT"},
		[]string{"PACKING", "Cancel", "REFUNDING", "UserOwnsRun"},
		[]string{"IN_TRANSIT", "Delivered", "DELIVERED"},
		[]string{"IN_TRANSIT", "Lost", "REFUNDING"},
		[]string{"REFUNDING", "Refunded", "REFUNDED"},
	)
	d.Cancel = "Cancel"
	for i := range d.Events {
		// The carrier may report a loss before the timer does.
		d.Events[i].External = d.Events[i].Name == "Lost"
	}
	return d
}

// askedGuard is an ownership guard that records the user ids it was
// asked about.
type askedGuard struct {
	mu    sync.Mutex
	asked []any
}

func (g *askedGuard) guards() map[string]func(ev) bool {
	return map[string]func(ev) bool{"UserOwnsRun": func(e ev) bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.asked = append(g.asked, e.data["userID"])
		return e.data["userID"] != "blocked"
	}}
}

func (g *askedGuard) got() []any {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]any(nil), g.asked...)
}

func shopEngine(t *testing.T) (env, *engine.Engine, *askedGuard) {
	t.Helper()
	v := newEnv(t)
	g := &askedGuard{}
	d := &driver{def: shopDef(), guards: g.guards(), handlers: map[string]handler{
		"PACKING": constant(event("Shipped")),
		"REFUNDING": func(context.Context, *runtime.Run) (runtime.Event, error) {
			return nil, errors.New("refund provider down")
		},
	}}
	return v, v.engine(t, engine.Config{}, d), g
}

// TestCancelFiresTheCancelEvent: in PENDING_PAYMENT, whose first row into
// CANCELLED is the timer's PaymentExpired, Cancel fires Cancel, asking its
// guard.
func TestCancelFiresTheCancelEvent(t *testing.T) {
	t.Parallel()
	v, e, g := shopEngine(t)
	run := v.start(t, e, "shop", "o-1")
	got, err := e.Cancel(context.Background(), run.ID, alice)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != "CANCELLED" || got.Result == nil || got.Result.ErrorCode != "CANCELLED" {
		t.Errorf("cancelled run: %s %+v", got.State, got.Result)
	}
	want := []string{"created start ->PENDING_PAYMENT", "transition Cancel PENDING_PAYMENT->CANCELLED"}
	if diff := cmp.Diff(want, v.moves(t, run.ID)); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]any{alice}, g.got()); diff != "" {
		t.Errorf("guard asked about (-want +got):\n%s", diff)
	}
}

// TestCancelLeadingToAStateThatIsNotCancelled: in PACKING the cancel event
// leads to REFUNDING, a driven state; Cancel fires it and the run is due
// at once for its refund: still due from when the payment made it due.
func TestCancelLeadingToAStateThatIsNotCancelled(t *testing.T) {
	t.Parallel()
	v, e, g := shopEngine(t)
	ctx := context.Background()
	run := v.start(t, e, "shop", "o-1")
	paid, err := e.Signal(ctx, run.ID, event("Pay"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.Cancel(ctx, run.ID, alice)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != "REFUNDING" || got.Status != runtime.StatusRunning || got.Result != nil || paid.NextRunAt.IsZero() || !got.NextRunAt.Equal(paid.NextRunAt) {
		t.Errorf("cancelled run: %s %s result %+v due %v, want REFUNDING running, due since %v as when paid", got.State, got.Status, got.Result, got.NextRunAt, paid.NextRunAt)
	}
	want := []string{"created start ->PENDING_PAYMENT", "transition Pay PENDING_PAYMENT->PACKING", "transition Cancel PACKING->REFUNDING"}
	if diff := cmp.Diff(want, v.moves(t, run.ID)); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]any{alice}, g.got()); diff != "" {
		t.Errorf("guard asked about (-want +got):\n%s", diff)
	}
	if _, err := e.Cancel(ctx, run.ID, "blocked"); !errors.Is(err, runtime.ErrNotOwner) {
		t.Errorf("Cancel by a stranger: %v, want ErrNotOwner", err)
	}
}

// TestCancelInAStateWithoutTheCancelEvent: REFUNDING has no row on Cancel,
// only Refunded into the cancelled state REFUNDED; Cancel refuses and fires
// nothing.
func TestCancelInAStateWithoutTheCancelEvent(t *testing.T) {
	t.Parallel()
	v, e, _ := shopEngine(t)
	ctx := context.Background()
	run := v.start(t, e, "shop", "o-1")
	if _, err := e.Signal(ctx, run.ID, event("Pay")); err != nil {
		t.Fatal(err)
	}
	runDue(t, e, 1) // PACKING's handler returns Shipped
	if _, err := e.Signal(ctx, run.ID, event("Lost")); err != nil {
		t.Fatal(err)
	}
	_, err := e.Cancel(ctx, run.ID, alice)
	if !errors.Is(err, runtime.ErrNotCancellable) {
		t.Fatalf("Cancel in REFUNDING: %v, want ErrNotCancellable", err)
	}
	want := fmt.Sprintf("engine: cancel run %s: cannot be cancelled in its state: state REFUNDING of shop v1 has no transition on the cancel event Cancel", run.ID)
	if err.Error() != want {
		t.Errorf("error:\n%s\nwant:\n%s", err, want)
	}
	if got := v.get(t, run.ID); got.State != "REFUNDING" || got.Result != nil {
		t.Errorf("run after the refused cancel: %s %+v", got.State, got.Result)
	}
	if n := len(v.moves(t, run.ID)); n != 4 {
		t.Errorf("log has %d rows, want 4: %v", n, v.moves(t, run.ID))
	}
}

// TestCancelWithoutCancelEvent: a machine that names no cancel event
// cannot be cancelled, even from a state with a row into a cancelled
// state.
func TestCancelWithoutCancelEvent(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	d := shopDef()
	d.Type, d.Cancel = "shop_nocancel", ""
	e := v.engine(t, engine.Config{}, &driver{def: d, guards: ownerGuard()})
	run := v.start(t, e, d.Type, "o-1")
	_, err := e.Cancel(context.Background(), run.ID, alice)
	if !errors.Is(err, runtime.ErrNoCancelEvent) {
		t.Fatalf("Cancel: %v, want ErrNoCancelEvent", err)
	}
	want := fmt.Sprintf("engine: cancel run %s: the machine has no cancel event: shop_nocancel v1 declares none", run.ID)
	if err.Error() != want {
		t.Errorf("error:\n%s\nwant:\n%s", err, want)
	}
	if got := v.get(t, run.ID); got.State != "PENDING_PAYMENT" {
		t.Errorf("run moved to %s", got.State)
	}
}

// TestRegisterRefusesAnUnknownCancelEvent: a definition whose cancel event
// is not one of its events is refused at registration.
func TestRegisterRefusesAnUnknownCancelEvent(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	d := shopDef()
	d.Cancel = "Cancle"
	e, err := engine.New(v.st, engine.Config{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	err = e.Register(context.Background(), &driver{def: d})
	if !errors.Is(err, runtime.ErrInvalidDefinition) {
		t.Fatalf("Register: %v, want ErrInvalidDefinition", err)
	}
	const want = "store: register: invalid definition: definition shop v1: unknown cancel event Cancle"
	if err.Error() != want {
		t.Errorf("error:\n%s\nwant:\n%s", err, want)
	}
}
