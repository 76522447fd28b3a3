package fsmimpl

import (
	"context"
	"fmt"

	"github.com/fsmgen/fsmgen/runtime"
)

// NewDriver returns the runtime.Driver of a generated machine whose
// definition is def: handle calls the handler of a state (nil when the
// machine drives no state), decode rebuilds an event from its name and
// payload, and fire applies an event to a machine built in a state with
// the guards of a run and a recorder. Its Definition returns a copy of
// def.
func NewDriver[S StateType, E runtime.Event](
	def *runtime.Definition,
	handle func(ctx context.Context, run *runtime.Run, s S) (runtime.Event, error),
	decode func(name string, payload []byte) (E, error),
	fire func(ctx context.Context, run *runtime.Run, s S, e E, rec runtime.Recorder) error,
) runtime.Driver {
	return driver[S, E]{def: def, handle: handle, decode: decode, fire: fire}
}

type driver[S StateType, E runtime.Event] struct {
	def    *runtime.Definition
	handle func(context.Context, *runtime.Run, S) (runtime.Event, error)
	decode func(string, []byte) (E, error)
	fire   func(context.Context, *runtime.Run, S, E, runtime.Recorder) error
}

func (d driver[S, E]) Definition() runtime.Definition { return d.def.Clone() }

func (d driver[S, E]) Handle(ctx context.Context, run *runtime.Run, state string) (runtime.Event, error) {
	s, err := ParseState[S](d.def, state)
	if err != nil {
		return nil, err
	}
	if d.handle == nil {
		return nil, NotDriven(d.def, state)
	}
	return d.handle(ctx, run, s)
}

func (d driver[S, E]) Decode(name string, payload []byte) (runtime.Event, error) {
	e, err := d.decode(name, payload)
	if err != nil {
		return nil, err
	}
	return e, nil
}

func (d driver[S, E]) Fire(ctx context.Context, run *runtime.Run, state string, e runtime.Event, rec runtime.Recorder) error {
	s, err := ParseState[S](d.def, state)
	if err != nil {
		return err
	}
	ev, ok := e.(E)
	if !ok {
		return fmt.Errorf("%s: %w: %T is not an event of this machine", d.def.Type, runtime.ErrUnknownEvent, e)
	}
	return d.fire(ctx, run, s, ev, rec)
}
