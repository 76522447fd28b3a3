package engine

import (
	"context"

	"github.com/fsmgen/fsmgen/runtime"
)

// The engine is the runtime.Runner that generated typed handles call:
// order.Runs[Input](eng).
var _ runtime.Runner = (*Engine)(nil)

// Get reads a run from the store.
func (e *Engine) Get(ctx context.Context, runID string) (runtime.Run, error) {
	return e.st.Get(ctx, runID)
}
