package blink

// Hand-written expectations about the Blink machine of lease.fsm: gen's
// TestGoldenPackages copies this file next to the golden package and runs
// it.

import (
	"context"
	"testing"
)

type guards struct{ dim, bright bool }

func (g guards) Dim(context.Context, Event) bool    { return g.dim }
func (g guards) Bright(context.Context, Event) bool { return g.bright }

// TestEventlessLoop: eventless rows that keep admitting are taken 64
// times, then the 65th is refused with an error naming the loop, and the
// machine stays where the 64th move left it.
func TestEventlessLoop(t *testing.T) {
	t.Parallel()
	m := New(guards{dim: true, bright: true})
	err := m.Settle(context.Background())
	want := "blink: eventless rows loop: ON -> OFF -> ON ...: more than 64 eventless moves in a row"
	if err == nil || err.Error() != want {
		t.Fatalf("Settle: %v, want %q", err, want)
	}
	if m.State() != StateOn {
		t.Errorf("after 64 moves: state %s, want ON", m.State())
	}
	m = New(guards{dim: true})
	if err := m.Settle(context.Background()); err != nil || m.State() != StateOff {
		t.Errorf("Settle with Dim only: %v, state %s", err, m.State())
	}
}
