package worker_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime/internal/worker"
)

func TestBackoffNext(t *testing.T) {
	t.Parallel()
	b := worker.Backoff{First: 10 * time.Millisecond, Max: 50 * time.Millisecond}
	var got []time.Duration
	var d time.Duration
	for range 5 {
		d = b.Next(d)
		got = append(got, d)
	}
	want := []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond, 50 * time.Millisecond, 50 * time.Millisecond}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("waits (-want +got):\n%s", diff)
	}
}

// errLost is an error of a lost connection, as pgerr.Unavailable sees one.
var errLost = fmt.Errorf("write: %w", io.ErrUnexpectedEOF)

func TestRetryTriesAgainOnlyWhileTheServerIsUnavailable(t *testing.T) {
	t.Parallel()
	b := worker.Backoff{First: time.Microsecond, Max: time.Microsecond}
	refused := errors.New("statement refused")
	for _, tc := range []struct {
		name  string
		errs  []error
		calls int
		err   error
		lost  bool
	}{
		{"success", []error{nil}, 1, nil, false},
		{"lost twice, then success", []error{errLost, errLost, nil}, 3, nil, true},
		{"lost, then refused", []error{errLost, refused, nil}, 2, refused, true},
		{"refused", []error{refused, nil}, 1, refused, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			calls, warned := 0, 0
			lost, err := b.Retry(context.Background(), time.Time{}, func() error {
				calls++
				return tc.errs[calls-1]
			}, func(time.Duration, error) { warned++ })
			if !errors.Is(err, tc.err) || calls != tc.calls || warned != calls-1 || lost != tc.lost {
				t.Errorf("Retry returned %v (lost %t) after %d calls and %d warnings, want %v (lost %t) after %d", err, lost, calls, warned, tc.err, tc.lost, tc.calls)
			}
		})
	}
}

func TestRetryStopsAtItsLimitAndWithItsContext(t *testing.T) {
	t.Parallel()
	calls := 0
	op := func() error { calls++; return errLost }
	if _, err := worker.Statements.Retry(context.Background(), time.Now().Add(-time.Second), op, nil); !errors.Is(err, io.ErrUnexpectedEOF) || calls != 1 {
		t.Errorf("past its limit: %v after %d calls, want the lost connection after 1", err, calls)
	}
	ctx, cancel := context.WithCancel(context.Background())
	calls = 0
	_, err := worker.Statements.Retry(ctx, time.Time{}, func() error {
		calls++
		if calls == 3 {
			cancel()
		}
		return errLost
	}, nil)
	if !errors.Is(err, io.ErrUnexpectedEOF) || calls != 3 {
		t.Errorf("cancelled: %v after %d calls, want the lost connection after 3", err, calls)
	}
}

var errLeaseLost = errors.New("lease lost")

// beat runs a heartbeat whose extensions return errs in turn (the last
// one for ever after), until it cancels the work, and returns the errors
// Beat saw and the cause.
func beat(t *testing.T, lease time.Duration, errs ...error) ([]error, error) {
	t.Helper()
	work, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	var seen []error
	n := 0
	stop := worker.Heartbeat{
		Every: time.Millisecond, Lease: lease,
		Extend: func(context.Context) error {
			err := errs[min(n, len(errs)-1)]
			n++
			return err
		},
		Lost:    func(err error) bool { return errors.Is(err, errLeaseLost) },
		Expired: func(err error) error { return fmt.Errorf("%w: no extension: %w", errLeaseLost, err) },
		Beat:    func(err error) { seen = append(seen, err) },
	}.Start(context.Background(), cancel)
	<-work.Done()
	stop()
	return seen, context.Cause(work)
}

func TestHeartbeatCancelsTheWorkWhenTheLeaseIsLost(t *testing.T) {
	t.Parallel()
	seen, cause := beat(t, time.Hour, nil, nil, errLeaseLost)
	if !errors.Is(cause, errLeaseLost) || cause.Error() != "lease lost" {
		t.Errorf("work cancelled by %v, want the lost lease", cause)
	}
	if diff := cmp.Diff([]error{nil, nil, errLeaseLost}, seen, cmp.Comparer(func(a, b error) bool { return a == b })); diff != "" {
		t.Errorf("beats (-want +got):\n%s", diff)
	}
}

func TestHeartbeatCancelsTheWorkWhenNoExtensionSucceedsForALease(t *testing.T) {
	t.Parallel()
	failed := errors.New("extension failed")
	seen, cause := beat(t, 5*time.Millisecond, failed)
	if want := "lease lost: no extension: extension failed"; cause == nil || cause.Error() != want {
		t.Errorf("work cancelled by %v, want %q", cause, want)
	}
	for _, err := range seen {
		if !errors.Is(err, failed) {
			t.Errorf("beat with %v, want every extension failed", err)
		}
	}
}
