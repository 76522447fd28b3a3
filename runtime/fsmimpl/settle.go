package fsmimpl

import (
	"context"

	"github.com/fsmgen/fsmgen/runtime"
)

// NewSettlingDriver is NewDriver for a machine with eventless or completion
// rows: its driver also implements runtime.Settler, whose Settle calls
// settle with a machine's state parsed from the run's. settle builds the
// machine in state s with the guards of run and its history restored from
// run.History, and takes the eventless rows enabled there (the generated
// Settle), recording each move with rec.
func NewSettlingDriver[S StateType, E runtime.Event](
	def *runtime.Definition,
	handle func(ctx context.Context, run *runtime.Run, s S) (runtime.Event, error),
	decode func(name string, payload []byte) (E, error),
	fire func(ctx context.Context, run *runtime.Run, s S, e E, rec runtime.Recorder) error,
	settle func(ctx context.Context, run *runtime.Run, s S, rec runtime.Recorder) error,
) runtime.Driver {
	return settlingDriver[S, E]{driver: driver[S, E]{def: def, handle: handle, decode: decode, fire: fire}, settle: settle}
}

type settlingDriver[S StateType, E runtime.Event] struct {
	driver[S, E]
	settle func(context.Context, *runtime.Run, S, runtime.Recorder) error
}

var _ runtime.Settler = settlingDriver[uint16, runtime.Event]{}

// Settle implements runtime.Settler.
func (d settlingDriver[S, E]) Settle(ctx context.Context, run *runtime.Run, state string, rec runtime.Recorder) error {
	s, err := ParseState[S](d.def, state)
	if err != nil {
		return err
	}
	return d.settle(ctx, run, s, rec)
}
