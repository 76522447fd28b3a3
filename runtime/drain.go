package runtime

import (
	"context"
	"errors"
	"fmt"
)

// Drain returns the Runner of a service that moves its machines from one
// backend to another (the PostgreSQL engine to Temporal, say) without
// migrating the runs under way: they drain on from, while every new run
// starts on to. Switching a service is then one constructor:
//
//	r := runtime.Drain(eng, temporalRunner) // was: r := eng
//	orders := order.Runs[Input](r)
//
// Each method decides where a run lives:
//
//   - Start looks the (type, key) up on from (List by IdempotencyKey): a
//     run found there that has not failed is from's (from.Start returns it
//     as cached, running or cancelled, and creates nothing); otherwise the
//     run starts on to, and a command whose run failed on from is run
//     again on to, as a new run;
//   - Signal, Cancel, Get and Wait go to to, and to from when to does not
//     know the run (ErrRunNotFound): run ids are unique across backends (a
//     UUID on each);
//   - List lists from's runs, then to's, up to the limit.
//
// When from lists no run under way (List with Status StatusRunning, or
// fsmctl runs list -status running), its workers can stop and Drain give
// way to to alone. from must keep its workers until then: its runs, their
// timers and their retries still run there.
func Drain(from, to Runner) Runner { return drain{from: from, to: to} }

type drain struct{ from, to Runner }

func (d drain) Start(ctx context.Context, req StartRequest) (Started, error) {
	if req.Type != "" && req.IdempotencyKey != "" {
		runs, err := d.from.List(ctx, Filter{Type: req.Type, IdempotencyKey: req.IdempotencyKey, Limit: 1})
		if err != nil {
			return Started{}, fmt.Errorf("drain: start %s %q: looking up the run under way: %w", req.Type, req.IdempotencyKey, err)
		}
		if len(runs) == 1 && runs[0].Status != StatusFailed {
			return d.from.Start(ctx, req)
		}
	}
	return d.to.Start(ctx, req)
}

// either calls f on to, and on from when to does not know the run.
func either(d drain, f func(Runner) (Run, error)) (Run, error) {
	run, err := f(d.to)
	if errors.Is(err, ErrRunNotFound) {
		return f(d.from)
	}
	return run, err
}

func (d drain) Signal(ctx context.Context, runID string, e Event) (Run, error) {
	return either(d, func(r Runner) (Run, error) { return r.Signal(ctx, runID, e) })
}

func (d drain) Cancel(ctx context.Context, runID, userID string) (Run, error) {
	return either(d, func(r Runner) (Run, error) { return r.Cancel(ctx, runID, userID) })
}

func (d drain) Get(ctx context.Context, runID string) (Run, error) {
	return either(d, func(r Runner) (Run, error) { return r.Get(ctx, runID) })
}

func (d drain) Wait(ctx context.Context, runID string) (Run, error) {
	return either(d, func(r Runner) (Run, error) { return r.Wait(ctx, runID) })
}

func (d drain) List(ctx context.Context, f Filter) ([]Run, error) {
	limit := f.Limit
	if limit == 0 {
		limit = 100
	}
	runs, err := d.from.List(ctx, f)
	if err != nil {
		return nil, err
	}
	if len(runs) >= limit {
		return runs[:limit], nil
	}
	f.Limit = limit - len(runs)
	more, err := d.to.List(ctx, f)
	if err != nil {
		return nil, err
	}
	return append(runs, more...), nil
}
