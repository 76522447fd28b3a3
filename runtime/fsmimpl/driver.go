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
// def. opts give it what only some machines have: WithSettle for eventless
// and completion rows, WithEnter for entry actions where runs start.
//
// The driver implements runtime.Settler and runtime.Starter; the engine
// calls them only for a definition that needs them.
func NewDriver[S StateType, E runtime.Event](
	def *runtime.Definition,
	handle func(ctx context.Context, run *runtime.Run, s S) (runtime.Event, error),
	decode func(name string, payload []byte) (E, error),
	fire func(ctx context.Context, run *runtime.Run, s S, e E, rec runtime.Recorder) error,
	opts ...DriverOption[S],
) runtime.Driver {
	d := driver[S, E]{def: def, handle: handle, decode: decode, fire: fire}
	for _, o := range opts {
		o(&d.parts)
	}
	return d
}

// A DriverOption gives the driver NewDriver returns a part only some
// machines have.
type DriverOption[S StateType] func(*driverParts[S])

// driverParts are the optional parts of a driver.
type driverParts[S StateType] struct {
	settle func(context.Context, *runtime.Run, S, runtime.Recorder) error
	enter  func(context.Context, *runtime.Run) error
}

// WithSettle gives a machine with eventless or completion rows its
// Settle: settle builds the machine in state s with the guards of run and
// its history restored from run.History, and takes the eventless rows
// enabled there (the generated Settle), recording each move with rec.
func WithSettle[S StateType](settle func(ctx context.Context, run *runtime.Run, s S, rec runtime.Recorder) error) DriverOption[S] {
	return func(p *driverParts[S]) { p.settle = settle }
}

// WithEnter gives a machine whose runs start in states with entry actions
// (runtime.Definition.StartActions) its Enter: enter runs those actions,
// outermost first, with the workflow's actions for run.
func WithEnter[S StateType](enter func(ctx context.Context, run *runtime.Run) error) DriverOption[S] {
	return func(p *driverParts[S]) { p.enter = enter }
}

type driver[S StateType, E runtime.Event] struct {
	def    *runtime.Definition
	handle func(context.Context, *runtime.Run, S) (runtime.Event, error)
	decode func(string, []byte) (E, error)
	fire   func(context.Context, *runtime.Run, S, E, runtime.Recorder) error
	parts  driverParts[S]
}

var (
	_ runtime.Settler = driver[uint16, runtime.Event]{}
	_ runtime.Starter = driver[uint16, runtime.Event]{}
)

// Settle implements runtime.Settler: without WithSettle the machine has
// no eventless rows, and it records nothing.
func (d driver[S, E]) Settle(ctx context.Context, run *runtime.Run, state string, rec runtime.Recorder) error {
	s, err := ParseState[S](d.def, state)
	if err != nil || d.parts.settle == nil {
		return err
	}
	return d.parts.settle(ctx, run, s, rec)
}

// Enter implements runtime.Starter: without WithEnter the machine's runs
// start in states without entry actions, and it runs nothing.
func (d driver[S, E]) Enter(ctx context.Context, run *runtime.Run) error {
	if d.parts.enter == nil {
		if acts := d.def.StartActions(); len(acts) > 0 {
			return fmt.Errorf("%s: the entry actions of the states a run starts in (%v) were not given to the driver (fsmimpl.WithEnter)", d.def.Type, acts)
		}
		return nil
	}
	return d.parts.enter(ctx, run)
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
