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

// outbox status counts what a relay published and what waits, and shows the
// oldest pending message with its failed try, as text and as JSON.
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

	if got, want := withDB(t, url, "outbox", "status"), (result{Stdout: "pending    0\nretrying   0\npublished  0\n\noldest pending: none\n"}); !cmp.Equal(want, got) {
		t.Errorf("empty outbox (-want +got):\n%s", cmp.Diff(want, got))
	}

	var runs []string
	for _, key := range []string{"a", "b"} {
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
	emit(runs[1], "problem.received", map[string]string{"key": "b"})
	failing := emit(runs[0], "problem.received", map[string]string{"key": "a"})
	emit(runs[0], "problem.solved", nil)

	// A relay publishes b's message and fails on a's first.
	r, err := relay.New(pool, relay.PublisherFunc(func(_ context.Context, m relay.Message) error {
		if m.ID == failing {
			return errors.New("nats: no response from stream")
		}
		return nil
	}), relay.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.RelayOnce(ctx); !errors.Is(err, relay.ErrPublish) {
		t.Fatalf("RelayOnce: %v, want ErrPublish", err)
	}
	var lastTry, nextTry time.Time
	if err := pool.QueryRow(ctx, `SELECT last_attempt_at, next_attempt_at FROM workflow_outbox WHERE id = $1`, failing).Scan(&lastTry, &nextTry); err != nil {
		t.Fatal(err)
	}

	got := withDB(t, url, "outbox", "status")
	got.Stdout = regexp.MustCompile(`\(waiting [^)]+\)`).ReplaceAllString(got.Stdout, "(waiting AGE)")
	want := result{Stdout: fmt.Sprintf(`pending    2
retrying   1
published  1

oldest pending:
  id            %d
  run           %s
  type          retrieve_or_generate (attempt 1)
  topic         problem.received
  created       %s (waiting AGE)
  failed tries  1
  last try      %s
  next try      %s
  last error    nats: no response from stream
`, failing, runs[0], formatTime(time.Date(2026, 3, 14, 9, 26, 54, 0, time.UTC)), formatTime(lastTry), formatTime(nextTry))}
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
	wantJS := jsonOutboxStatus{
		Pending: 2, Retrying: 1, Published: 1, Now: js.Now,
		Oldest: &jsonPendingOutbox{
			ID: failing, RunID: runs[0], Type: rog.Type, Attempt: 1, Topic: "problem.received",
			Payload: json.RawMessage(`{"key":"a"}`), CreatedAt: &created, AgeSeconds: js.Now.Sub(created).Seconds(),
			Tries: 1, LastTry: jsonTime(lastTry), NextTry: jsonTime(nextTry), LastError: "nats: no response from stream",
		},
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
	if got := fsmctl(t, nil, "outbox"); got.Code != exitUsage || got.Stderr != "fsmctl: outbox needs a subcommand: status\nRun 'fsmctl help' for usage.\n" {
		t.Errorf("fsmctl outbox: %+v", got)
	}
}
