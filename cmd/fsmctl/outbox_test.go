package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/db"
	rog "github.com/fsmgen/fsmgen/machines/problems/retrieveorgenerate"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/relay"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// receiptPublisher is a relay.ReceiptPublisher: publish decides a
// message's fate, and the broker had the messages of dups already.
type receiptPublisher struct {
	publish func(relay.Message) error
	dups    map[int64]bool
}

func (p receiptPublisher) Publish(_ context.Context, m relay.Message) error { return p.publish(m) }

func (p receiptPublisher) PublishReceipt(ctx context.Context, m relay.Message) (relay.Receipt, error) {
	return relay.Receipt{Duplicate: p.dups[m.ID]}, p.Publish(ctx, m)
}

// outbox status counts what a relay published (and how much of it the
// broker took as duplicates), what waits and what went to the dead
// letters, and shows the oldest pending message with its failed try and
// the dead letters, as text and as JSON.
func TestOutboxStatus(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	owner := pgtest.NewDatabase(t)
	pool := openPool(t, owner)
	url := pgtest.RoleDSN(t, owner, db.RoleOperator) // fsmctl's
	clock := &stepClock{}
	st := store.New(pool, store.WithClock(clock.now))
	if err := st.Register(ctx, rog.Definition()); err != nil {
		t.Fatal(err)
	}

	if got, want := withDB(t, url, "outbox", "status"), (result{Stdout: "pending     0\nretrying    0\npublished   0\nduplicates  0\ndead        0\n\noldest pending: none\n"}); !cmp.Equal(want, got) {
		t.Errorf("empty outbox (-want +got):\n%s", cmp.Diff(want, got))
	}

	var runs []string
	for _, key := range []string{"a", "b", "c"} {
		res, err := st.Start(ctx, runtime.StartRequest{Type: rog.Type, Version: 1, IdempotencyKey: key, Owner: runtime.Owner{TenantID: "t1"}})
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, res.Run.ID)
	}
	clock.reset()
	emit := func(run, topic string, payload any) int64 {
		m, err := st.Emit(ctx, run, topic, payload)
		if err != nil {
			t.Fatal(err)
		}
		return m.ID
	}
	dup := emit(runs[1], "problem.received", map[string]string{"key": "b"})
	failing := emit(runs[0], "problem.received", map[string]string{"key": "a"})
	emit(runs[0], "problem.solved", nil)
	poison := emit(runs[2], "problem.poison", nil)

	// A relay publishes b's message, which the broker had already, and
	// fails on a's first; its next batch finds the poison message
	// rejected and moves it to the dead letters.
	r, err := relay.New(pool, receiptPublisher{publish: func(m relay.Message) error {
		switch m.ID {
		case failing:
			return errors.New("nats: connection closed")
		case poison:
			return fmt.Errorf("nats: no response from stream: %w", relay.ErrRejected)
		}
		return nil
	}, dups: map[int64]bool{dup: true}}, relay.Config{DeadLetterAfter: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.RelayOnce(ctx); !errors.Is(err, relay.ErrPublish) {
		t.Fatalf("RelayOnce: %v, want ErrPublish", err)
	}
	if b, err := r.RelayOnce(ctx); err != nil || len(b.Dead) != 1 {
		t.Fatalf("second RelayOnce: %+v, %v; want the poison message dead", b, err)
	}
	var lastTry, nextTry, deadAt time.Time
	if err := pool.QueryRow(ctx, `SELECT last_attempt_at, next_attempt_at FROM workflow_outbox WHERE id = $1`, failing).Scan(&lastTry, &nextTry); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(ctx, `SELECT dead_at FROM workflow_outbox WHERE id = $1`, poison).Scan(&deadAt); err != nil {
		t.Fatal(err)
	}

	got := withDB(t, url, "outbox", "status")
	got.Stdout = regexp.MustCompile(`\(waiting [^)]+\)`).ReplaceAllString(got.Stdout, "(waiting AGE)")
	want := result{Stdout: fmt.Sprintf(`pending     2
retrying    1
published   1
duplicates  1
dead        1

oldest pending:
  id            %d
  run           %s
  type          retrieve_or_generate (attempt 1)
  topic         problem.received
  created       %s (waiting AGE)
  failed tries  1
  last try      %s
  next try      %s
  last error    nats: connection closed

dead letters (the latest 1 of 1):
  ID  RUN                                   TOPIC           TRIES  DEAD AT                   LAST ERROR
  %d   %s  problem.poison  1      %s  nats: no response from stream: rejected by the broker
`, failing, runs[0], formatTime(time.Date(2026, 3, 14, 9, 26, 54, 0, time.UTC)), formatTime(lastTry), formatTime(nextTry),
		poison, runs[2], formatTime(deadAt))}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("outbox status (-want +got):\n%s", diff)
	}

	got = withDB(t, url, "outbox", "status", "-o", "json")
	if got.Code != exitOK || got.Stderr != "" {
		t.Fatalf("outbox status -o json: %+v", got)
	}
	var js jsonOutboxStatus
	if err := json.Unmarshal([]byte(got.Stdout), &js); err != nil {
		t.Fatalf("%v in %s", err, got.Stdout)
	}
	if js.Now == nil || js.Oldest == nil {
		t.Fatalf("no now or oldest_pending in %s", got.Stdout)
	}
	created := time.Date(2026, 3, 14, 9, 26, 54, 0, time.UTC)
	var compact bytes.Buffer
	if err := json.Compact(&compact, js.Oldest.Payload); err != nil {
		t.Fatal(err)
	}
	js.Oldest.Payload = compact.Bytes()
	if len(js.DeadLetters) != 1 || js.DeadLetters[0].Payload == nil {
		t.Fatalf("dead letters %+v in %s", js.DeadLetters, got.Stdout)
	}
	deadCreated := *js.DeadLetters[0].CreatedAt
	wantJS := jsonOutboxStatus{
		Pending: 2, Retrying: 1, Published: 1, Duplicates: 1, Dead: 1, Now: js.Now,
		Oldest: &jsonPendingOutbox{
			ID: failing, RunID: runs[0], Type: rog.Type, Attempt: 1, Topic: "problem.received",
			Payload: json.RawMessage(`{"key":"a"}`), CreatedAt: &created, AgeSeconds: js.Now.Sub(created).Seconds(),
			Tries: 1, LastTry: jsonTime(lastTry), NextTry: jsonTime(nextTry), LastError: "nats: connection closed",
		},
		DeadLetters: []jsonPendingOutbox{{
			ID: poison, RunID: runs[2], Type: rog.Type, Attempt: 1, Topic: "problem.poison", Payload: json.RawMessage("null"),
			CreatedAt: &deadCreated, AgeSeconds: js.Now.Sub(deadCreated).Seconds(), Tries: 1, LastTry: jsonTime(deadAt),
			LastError: "nats: no response from stream: rejected by the broker", DeadAt: jsonTime(deadAt),
		}},
	}
	if diff := cmp.Diff(wantJS, js); diff != "" {
		t.Errorf("outbox status -o json (-want +got):\n%s", diff)
	}
}

