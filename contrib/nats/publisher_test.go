package natsrelay_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	natsrelay "github.com/fsmgen/fsmgen/contrib/nats"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/relay"
)

// Every row reaches the stream once, on its topic's subject, with its id as
// the message id, and a run's rows in the order the run wrote them.
func TestEveryRowOnceInOrderPerRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	runs := e.start(t, 3)
	want := map[string][]int64{}
	e.emit(t, runs, 5, want)

	pub, err := natsrelay.New(e.js, natsrelay.Config{Stream: streamName})
	if err != nil {
		t.Fatal(err)
	}
	e.relayAll(t, pub, relay.Config{BatchSize: 4})
	got := e.stored(t)
	if diff := cmp.Diff(want, byRun(t, got)); diff != "" {
		t.Errorf("stream per run (-want +got):\n%s", diff)
	}
	if len(got) != 15 {
		t.Errorf("%d messages in the stream, want 15", len(got))
	}
	for _, m := range got {
		var j int
		for i, r := range runs {
			if r == m.RunID {
				j = i
			}
		}
		if want := fmt.Sprintf("fsmgen.outbox.job.%d.progress", j); m.Subject != want || !strings.HasPrefix(m.Data, `{"step": `) {
			t.Errorf("message %+v, want subject %s and the payload", m, want)
		}
	}
	if n := e.pending(t); n != 0 {
		t.Errorf("%d rows pending, want 0", n)
	}
}

// childEnv, when set, makes the test binary a relay that dies after its
// first acknowledgement (crashingRelay).
const (
	childEnv     = "FSMGEN_NATSRELAY_CHILD"
	childDBEnv   = "FSMGEN_NATSRELAY_CHILD_DB"
	childNATSEnv = "FSMGEN_NATSRELAY_CHILD_NATS"
)

