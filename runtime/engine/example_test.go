package engine_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"

	subs "github.com/fsmgen/fsmgen/machines/subscription/subscription"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// charging is the handler of the Subscription machine's driven state,
// CHARGING: here every charge succeeds.
type charging struct{}

func (charging) Charging(ctx context.Context, run *runtime.Run) (subs.ChargingEvent, error) {
	return subs.PaymentSucceeded{InvoiceID: "inv-1", AmountCents: 1200}, nil
}

// A service registers its machines' drivers with an engine on the
// runtime's tables, starts runs idempotently through a machine's typed
// handle, signals them, and lets the engine drive them: inline with Drive,
// as here, or on its workers with Work.
func Example() {
	ctx := context.Background()
	pool, err := pgtest.OpenPool(ctx) // in a service: pgxpool.New, then db.Migrate
	if err != nil {
		log.Fatal(err)
	}
	e, err := engine.New(store.New(pool), engine.Config{
		WorkerID: engine.DefaultWorkerID("billing"),
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := e.Register(ctx, subs.NewDriver(charging{})); err != nil {
		log.Fatal(err)
	}

	subscriptions := subs.Runs[map[string]string](e)
	owner := runtime.Owner{TenantID: "acme", UserID: "8a5f2c1e-0000-4000-8000-000000000001"}
	started, err := subscriptions.Start(ctx, "customer-42", map[string]string{"plan": "pro"}, owner)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(started.Outcome, started.State)

	run, err := subscriptions.Pause(ctx, started.ID, subs.Pause{Reason: "holiday"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(run.State)
	run, err = subscriptions.Resume(ctx, started.ID, subs.Resume{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(run.State)

	// Drive calls the handler of CHARGING and stops where the run waits:
	// in ACTIVE, for the next renewal's timer.
	driven, err := e.Drive(ctx, started.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(driven.State, driven.Status)
	// Output:
	// created ACTIVE
	// PAUSED
	// CHARGING
	// ACTIVE running
}

// Start is idempotent by the run's type and key: a second start of a key
// whose run is under way returns that run.
func ExampleEngine_Start() {
	ctx := context.Background()
	pool, err := pgtest.OpenPool(ctx)
	if err != nil {
		log.Fatal(err)
	}
	e, err := engine.New(store.New(pool), engine.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		log.Fatal(err)
	}
	if err := e.Register(ctx, subs.NewDriver(charging{})); err != nil {
		log.Fatal(err)
	}
	req := runtime.StartRequest{Type: subs.Type, Version: subs.Version, IdempotencyKey: "customer-7", Owner: runtime.Owner{TenantID: "acme"}}
	first, err := e.Start(ctx, req)
	if err != nil {
		log.Fatal(err)
	}
	again, err := e.Start(ctx, req)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(first.Outcome, first.Run.State)
	fmt.Println(again.Outcome, again.Run.ID == first.Run.ID)
	// Output:
	// created ACTIVE
	// running true
}
