package linearchain_test

import (
	"context"
	"encoding/json"
	"log"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/runtime/linearchain"
)

// A two-step workflow: CHARGE waits for payment.captured, then SHIP.
func Example() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	if err := linearchain.Migrate(ctx, pool); err != nil {
		log.Fatal(err)
	}
	e := linearchain.New(pool)
	err = e.Register(linearchain.Definition{Type: "order.pay", Version: 1, Steps: []linearchain.Step{
		{Type: "CHARGE", Handler: func(ctx context.Context, t linearchain.Task) linearchain.Result {
			switch {
			case t.TaskType == linearchain.TaskWaitingTimeout:
				return linearchain.Dead("not paid in time")
			case t.Event != nil:
				return linearchain.Completed() // woken by payment.captured
			}
			request := json.RawMessage(`{"type":"payment.requested"}`)
			return linearchain.Waiting("payment.captured", 15*time.Minute, request)
		}},
		{Type: "SHIP", MaxAttempts: 5, Handler: func(ctx context.Context, t linearchain.Task) linearchain.Result {
			if t.Attempts < 2 {
				return linearchain.Retry(time.Second, "carrier busy")
			}
			return linearchain.Completed()
		}},
	}})
	if err != nil {
		log.Fatal(err)
	}
	s, err := e.Start(ctx, "order.pay", 1, "order-42", map[string]int{"cents": 1999})
	if err != nil {
		log.Fatal(err)
	}
	go func() {
		_ = e.Run(ctx, linearchain.RunOptions{App: "shop", Workers: 4, ClaimTimedOut: true})
	}()
	// Later, from the payment provider's webhook:
	d, err := e.Deliver(ctx, linearchain.Inbound{ID: "evt_123", Type: "payment.captured", InstanceID: s.InstanceID})
	if err != nil {
		log.Fatal(err)
	}
	log.Println(d.Outcome)
}
