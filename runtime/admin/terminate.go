package admin

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/internal/dbsqlc"
	"github.com/fsmgen/fsmgen/runtime/internal/pgstore"
)

// ErrNoReason is returned by Terminate when TerminateOptions has no
// Reason or no By: a terminate is recorded with both.
var ErrNoReason = errors.New("a terminate needs a reason and who gives it")

// TerminatedCode is the result error code of a terminated run.
const TerminatedCode = "TERMINATED"

// TerminateOptions say why a run is terminated and who terminates it.
type TerminateOptions struct {
	// Reason is written to the run's log and result. Required.
	Reason string
	// By names the person or tool that terminates (fsmctl: the OS user;
	// the console: its signed-in user). Required. The log row also records
	// the database role of the session, which the caller does not choose.
	By string
}

// Terminated is what Terminate did.
type Terminated struct {
	// Run is the run afterwards.
	Run runtime.Run
	// Descendants are the ids of its live descendants terminated with it
	// (children, their children), in id order.
	Descendants []string
}

// Terminate ends run runID where it is, as an operator's forced stop: in
// any state, without a transition of its machine, without running its
// handlers and without a cancel event. The run keeps its state; its status
// becomes cancelled, its result has error code TERMINATED (TerminatedCode)
// and detail "terminated by BY: REASON", and it is no longer due, leased or
// parked. Its live descendants run by this database are terminated with
// it. Each gets a log row of kind terminated (store.KindTerminated) with
// the reason, who terminated and the session's database role, in the same
// statement, through the database function fsmgen_terminate_run, which
// only the operator role may run (db.RoleOperator).
//
// A worker that still holds the run loses its write: the run's row version
// and lease are gone, so its transition is refused as a fenced write is
// (runtime.ErrLeaseLost or runtime.ErrConflict), and later signals are
// refused with runtime.ErrRunFinished. A terminated run's parent is woken
// as for any child that finished, and fires the child's completion event.
//
// A finished run fails with runtime.ErrRunFinished, a missing one with
// runtime.ErrRunNotFound, a run another runtime executes with
// runtime.ErrOtherExecutor, options without Reason or By with ErrNoReason.
func (a *Admin) Terminate(ctx context.Context, runID string, opts TerminateOptions) (Terminated, error) {
	const op = "terminate"
	fail := func(err error) (Terminated, error) { return Terminated{}, runErr(op, runID, err) }
	if strings.TrimSpace(opts.Reason) == "" || strings.TrimSpace(opts.By) == "" {
		return fail(ErrNoReason)
	}
	id, err := pgstore.ParseRunID(op, runID)
	if err != nil {
		return Terminated{}, err
	}
	rows, err := a.db().Queries(nil).TerminateRun(ctx, dbsqlc.TerminateRunParams{ID: id, Reason: opts.Reason, By: opts.By})
	if err != nil {
		return fail(pgstore.Translate(err))
	}
	if len(rows) == 0 {
		run, err := a.st.Get(ctx, runID)
		if err != nil {
			return Terminated{}, err
		}
		return fail(fmt.Errorf("%w: it is %s in %s", runtime.ErrRunFinished, run.Status, run.State))
	}
	out := Terminated{Descendants: []string{}}
	for _, r := range rows[1:] {
		out.Descendants = append(out.Descendants, pgstore.UUIDString(r.RunID))
	}
	out.Run, err = a.st.Get(ctx, runID)
	return out, err
}
