package shop

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/fsmgen/fsmgen/machines/shop/order"
	"github.com/fsmgen/fsmgen/runtime"
)

// Input is what an order is started with.
type Input struct {
	Items      []string `json:"items"`
	TotalCents int64    `json:"totalCents"`
}

// Warehouse packs parcels.
type Warehouse interface {
	// Pack packs the items of an order and returns the parcel's id.
	Pack(ctx context.Context, orderID string, items []string) (string, error)
}

// Payments refunds payments.
type Payments interface {
	// Refund pays cents back for the order and returns the refund's
	// reference; it is called again with the same order id after a failure.
	Refund(ctx context.Context, orderID string, cents int64) (string, error)
}

// Workflow is the Order machine's work: the handlers of its driven states
// and its guards.
type Workflow struct {
	Warehouse Warehouse
	Payments  Payments
}

// Driver returns the runtime.Driver to register with an engine.
func (w *Workflow) Driver() runtime.Driver {
	return order.NewDriver(handlers{w}, Guards)
}

type handlers struct{ w *Workflow }

func input(run *runtime.Run) (Input, error) {
	var in Input
	if err := json.Unmarshal(run.Input, &in); err != nil {
		return in, runtime.WithCode("BAD_INPUT", fmt.Errorf("order %s: input: %w", run.ID, err))
	}
	return in, nil
}

// Packing packs the parcel.
func (h handlers) Packing(ctx context.Context, run *runtime.Run) (order.PackingEvent, error) {
	in, err := input(run)
	if err != nil {
		return nil, err
	}
	parcel, err := h.w.Warehouse.Pack(ctx, run.ID, in.Items)
	if err != nil {
		return nil, err
	}
	return order.Packed{ParcelID: parcel}, nil
}

// Refunding refunds the order's total.
func (h handlers) Refunding(ctx context.Context, run *runtime.Run) (order.RefundingEvent, error) {
	in, err := input(run)
	if err != nil {
		return nil, err
	}
	ref, err := h.w.Payments.Refund(ctx, run.ID, in.TotalCents)
	if err != nil {
		return nil, err
	}
	return order.Refunded{RefundRef: ref}, nil
}

// guards are the guards of one run.
type guards struct{ run *runtime.Run }

// UserOwnsRun admits a cancellation by the order's owner only.
func (g guards) UserOwnsRun(_ context.Context, e order.Cancel) bool {
	return g.run.UserID != "" && e.UserID == g.run.UserID
}

// Guards returns the guards of run, for a machine rebuilt outside the
// engine (store.Load).
func Guards(run *runtime.Run) order.Guards { return guards{run} }
