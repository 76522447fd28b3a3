package chain_test

import (
	"context"
	"encoding/json"
	"log"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/machines/linearchain/chain"
)

// A two-step workflow: CHARGE waits for payment.captured, then SHIP.
func Example() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	if err := chain.Migrate(ctx, pool); err != nil {
		log.Fatal(err)
	}
	e := chain.New(pool)
	err = e.Register(chain.Definition{Type: "order.pay", Version: 1, Steps: []chain.Step{
		{Type: "CHARGE", Handler: func(ctx context.Context, t chain.Task) chain.Result {
			switch {
			case t.TaskType == chain.TaskWaitingTimeout:
				return chain.Dead("not paid in time")
			case t.Event != nil:
				return chain.Completed() // woken by payment.captured
			}
			request := json.RawMessage(`{"type":"payment.requested"}`)
			return chain.Waiting("payment.captured", 15*time.Minute, request)
		}},
		{Type: "SHIP", MaxAttempts: 5, Handler: func(ctx context.Context, t chain.Task) chain.Result {
			if t.Attempts < 2 {
				return chain.Retry(time.Second, "carrier busy")
			}
			return chain.Completed()
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
		_ = e.Run(ctx, chain.RunOptions{App: "shop", Workers: 4, ClaimTimedOut: true})
	}()
	// Later, from the payment provider's webhook:
	d, err := e.Deliver(ctx, chain.Inbound{ID: "evt_123", Type: "payment.captured", InstanceID: s.InstanceID})
	if err != nil {
		log.Fatal(err)
	}
	log.Println(d.Outcome)
}
