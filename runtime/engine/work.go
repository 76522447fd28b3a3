package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/internal/enginestore"
	"github.com/fsmgen/fsmgen/runtime/internal/pgerr"
	"github.com/fsmgen/fsmgen/runtime/internal/worker"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// Work runs workers until ctx is done: it claims due runs of the registered
// definitions, up to Concurrency at a time, and drives each until it is
// terminal, waits, is parked or scheduled for a retry. It wakes up when a
// notification says a run became due, when a run finishes, when a run this
// engine scheduled (a retry, a timer) falls due, and every PollInterval in
// any case: notifications and due times make it quick, polling makes it
// correct.
//
// When ctx is done Work stops claiming and returns nil within
// ShutdownGrace: running handlers have until its last quarter, or its last
// second when that is shorter, to finish, and their transitions are
// recorded; then the contexts of those still running are cancelled and
// their leases given up as interrupted (the abandoned try counts as a try),
// so that other workers may take the runs at once.
// A handler that ignores its context is left behind when the grace is up:
// its lease is no longer extended, and once it has expired another worker
// resumes the run (the interrupted try counts as a try). Only releases
// still under way when the grace is up are waited for, up to 10 s more.
func (e *Engine) Work(ctx context.Context) error {
	kinds := e.registeredKinds()
	if len(kinds) == 0 {
		return runErr("work", "", fmt.Errorf("%w: register a definition first", runtime.ErrNotRegistered))
	}
	wake := make(chan struct{}, 1)
	poke := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	var listener sync.WaitGroup
	if !e.cfg.DisableNotify {
		listener.Add(1)
		go func() {
			defer listener.Done()
			e.listen(ctx, poke)
		}()
	}

	hbase, abandon := context.WithCancel(context.WithoutCancel(ctx))
	defer abandon()
	var (
		running sync.WaitGroup
		mu      sync.Mutex
		busy    int
		// handling counts the sessions inside a handler.
		handling atomic.Int32
		// reclaim is how soon to claim again after a lost connection.
		reclaim time.Duration
		// why says what started the round: wakeStart, wakeNotified,
		// wakeDue or wakePoll.
		why = wakeStart
	)
	for ctx.Err() == nil {
		idle := e.cfg.PollInterval
		mu.Lock()
		free := e.cfg.Concurrency - busy
		mu.Unlock()
		claimed := 0
		var began time.Time
		if free > 0 {
			began = time.Now()
			claims, err := e.claim(ctx, enginestore.ClaimParams{Owner: e.cfg.WorkerID, Kinds: kinds, Limit: free, TTL: e.cfg.Lease})
			if e.hooks.claimed != nil {
				e.hooks.claimed(why, len(claims))
			}
			switch {
			case err == nil:
				reclaim = 0
			case ctx.Err() != nil:
			case pgerr.Unavailable(err):
				// Try again soon rather than a poll interval later.
				reclaim = worker.Statements.Next(reclaim)
				e.log.Warn("claim failed; trying again", "in", reclaim, "err", err)
				idle = min(idle, reclaim)
			default:
				e.log.Warn("claim failed", "err", err)
			}
			claimed = len(claims)
			mu.Lock()
			busy += claimed
			mu.Unlock()
			for _, c := range claims {
				running.Add(1)
				go func() {
					defer running.Done()
					defer func() {
						// A panic in the engine itself: the worker goes on,
						// and the run's lease expires.
						if v := recover(); v != nil {
							e.log.Error("panic while driving a run; its lease will expire", "run", c.Run.ID, "panic", v, "stack", string(debug.Stack()))
						}
						mu.Lock()
						busy--
						mu.Unlock()
						poke()
					}()
					run, err := e.drive(c, ctx.Done(), hbase, &handling)
					if err != nil && !errors.Is(err, errMoved) && hbase.Err() == nil {
						e.log.Warn("run interrupted", "run", run.ID, "state", run.State, "err", err)
					}
				}()
			}
			if claimed == free {
				why = wakeStart
				continue // there may be more
			}
		}
		// Sleep until the poll, a notification, the end of a session, or
		// the earliest time at which a run this engine scheduled falls
		// due: a sub-second retry or timer starts when it falls due, not
		// at the next poll. With no slot free, only the end of a session
		// can make room.
		timeout := wakePoll
		if free > 0 {
			if at, ok := e.due.next(began); ok && time.Until(at) < idle {
				idle, timeout = max(time.Until(at), 0), wakeDue
			}
		}
		t := time.NewTimer(idle)
		select {
		case <-ctx.Done():
		case <-wake:
			why = wakeNotified
		case <-t.C:
			why = timeout
		}
		t.Stop()
	}

	// Handlers have the grace but its last part to finish; then their
	// contexts are cancelled, and the sessions have the last part to give
	// their leases back. When the grace is up, Work waits only for the
	// sessions that are giving their leases back (for releaseTimeout at
	// most): a handler that ignores its context is left behind, its
	// heartbeat has stopped, so its lease expires and another worker
	// resumes the run.
	done := make(chan struct{})
	go func() { running.Wait(); close(done) }()
	grace := e.cfg.ShutdownGrace
	last := min(grace/4, time.Second)
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	select {
	case <-done:
	case <-time.After(grace - last):
		abandon()
		select {
		case <-done:
		case <-deadline.C:
			limit := time.NewTimer(releaseTimeout)
			defer limit.Stop()
		releasing:
			for {
				mu.Lock()
				left := busy
				mu.Unlock()
				if left <= int(handling.Load()) {
					break // the rest are stuck in handlers
				}
				select {
				case <-done:
					break releasing
				case <-wake: // a session ended
				case <-limit.C:
					break releasing
				}
			}
			if n := handling.Load(); n > 0 {
				e.log.Warn("shutdown grace is up; handlers that ignore their context are left behind, and their leases will expire", "runs", n)
			}
		}
	}
	listener.Wait()
	return nil
}

