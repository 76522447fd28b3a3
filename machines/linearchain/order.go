package linearchain

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/fsmgen/fsmgen/runtime/linearchain"
)

// OrderProcessType and OrderProcessVersion name the example workflow.
const (
	OrderProcessType    = "order.process"
	OrderProcessVersion = 1
)

// PaymentCaptured is the external event type WAIT_PAYMENT waits for.
const PaymentCaptured = "payment.captured"

// Order is the input of an order.process instance.
type Order struct {
	OrderID  string `json:"orderId"`
	SKU      string `json:"sku"`
	Quantity int    `json:"quantity"`
	// PaymentTimeout is how long WAIT_PAYMENT waits for payment.captured.
	PaymentTimeout time.Duration `json:"paymentTimeout"`
}

// OrderProcess returns the example linear workflow order.process: VALIDATE
// -> RESERVE -> WAIT_PAYMENT -> SHIP -> NOTIFY. VALIDATE fails an order
// without a SKU or with a quantity below 1 (Dead); RESERVE retries once
// (the warehouse is busy on the first attempt); WAIT_PAYMENT asks for the
// payment through the outbox and waits for payment.captured (Waiting), then
// completes when woken, or fails when its deadline passes (a
// WAITING_TIMEOUT task); SHIP and NOTIFY complete.
func OrderProcess() linearchain.Definition {
	return linearchain.Definition{Type: OrderProcessType, Version: OrderProcessVersion, Steps: []linearchain.Step{
		{Type: "VALIDATE", Handler: validate},
		{Type: "RESERVE", Handler: reserve, MaxAttempts: 3},
		{Type: "WAIT_PAYMENT", Handler: waitPayment},
		{Type: "SHIP", Handler: complete},
		{Type: "NOTIFY", Handler: complete},
	}}
}

func decodeOrder(t linearchain.Task) (Order, error) {
	var o Order
	if err := json.Unmarshal(t.Input, &o); err != nil {
		return Order{}, fmt.Errorf("instance %d: decode the order: %w", t.InstanceID, err)
	}
	return o, nil
}

func validate(_ context.Context, t linearchain.Task) linearchain.Result {
	o, err := decodeOrder(t)
	switch {
	case err != nil:
		return linearchain.Dead(err.Error())
	case o.SKU == "":
		return linearchain.Dead("invalid order: no sku")
	case o.Quantity < 1:
		return linearchain.Dead(fmt.Sprintf("invalid order: quantity %d", o.Quantity))
	}
	return linearchain.Completed()
}

func reserve(_ context.Context, t linearchain.Task) linearchain.Result {
	if t.Attempts == 0 {
		return linearchain.Retry(100*time.Millisecond, "warehouse busy")
	}
	return linearchain.Completed()
}

func waitPayment(_ context.Context, t linearchain.Task) linearchain.Result {
	o, err := decodeOrder(t)
	if err != nil {
		return linearchain.Dead(err.Error())
	}
	switch {
	case t.TaskType == linearchain.TaskWaitingTimeout:
		return linearchain.Dead("payment not captured before the deadline")
	case t.Event != nil && t.Event.Type == PaymentCaptured:
		return linearchain.Completed()
	}
	request, err := json.Marshal(map[string]any{"type": "payment.requested", "orderId": o.OrderID, "quantity": o.Quantity})
	if err != nil {
		return linearchain.Dead(err.Error())
	}
	return linearchain.Waiting(PaymentCaptured, o.PaymentTimeout, request)
}

func complete(context.Context, linearchain.Task) linearchain.Result { return linearchain.Completed() }
