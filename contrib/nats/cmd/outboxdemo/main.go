// Command outboxdemo relays the outbox of a few demo runs to NATS
// JetStream and prints what a consumer of the stream receives:
//
//	go run ./contrib/nats/cmd/outboxdemo [-database URL] [-nats URL] [-runs N] [-messages M]
//
// It starts runs of a small order machine that emit M messages each,
// relays them with runtime/relay and contrib/nats, and shows the
// guarantees at work: a run's messages in the order it wrote them, and a
// message whose acknowledgement the relay loses (the first one: its
// publisher reports a failure after JetStream stored it) published again,
// which JetStream recognises by its Nats-Msg-Id and stores once.
//
// The database is -database, else DATABASE_URL, else a throwaway cluster
// started from the PostgreSQL server binaries; NATS is -nats, else
// NATS_URL, else a nats-server it starts (-js, a free port, a temporary
// store). Everything it started is stopped at the end.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	natsrelay "github.com/fsmgen/fsmgen/contrib/nats"
	"github.com/fsmgen/fsmgen/contrib/nats/natsserver"
	"github.com/fsmgen/fsmgen/db"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/pgcluster"
	"github.com/fsmgen/fsmgen/runtime/relay"
	"github.com/fsmgen/fsmgen/runtime/store"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

