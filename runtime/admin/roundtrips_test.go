package admin_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/fsmgen/fsmgen/db"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/admin"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// TestSignalRoundTrips holds an operator's signal that wakes a run into a
// state with a handler to two round trips and one transaction: the read,
// then the operator's step, the transition and the announcement to idle
// workers, sent together; the run it returns is the one stored.
func TestSignalRoundTrips(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	pool, count := pgtest.CountedPool(t, pgtest.RoleDSN(t, dsn, db.RoleRuntime))
	st := store.New(pool)
	wake := runtime.Definition{Machine: "wake", Type: "wake", Version: 1, Initial: "IDLE",
		States: []runtime.StateSpec{
			{Name: "IDLE", Initial: true, Status: runtime.StatusRunning, Wait: true},
			{Name: "WORK", Status: runtime.StatusRunning},
			{Name: "DONE", Status: runtime.StatusSucceeded},
		},
		Events:      []runtime.EventSpec{{Name: "Go"}, {Name: "Done"}},
		Transitions: []runtime.TransitionSpec{{From: "IDLE", Event: "Go", To: "WORK"}, {From: "WORK", Event: "Done", To: "DONE"}},
	}
	if err := st.Register(ctx, wake); err != nil {
		t.Fatal(err)
	}
	res, err := st.Start(ctx, runtime.StartRequest{Type: "wake", Version: 1, IdempotencyKey: "k", Owner: runtime.Owner{TenantID: "t"}})
	if err != nil {
		t.Fatal(err)
	}
	listener, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close(ctx)
	if _, err := listener.Exec(ctx, "LISTEN "+store.NotifyChannel); err != nil {
		t.Fatal(err)
	}

	a := admin.New(st)
	// The first signal of a connection prepares its statements: the
	// figures are those of the next.
	if _, err := a.Signal(ctx, res.Run.ID, "Go", nil, admin.SignalOptions{To: "WORK"}); err != nil {
		t.Fatal(err)
	}
	res, err = st.Start(ctx, runtime.StartRequest{Type: "wake", Version: 1, IdempotencyKey: "k2", Owner: runtime.Owner{TenantID: "t"}})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for range 2 { // the signal, the second start
		if _, err := listener.WaitForNotification(wctx); err != nil {
			t.Fatal(err)
		}
	}

	count.Take()
	got, err := a.Signal(ctx, res.Run.ID, "Go", nil, admin.SignalOptions{Reason: "stuck"})
	trips, stmts := count.Trips(), count.Take()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"ReadRunForEvent", "InsertStepBefore", "AdvanceRun"}, stmts); diff != "" {
		t.Errorf("statements (-want +got):\n%s", diff)
	}
	if trips != 2 {
		t.Errorf("Signal took %d round trips, want 2", trips)
	}
	if n, err := listener.WaitForNotification(wctx); err != nil || n.Payload != "wake" {
		t.Errorf("after the signal: notification %+v, %v; want one of type wake", n, err)
	}
	stored, err := st.Get(ctx, res.Run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(stored, got); diff != "" {
		t.Errorf("Signal returned a run that is not the stored one (-stored +returned):\n%s", diff)
	}
	h, err := st.History(ctx, res.Run.ID)
	if err != nil {
		t.Fatal(err)
	}
	var log []string
	for _, s := range h {
		log = append(log, s.Name+" "+s.From+"->"+s.To+" "+string(s.Payload))
	}
	want := []string{
		"start ->IDLE ",
		`operator_signal IDLE->IDLE {"to": "WORK", "event": "Go", "reason": "stuck", "unchecked_guards": []}`,
		"Go IDLE->WORK {}",
	}
	if diff := cmp.Diff(want, log); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
}
