package relay_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime/relay"
)

// A row the broker rejects DeadLetterAfter times in a row is moved to the
// dead letters, and the batch goes on with the next rows, its run's
// included. A failure that is no rejection (the broker unreachable) starts
// the count again, so that a broker that is down never makes dead letters.
func TestRejectedRowGoesToDeadLetters(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	runs := e.start(t, 2)
	ids := e.emit(t, runs, 2)
	a, b := ids[runs[0]], ids[runs[1]]
	poison := a[0]

	rejected := fmt.Errorf("no stream for its subject: %w", relay.ErrRejected)
	unreachable := errors.New("connection refused")
	// The poison row's tries: rejected, unreachable (the count starts
	// again), rejected, rejected (the second in a row: dead).
	tries := []error{rejected, unreachable, rejected, rejected}
	pub := &recorder{fail: func(m relay.Message) error {
		if m.ID != poison {
			return nil
		}
		return tries[m.Tries]
	}}
	r := e.newRelay(t, pub, relay.Config{DeadLetterAfter: 2})
	for try := 1; try <= 3; try++ {
		batch, err := r.RelayOnce(e.ctx)
		if !errors.Is(err, relay.ErrPublish) || batch.Failed.ID != poison || len(batch.Dead) != 0 {
			t.Fatalf("try %d: batch %+v, %v; want the poison row failed, not dead", try, batch, err)
		}
		e.bringForward(t, poison)
	}
	if len(pub.msgs) != 0 {
		t.Errorf("published while the poison row, the first, is tried: %+v", pub.msgs)
	}

	batch, err := r.RelayOnce(e.ctx)
	if err != nil {
		t.Fatalf("fourth try: %v", err)
	}
	if len(batch.Dead) != 1 || batch.Dead[0].ID != poison || batch.Dead[0].Tries != 4 || batch.Dead[0].DeadAt.IsZero() ||
		batch.Dead[0].LastError != "no stream for its subject: rejected by the broker" || !batch.Dead[0].NextTry.IsZero() {
		t.Errorf("dead letters of the fourth try: %+v", batch.Dead)
	}
	if batch.Published != 3 {
		t.Errorf("the fourth try published %d rows, want the 3 after the poison row", batch.Published)
	}
	if diff := cmp.Diff(map[string][]int64{runs[0]: a[1:], runs[1]: b}, pub.byRun()); diff != "" {
		t.Errorf("published after the dead letter (-want +got):\n%s", diff)
	}
	drain(t, e.ctx, r) // nothing more: the dead letter is not tried again
	if got := e.row(t, poison); got.Published || got.Attempts != 4 {
		t.Errorf("poison row: %+v, want four tries, unpublished", got)
	}

	st, err := relay.ReadStatus(e.ctx, e.pool)
	if err != nil {
		t.Fatal(err)
	}
	if st.Pending != 0 || st.Published != 3 || st.Dead != 1 || st.Oldest != nil || len(st.DeadLetters) != 1 {
		t.Fatalf("status: %+v", st)
	}
	if d := st.DeadLetters[0]; d.ID != poison || d.RunID != runs[0] || d.Tries != 4 || !d.DeadAt.Equal(batch.Dead[0].DeadAt) ||
		d.LastError != "no stream for its subject: rejected by the broker" {
		t.Errorf("dead letter: %+v", d)
	}
}

// receipts is a ReceiptPublisher whose broker has the messages of dups
// already.
type receipts struct {
	recorder
	dups map[int64]bool
}

func (p *receipts) PublishReceipt(ctx context.Context, m relay.Message) (relay.Receipt, error) {
	err := p.Publish(ctx, m)
	return relay.Receipt{Duplicate: p.dups[m.ID]}, err
}

// A message the broker acknowledges as a duplicate is published and
// counted apart, so that the status tells an operator what was really
// stored.
func TestDuplicatesCounted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	runs := e.start(t, 1)
	ids := e.emit(t, runs, 3)[runs[0]]
	drain(t, e.ctx, e.newRelay(t, &receipts{dups: map[int64]bool{ids[1]: true}}, relay.Config{}))
	st, err := relay.ReadStatus(e.ctx, e.pool)
	if err != nil {
		t.Fatal(err)
	}
	if st.Published != 3 || st.Duplicates != 1 || st.Pending != 0 || st.Dead != 0 {
		t.Errorf("status: %+v, want 3 published, 1 of them a duplicate", st)
	}
}

// DedupID is the run's id and the row's: unique across databases, whose
// row ids all start at 1.
func TestDedupID(t *testing.T) {
	t.Parallel()
	m := relay.Message{ID: 7, RunID: "0b9f1f3e-4c1a-4a57-9d8e-2f5e6a1b2c3d"}
	if got, want := m.DedupID(), "0b9f1f3e-4c1a-4a57-9d8e-2f5e6a1b2c3d/7"; got != want {
		t.Errorf("DedupID() = %q, want %q", got, want)
	}
}

// Requeue moves dead letters back: a dry run counts them, by id or all;
// the requeued rows are published at the next relay's claim.
func TestRequeueDeadLetters(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	runs := e.start(t, 3)
	ids := e.emit(t, runs, 1)
	dead := map[int64]bool{ids[runs[0]][0]: true, ids[runs[1]][0]: true}
	pub := &recorder{fail: func(m relay.Message) error {
		if dead[m.ID] {
			return fmt.Errorf("too large: %w", relay.ErrRejected)
		}
		return nil
	}}
	drain(t, e.ctx, e.newRelay(t, pub, relay.Config{DeadLetterAfter: 1}))
	live := ids[runs[2]][0]
	first, second := ids[runs[0]][0], ids[runs[1]][0]

	if _, err := relay.Requeue(e.ctx, e.pool, []int64{}, false); err == nil || err.Error() != "relay: requeue dead letters: no ids (nil requeues every one)" {
		t.Errorf("Requeue of no ids: %v", err)
	}
	for _, tt := range []struct {
		ids    []int64
		dryRun bool
		want   int64
	}{
		{nil, true, 2},
		{[]int64{first, live, 999}, true, 1}, // a published row and no row are not dead letters
		{[]int64{first}, false, 1},
		{[]int64{first}, false, 0}, // not a dead letter any more
		{nil, true, 1},
	} {
		n, err := relay.Requeue(e.ctx, e.pool, tt.ids, tt.dryRun)
		if err != nil || n != tt.want {
			t.Errorf("Requeue(%v, dry run %v) = %d, %v; want %d", tt.ids, tt.dryRun, n, err, tt.want)
		}
	}
	st, err := relay.ReadStatus(e.ctx, e.pool)
	if err != nil {
		t.Fatal(err)
	}
	if st.Dead != 1 || st.Pending != 1 || st.Oldest == nil || st.Oldest.ID != first {
		t.Fatalf("status after requeueing one: %+v", st)
	}
	// The broker takes it now.
	delete(dead, first)
	drain(t, e.ctx, e.newRelay(t, pub, relay.Config{DeadLetterAfter: 1}))
	if got := e.row(t, first); !got.Published || got.Attempts != 2 {
		t.Errorf("requeued row: %+v, want published at its second try", got)
	}
	if n, err := relay.Requeue(e.ctx, e.pool, nil, false); err != nil || n != 1 {
		t.Errorf("Requeue of all: %d, %v; want 1", n, err)
	}
	if got := e.row(t, second); got.Published || !got.Due {
		t.Errorf("second requeued row: %+v, want due", got)
	}
}
