package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/fsmgen/fsmgen/db"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// eventsDriver is a driver whose guard NotTwice reads the run's events:
// it admits an event that was not recorded in the run's attempt before.
type eventsDriver struct{ driver }

func (d *eventsDriver) Fire(ctx context.Context, run *runtime.Run, state string, e runtime.Event, rec runtime.Recorder) error {
	inner := d.driver
	inner.guards = map[string]func(ev) bool{
		"UserOwnsRun": ownerGuard()["UserOwnsRun"],
		"NotTwice": func(x ev) bool {
			for _, past := range run.Events {
				if past.EventName() == x.name {
					return false
				}
			}
			return true
		},
	}
	return inner.Fire(ctx, run, state, e, rec)
}

// TestStatementCounts holds the engine's operations to the statements they
// send to the server (pgtest.StatementCounter), run alone: each figure is
// exact, so that a statement added to an operation fails the test.
// go test ./runtime/engine -run TestStatementCounts -v prints them.
func TestStatementCounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	pool, count := pgtest.CountedPool(t, pgtest.RoleDSN(t, dsn, db.RoleRuntime))
	st := store.New(pool)

	type figure struct {
		op   string
		want int
		got  []string
	}
	var figures []figure
	measure := func(op string, want int, got []string) {
		figures = append(figures, figure{op, want, got})
	}

	// plain has no guards: IDLE waits for Go, WORK and MORE are driven.
	idle := running("IDLE")
	idle.Wait = true
	plain := def("plain",
		[]runtime.StateSpec{idle, running("WORK"), running("MORE"), final("DONE", runtime.StatusSucceeded), final("CANCELLED", runtime.StatusCancelled)},
		[]string{"IDLE", "Go", "WORK"},
		[]string{"WORK", "Next", "MORE"},
		[]string{"MORE", "Done", "DONE"},
		[]string{"IDLE", "Cancel", "CANCELLED"},
	)
	plain.Cancel = "Cancel"
	var claimed, driven []string
	plainDriver := &driver{def: plain, handlers: map[string]handler{
		"WORK": func(context.Context, *runtime.Run) (runtime.Event, error) {
			claimed = count.Take()
			return event("Next"), nil
		},
		"MORE": func(context.Context, *runtime.Run) (runtime.Event, error) {
			driven = count.Take()
			return event("Done"), nil
		},
	}}

	// guarded has guards that read the run's events (NotTwice) or the
	// event (UserOwnsRun); the rows from A on Ping and Cancel have none.
	a, b := running("A"), running("B")
	a.Wait, b.Wait = true, true
	guarded := def("guarded",
		[]runtime.StateSpec{a, b, final("C", runtime.StatusSucceeded), final("X", runtime.StatusCancelled)},
		[]string{"A", "Ping", "B"},
		[]string{"B", "Ping", "C", "NotTwice"},
		[]string{"B", "Pong", "C", "NotTwice"},
		[]string{"A", "Cancel", "X"},
		[]string{"B", "Cancel", "X", "UserOwnsRun"},
	)
	guarded.Cancel = "Cancel"

	// parent starts a child, kid, and waits in AWAIT for its KidDone, or
	// for a caller's Poke.
	await := running("AWAIT")
	await.Wait = true
	parent := def("parent",
		[]runtime.StateSpec{running("SPAWN"), await, final("DONE", runtime.StatusSucceeded)},
		[]string{"SPAWN", "Spawned", "AWAIT"},
		[]string{"AWAIT", "KidDone", "DONE"},
		[]string{"AWAIT", "Poke", "DONE"},
	)
	kwait := running("KWAIT")
	kwait.Wait = true
	kid := def("kid", []runtime.StateSpec{kwait, final("KDONE", runtime.StatusSucceeded)}, []string{"KWAIT", "Stop", "KDONE"})
	parentDriver := &driver{def: parent, handlers: map[string]handler{
		"SPAWN": func(_ context.Context, run *runtime.Run) (runtime.Event, error) {
			if err := runtime.StartChild(run, runtime.Child{Type: "kid", Event: "KidDone"}); err != nil {
				return nil, err
			}
			return event("Spawned"), nil
		},
	}}

	// fragile's handler always fails, and TRY names no event for that: the
	// run parks, for Resume.
	fragile := def("fragile", []runtime.StateSpec{running("TRY"), final("OK", runtime.StatusSucceeded)}, []string{"TRY", "Ok", "OK"})
	fragileDriver := &driver{def: fragile, handlers: map[string]handler{
		"TRY": func(context.Context, *runtime.Run) (runtime.Event, error) {
			return nil, runtime.WithCode("DOWN", errors.New("down"))
		},
	}}

	e, err := engine.New(st, engine.Config{Logger: quiet, Lease: time.Minute, Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []runtime.Driver{plainDriver, &eventsDriver{driver{def: guarded}}, parentDriver, &driver{def: kid}, fragileDriver} {
		if err := e.Register(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	// policied is kid under another name, with a PolicyFunc.
	policied := kid
	policied.Machine, policied.Type = "policied", "policied"
	policy := engine.WithPolicy(func(context.Context, runtime.StartRequest) (json.RawMessage, error) {
		return json.RawMessage(`{"tier":"gold"}`), nil
	})
	if err := e.Register(ctx, &driver{def: policied}, policy); err != nil {
		t.Fatal(err)
	}
	start := func(typ, key string) runtime.Run {
		t.Helper()
		res, err := e.Start(ctx, runtime.StartRequest{Type: typ, IdempotencyKey: key, Owner: runtime.Owner{TenantID: "t1", UserID: alice}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Run
	}
	// signal fires ev on run and checks that the run Signal returns is the
	// stored one.
	signal := func(id string, ev runtime.Event) ([]string, error) {
		t.Helper()
		count.Take()
		got, err := e.Signal(ctx, id, ev)
		stmts := count.Take()
		if err == nil {
			stored, err := st.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(stored, got); diff != "" {
				t.Errorf("Signal %s returned a run that is not the stored one (-stored +returned):\n%s", ev.EventName(), diff)
			}
		}
		return stmts, err
	}

	// A start of a new run.
	count.Take()
	run := start("plain", "p1")
	measure("Start (new run)", 1, count.Take())
	start("plain", "p1")
	measure("Start (a key that has a run)", 2, count.Take())
	start("policied", "q1")
	// The idempotency check comes before the PolicyFunc is asked.
	measure("Start (new run, with a PolicyFunc)", 2, count.Take())

	// A caller's signal that wakes the run into a driven state, which
	// announces it to idle workers.
	listener, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close(ctx)
	if _, err := listener.Exec(ctx, "LISTEN "+store.NotifyChannel); err != nil {
		t.Fatal(err)
	}
	stmts, err := signal(run.ID, event("Go"))
	if err != nil {
		t.Fatal(err)
	}
	measure("Signal (no guards)", 2, stmts)
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	n, err := listener.WaitForNotification(wctx)
	cancel()
	if err != nil || n.Payload != "plain" {
		t.Fatalf("after a signal into a state with a handler: notification %+v, %v; want one of type plain", n, err)
	}

	// A claim, then one driven transition (WORK to MORE), then the
	// transition to the final state.
	count.Take()
	if n, err := e.RunDue(ctx); err != nil || n != 1 {
		t.Fatalf("RunDue = %d, %v; want 1 run", n, err)
	}
	measure("claim (up to the handler's call)", 1, claimed)
	measure("driven transition (handler's state to the next)", 1, driven)
	measure("driven transition to a final state", 1, count.Take())

	// A cancellation.
	run = start("plain", "p2")
	count.Take()
	if _, err := e.Cancel(ctx, run.ID, alice); err != nil {
		t.Fatal(err)
	}
	measure("Cancel (no guards)", 2, count.Take())

	// Signals of a machine whose guards read the run's events: on a row
	// without a guard, on one whose guard admits the event, and on one
	// whose guard refuses it because it read the event in the run's
	// events.
	run = start("guarded", "g1")
	if stmts, err = signal(run.ID, event("Ping")); err != nil {
		t.Fatal(err)
	}
	measure("Signal (guards, on a row without one)", 2, stmts)
	stmts, err = signal(run.ID, event("Ping"))
	if !errors.Is(err, runtime.ErrGuardRejected) {
		t.Fatalf("a second Ping: %v, want the guard that reads the run's events to refuse it", err)
	}
	measure("Signal (guards, refused by one)", 1, stmts)
	if stmts, err = signal(run.ID, event("Pong")); err != nil {
		t.Fatal(err)
	}
	measure("Signal (guards reading the run's events)", 2, stmts)
	run = start("guarded", "g2")
	if _, err := signal(run.ID, event("Ping")); err != nil {
		t.Fatal(err)
	}
	count.Take()
	if _, err := e.Cancel(ctx, run.ID, alice); err != nil {
		t.Fatal(err)
	}
	measure("Cancel (guarded)", 2, count.Take())

	// Signals to a run that waits for its child: the child's event, which
	// callers may not send, and a caller's.
	run = start("parent", "r1")
	if n, err := e.RunDue(ctx); err != nil || n != 1 {
		t.Fatalf("RunDue = %d, %v; want the parent", n, err)
	}
	stmts, err = signal(run.ID, event("KidDone"))
	if !errors.Is(err, runtime.ErrNotCallerEvent) {
		t.Fatalf("signal of the child's event: %v, want ErrNotCallerEvent", err)
	}
	measure("Signal (a child's event, refused)", 1, stmts)
	if stmts, err = signal(run.ID, event("Poke")); err != nil {
		t.Fatal(err)
	}
	measure("Signal (to a child's parent)", 2, stmts)

	// Resume of a parked run, which announces it to idle workers in the
	// same statement.
	run = start("fragile", "f1")
	if run, err = e.Drive(ctx, run.ID); err != nil || run.ParkedAt.IsZero() {
		t.Fatalf("Drive = %s parked at %v, %v; want the run parked", run.State, run.ParkedAt, err)
	}
	// Notifications arrive in commit order: the first after this marker
	// is Resume's.
	if _, err := pool.Exec(ctx, "SELECT pg_notify($1, 'marker')", store.NotifyChannel); err != nil {
		t.Fatal(err)
	}
	count.Take()
	if err := e.Resume(ctx, run.ID); err != nil {
		t.Fatal(err)
	}
	measure("Resume", 1, count.Take())
	wctx, cancel = context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		n, err := listener.WaitForNotification(wctx)
		if err != nil {
			t.Fatalf("waiting for the marker: %v", err)
		}
		if n.Payload == "marker" {
			break
		}
	}
	if n, err := listener.WaitForNotification(wctx); err != nil || n.Payload != "fragile" {
		t.Fatalf("after Resume: notification %+v, %v; want one of type fragile", n, err)
	}

	for _, f := range figures {
		t.Logf("%-50s %d  %s", f.op, len(f.got), strings.Join(f.got, ", "))
	}
	for _, f := range figures {
		switch got := len(f.got); {
		case got > f.want:
			t.Errorf("%s sends %d statements, up from %d: %s.\n"+
				"Fold the new statement into one the operation sends already; if it cannot be helped, raise the figure here and in CHANGELOG.md and say why in the commit message.",
				f.op, got, f.want, strings.Join(f.got, ", "))
		case got < f.want:
			t.Errorf("%s sends %d statements, down from %d: %s.\n"+
				"Well done: lower its figure in TestStatementCounts to %d, and the figures CHANGELOG.md gives.",
				f.op, got, f.want, strings.Join(f.got, ", "), got)
		}
	}
}
