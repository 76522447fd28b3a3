package fsmimpl_test

import (
	"context"
	"errors"
	"testing"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/fsmimpl"
)

func decodePing(string, []byte) (ping, error) { return ping{}, nil }

func firePing(context.Context, *runtime.Run, state, ping, runtime.Recorder) error { return nil }

func TestDriverSettle(t *testing.T) {
	t.Parallel()
	var settled []state
	d := fsmimpl.NewDriver(ix, nil, decodePing, firePing,
		fsmimpl.WithSettle(func(_ context.Context, _ *runtime.Run, s state, _ runtime.Recorder) error {
			settled = append(settled, s)
			return nil
		}))
	s := d.(runtime.Settler)
	if err := s.Settle(context.Background(), &runtime.Run{}, "B", nil); err != nil {
		t.Fatal(err)
	}
	if len(settled) != 1 || settled[0] != 1 {
		t.Errorf("settle called with %v, want [1]", settled)
	}
	if err := s.Settle(context.Background(), &runtime.Run{}, "NOPE", nil); !errors.Is(err, runtime.ErrUnknownState) {
		t.Errorf("Settle in an unknown state: %v, want ErrUnknownState", err)
	}
	// Without WithSettle the machine has no eventless rows: nothing to do.
	plain := fsmimpl.NewDriver(ix, nil, decodePing, firePing).(runtime.Settler)
	if err := plain.Settle(context.Background(), &runtime.Run{}, "B", nil); err != nil {
		t.Errorf("Settle without WithSettle: %v", err)
	}
}

func TestDriverEnter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var entered []string
	d := fsmimpl.NewDriver(ix, nil, decodePing, firePing,
		fsmimpl.WithEnter[state](func(_ context.Context, run *runtime.Run) error {
			entered = append(entered, run.ID)
			return nil
		}))
	if err := d.(runtime.Starter).Enter(ctx, &runtime.Run{ID: "r1"}); err != nil || len(entered) != 1 || entered[0] != "r1" {
		t.Errorf("Enter: %v, entered %v; want [r1]", err, entered)
	}
	if err := fsmimpl.NewDriver(ix, nil, decodePing, firePing).(runtime.Starter).Enter(ctx, &runtime.Run{}); err != nil {
		t.Errorf("Enter without start actions: %v", err)
	}
	withEntry := def.Clone()
	withEntry.Actions = []string{"Greet"}
	withEntry.States[0].Entry = []string{"Greet"}
	err := fsmimpl.NewDriver(fsmimpl.NewIndex[state](&withEntry), nil, decodePing, firePing).(runtime.Starter).Enter(ctx, &runtime.Run{})
	if want := "m: the entry actions of the states a run starts in ([Greet]) were not given to the driver (fsmimpl.WithEnter)"; err == nil || err.Error() != want {
		t.Errorf("Enter of start actions not given: %v, want %q", err, want)
	}
}
