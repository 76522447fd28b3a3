package relay_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/relay"
)

// Every row is published once, a run's rows in the order they were
// written, across batches that split runs; each is marked published, and
// the status counts follow.
func TestRelayPublishesEveryRowOnceInOrderPerRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	runs := e.start(t, 5)
	want := e.emit(t, runs, 6)

	st, err := relay.ReadStatus(e.ctx, e.pool)
	if err != nil {
		t.Fatal(err)
	}
	first := want[runs[0]][0]
	if st.Pending != 30 || st.Published != 0 || st.Retrying != 0 || st.Oldest == nil || st.Oldest.ID != first {
		t.Fatalf("status before: %+v, want 30 pending, the oldest %d", st, first)
	}
	if st.Oldest.RunID != runs[0] || st.Oldest.Topic != "job.progress" || string(st.Oldest.Payload) != `{"step": 0}` || st.Age() < 0 {
		t.Errorf("oldest pending: %+v, age %v", st.Oldest, st.Age())
	}

	pub := &recorder{}
	r := e.newRelay(t, pub, relay.Config{BatchSize: 4})
	b, err := r.RelayOnce(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(relay.Batch{Claimed: 4, Published: 4}, b); diff != "" {
		t.Errorf("first batch (-want +got):\n%s", diff)
	}
	drain(t, e.ctx, r)

	if diff := cmp.Diff(want, pub.byRun()); diff != "" {
		t.Errorf("published per run (-want +got):\n%s", diff)
	}
	if n := len(pub.msgs); n != 30 {
		t.Errorf("%d publishes, want 30", n)
	}
	for _, m := range pub.msgs {
		if m.Type != "job" || m.Attempt != 1 || m.Tries != 0 || m.CreatedAt.IsZero() {
			t.Errorf("message %+v", m)
		}
		if got := e.row(t, m.ID); !got.Published || got.Attempts != 1 {
			t.Errorf("row %d: %+v, want published after one try", m.ID, got)
		}
	}
	st, err = relay.ReadStatus(e.ctx, e.pool)
	if err != nil {
		t.Fatal(err)
	}
	if st.Pending != 0 || st.Published != 30 || st.Oldest != nil || st.Age() != 0 {
		t.Errorf("status after: %+v, want 30 published", st)
	}
}

// A failed publish stops the batch, is recorded on its row, and holds back
// the later rows of its run, but not the rows of other runs; once its
// backoff is over it is published, then the rows that waited, in order.
func TestFailedRowHoldsBackItsRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	runs := e.start(t, 2)
	ids := e.emit(t, runs, 3)
	a, b := ids[runs[0]], ids[runs[1]]
	failing := a[0]

	pub := &recorder{fail: func(m relay.Message) error {
		if m.ID == failing {
			return errors.New("broker said no")
		}
		return nil
	}}
	r := e.newRelay(t, pub, relay.Config{Backoff: runtime.RetryPolicy{InitialInterval: time.Hour}})
	batch, err := r.RelayOnce(e.ctx)
	wantPrefix := fmt.Sprintf("relay: outbox row %d (run %s, topic job.progress), try 1: publish failed: broker said no; next try at ", failing, runs[0])
	if !errors.Is(err, relay.ErrPublish) || !strings.HasPrefix(err.Error(), wantPrefix) {
		t.Fatalf("RelayOnce: %v, want an error matching ErrPublish starting %q", err, wantPrefix)
	}
	if batch.Published != 0 || batch.Failed.ID != failing || batch.Retry.IsZero() {
		t.Errorf("batch %+v, want the failure of row %d first", batch, failing)
	}
	if got := e.row(t, failing); got.Published || got.Attempts != 1 || got.LastError != "broker said no" || got.Backoff != time.Hour || got.Due {
		t.Errorf("failed row: %+v, want one try, its error and an hour's backoff", got)
	}
	st, err := relay.ReadStatus(e.ctx, e.pool)
	if err != nil {
		t.Fatal(err)
	}
	if st.Pending != 6 || st.Retrying != 1 || st.Oldest.ID != failing || st.Oldest.Tries != 1 ||
		st.Oldest.LastError != "broker said no" || !st.Oldest.NextTry.Equal(batch.Retry) || st.Oldest.LastTry.IsZero() {
		t.Errorf("status: %+v (oldest %+v)", st, st.Oldest)
	}

	// The other run's rows go; the failed run's wait for its backoff.
	pub.fail = nil
	drain(t, e.ctx, r)
	if diff := cmp.Diff(map[string][]int64{runs[1]: b}, pub.byRun()); diff != "" {
		t.Errorf("published while row %d waits (-want +got):\n%s", failing, diff)
	}

	e.bringForward(t, failing)
	drain(t, e.ctx, r)
	if diff := cmp.Diff(map[string][]int64{runs[0]: a, runs[1]: b}, pub.byRun()); diff != "" {
		t.Errorf("published after the backoff (-want +got):\n%s", diff)
	}
	if got := e.row(t, failing); !got.Published || got.Attempts != 2 || got.LastError != "broker said no" {
		t.Errorf("row %d: %+v, want published on its second try, its last error kept", failing, got)
	}
	if pub.msgs[len(pub.msgs)-3].Tries != 1 {
		t.Errorf("second try of row %d: %+v, want Tries 1", failing, pub.msgs[len(pub.msgs)-3])
	}
}

