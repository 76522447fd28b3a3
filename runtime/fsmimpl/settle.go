package fsmimpl

import (
	"context"

	"github.com/fsmgen/fsmgen/runtime"
)

// NewSettlingDriver is NewDriver with WithSettle(settle).
//
// Deprecated: use NewDriver with WithSettle.
func NewSettlingDriver[S StateType, E runtime.Event](
	def *runtime.Definition,
	handle func(ctx context.Context, run *runtime.Run, s S) (runtime.Event, error),
	decode func(name string, payload []byte) (E, error),
	fire func(ctx context.Context, run *runtime.Run, s S, e E, rec runtime.Recorder) error,
	settle func(ctx context.Context, run *runtime.Run, s S, rec runtime.Recorder) error,
) runtime.Driver {
	return NewDriver(def, handle, decode, fire, WithSettle(settle))
}
