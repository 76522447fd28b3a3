package console

import (
	"context"
	"encoding/json"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/admin"
)

// Actions performs what an operator asks of a run from the console. The
// console calls it only when it was given one (Config.Actions); without,
// it is read-only. *admin.Admin implements it: it operates runs of any
// registered machine from the registered definition, without the
// machine's Go code (see package runtime/admin), which is what fsmctl
// serve -actions uses.
type Actions interface {
	// Signal fires event with payload (a JSON object of its fields) on
	// the run; opts.To names the target state of a guarded row, fired
	// without its guard.
	Signal(ctx context.Context, runID, event string, payload json.RawMessage, opts admin.SignalOptions) (runtime.Run, error)
	// Cancel fires the machine's cancel event on the run.
	Cancel(ctx context.Context, runID string, opts admin.SignalOptions) (runtime.Run, error)
	// Resume makes a parked run due again.
	Resume(ctx context.Context, runID string) (runtime.Run, error)
	// Retry restarts a failed run from the initial state.
	Retry(ctx context.Context, runID string) (runtime.Run, error)
}

var _ Actions = (*admin.Admin)(nil)