// The backoff grows by the policy's coefficient up to its maximum, spread
// by its jitter but never past the maximum, counted by the database's
// clock from the failed try.
func TestBackoff(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.emit(t, e.start(t, 1), 1)
	var row int64
	for _, ids := range id {
		row = ids[0]
	}
	randoms := []float64{0.5, 0.5, 0.5, 0, 0.75}
	var next int
	r := e.newRelay(t, relay.PublisherFunc(func(context.Context, relay.Message) error { return errors.New("unreachable") }), relay.Config{
		Backoff: runtime.RetryPolicy{InitialInterval: time.Second, Coefficient: 2, MaxInterval: 3 * time.Second, Jitter: 0.2},
		Random:  func() float64 { next++; return randoms[next-1] },
	})
	var got []time.Duration
	for i := range randoms {
		if _, err := r.RelayOnce(e.ctx); !errors.Is(err, relay.ErrPublish) {
			t.Fatalf("try %d: %v, want ErrPublish", i+1, err)
		}
		rw := e.row(t, row)
		if rw.Attempts != i+1 || rw.Due {
			t.Fatalf("after try %d: %+v", i+1, rw)
		}
		got = append(got, rw.Backoff)
		// Not tried again before its time.
		if b, err := r.RelayOnce(e.ctx); err != nil || b.Claimed != 0 {
			t.Fatalf("RelayOnce during the backoff: %+v, %v; want nothing claimed", b, err)
		}
		e.bringForward(t, row)
	}
	want := []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 2400 * time.Millisecond, 3 * time.Second}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("backoffs (-want +got):\n%s", diff)
	}
}