// listen LISTENs on store.NotifyChannel on a connection of its own and
// pokes the worker loop for every notification about a type the engine
// drives, reconnecting after errors, until ctx is done.
func (e *Engine) listen(ctx context.Context, poke func()) {
	b := worker.Backoff{First: 100 * time.Millisecond, Max: 5 * time.Second}
	var wait time.Duration
	for ctx.Err() == nil {
		err := e.listenConn(ctx, poke)
		if ctx.Err() != nil {
			return
		}
		wait = b.Next(wait)
		e.log.Warn("listener lost; polling meanwhile", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

func (e *Engine) listenConn(ctx context.Context, poke func()) error {
	conn, err := pgx.ConnectConfig(ctx, e.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{store.NotifyChannel}.Sanitize()); err != nil {
		return err
	}
	e.markListening()
	poke() // runs may have become due while the listener was away
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if e.handles(n.Payload) {
			poke()
		}
	}
}

// What started a claim round of Work, for the hooks.
const (
	wakeStart    = "start"    // Work started, or the last round filled every slot
	wakeNotified = "notified" // a notification, or the end of a session
	wakeDue      = "due"      // a run this engine scheduled fell due
	wakePoll     = "poll"     // PollInterval passed
)

func (e *Engine) markListening() {
	e.listenReady.Do(func() { close(e.listening) })
}

// Drive drives a run inline, in the caller's goroutine: it claims the run
// with a lease (heartbeats included) and calls the handlers of its states
// until the run is terminal, waits for an event or a timer, or is parked.
// Retries are slept through (the run stays due in the database, so another
// worker may take it meanwhile); while another worker holds the run, Drive
// waits for it. It returns the run as it last saw it. When ctx is done the
// handler's context is cancelled, the lease released and ctx's error
// returned.
func (e *Engine) Drive(ctx context.Context, runID string) (runtime.Run, error) {
	kinds := e.registeredKinds()
	for {
		claims, err := retried(ctx, e, time.Time{}, "claim", runID, func() ([]enginestore.Claim, error) {
			return e.claim(ctx, enginestore.ClaimParams{Owner: e.cfg.WorkerID, Kinds: kinds, Limit: 1, TTL: e.cfg.Lease, RunID: runID})
		})
		if err != nil {
			return runtime.Run{}, err
		}
		if len(claims) == 1 {
			run, err := e.drive(claims[0], ctx.Done(), ctx, nil)
			switch {
			case errors.Is(err, errMoved):
			case pgerr.Unavailable(err) && ctx.Err() == nil:
				// Lost for as long as the lease held: claim the run again.
			case err != nil:
				return run, err
			}
		}
		run, err := retried(ctx, e, time.Time{}, "get", runID, func() (runtime.Run, error) {
			return e.st.Get(ctx, runID)
		})
		if err != nil {
			return run, err
		}
		r := e.lookup(run.Type, run.Version)
		if r == nil {
			return run, runErr("drive", runID, e.notRegistered(run.Type, run.Version))
		}
		st, _ := r.def.StateOf(run.State)
		if run.Terminal() || st.Wait || !run.ParkedAt.IsZero() || run.NextRunAt.IsZero() {
			return run, nil
		}
		// Due later (a retry) or held by another worker: sleep until it may
		// be claimed, checking at least every PollInterval.
		now, err := retried(ctx, e, time.Time{}, "now", runID, func() (time.Time, error) { return e.st.Now(ctx) })
		if err != nil {
			return run, err
		}
		wait := run.NextRunAt.Sub(now)
		if run.Lease.Owner != "" {
			wait = max(wait, run.Lease.ExpiresAt.Sub(now))
		}
		wait = min(max(wait, time.Millisecond), e.cfg.PollInterval)
		select {
		case <-ctx.Done():
			return run, runErr("drive", runID, ctx.Err())
		case <-time.After(wait):
		}
	}
}

// RunDue claims the runs that are due now, up to Concurrency, and drives
// them one after the other in the caller's goroutine; it returns how many
// it claimed. It is Work's single round without the waiting, for tests
// (with a stubbed clock) and for callers that schedule workers themselves.
func (e *Engine) RunDue(ctx context.Context) (int, error) {
	claims, err := e.claim(ctx, enginestore.ClaimParams{Owner: e.cfg.WorkerID, Kinds: e.registeredKinds(), Limit: e.cfg.Concurrency, TTL: e.cfg.Lease})
	if err != nil {
		return 0, err
	}
	var errs []error
	for i, c := range claims {
		if ctx.Err() != nil {
			// Give the rest back untouched.
			for _, rest := range claims[i:] {
				s := &session{e: e, run: rest.Run, lease: rest.Lease, held: true, hbase: ctx}
				s.release(enginestore.KeepDue)
			}
			break
		}
		if _, err := e.drive(c, ctx.Done(), ctx, nil); err != nil && !errors.Is(err, errMoved) {
			errs = append(errs, err)
		}
	}
	return len(claims), errors.Join(errs...)
}
