package fsmimpl

import (
	"context"
	"fmt"

	"github.com/fsmgen/fsmgen/runtime"
)

// NewDriver returns the runtime.Driver of a generated machine whose
// definition ix indexes: handle calls the handler of a state (nil when the
// machine drives no state), decode rebuilds an event from its name and
// payload, and fire applies an event to a machine built in a state with
// the guards of a run and a recorder. Its Definition returns a copy of
// the definition. opts give it what only some machines have: WithSettle for eventless
// and completion rows, WithEnter for entry actions where runs start.
//
// The driver implements runtime.Settler and runtime.Starter; the engine
// calls them only for a definition that needs them.
func NewDriver[S StateType, E runtime.Event](
	ix *Index[S],
	handle func(ctx context.Context, run *runtime.Run, s S) (runtime.Event, error),
	decode func(name string, payload []byte) (E, error),
	fire func(ctx context.Context, run *runtime.Run, s S, e E, rec runtime.Recorder) error,
	opts ...DriverOption[S],
) runtime.Driver {
	parse := func(name string) (S, error) { return ParseState(ix, name) }
	return newDriver(ix, parse, handle, decode, fire, opts)
}

// NewConfigDriver returns the runtime.Driver of a generated machine with
// parallel states, as NewDriver does, but for a machine whose runs are in
// a configuration C: parse reads a configuration from its persisted form
// (the generated ParseConfig) for fire and the optional parts, and handle
// is called with one active leaf L, as the engine asks for each region's
// leaf that has a handler, in region order.
func NewConfigDriver[L StateType, C any, E runtime.Event](
	ix *Index[L],
	parse func(text string) (C, error),
	handle func(ctx context.Context, run *runtime.Run, leaf L) (runtime.Event, error),
	decode func(name string, payload []byte) (E, error),
	fire func(ctx context.Context, run *runtime.Run, c C, e E, rec runtime.Recorder) error,
	opts ...DriverOption[C],
) runtime.Driver {
	return newDriver(ix, parse, handle, decode, fire, opts)
}

// newDriver builds the driver of NewDriver and NewConfigDriver.
func newDriver[L StateType, S any, E runtime.Event](
	ix *Index[L],
	parse func(string) (S, error),
	handle func(context.Context, *runtime.Run, L) (runtime.Event, error),
	decode func(string, []byte) (E, error),
	fire func(context.Context, *runtime.Run, S, E, runtime.Recorder) error,
	opts []DriverOption[S],
) runtime.Driver {
	d := driver[L, S, E]{ix: ix, def: ix.def, parse: parse, handle: handle, decode: decode, fire: fire}
	for _, o := range opts {
		o(&d.parts)
	}
	return d
}

// A DriverOption gives the driver NewDriver returns a part only some
// machines have.
type DriverOption[S any] func(*driverParts[S])

// driverParts are the optional parts of a driver.
type driverParts[S any] struct {
	settle func(context.Context, *runtime.Run, S, runtime.Recorder) error
	enter  func(context.Context, *runtime.Run) error
}

// WithSettle gives a machine with eventless or completion rows its
// Settle: settle builds the machine in state s with the guards of run and
// its history restored from run.History, and takes the eventless rows
// enabled there (the generated Settle), recording each move with rec.
func WithSettle[S any](settle func(ctx context.Context, run *runtime.Run, s S, rec runtime.Recorder) error) DriverOption[S] {
	return func(p *driverParts[S]) { p.settle = settle }
}

// WithEnter gives a machine whose runs start in states with entry actions
// (runtime.Definition.StartActions) its Enter: enter runs those actions,
// outermost first, with the workflow's actions for run.
func WithEnter[S any](enter func(ctx context.Context, run *runtime.Run) error) DriverOption[S] {
	return func(p *driverParts[S]) { p.enter = enter }
}

// driver is the runtime.Driver of a generated machine: L is its leaf
// state, S where a run of it is (L, or a configuration of a machine with
// parallel states), E its event.
type driver[L StateType, S any, E runtime.Event] struct {
	ix     *Index[L]
	def    *runtime.Definition
	parse  func(string) (S, error)
	handle func(context.Context, *runtime.Run, L) (runtime.Event, error)
	decode func(string, []byte) (E, error)
	fire   func(context.Context, *runtime.Run, S, E, runtime.Recorder) error
	parts  driverParts[S]
}

var (
	_ runtime.Settler = driver[uint16, uint16, runtime.Event]{}
	_ runtime.Starter = driver[uint16, uint16, runtime.Event]{}
)

// Settle implements runtime.Settler: without WithSettle the machine has
// no eventless rows, and it records nothing.
func (d driver[L, S, E]) Settle(ctx context.Context, run *runtime.Run, state string, rec runtime.Recorder) error {
	s, err := d.parse(state)
	if err != nil || d.parts.settle == nil {
		return err
	}
	return d.parts.settle(ctx, run, s, rec)
}

// Enter implements runtime.Starter: without WithEnter the machine's runs
// start in states without entry actions, and it runs nothing.
func (d driver[L, S, E]) Enter(ctx context.Context, run *runtime.Run) error {
	if d.parts.enter == nil {
		if acts := d.def.StartActions(); len(acts) > 0 {
			return fmt.Errorf("%s: the entry actions of the states a run starts in (%v) were not given to the driver (fsmimpl.WithEnter)", d.def.Type, acts)
		}
		return nil
	}
	return d.parts.enter(ctx, run)
}

// Definition implements runtime.Driver.
func (d driver[L, S, E]) Definition() runtime.Definition { return d.def.Clone() }

// Handle implements runtime.Driver: state is one leaf, a region's in a
// configuration.
func (d driver[L, S, E]) Handle(ctx context.Context, run *runtime.Run, state string) (runtime.Event, error) {
	s, err := ParseState(d.ix, state)
	if err != nil {
		return nil, err
	}
	if d.handle == nil {
		return nil, NotDriven(d.def, state)
	}
	return d.handle(ctx, run, s)
}

// Decode implements runtime.Driver.
func (d driver[L, S, E]) Decode(name string, payload []byte) (runtime.Event, error) {
	e, err := d.decode(name, payload)
	if err != nil {
		return nil, err
	}
	return e, nil
}

// Fire implements runtime.Driver.
func (d driver[L, S, E]) Fire(ctx context.Context, run *runtime.Run, state string, e runtime.Event, rec runtime.Recorder) error {
	s, err := d.parse(state)
	if err != nil {
		return err
	}
	ev, ok := e.(E)
	if !ok {
		return fmt.Errorf("%s: %w: %T is not an event of this machine", d.def.Type, runtime.ErrUnknownEvent, e)
	}
	return d.fire(ctx, run, s, ev, rec)
}