// Two relays on one database publish every row once and each run's rows in
// order, while one of them holds a batch and the other goes on with the
// runs it does not hold.
func TestTwoRelaysPublishEachRowOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	runs := e.start(t, 20)
	want := e.emit(t, runs, 10)
	total := 200

	var (
		mu        sync.Mutex
		order     []relay.Message
		by        = map[int64][]string{}
		done      = make(chan struct{})
		aHolds    = make(chan []int64, 1)
		bGoes     = make(chan struct{})
		bCount    int
		firstOfA  = true
		heldByA   = map[string]bool{}
		bTookHeld []int64
	)
	publish := func(name string, m relay.Message) {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, m)
		by[m.ID] = append(by[m.ID], name)
		if name == "b" {
			if heldByA[m.RunID] {
				bTookHeld = append(bTookHeld, m.ID)
			}
			if bCount++; bCount == 10 {
				close(bGoes)
			}
		}
		if len(order) == total {
			close(done)
		}
	}
	// a blocks in its first publish until b has published 10 rows.
	a := e.newRelay(t, relay.PublisherFunc(func(ctx context.Context, m relay.Message) error {
		mu.Lock()
		first := firstOfA
		if first {
			firstOfA = false
			heldByA[m.RunID] = true
		}
		mu.Unlock()
		if first {
			aHolds <- nil
			select {
			case <-bGoes:
			case <-ctx.Done():
				return ctx.Err()
			}
			mu.Lock()
			delete(heldByA, m.RunID)
			mu.Unlock()
		}
		publish("a", m)
		return nil
	}), relay.Config{BatchSize: 7, PollInterval: time.Millisecond})
	b := e.newRelay(t, relay.PublisherFunc(func(_ context.Context, m relay.Message) error {
		publish("b", m)
		return nil
	}), relay.Config{BatchSize: 5, PollInterval: time.Millisecond})

	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	wg.Add(1)
	go func() { defer wg.Done(); errs <- a.Run(ctx) }()
	<-aHolds
	wg.Add(1)
	go func() { defer wg.Done(); errs <- b.Run(ctx) }()
	<-done
	cancel()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	}

	if diff := cmp.Diff(want, groupByRun(order)); diff != "" {
		t.Errorf("published per run (-want +got):\n%s", diff)
	}
	var twice []string
	for id, names := range by {
		if len(names) != 1 {
			twice = append(twice, fmt.Sprintf("%d by %v", id, names))
		}
	}
	sort.Strings(twice)
	if len(twice) > 0 {
		t.Errorf("published more than once: %v", twice)
	}
	if len(bTookHeld) > 0 {
		t.Errorf("b published rows %v of the run a held", bTookHeld)
	}
	st, err := relay.ReadStatus(e.ctx, e.pool)
	if err != nil {
		t.Fatal(err)
	}
	if st.Pending != 0 || st.Published != int64(total) {
		t.Errorf("status: %+v, want %d published", st, total)
	}
}

