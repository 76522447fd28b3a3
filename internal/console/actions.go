package console

import (
	"context"
	"encoding/json"
	"net/http"

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
	// Terminate ends a live run where it is, with its live descendants,
	// without a transition of its machine (admin.Admin.Terminate).
	Terminate(ctx context.Context, runID string, opts admin.TerminateOptions) (admin.Terminated, error)
}

// operator names who acts in the console's requests, for a terminate's
// record: the signed-in user of a console with passwords, else the
// console.
func (s *Server) operator(r *http.Request) string {
	if s.cfg.Passwords != nil {
		if user, _, ok := r.BasicAuth(); ok {
			return "console user " + user
		}
	}
	return "the console"
}

var _ Actions = (*admin.Admin)(nil)
