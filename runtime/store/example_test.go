package store_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	subs "github.com/fsmgen/fsmgen/machines/subscription/subscription"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// A generated machine persisted by the store, without the engine: the
// store starts a run, Load rebuilds the machine in the run's state with a
// recorder, and each transition the machine takes is one statement that
// the database checks against the registered definition and appends to
// the run's log.
func Example() {
	ctx := context.Background()
	pool, err := pgtest.OpenPool(ctx) // in a service: pgxpool.New, then db.Migrate
	if err != nil {
		log.Fatal(err)
	}
	st := store.New(pool)
	if err := st.Register(ctx, subs.Definition()); err != nil {
		log.Fatal(err)
	}
	started, err := st.Start(ctx, runtime.StartRequest{
		Type: subs.Type, Version: subs.Version, IdempotencyKey: "customer-42",
		Owner: runtime.Owner{TenantID: "acme"},
	})
	if err != nil {
		log.Fatal(err)
	}

	run, rec, err := st.Load(ctx, started.Run.ID, subs.Definition())
	if err != nil {
		log.Fatal(err)
	}
	state, err := subs.ParseState(run.State)
	if err != nil {
		log.Fatal(err)
	}
	m := subs.New(subs.WithState(state), subs.WithRecorder(rec))
	if err := m.Pause(ctx, subs.Pause{Reason: "holiday"}); err != nil {
		log.Fatal(err)
	}
	// An event the state does not accept is refused before it is recorded.
	err = m.Pause(ctx, subs.Pause{Reason: "again"})
	fmt.Println(errors.Is(err, runtime.ErrIllegalTransition))

	steps, err := st.History(ctx, started.Run.ID)
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range steps {
		fmt.Printf("%s %s -> %s\n", s.Name, s.From, s.To)
	}
	// Output:
	// true
	// start  -> ACTIVE
	// Pause ACTIVE -> PAUSED
}

// List selects runs by the runtime's filter (type, states, status,
// tenant, key) and pages through them.
func ExampleStore_List() {
	ctx := context.Background()
	pool, err := pgtest.OpenPool(ctx)
	if err != nil {
		log.Fatal(err)
	}
	st := store.New(pool)
	if err := st.Register(ctx, subs.Definition()); err != nil {
		log.Fatal(err)
	}
	for _, key := range []string{"customer-1", "customer-2", "customer-3"} {
		if _, err := st.Start(ctx, runtime.StartRequest{Type: subs.Type, Version: subs.Version, IdempotencyKey: key, Owner: runtime.Owner{TenantID: "acme"}}); err != nil {
			log.Fatal(err)
		}
	}
	page, err := st.List(ctx, store.Filter{Filter: runtime.Filter{Type: subs.Type, States: []string{"ACTIVE"}, Limit: 2}})
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range page {
		fmt.Println(r.IdempotencyKey, r.State)
	}
	next, err := st.List(ctx, store.Filter{Filter: runtime.Filter{Type: subs.Type, Limit: 2}, After: page[len(page)-1].ID})
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range next {
		fmt.Println(r.IdempotencyKey, r.State)
	}
	// Output:
	// customer-1 ACTIVE
	// customer-2 ACTIVE
	// customer-3 ACTIVE
}
