package worker

import (
	"context"
	"time"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/internal/pgerr"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// Backoff is the wait between tries of an engine's own statement that the
// server could not serve: First, doubling, at most Max.
type Backoff struct {
	First, Max time.Duration
}

// Statements is the Backoff of the engines' statements: from 10 ms,
// doubling, at most a second.
var Statements = Backoff{First: 10 * time.Millisecond, Max: time.Second}

// Next returns the wait after wait: twice it, at most b.Max, and b.First
// when wait is zero.
func (b Backoff) Next(wait time.Duration) time.Duration {
	if wait <= 0 {
		return b.First
	}
	return min(2*wait, b.Max)
}

// Retry calls op until it succeeds or fails otherwise than by an
// unavailable server (pgerr.Unavailable), waiting b between tries, while
// ctx is not done and, unless until is zero, until then. Before each wait
// it calls warn, when not nil, with the wait and the error. It returns
// op's last error, and lost: whether a try failed by an unavailable server,
// so that a write it sent may have committed all the same.
func (b Backoff) Retry(ctx context.Context, until time.Time, op func() error, warn func(wait time.Duration, err error)) (lost bool, err error) {
	var delay time.Duration
	for {
		err := op()
		if err == nil || !pgerr.Unavailable(err) {
			return lost, err
		}
		lost = true
		if ctx.Err() != nil {
			return lost, err
		}
		delay = b.Next(delay)
		wait := delay
		if !until.IsZero() {
			wait = min(wait, time.Until(until))
			if wait <= 0 {
				return lost, err
			}
		}
		if warn != nil {
			warn(wait, err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return lost, err
		case <-t.C:
		}
	}
}

// Heartbeat extends a lease while the work it covers runs.
type Heartbeat struct {
	// Every is the time between extensions; Lease how long an extension
	// holds (Every is shorter).
	Every, Lease time.Duration
	// Extend extends the lease by Lease from the database's now. Its
	// errors of an unavailable server are tried again (Statements) until
	// the next beat.
	Extend func(ctx context.Context) error
	// Lost reports whether an error of Extend says that the lease is lost:
	// the work is cancelled with that error as the cause.
	Lost func(err error) bool
	// Expired returns the cause the work is cancelled with when no
	// extension succeeded for a whole Lease, given the last error.
	Expired func(err error) error
	// Beat, when not nil, is called after each extension with its error
	// (nil when it succeeded); Warn, when not nil, with each error of an
	// extension that leaves the lease held; Retrying, when not nil, before
	// each wait for a try of Extend again (Backoff.Retry's warn).
	Beat     func(err error)
	Warn     func(err error)
	Retrying func(wait time.Duration, err error)
}

// Start extends the lease every h.Every, until ctx is done or the stop
// function it returns is called (which waits for the beats to end). When
// the lease is lost, or no extension succeeded for a whole lease, it calls
// cancel with the cause and stops.
func (h Heartbeat) Start(ctx context.Context, cancel context.CancelCauseFunc) (stop func()) {
	ctx, quit := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(h.Every)
		defer t.Stop()
		lastOK := time.Now()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			began := time.Now()
			// Lost connections are tried again at once, up to the next beat.
			_, err := Statements.Retry(ctx, began.Add(h.Every), func() error { return h.Extend(ctx) }, h.Retrying)
			if ctx.Err() != nil {
				return
			}
			if h.Beat != nil {
				h.Beat(err)
			}
			switch {
			case err == nil:
				lastOK = time.Now()
			case h.Lost(err):
				cancel(err)
				return
			case time.Since(lastOK) >= h.Lease:
				cancel(h.Expired(err))
				return
			case h.Warn != nil:
				h.Warn(err)
			}
		}
	}()
	return func() { quit(); <-done }
}

// Recorded finds, in a run's history h, transition t recorded from row
// version rowVersion: how an engine learns that a write lost with its
// connection had committed.
func Recorded(h []store.Step, rowVersion int64, t runtime.Transition) (store.Step, bool) {
	for i := len(h) - 1; i >= 0; i-- {
		s := h[i]
		if s.Kind == store.KindTransition && s.RowVersion == rowVersion+1 && s.Event == t.Event && s.From == t.From && s.To == t.To {
			return s, true
		}
	}
	return store.Step{}, false
}