type options struct {
	database, nats string
	runs, messages int
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	fs := flag.NewFlagSet("outboxdemo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.database, "database", getenv("DATABASE_URL"), "the PostgreSQL database (default $DATABASE_URL, else a throwaway cluster)")
	fs.StringVar(&o.nats, "nats", getenv("NATS_URL"), "the NATS server, with JetStream (default $NATS_URL, else a nats-server started here)")
	fs.IntVar(&o.runs, "runs", 3, "how many runs, 1..100")
	fs.IntVar(&o.messages, "messages", 3, "how many messages each run emits, 1..100")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 || o.runs < 1 || o.runs > 100 || o.messages < 1 || o.messages > 100 {
		fmt.Fprintf(stderr, "outboxdemo: want -runs and -messages in 1..100 and no arguments\n")
		return 2
	}
	if err := demo(ctx, stdout, o); err != nil {
		fmt.Fprintf(stderr, "outboxdemo: %v\n", err)
		return 1
	}
	return 0
}

// orderDef is the demo's machine: an order that is shipped.
func orderDef() runtime.Definition {
	return runtime.Definition{
		Machine: "DemoOrder", Type: "outboxdemo_order", Version: 1, Initial: "PLACED",
		States: []runtime.StateSpec{
			{Name: "PLACED", Initial: true, Status: runtime.StatusRunning},
			{Name: "SHIPPED", Status: runtime.StatusSucceeded},
		},
		Events:      []runtime.EventSpec{{Name: "Ship"}},
		Transitions: []runtime.TransitionSpec{{From: "PLACED", To: "SHIPPED", Event: "Ship"}},
	}
}

const streamName = "FSMGEN_OUTBOX_DEMO"

func demo(ctx context.Context, w io.Writer, o options) (err error) {
	tmp, err := os.MkdirTemp("", "outboxdemo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	if o.database == "" {
		fmt.Fprintln(w, "DATABASE_URL is not set: starting a throwaway PostgreSQL cluster.")
		cluster, err := pgcluster.Start(ctx)
		if err != nil {
			return fmt.Errorf("start a throwaway cluster: %w", err)
		}
		defer func() { err = errors.Join(err, cluster.Stop()) }()
		o.database = cluster.URL()
	}
	pool, err := pgxpool.New(ctx, o.database)
	if err != nil {
		return fmt.Errorf("database: %w", err)
	}
	defer pool.Close()
	if err := db.Migrate(ctx, pool); err != nil {
		return err
	}
	st := store.New(pool)
	if err := st.Register(ctx, orderDef()); err != nil {
		return err
	}

	if o.nats == "" {
		fmt.Fprintln(w, "NATS_URL is not set: starting nats-server -js on a free port.")
		srv, err := natsserver.Start(ctx, tmp)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, srv.Close()) }()
		o.nats = srv.URL()
	}
	nc, err := nats.Connect(o.nats, nats.ReconnectBufSize(-1))
	if err != nil {
		return fmt.Errorf("nats: %w", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	stream, err := natsrelay.EnsureStream(ctx, js, streamName, natsrelay.DefaultSubjectPrefix)
	if err != nil {
		return err
	}
	info, err := stream.Info(ctx)
	if err != nil {
		return err
	}
	// Only the messages of this demo: those stored from now on.
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: info.State.LastSeq + 1,
	})
	if err != nil {
		return err
	}

	// The runs and their messages, written as a handler's Effects.Emit
	// would: in the outbox, for the relay.
	batch := time.Now().UTC().Format("150405.000")
	names := map[string]string{}
	var firstID int64
	for i := 1; i <= o.runs; i++ {
		name := fmt.Sprintf("order-%d", i)
		res, err := st.Start(ctx, runtime.StartRequest{Type: "outboxdemo_order", Version: 1, IdempotencyKey: name + "@" + batch, Owner: runtime.Owner{TenantID: "demo"}})
		if err != nil {
			return err
		}
		names[res.Run.ID] = name
		for j := 1; j <= o.messages; j++ {
			m, err := st.Emit(ctx, res.Run.ID, fmt.Sprintf("order.%d.update", i), map[string]any{"order": name, "update": j})
			if err != nil {
				return err
			}
			if firstID == 0 {
				firstID = m.ID
			}
		}
	}
	total := o.runs * o.messages
	fmt.Fprintf(w, "\n%d runs emitted %d messages into the outbox; relaying them to stream %s on %s.\n", o.runs, total, streamName, o.nats)
	fmt.Fprintf(w, "The first message's acknowledgement is lost on purpose: its publish reports a failure after JetStream stored it.\n\n")

	pub, err := natsrelay.New(js, natsrelay.Config{Stream: streamName})
	if err != nil {
		return err
	}
	var mu sync.Mutex
	lost := false
	r, err := relay.New(pool, relay.PublisherFunc(func(ctx context.Context, m relay.Message) error {
		ack, err := pub.PublishAck(ctx, m)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if ack.Duplicate {
			fmt.Fprintf(w, "relay:    message %d published again: JetStream says duplicate of stream seq %d, stores nothing\n", m.ID, ack.Sequence)
		}
		if m.ID == firstID && !lost {
			lost = true
			fmt.Fprintf(w, "relay:    message %d stored as stream seq %d, acknowledgement dropped\n", m.ID, ack.Sequence)
			return errors.New("acknowledgement lost (simulated)")
		}
		return nil
	}), relay.Config{PollInterval: 50 * time.Millisecond, Backoff: runtime.RetryPolicy{InitialInterval: 200 * time.Millisecond, Coefficient: 2, MaxInterval: time.Second}})
	if err != nil {
		return err
	}
	rctx, stopRelay := context.WithCancel(ctx)
	relayDone := make(chan error, 1)
	go func() { relayDone <- r.Run(rctx) }()

	per := map[string][]string{}
	for received := 0; received < total; {
		batch, err := cons.Fetch(total-received, jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			stopRelay()
			return err
		}
		for m := range batch.Messages() {
			meta, _ := m.Metadata()
			h := m.Headers()
			name := names[h.Get(natsrelay.HeaderRunID)]
			mu.Lock()
			fmt.Fprintf(w, "consumer: seq %-3d %-30s Nats-Msg-Id %-4s %s %s\n", meta.Sequence.Stream, m.Subject(), h.Get(natsrelay.HeaderMsgID), name, m.Data())
			mu.Unlock()
			per[name] = append(per[name], string(m.Data()))
			received++
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
			stopRelay()
			return err
		}
		if ctx.Err() != nil {
			stopRelay()
			return ctx.Err()
		}
	}
	// Wait until every row is marked: the relay's last batch commits after
	// the consumer has the messages.
	for {
		s, err := relay.ReadStatus(ctx, pool)
		if err != nil {
			stopRelay()
			return err
		}
		if s.Pending == 0 {
			break
		}
		select {
		case <-ctx.Done():
			stopRelay()
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	stopRelay()
	if err := <-relayDone; err != nil {
		return err
	}

	in := true
	for i := 1; i <= o.runs; i++ {
		name := fmt.Sprintf("order-%d", i)
		for j, d := range per[name] {
			if !strings.Contains(d, fmt.Sprintf(`"update": %d`, j+1)) {
				in = false
			}
		}
	}
	s, err := relay.ReadStatus(ctx, pool)
	if err != nil {
		return err
	}
	sinfo, err := stream.Info(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\nThe consumer received %d messages, each once (the stream stored %d), every run's in order: %v.\n", total, sinfo.State.LastSeq-info.State.LastSeq, in)
	fmt.Fprintf(w, "The outbox (fsmctl outbox status): %d pending, %d published.\n", s.Pending, s.Published)
	if !in {
		return errors.New("a run's messages arrived out of order")
	}
	return nil
}
