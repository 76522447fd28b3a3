package natsrelay_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	natsrelay "github.com/fsmgen/fsmgen/contrib/nats"
	"github.com/fsmgen/fsmgen/contrib/nats/natsserver"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/relay"
	"github.com/fsmgen/fsmgen/runtime/store"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(crashingRelay())
	}
	pgtest.Main(m)
}

const streamName = "OUTBOX"

// jobDef is the machine whose runs emit the messages.
func jobDef() runtime.Definition {
	return runtime.Definition{
		Machine: "Job", Type: "job", Version: 1, Initial: "QUEUED",
		States: []runtime.StateSpec{
			{Name: "QUEUED", Initial: true, Status: runtime.StatusRunning},
			{Name: "DONE", Status: runtime.StatusSucceeded},
		},
		Events:      []runtime.EventSpec{{Name: "Finish"}},
		Transitions: []runtime.TransitionSpec{{From: "QUEUED", To: "DONE", Event: "Finish"}},
	}
}

type env struct {
	ctx  context.Context
	url  string // the database's
	pool *pgxpool.Pool
	st   *store.Store
	nats *natsserver.Server
	js   jetstream.JetStream
	str  jetstream.Stream
}

// newEnv gives the test a fresh database with jobDef registered, and a
// nats-server of its own with the outbox's stream.
func newEnv(t *testing.T) *env {
	t.Helper()
	e := newDatabase(t)
	srv, err := natsserver.Start(e.ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	e.nats = srv
	e.js = connect(t, srv.URL())
	if e.str, err = natsrelay.EnsureStream(e.ctx, e.js, streamName, natsrelay.DefaultSubjectPrefix); err != nil {
		t.Fatal(err)
	}
	return e
}

// newDatabase gives the test a fresh database with jobDef registered, an
// env without NATS.
func newDatabase(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	e := &env{ctx: ctx, url: pgtest.NewDatabase(t)}
	pool, err := pgxpool.New(ctx, e.url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	e.pool, e.st = pool, store.New(pool)
	if err := e.st.Register(ctx, jobDef()); err != nil {
		t.Fatal(err)
	}
	return e
}

// relayAll relays e's outbox through pub, with a relay of cfg, until a
// batch claims nothing.
func (e *env) relayAll(t *testing.T, pub relay.Publisher, cfg relay.Config) {
	t.Helper()
	r, err := relay.New(e.pool, pub, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for {
		b, err := r.RelayOnce(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if b.Claimed == 0 {
			return
		}
	}
}

// connect connects to the NATS server at url for good: reconnecting
// without end, failing publishes at once while disconnected.
func connect(t *testing.T, url string) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond), nats.ReconnectBufSize(-1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// start starts n runs and returns their ids.
func (e *env) start(t *testing.T, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		res, err := e.st.Start(e.ctx, runtime.StartRequest{Type: "job", Version: 1, IdempotencyKey: fmt.Sprintf("job-%d", i), Owner: runtime.Owner{TenantID: "t1"}})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = res.Run.ID
	}
	return ids
}

// emit writes perRun messages for every run, round robin, under
// job.<run's index>.progress, and adds their ids to into, by run.
func (e *env) emit(t *testing.T, runs []string, perRun int, into map[string][]int64) {
	t.Helper()
	for i := range perRun {
		for j, r := range runs {
			m, err := e.st.Emit(e.ctx, r, fmt.Sprintf("job.%d.progress", j), map[string]int{"step": i})
			if err != nil {
				t.Fatal(err)
			}
			into[r] = append(into[r], m.ID)
		}
	}
}

// streamed is a message as the stream holds it.
type streamed struct {
	Subject  string
	MsgID    string
	OutboxID string
	RunID    string
	Data     string
	// TraceParent is the traceparent header, "-" when there is none.
	TraceParent string
}

// stored reads every message of the stream, in stream order, and checks
// that the stream holds no more.
func (e *env) stored(t *testing.T) []streamed {
	t.Helper()
	info, err := e.str.Info(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []streamed
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := e.str.GetMsg(e.ctx, seq)
		if err != nil {
			t.Fatalf("message %d of the stream: %v", seq, err)
		}
		out = append(out, streamed{Subject: m.Subject, MsgID: m.Header.Get(natsrelay.HeaderMsgID),
			OutboxID: m.Header.Get(natsrelay.HeaderOutboxID), TraceParent: traceParentOf(m.Header), RunID: m.Header.Get(natsrelay.HeaderRunID), Data: string(m.Data)})
	}
	if uint64(len(out)) != info.State.Msgs {
		t.Fatalf("read %d messages, the stream has %d", len(out), info.State.Msgs)
	}
	return out
}

// byRun groups the stream's outbox row ids by run, in stream order, and
// checks that each message's id is its run's id and its row's.
func byRun(t *testing.T, msgs []streamed) map[string][]int64 {
	t.Helper()
	out := make(map[string][]int64)
	for _, m := range msgs {
		id, err := strconv.ParseInt(m.OutboxID, 10, 64)
		if err != nil {
			t.Fatalf("outbox id %q: %v", m.OutboxID, err)
		}
		if want := m.RunID + "/" + m.OutboxID; m.MsgID != want {
			t.Errorf("message id %q, want %q", m.MsgID, want)
		}
		out[m.RunID] = append(out[m.RunID], id)
	}
	return out
}

// pending counts the unpublished outbox rows.
func (e *env) pending(t *testing.T) int {
	t.Helper()
	var n int
	if err := e.pool.QueryRow(e.ctx, `SELECT count(*) FROM workflow_outbox WHERE published_at IS NULL`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// traceParentOf is the traceparent header of h, "-" when it has none and
// its values joined by "," when it has several.
func traceParentOf(h nats.Header) string {
	if v := h.Values(natsrelay.HeaderTraceParent); len(v) > 0 {
		return strings.Join(v, ",")
	}
	return "-"
}
