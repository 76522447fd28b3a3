package doors_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"example.com/doorsvc/doors/door"
	"github.com/fsmgen/fsmgen/db"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/store"
)

func TestDoorOnTheStore(t *testing.T) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DOORSVC_DATABASE_URL"))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := db.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	st := store.New(pool)
	if err := st.Register(ctx, door.Definition()); err != nil {
		t.Fatal(err)
	}
	res, err := st.Start(ctx, runtime.StartRequest{Type: door.Type, Version: door.Version, IdempotencyKey: "front-door", Owner: runtime.Owner{TenantID: "acme"}})
	if err != nil {
		t.Fatal(err)
	}
	run, rec, err := st.Load(ctx, res.Run.ID, door.Definition())
	if err != nil {
		t.Fatal(err)
	}
	state, err := door.ParseState(run.State)
	if err != nil {
		t.Fatal(err)
	}
	m := door.New(door.WithState(state), door.WithRecorder(rec))
	for _, e := range []door.Event{door.Open{By: "ann"}, door.Close{}, door.Lock{}, door.Unlock{}, door.Open{By: "bob"}} {
		if err := m.Fire(ctx, e); err != nil {
			t.Fatalf("%s: %v", e.EventName(), err)
		}
	}
	if err := m.Fire(ctx, door.Lock{}); !errors.Is(err, runtime.ErrIllegalTransition) {
		t.Fatalf("Lock while OPEN: %v, want ErrIllegalTransition", err)
	}
	got, err := st.Get(ctx, res.Run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != "OPEN" || got.Status != runtime.StatusRunning || m.State() != door.StateOpen {
		t.Fatalf("run in %s (%s), machine in %s; want OPEN, running", got.State, got.Status, m.State())
	}
	h, err := st.History(ctx, res.Run.ID)
	if err != nil {
		t.Fatal(err)
	}
	var events []string
	for _, s := range h {
		events = append(events, s.Name)
	}
	if want := []string{"start", "Open", "Close", "Lock", "Unlock", "Open"}; !slices.Equal(events, want) {
		t.Fatalf("history %v, want %v", events, want)
	}
}
