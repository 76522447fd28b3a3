package fsmimpl_test

import (
	"context"
	"errors"
	"testing"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/fsmimpl"
)

func TestSettlingDriver(t *testing.T) {
	t.Parallel()
	var settled []state
	d := fsmimpl.NewSettlingDriver(&def, nil,
		func(string, []byte) (ping, error) { return ping{}, nil },
		func(context.Context, *runtime.Run, state, ping, runtime.Recorder) error { return nil },
		func(_ context.Context, _ *runtime.Run, s state, _ runtime.Recorder) error {
			settled = append(settled, s)
			return nil
		})
	s, ok := d.(runtime.Settler)
	if !ok {
		t.Fatalf("%T is no runtime.Settler", d)
	}
	if err := s.Settle(context.Background(), &runtime.Run{}, "B", nil); err != nil {
		t.Fatal(err)
	}
	if len(settled) != 1 || settled[0] != 1 {
		t.Errorf("settle called with %v, want [1]", settled)
	}
	if err := s.Settle(context.Background(), &runtime.Run{}, "NOPE", nil); !errors.Is(err, runtime.ErrUnknownState) {
		t.Errorf("Settle in an unknown state: %v, want ErrUnknownState", err)
	}
	if _, ok := fsmimpl.NewDriver[state](&def, nil, func(string, []byte) (ping, error) { return ping{}, nil },
		func(context.Context, *runtime.Run, state, ping, runtime.Recorder) error { return nil }).(runtime.Settler); ok {
		t.Error("NewDriver's driver settles")
	}
}