// crashingRelay is the child process of TestCrashBetweenPublishAndMark: a
// relay whose first publish JetStream acknowledges, after which it says so
// on stdout and waits, its transaction open and the row unmarked, for the
// parent to kill it.
func crashingRelay() int {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv(childDBEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	nc, err := nats.Connect(os.Getenv(childNATSEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	js, err := jetstream.New(nc)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	pub, err := natsrelay.New(js, natsrelay.Config{Stream: streamName})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	r, err := relay.New(pool, relay.PublisherFunc(func(ctx context.Context, m relay.Message) error {
		ack, err := pub.PublishAck(ctx, m)
		if err != nil {
			return err
		}
		fmt.Printf("acked %d seq %d duplicate %v\n", m.ID, ack.Sequence, ack.Duplicate)
		select {} // killed here, between the acknowledgement and the mark
	}), relay.Config{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	_, err = r.RelayOnce(ctx)
	fmt.Fprintf(os.Stderr, "RelayOnce returned: %v\n", err)
	return 1
}

// A relay process killed between JetStream's acknowledgement and its mark
// leaves the row unpublished; the next relay publishes it again, JetStream
// recognises its message id and stores it once, and the rows that follow
// go out after it.
func TestCrashBetweenPublishAndMark(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	runs := e.start(t, 1)
	ids := map[string][]int64{}
	e.emit(t, runs, 3, ids)
	rows := ids[runs[0]]

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1", childDBEnv+"="+e.url, childNATSEnv+"="+e.nats.URL())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if want := fmt.Sprintf("acked %d seq 1 duplicate false\n", rows[0]); line != want {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("the child said %q (%v), want %q; its stderr:\n%s", line, err, want, stderr.String())
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	// The child's transaction ends when the database sees its connection
	// close: wait for its lock on the row.
	err = pgx.BeginFunc(e.ctx, e.pool, func(tx pgx.Tx) error {
		_, err := tx.Exec(e.ctx, `SELECT 1 FROM workflow_outbox WHERE id = $1 FOR UPDATE`, rows[0])
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := e.pending(t); n != 3 {
		t.Fatalf("%d rows pending after the crash, want 3: the first is in the stream but not marked", n)
	}
	if got := e.stored(t); len(got) != 1 {
		t.Fatalf("the stream holds %+v after the crash, want the first row", got)
	}

	pub, err := natsrelay.New(e.js, natsrelay.Config{Stream: streamName})
	if err != nil {
		t.Fatal(err)
	}
	var acks []string
	r, err := relay.New(e.pool, relay.PublisherFunc(func(ctx context.Context, m relay.Message) error {
		ack, err := pub.PublishAck(ctx, m)
		if err != nil {
			return err
		}
		acks = append(acks, fmt.Sprintf("%d seq %d duplicate %v", m.ID, ack.Sequence, ack.Duplicate))
		return nil
	}), relay.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.RelayOnce(e.ctx); err != nil {
		t.Fatal(err)
	}
	wantAcks := []string{
		fmt.Sprintf("%d seq 1 duplicate true", rows[0]),
		fmt.Sprintf("%d seq 2 duplicate false", rows[1]),
		fmt.Sprintf("%d seq 3 duplicate false", rows[2]),
	}
	if diff := cmp.Diff(wantAcks, acks); diff != "" {
		t.Errorf("acknowledgements after the crash (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(ids, byRun(t, e.stored(t))); diff != "" {
		t.Errorf("stream (-want +got):\n%s", diff)
	}
	if n := e.pending(t); n != 0 {
		t.Errorf("%d rows pending, want 0", n)
	}
}

// After a relay died between a publish and its mark, its successor
// publishes the row again; JetStream drops it as a duplicate, and the
// status counts it so.
func TestCrashRepublishCountedAsDuplicate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	runs := e.start(t, 1)
	ids := map[string][]int64{}
	e.emit(t, runs, 2, ids)
	pub, err := natsrelay.New(e.js, natsrelay.Config{Stream: streamName})
	if err != nil {
		t.Fatal(err)
	}
	// The first relay's publish, whose mark was lost with it.
	first := relay.Message{ID: ids[runs[0]][0], RunID: runs[0], Type: "job", Topic: "job.0.progress"}
	if ack, err := pub.PublishAck(e.ctx, first); err != nil || ack.Duplicate {
		t.Fatalf("first publish: %+v, %v", ack, err)
	}
	e.relayAll(t, pub, relay.Config{})
	if diff := cmp.Diff(ids, byRun(t, e.stored(t))); diff != "" {
		t.Errorf("stream (-want +got):\n%s", diff)
	}
	st, err := relay.ReadStatus(e.ctx, e.pool)
	if err != nil {
		t.Fatal(err)
	}
	if st.Published != 2 || st.Duplicates != 1 || st.Pending != 0 {
		t.Errorf("status %+v, want 2 published, 1 of them a duplicate", st)
	}
}

// While the NATS server is down, rows emitted meanwhile wait: their
// publishes fail and are retried with backoff; once the server is back
// (same port, same store) every row reaches the stream once, in order per
// run.
func TestBrokerDown(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	runs := e.start(t, 2)
	want := map[string][]int64{}
	e.emit(t, runs[:1], 1, want)

	pub, err := natsrelay.New(e.js, natsrelay.Config{Stream: streamName})
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu        sync.Mutex
		published int
		failed    int
		firstDone = make(chan struct{})
		failing   = make(chan struct{})
		allDone   = make(chan struct{})
	)
	total := 1 + 2*4
	r, err := relay.New(e.pool, relay.PublisherFunc(func(ctx context.Context, m relay.Message) error {
		err := pub.Publish(ctx, m)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			if failed++; failed == 3 {
				close(failing)
			}
			return err
		}
		switch published++; published {
		case 1:
			close(firstDone)
		case total:
			close(allDone)
		}
		return nil
	}), relay.Config{
		PollInterval: 5 * time.Millisecond, PublishTimeout: 5 * time.Second,
		Backoff: runtime.RetryPolicy{InitialInterval: 5 * time.Millisecond, Coefficient: 2, MaxInterval: 50 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- r.Run(ctx) }()
	<-firstDone

	e.nats.Stop()
	e.emit(t, runs, 4, want)
	<-failing // three failed tries at least: the rows wait
	var tries int
	if err := e.pool.QueryRow(e.ctx, `SELECT coalesce(max(attempts), 0) FROM workflow_outbox WHERE published_at IS NULL`).Scan(&tries); err != nil {
		t.Fatal(err)
	}
	if n := e.pending(t); n != total-1 || tries < 1 {
		t.Fatalf("while NATS is down: %d rows pending (want %d), at most %d tries", n, total-1, tries)
	}

	if err := e.nats.Restart(e.ctx); err != nil {
		t.Fatal(err)
	}
	<-allDone
	cancel()
	if err := <-errc; err != nil {
		t.Errorf("Run: %v", err)
	}
	if diff := cmp.Diff(want, byRun(t, e.stored(t))); diff != "" {
		t.Errorf("stream (-want +got):\n%s", diff)
	}
	if n := e.pending(t); n != 0 {
		t.Errorf("%d rows pending, want 0", n)
	}
}

func TestSubjects(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		subject, err string
	}{
		{"fsmgen.outbox.order.shipped", ""},
		{"", "invalid subject: empty"},
		{"fsmgen.outbox.order..shipped", `invalid subject: "fsmgen.outbox.order..shipped" has an empty token`},
		{"fsmgen.outbox.order.", `invalid subject: "fsmgen.outbox.order." has an empty token`},
		{"fsmgen.outbox.*", `invalid subject: "fsmgen.outbox.*" has the wildcard *`},
		{"fsmgen.outbox.>", `invalid subject: "fsmgen.outbox.>" has the wildcard >`},
		{"fsmgen.outbox.order shipped", `invalid subject: "fsmgen.outbox.order shipped" has white space`},
	} {
		err := natsrelay.CheckSubject(tc.subject)
		var got string
		if err != nil {
			got = err.Error()
			if !errors.Is(err, natsrelay.ErrInvalidSubject) {
				t.Errorf("%q: %v does not match ErrInvalidSubject", tc.subject, err)
			}
		}
		if got != tc.err {
			t.Errorf("CheckSubject(%q) = %q, want %q", tc.subject, got, tc.err)
		}
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	t.Parallel()
	_, err := natsrelay.New(nil, natsrelay.Config{})
	if want := "natsrelay: invalid config: no JetStream context"; err == nil || err.Error() != want || !errors.Is(err, natsrelay.ErrInvalidConfig) {
		t.Errorf("New(nil): %v, want %q", err, want)
	}
}

// A topic that makes no valid subject fails its publish with
// ErrInvalidSubject, recorded on the row, before anything is sent.
func TestInvalidTopicFailsThePublish(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	runs := e.start(t, 1)
	m, err := e.st.Emit(e.ctx, runs[0], "order..shipped", nil)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := natsrelay.New(e.js, natsrelay.Config{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := relay.New(e.pool, pub, relay.Config{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.RelayOnce(e.ctx)
	if !errors.Is(err, relay.ErrPublish) || !errors.Is(err, natsrelay.ErrInvalidSubject) {
		t.Fatalf("RelayOnce: %v, want ErrPublish and ErrInvalidSubject", err)
	}
	var lastError string
	if err := e.pool.QueryRow(e.ctx, `SELECT last_error FROM workflow_outbox WHERE id = $1`, m.ID).Scan(&lastError); err != nil {
		t.Fatal(err)
	}
	if want := `natsrelay: topic "order..shipped": rejected by the broker: invalid subject: "fsmgen.outbox.order..shipped" has an empty token`; lastError != want {
		t.Errorf("last_error %q, want %q", lastError, want)
	}
	if got := e.stored(t); len(got) != 0 {
		t.Errorf("stream: %+v, want nothing", got)
	}
}
