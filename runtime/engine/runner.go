package engine

import (
	"context"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// The engine is the runtime.Runner that generated typed handles call:
// order.Runs[Input](eng).
var _ runtime.Runner = (*Engine)(nil)

// Get reads a run from the store.
func (e *Engine) Get(ctx context.Context, runID string) (runtime.Run, error) {
	return e.st.Get(ctx, runID)
}

// List returns the runs that f selects, oldest first: the store's List
// without its paging.
func (e *Engine) List(ctx context.Context, f runtime.Filter) ([]runtime.Run, error) {
	return e.st.List(ctx, store.Filter{Filter: f})
}
