package engine_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
)

// shippingDef ships an order; an invalid address is not retried and leads
// to a refund, a state that is not terminal.
func shippingDef() runtime.Definition {
	shipping := running("SHIPPING")
	shipping.Retry = &runtime.RetryPolicy{MaxAttempts: 5, InitialInterval: 1, Coefficient: 1, NonRetryable: []string{"ADDRESS_INVALID"}}
	shipping.OnExhausted = "ShippingFailed"
	return def("shipping",
		[]runtime.StateSpec{running("PAID"), shipping, running("REFUNDING"),
			final("SHIPPED", runtime.StatusSucceeded), final("REFUNDED", runtime.StatusFailed)},
		[]string{"PAID", "Ship", "SHIPPING"},
		[]string{"SHIPPING", "Shipped", "SHIPPED"},
		[]string{"SHIPPING", "ShippingFailed", "REFUNDING"},
		[]string{"REFUNDING", "Refunded", "REFUNDED"},
	)
}

// TestFailureLeavesTrace: a failure that is not retried still leaves its
// code and message in the log, before the event that its state fires.
func TestFailureLeavesTrace(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	d := &driver{def: shippingDef(), handlers: map[string]handler{
		"PAID": constant(event("Ship")),
		"SHIPPING": func(context.Context, *runtime.Run) (runtime.Event, error) {
			return nil, runtime.WithCode("ADDRESS_INVALID", errors.New("the address has no street"))
		},
		"REFUNDING": constant(event("Refunded")),
	}}
	e := v.engine(t, engine.Config{}, d)
	run := v.start(t, e, "shipping", "k")
	got, err := e.Drive(context.Background(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != "REFUNDED" {
		t.Fatalf("run in %s", got.State)
	}
	want := []string{"created start ->PAID", "transition Ship PAID->SHIPPING", "step attempt_failed SHIPPING->SHIPPING",
		"transition ShippingFailed SHIPPING->REFUNDING", "transition Refunded REFUNDING->REFUNDED"}
	if diff := cmp.Diff(want, v.moves(t, run.ID)); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
	wantStep := []map[string]any{{"step_attempt": 1.0, "error_code": "ADDRESS_INVALID", "error": "ADDRESS_INVALID: the address has no street", "retry": false}}
	if diff := cmp.Diff(wantStep, v.steps(t, run.ID, "attempt_failed")); diff != "" {
		t.Errorf("attempt_failed rows (-want +got):\n%s", diff)
	}
}
