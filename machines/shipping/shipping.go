package shipping

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/fsmgen/fsmgen/machines/shipping/shipment"
	"github.com/fsmgen/fsmgen/machines/shipping/shipmentv1"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
)

// Order is the input of a shipment run.
type Order struct {
	Parcels int `json:"parcels"`
	// Grams is what the scale reads, under version 2.
	Grams int `json:"grams"`
	// PackFailures is how many tries of packing fail before one succeeds.
	PackFailures int `json:"packFailures,omitempty"`
	// Hold sends the parcel to customs once, under version 1.
	Hold bool `json:"hold,omitempty"`
}

// ErrPacking is the error of a packing try that fails.
var ErrPacking = errors.New("packing station busy")

func order(run *runtime.Run) (Order, error) {
	var o Order
	if err := json.Unmarshal(run.Input, &o); err != nil {
		return o, runtime.WithCode("BAD_INPUT", fmt.Errorf("order: %w", err))
	}
	return o, nil
}

// Carrier is the carrier every parcel is handed to.
const Carrier = "dhl"

// v1 handles the states of version 1.
type v1 struct{}

func (v1) Created(context.Context, *runtime.Run) (shipmentv1.CreatedEvent, error) {
	return shipmentv1.Start{}, nil
}

func (v1) Packing(_ context.Context, run *runtime.Run) (shipmentv1.PackingEvent, error) {
	o, err := order(run)
	if err != nil {
		return nil, err
	}
	if run.StepAttempt <= o.PackFailures {
		return nil, ErrPacking
	}
	return shipmentv1.Packed{Parcels: o.Parcels}, nil
}

func (v1) Labeling(_ context.Context, run *runtime.Run) (shipmentv1.LabelingEvent, error) {
	o, err := order(run)
	if err != nil {
		return nil, err
	}
	if _, released := runtime.Last[shipmentv1.Released](run); o.Hold && !released {
		return shipmentv1.Held{}, nil
	}
	return shipmentv1.Labeled{Carrier: Carrier}, nil
}

// v2 handles the states of version 2.
type v2 struct{}

func (v2) Created(context.Context, *runtime.Run) (shipment.CreatedEvent, error) {
	return shipment.Start{}, nil
}

func (v2) Packing(_ context.Context, run *runtime.Run) (shipment.PackingEvent, error) {
	o, err := order(run)
	if err != nil {
		return nil, err
	}
	if run.StepAttempt <= o.PackFailures {
		return nil, ErrPacking
	}
	return shipment.Packed{Parcels: o.Parcels, Grams: o.Grams}, nil
}

// Weighing weighs what packing reported; a run packed under version 1
// carries a Packed event without grams, which the upgrade's default
// fills in.
func (v2) Weighing(_ context.Context, run *runtime.Run) (shipment.WeighingEvent, error) {
	p, ok := runtime.Last[shipment.Packed](run)
	if !ok {
		return nil, runtime.WithCode("NOT_PACKED", errors.New("no Packed event in this attempt"))
	}
	return shipment.Weighed{Grams: p.Grams}, nil
}

func (v2) Labeling(context.Context, *runtime.Run) (shipment.LabelingEvent, error) {
	return shipment.Labeled{Carrier: Carrier}, nil
}

// owner admits a cancellation by the run's owner.
type owner struct{ run *runtime.Run }

func (g owner) UserOwnsRun(_ context.Context, e shipmentv1.Cancel) bool {
	return strings.EqualFold(e.UserID, g.run.UserID)
}

type ownerV2 struct{ run *runtime.Run }

func (g ownerV2) UserOwnsRun(_ context.Context, e shipment.Cancel) bool {
	return strings.EqualFold(e.UserID, g.run.UserID)
}

// DriverV1 and DriverV2 are the engine's drivers of the two versions.
func DriverV1() runtime.Driver {
	return shipmentv1.NewDriver(v1{}, func(run *runtime.Run) shipmentv1.Guards { return owner{run} })
}

// DriverV2 is the driver of version 2; registering it registers its
// upgrade from version 1.
func DriverV2() runtime.Driver {
	return shipment.NewDriver(v2{}, func(run *runtime.Run) shipment.Guards { return ownerV2{run} })
}

// Register registers both versions with eng: runs of version 1 go on
// being driven on it, new runs start on version 2.
func Register(ctx context.Context, eng *engine.Engine) error {
	if err := eng.Register(ctx, DriverV1()); err != nil {
		return err
	}
	return eng.Register(ctx, DriverV2())
}