func TestOutboxStatusNeedsTheRelaysSchema(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t, pgtest.Empty())
	got := withDB(t, url, "outbox", "status")
	want := result{Code: exitFailure, Stderr: `fsmctl: outbox status: the database has no runtime schema (relation "workflow_outbox" does not exist): run fsmctl migrate` + "\n"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := fsmctl(t, nil, "outbox"); got.Code != exitUsage || got.Stderr != "fsmctl: outbox needs a subcommand: status or requeue\nRun 'fsmctl help' for usage.\n" {
		t.Errorf("fsmctl outbox: %+v", got)
	}
}

// outbox requeue counts dead letters with -dry-run, then moves them back
// by id or all.
func TestOutboxRequeue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	owner := pgtest.NewDatabase(t)
	pool := openPool(t, owner)
	url := pgtest.RoleDSN(t, owner, db.RoleOperator) // fsmctl's
	st := store.New(pool)
	if err := st.Register(ctx, rog.Definition()); err != nil {
		t.Fatal(err)
	}
	var dead []int64
	for _, key := range []string{"a", "b"} {
		res, err := st.Start(ctx, runtime.StartRequest{Type: rog.Type, Version: 1, IdempotencyKey: key, Owner: runtime.Owner{TenantID: "t1"}})
		if err != nil {
			t.Fatal(err)
		}
		m, err := st.Emit(ctx, res.Run.ID, "problem.poison", nil)
		if err != nil {
			t.Fatal(err)
		}
		dead = append(dead, m.ID)
	}
	r, err := relay.New(pool, receiptPublisher{publish: func(relay.Message) error {
		return fmt.Errorf("nats: no response from stream: %w", relay.ErrRejected)
	}}, relay.Config{DeadLetterAfter: 1})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := r.RelayOnce(ctx); err != nil || len(b.Dead) != 2 {
		t.Fatalf("RelayOnce: %+v, %v; want both messages dead", b, err)
	}
	first := fmt.Sprint(dead[0])
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"all", "-dry-run"}, "would requeue 2 dead letters (dry run)\n"},
		{[]string{first, "-o", "json"}, "{\n  \"requeued\": 1,\n  \"dry_run\": false\n}\n"},
		{[]string{first}, "requeued 0 dead letters\n"},
		{[]string{"all"}, "requeued 1 dead letters\n"},
	} {
		got := withDB(t, url, append([]string{"outbox", "requeue"}, tt.args...)...)
		if diff := cmp.Diff(result{Code: exitOK, Stdout: tt.want}, got); diff != "" {
			t.Errorf("outbox requeue %q (-want +got):\n%s", tt.args, diff)
		}
	}
	if st, err := relay.ReadStatus(ctx, pool); err != nil || st.Dead != 0 || st.Pending != 2 {
		t.Errorf("status after requeueing: %+v, %v; want 2 pending, none dead", st, err)
	}
}
