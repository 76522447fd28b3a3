package turnstile

// Hand-written expectations about the machine of turnstile.fsm, whose
// states all wait: gen's TestGoldenPackages copies this file next to the
// golden package and runs it.

import (
	"context"
	"errors"
	"testing"

	"github.com/fsmgen/fsmgen/runtime"
)

type coins int

func (c coins) EnoughCoins(_ context.Context, e Coin) bool { return e.Cents >= int(c) }

// TestGuardReadsThePayload: the guard sees the event it decides on.
func TestGuardReadsThePayload(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := New(coins(50))
	err := m.Coin(ctx, Coin{Cents: 20})
	var te *runtime.TransitionError
	if !errors.As(err, &te) || !errors.Is(err, runtime.ErrGuardRejected) || m.State() != StateLocked {
		t.Fatalf("20 cents: %v, state %s", err, m.State())
	}
	if got, want := err.Error(), "turnstile: event Coin in state LOCKED rejected by guards [EnoughCoins]"; got != want {
		t.Errorf("error %q, want %q", got, want)
	}
	if err := m.Coin(ctx, Coin{Cents: 50}); err != nil || m.State() != StateUnlocked {
		t.Fatalf("50 cents: %v, state %s", err, m.State())
	}
	if err := m.Timeout(ctx, Timeout{}); err != nil || m.State() != StateLocked {
		t.Fatalf("Timeout: %v, state %s", err, m.State())
	}
	if err := m.Push(ctx, Push{}); !errors.Is(err, runtime.ErrIllegalTransition) || m.State() != StateLocked {
		t.Fatalf("Push when locked: %v, state %s", err, m.State())
	}
}

// TestNothingDriven: a machine whose states all wait has no handlers; its
// driver reports every state as not driven and still fires events.
func TestNothingDriven(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := NewDriver(func(*runtime.Run) Guards { return coins(10) })
	for _, s := range States() {
		if _, err := d.Handle(ctx, &runtime.Run{}, s.String()); !errors.Is(err, runtime.ErrNotDriven) {
			t.Errorf("Handle in %s: %v, want ErrNotDriven", s, err)
		}
	}
	var got []runtime.Transition
	rec := runtime.RecorderFunc(func(_ context.Context, tr runtime.Transition) error {
		got = append(got, tr)
		return nil
	})
	if err := d.Fire(ctx, &runtime.Run{}, "LOCKED", Coin{Cents: 10}, rec); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].To != "UNLOCKED" {
		t.Errorf("recorded %+v", got)
	}
	def := Definition()
	if s, _ := def.State("UNLOCKED"); len(s.Timers) != 1 || s.Timers[0].Event != "Timeout" || !s.Wait {
		t.Errorf("UNLOCKED: %+v", s)
	}
}
