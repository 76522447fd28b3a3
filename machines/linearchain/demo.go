package linearchain

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/runtime/linearchain"
)

// demoOrder is one order of the demo and how it should end.
type demoOrder struct {
	title  string
	order  Order
	pay    bool // deliver payment.captured when it waits
	expect string
}

// Demo runs order.process on pool and prints what happens to w: it
// migrates the chain's tables, starts three orders and runs two workers
// until every order has ended:
//
//  1. a good order: validated, reserved after one retry (the warehouse is
//     busy), waiting for its payment, woken by payment.captured (delivered
//     twice: the second delivery is a duplicate), shipped and notified:
//     COMPLETED;
//  2. an order for no items: VALIDATE returns Dead: FAILED;
//  3. an order whose payment never comes: WAIT_PAYMENT's deadline passes,
//     the step is claimed as WAITING_TIMEOUT and gives up: FAILED.
//
// Then it prints each instance with its steps and its history. The
// instances stay in the database: fsmctl chains list -type order.process.
func Demo(ctx context.Context, pool *pgxpool.Pool, w io.Writer) error {
	if err := linearchain.Migrate(ctx, pool); err != nil {
		return err
	}
	e := linearchain.New(pool)
	if err := e.Register(OrderProcess()); err != nil {
		return err
	}
	tag := fmt.Sprintf("%06d", rand.IntN(1_000_000))
	orders := []demoOrder{
		{"a good order, paid", Order{OrderID: "A-" + tag, SKU: "BOOK-42", Quantity: 2, PaymentTimeout: time.Minute}, true, "COMPLETED"},
		{"an order for no items", Order{OrderID: "B-" + tag, SKU: "BOOK-42", Quantity: 0, PaymentTimeout: time.Minute}, false, "FAILED"},
		{"an order never paid", Order{OrderID: "C-" + tag, SKU: "PEN-7", Quantity: 1, PaymentTimeout: 500 * time.Millisecond}, false, "FAILED"},
	}
	var steps []string
	for _, s := range OrderProcess().Steps {
		steps = append(steps, s.Type)
	}
	fmt.Fprintf(w, "\n== Linear chain: %s v%d, %s\n", OrderProcessType, OrderProcessVersion, strings.Join(steps, " -> "))
	ids := make([]int64, len(orders))
	byID := map[int64]int{}
	for i, o := range orders {
		s, err := e.Start(ctx, OrderProcessType, OrderProcessVersion, o.order.OrderID, o.order)
		if err != nil {
			return err
		}
		ids[i], byID[s.InstanceID] = s.InstanceID, i
		fmt.Fprintf(w, "%d. %s: started instance %d, key %s (%d x %s, payment within %s)\n",
			i+1, o.title, s.InstanceID, o.order.OrderID, o.order.Quantity, orZero(o.order.SKU), o.order.PaymentTimeout)
	}

	applied := make(chan linearchain.Applied, 64)
	errs := make(chan error, 16)
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = e.Run(runCtx, linearchain.RunOptions{App: "demo", Workers: 2, Batch: 4, Lease: 30 * time.Second,
			ClaimTimedOut: true, Poll: 50 * time.Millisecond,
			OnApplied: func(a linearchain.Applied) { applied <- a },
			OnError: func(err error) {
				select {
				case errs <- err:
				default:
				}
			}})
	}()
	defer func() { stop(); <-done }()

	fmt.Fprintln(w, "\nTwo workers run the steps (worker: instance step TYPE task -> result -> step status, instance status):")
	ended := 0
	timeout := time.NewTimer(time.Minute)
	defer timeout.Stop()
	for ended < len(orders) {
		select {
		case a := <-applied:
			i := byID[a.Task.InstanceID]
			fmt.Fprintf(w, "  %s: %d %d %s %s -> %s -> %s, %s\n", shortWorker(a.Task.WorkerID), a.Task.InstanceID,
				a.Task.StepSeq, a.Task.StepType, a.Task.TaskType, describe(a.Result), a.Step, a.Instance)
			if a.Instance != "RUNNING" {
				ended++
			}
			if a.Step.String() == "WAITING" && orders[i].pay {
				ev := linearchain.Inbound{ID: "pay-" + orders[i].order.OrderID, Type: PaymentCaptured,
					WorkflowType: OrderProcessType, InstanceKey: orders[i].order.OrderID,
					Payload: json.RawMessage(`{"amount":"39.80","currency":"EUR"}`)}
				for range 2 {
					d, err := e.Deliver(ctx, ev)
					if err != nil {
						return err
					}
					extra := ""
					if d.Outcome == linearchain.Duplicate {
						extra = " (first delivery: " + string(d.First) + ")"
					}
					fmt.Fprintf(w, "  payments: %s %s for %s -> %s%s\n", ev.Type, ev.ID, ev.InstanceKey, d.Outcome, extra)
				}
			}
		case err := <-errs:
			return fmt.Errorf("demo worker: %w", err)
		case <-timeout.C:
			return fmt.Errorf("demo: %d of %d orders still running after a minute", len(orders)-ended, len(orders))
		case <-ctx.Done():
			return ctx.Err()
		}
	}

	var unexpected []string
	for i, id := range ids {
		in, err := e.Get(ctx, id)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "\n-- %d. %s: instance %d %s, key %s, current step %d %s\n", i+1, orders[i].title, in.ID, in.Status,
			in.InstanceKey, in.CurrentStepSeq, in.CurrentStepType)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SEQ\tSTEP\tSTATUS\tATTEMPTS\tLAST ERROR")
		for _, s := range in.Steps {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%d/%d\t%s\n", s.Seq, s.Type, s.Status, s.Attempts, s.MaxAttempts, deref(s.LastError))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		hist, err := linearchain.History(ctx, pool, id)
		if err != nil {
			return err
		}
		fmt.Fprintln(w, "history:")
		for _, c := range hist {
			who := "instance"
			if c.Step != nil {
				who = fmt.Sprintf("step %d", *c.Step)
			}
			from := c.From
			if from == "" {
				from = "(inserted)"
			}
			fmt.Fprintf(w, "  %-9s %-10s -> %-9s %-13s %s\n", who, from, c.To, orDash(c.Event), orDash(shortWorker(c.Worker)))
		}
		if in.Status != orders[i].expect {
			unexpected = append(unexpected, fmt.Sprintf("order %d ended %s, expected %s", i+1, in.Status, orders[i].expect))
		}
	}
	if len(unexpected) > 0 {
		return fmt.Errorf("demo: %s", strings.Join(unexpected, "; "))
	}
	return nil
}

func describe(r linearchain.Result) string {
	b, _ := json.Marshal(r.Event())
	s := string(b)
	if s == "{}" {
		return r.Event().EventName()
	}
	return r.Event().EventName() + " " + s
}

// shortWorker drops the host and pid of a worker id: app:...:suffix.
func shortWorker(id string) string {
	parts := strings.Split(id, ":")
	if len(parts) != 4 {
		return id
	}
	return parts[0] + ":" + parts[3]
}

func deref(s *string) string {
	if s == nil {
		return "-"
	}
	return *s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func orZero(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