// When Run's context ends during a publish, the rows acknowledged before
// are marked, the interrupted one is left as it was (no failed try
// recorded), and Run returns nil.
func TestRunStopsCleanly(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ids := e.emit(t, e.start(t, 1), 3)
	var rows []int64
	for _, v := range ids {
		rows = v
	}
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	blocked := make(chan struct{})
	r := e.newRelay(t, relay.PublisherFunc(func(ctx context.Context, m relay.Message) error {
		if m.ID == rows[1] {
			close(blocked)
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	}), relay.Config{})
	errc := make(chan error, 1)
	go func() { errc <- r.Run(ctx) }()
	<-blocked
	cancel()
	if err := <-errc; err != nil {
		t.Errorf("Run: %v, want nil", err)
	}
	got := []row{e.row(t, rows[0]), e.row(t, rows[1]), e.row(t, rows[2])}
	want := []row{{Published: true, Attempts: 1, Due: true}, {Due: true}, {Due: true}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rows after the shutdown (-want +got):\n%s", diff)
	}
}

// A publisher that panics fails the try like an error; the relay goes on.
func TestPublisherPanic(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ids := e.emit(t, e.start(t, 1), 1)
	var row int64
	for _, v := range ids {
		row = v[0]
	}
	r := e.newRelay(t, relay.PublisherFunc(func(context.Context, relay.Message) error { panic("boom") }), relay.Config{})
	if _, err := r.RelayOnce(e.ctx); !errors.Is(err, relay.ErrPublish) || !strings.Contains(err.Error(), ": publish failed: publisher panicked: boom; next try at ") {
		t.Errorf("RelayOnce: %v", err)
	}
	if got := e.row(t, row); got.LastError != "publisher panicked: boom" || got.Attempts != 1 {
		t.Errorf("row: %+v", got)
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pub := relay.PublisherFunc(func(context.Context, relay.Message) error { return nil })
	for _, tc := range []struct {
		cfg  relay.Config
		want string
	}{
		{relay.Config{BatchSize: -1, PollInterval: -time.Second}, "relay: invalid config: negative batch size -1; negative poll interval -1s"},
		{relay.Config{BatchSize: 10001}, "relay: invalid config: batch size 10001 is more than 10000"},
		{relay.Config{PublishTimeout: -1, Backoff: runtime.RetryPolicy{Jitter: 2}}, "relay: invalid config: negative publish timeout -1ns; backoff jitter 2 is not in [0, 1]"},
		{relay.Config{DeadLetterAfter: -1}, "relay: invalid config: negative dead letter try count -1"},
	} {
		_, err := relay.New(e.pool, pub, tc.cfg)
		if !errors.Is(err, relay.ErrInvalidConfig) || err.Error() != tc.want {
			t.Errorf("New(%+v): %v, want %q", tc.cfg, err, tc.want)
		}
	}
	_, err := relay.New(nil, nil, relay.Config{})
	if want := "relay: invalid config: no pool; no publisher"; err == nil || err.Error() != want {
		t.Errorf("New(nil, nil): %v, want %q", err, want)
	}
	r, err := relay.New(e.pool, pub, relay.Config{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := r.Config()
	if cfg.BatchSize != relay.DefaultBatchSize || cfg.PollInterval != relay.DefaultPollInterval ||
		cfg.PublishTimeout != relay.DefaultPublishTimeout || cfg.DeadLetterAfter != relay.DefaultDeadLetterAfter || !cmp.Equal(cfg.Backoff, relay.DefaultBackoff) || cfg.Logger == nil || cfg.Random == nil {
		t.Errorf("defaults: %+v", cfg)
	}
}

// A batch that takes longer than the database lets a transaction stay
// idle (a slow broker) is published and marked whole: each row is marked
// after its publish, so the transaction is never idle longer than one
// publish.
func TestSlowBrokerLongBatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ids := e.emit(t, e.start(t, 1), 20)
	pub := &recorder{fail: func(relay.Message) error {
		time.Sleep(80 * time.Millisecond) // a broker that takes 80ms to acknowledge
		return nil
	}}
	// The transaction may stay idle 1.2s; the batch takes 1.6s.
	r := e.newRelay(t, pub, relay.Config{PublishTimeout: 200 * time.Millisecond})
	b, err := r.RelayOnce(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if b.Claimed != 20 || b.Published != 20 {
		t.Errorf("batch %+v, want 20 claimed and published", b)
	}
	if diff := cmp.Diff(ids, pub.byRun()); diff != "" {
		t.Errorf("published (-want +got):\n%s", diff)
	}
	for _, id := range pub.msgs {
		if got := e.row(t, id.ID); !got.Published {
			t.Errorf("row %d is not marked", id.ID)
		}
	}

	// A publisher that ignores its context and stays away longer than
	// that: the database ends the transaction, the row stays unpublished
	// for the next claim.
	more := e.emit(t, e.start(t, 1), 1)
	var row int64
	for _, v := range more {
		row = v[0]
	}
	stuck := e.newRelay(t, relay.PublisherFunc(func(context.Context, relay.Message) error {
		time.Sleep(1500 * time.Millisecond)
		return nil
	}), relay.Config{PublishTimeout: 200 * time.Millisecond})
	if _, err := stuck.RelayOnce(e.ctx); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("relay: mark outbox row %d published: ", row)) {
		t.Errorf("RelayOnce with a stuck publisher: %v, want the mark refused", err)
	}
	if got := e.row(t, row); got.Published || got.Attempts != 0 {
		t.Errorf("row %d after the stuck publish: %+v, want it as it was", row, got)
	}
}
