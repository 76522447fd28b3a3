package store_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/fsmtest"
	"github.com/fsmgen/fsmgen/runtime/internal/enginestore"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// TestBacklog: due runs count until a live lease holds them, and again
// once it has expired; a parked run counts as parked, not due; pending
// outbox messages count until published; lags are the ages of the oldest
// by the store's clock (a due run's, since it entered its state); types
// are apart, and one with nothing waiting has no row.
func TestBacklog(t *testing.T) {
	t.Parallel()
	c := fsmtest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	e := newEnv(t, store.WithClock(c.Now))
	other := orderDef(1)
	other.Type = "other"
	idle := orderDef(1)
	idle.Type = "idle"
	if err := e.st.Register(e.ctx, other); err != nil {
		t.Fatal(err)
	}
	if err := e.st.Register(e.ctx, idle); err != nil {
		t.Fatal(err)
	}
	backlog := func() []store.Backlog {
		t.Helper()
		b, err := e.st.Backlog(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if diff := cmp.Diff([]store.Backlog{}, backlog()); diff != "" {
		t.Errorf("empty database (-want +got):\n%s", diff)
	}

	es := enginestore.New(e.st)
	claim := func(id string) enginestore.Claim {
		t.Helper()
		run := e.get(t, id)
		cl, err := es.Claim(e.ctx, enginestore.ClaimParams{Owner: "w", Kinds: []enginestore.Kind{{Type: run.Type, Version: 1}},
			Limit: 1, TTL: time.Minute, RunID: id})
		if err != nil || len(cl) != 1 {
			t.Fatalf("claim %s: %v, %d claims", id, err, len(cl))
		}
		return cl[0]
	}

	first := e.start(t, "first").Run
	if _, err := e.st.Emit(e.ctx, first.ID, "orders", map[string]any{"n": 1}); err != nil {
		t.Fatal(err)
	}
	c.Advance(10 * time.Second)
	parked := e.start(t, "parked").Run
	leased := e.start(t, "leased").Run
	res, err := e.st.Start(e.ctx, runtime.StartRequest{Type: "other", Version: 1, IdempotencyKey: "o", Owner: runtime.Owner{TenantID: "t1"}})
	if err != nil {
		t.Fatal(err)
	}
	done := e.start(t, "done").Run
	e.record(t, e.record(t, done, "INITIATED", "Begin", "WORKING"), "WORKING", "Finish", "SUCCEEDED")
	p := claim(parked.ID)
	if err := es.Park(e.ctx, p.Lease, p.Run.RowVersion, "BROKEN", "it broke"); err != nil {
		t.Fatal(err)
	}
	claim(leased.ID)
	published, err := e.st.Emit(e.ctx, res.Run.ID, "others", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.Emit(e.ctx, leased.ID, "orders", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(e.ctx, `UPDATE workflow_outbox SET published_at = now() WHERE id = $1`, published.ID); err != nil {
		t.Fatal(err)
	}
	c.Advance(5 * time.Second)

	want := []store.Backlog{
		{Type: "order", Due: 1, DueLag: 15 * time.Second, Parked: 1, Outbox: 2, OutboxLag: 15 * time.Second},
		{Type: "other", Due: 1, DueLag: 5 * time.Second},
	}
	if diff := cmp.Diff(want, backlog()); diff != "" {
		t.Errorf("backlog (-want +got):\n%s", diff)
	}

	// The lease of the claimed run expires: it is due again, waiting for a
	// worker since it was first due.
	c.Advance(time.Minute)
	want = []store.Backlog{
		{Type: "order", Due: 2, DueLag: 75 * time.Second, Parked: 1, Outbox: 2, OutboxLag: 75 * time.Second},
		{Type: "other", Due: 1, DueLag: 65 * time.Second},
	}
	if diff := cmp.Diff(want, backlog()); diff != "" {
		t.Errorf("backlog after the lease expired (-want +got):\n%s", diff)
	}

	// The first run moves on to a state with a handler: it stays due from
	// its creation, and waits in its new state since the move.
	c.Advance(5 * time.Second)
	e.record(t, e.get(t, first.ID), "INITIATED", "Begin", "WORKING")
	if got := e.get(t, first.ID); !got.NextRunAt.Equal(first.NextRunAt) {
		t.Errorf("due at %v after the move, want %v as when created", got.NextRunAt, first.NextRunAt)
	}
	want = []store.Backlog{
		{Type: "order", Due: 2, DueLag: 70 * time.Second, Parked: 1, Outbox: 2, OutboxLag: 80 * time.Second},
		{Type: "other", Due: 1, DueLag: 70 * time.Second},
	}
	if diff := cmp.Diff(want, backlog()); diff != "" {
		t.Errorf("backlog after a move (-want +got):\n%s", diff)
	}
}
