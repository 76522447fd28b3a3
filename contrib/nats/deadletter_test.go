package natsrelay_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	natsrelay "github.com/fsmgen/fsmgen/contrib/nats"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/relay"
)

// Two databases relaying into one stream within its duplicate window lose
// nothing: their row ids are the same (1 to 4 in each), their messages'
// ids are not. Each database's status says what the stream stored.
func TestTwoDatabasesOneStream(t *testing.T) {
	t.Parallel()
	a := newEnv(t)
	b := newDatabase(t)
	want := map[string][]int64{}
	a.emit(t, a.start(t, 1), 4, want)
	b.emit(t, b.start(t, 1), 4, want)
	pub, err := natsrelay.New(a.js, natsrelay.Config{Stream: streamName})
	if err != nil {
		t.Fatal(err)
	}
	a.relayAll(t, pub, relay.Config{})
	b.relayAll(t, pub, relay.Config{})

	got := a.stored(t)
	if len(got) != 8 {
		t.Errorf("%d messages in the stream, want 8: %+v", len(got), got)
	}
	if diff := cmp.Diff(want, byRun(t, got)); diff != "" {
		t.Errorf("stream per run (-want +got):\n%s", diff)
	}
	for name, e := range map[string]*env{"a": a, "b": b} {
		st, err := relay.ReadStatus(e.ctx, e.pool)
		if err != nil {
			t.Fatal(err)
		}
		if st.Published != 4 || st.Duplicates != 0 || st.Pending != 0 || st.Dead != 0 {
			t.Errorf("database %s: status %+v, want 4 published, no duplicates", name, st)
		}
	}
}

// A message JetStream refuses (larger than the stream's limit) is tried
// DeadLetterAfter times, then moved to the dead letters; the run's next
// message, held back behind it until then, is delivered.
func TestRejectedMessageGoesToDeadLetters(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := natsrelay.StreamConfig(streamName, natsrelay.DefaultSubjectPrefix)
	cfg.MaxMsgSize = 512
	if _, err := e.js.UpdateStream(e.ctx, cfg); err != nil {
		t.Fatal(err)
	}
	runs := e.start(t, 1)
	poison, err := e.st.Emit(e.ctx, runs[0], "job.0.big", strings.Repeat("x", 1000))
	if err != nil {
		t.Fatal(err)
	}
	next, err := e.st.Emit(e.ctx, runs[0], "job.0.progress", map[string]int{"step": 1})
	if err != nil {
		t.Fatal(err)
	}
	pub, err := natsrelay.New(e.js, natsrelay.Config{Stream: streamName})
	if err != nil {
		t.Fatal(err)
	}
	r, err := relay.New(e.pool, pub, relay.Config{DeadLetterAfter: 3,
		Backoff: runtime.RetryPolicy{InitialInterval: time.Millisecond, Coefficient: 1, MaxInterval: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	const wantErr = "natsrelay: publish on fsmgen.outbox.job.0.big: rejected by the broker: nats: nats: API error: code=400 err_code=10054 description=message size exceeds maximum allowed"
	var failed []string
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := r.RelayOnce(e.ctx)
		switch {
		case errors.Is(err, relay.ErrPublish):
			if !errors.Is(err, relay.ErrRejected) || b.Failed.ID != poison.ID {
				t.Fatalf("RelayOnce: %v, batch %+v; want the poison message rejected", err, b)
			}
			failed = append(failed, err.Error())
			continue
		case err != nil:
			t.Fatal(err)
		}
		if len(b.Dead) > 0 {
			if b.Dead[0].ID != poison.ID || b.Dead[0].Tries != 3 || b.Dead[0].LastError != wantErr || b.Published != 1 {
				d := b.Dead[0]
				t.Fatalf("dead letter %d after %d tries (%q), %d published; want %d after 3 tries (%q) and the next one published",
					d.ID, d.Tries, d.LastError, b.Published, poison.ID, wantErr)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no dead letter after %d failed tries", len(failed))
		}
	}
	if len(failed) != 2 {
		t.Errorf("failed tries before the dead letter: %q, want 2", failed)
	}
	got := e.stored(t)
	if want := map[string][]int64{runs[0]: {next.ID}}; !cmp.Equal(want, byRun(t, got)) {
		t.Errorf("stream per run (-want +got):\n%s", cmp.Diff(want, byRun(t, got)))
	}
	st, err := relay.ReadStatus(e.ctx, e.pool)
	if err != nil {
		t.Fatal(err)
	}
	if st.Dead != 1 || st.Published != 1 || st.Pending != 0 || len(st.DeadLetters) != 1 || st.DeadLetters[0].ID != poison.ID || st.DeadLetters[0].LastError != wantErr {
		t.Errorf("status %+v, want the poison message among the dead letters", st)
	}
}
