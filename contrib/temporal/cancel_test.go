package temporal_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/fsmgen/fsmgen/contrib/temporal"
	"github.com/fsmgen/fsmgen/machines/compliance/fcha"
	"github.com/fsmgen/fsmgen/machines/compliance/local"
	"github.com/fsmgen/fsmgen/machines/shop"
	"github.com/fsmgen/fsmgen/machines/shop/order"
)

const alice = "7c9e6679-7425-40de-944b-e07fc1f90ae7"

// warehouse packs a parcel once it is released, or gives up when its
// context ends (its activity is cancelled).
type warehouse struct{ release chan struct{} }

func (w warehouse) Pack(ctx context.Context, _ string, _ []string) (string, error) {
	select {
	case <-w.release:
		return "parcel-1", nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

type payments struct{}

func (payments) Refund(context.Context, string, int64) (string, error) { return "refund-1", nil }

// cancelled is what the testsuite reported for one cancellation.
type cancelled struct {
	Accepted bool
	State    string // the run's state once accepted
	Type     string // the refusal's ApplicationError type
	Message  string
}

func cancelRun(t *testing.T, env *testsuite.TestWorkflowEnvironment, userID string, got *[]cancelled) {
	env.UpdateWorkflow(temporal.CancelUpdate, "", &testsuite.TestUpdateCallback{
		OnAccept: func() {},
		OnReject: func(err error) {
			var app *sdktemporal.ApplicationError
			if !errors.As(err, &app) {
				t.Errorf("rejected with %T %v, want an ApplicationError", err, err)
				return
			}
			*got = append(*got, cancelled{Type: app.Type(), Message: app.Message()})
		},
		OnComplete: func(v any, err error) {
			if err != nil {
				t.Errorf("accepted cancellation failed: %v", err)
				return
			}
			*got = append(*got, cancelled{Accepted: true, State: v.(temporal.Snapshot).State})
		},
	}, temporal.CancelRequest{UserID: userID})
}

func orderStart(t *testing.T) temporal.Start {
	t.Helper()
	raw, err := json.Marshal(shop.Input{Items: []string{"book"}, TotalCents: 1200})
	if err != nil {
		t.Fatal(err)
	}
	return temporal.Start{RunID: "order-1", Type: order.Type, IdempotencyKey: "order-1", Input: raw, TenantID: "t", UserID: alice}
}

// TestCancelUpdate: the update CancelUpdate fires the machine's cancel
// event for the run's owner only, as the PostgreSQL engine's Cancel: in
// PENDING_PAYMENT the order ends CANCELLED with CANCELLED and who
// cancelled it in its result; another user, and the owner spelled so that
// the machine's guard refuses the event, are refused as not the owner.
func TestCancelUpdate(t *testing.T) {
	t.Parallel()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	temporal.Register(env, (&shop.Workflow{Warehouse: warehouse{}, Payments: payments{}}).Driver())
	var got []cancelled
	env.RegisterDelayedCallback(func() {
		cancelRun(t, env, "someone-else", &got)
		cancelRun(t, env, "7C9E6679-7425-40DE-944B-E07FC1F90AE7", &got)
		cancelRun(t, env, alice, &got)
	}, 5*time.Second)
	env.ExecuteWorkflow(order.Type, orderStart(t))
	var res temporal.Result
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	want := []cancelled{
		{Type: "NOT_OWNER", Message: `not authorized: not the run's owner: user "someone-else" may not cancel a run of user "` + alice + `"`},
		{Type: "NOT_OWNER", Message: "not authorized: not the run's owner: shop_order: event Cancel in state PENDING_PAYMENT rejected by guards [UserOwnsRun]"},
		{Accepted: true, State: "CANCELLED"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cancellations (-want +got):\n%s", diff)
	}
	type result struct{ State, Status, ErrorCode, Error string }
	if diff := cmp.Diff(result{"CANCELLED", "cancelled", "CANCELLED", "cancelled by user " + alice},
		result{res.State, string(res.Status), res.ErrorCode, res.Error}); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
}

// TestCancelWhileHandlerRuns: cancelled while PACKING's handler runs, the
// order goes to REFUNDING, whose row the machine has on its cancel event;
// the packing activity is cancelled and its event dropped, and the refund
// ends the order REFUNDED. In IN_TRANSIT, which has no row on Cancel, and
// on a machine that names no cancel event, a cancellation is refused.
func TestCancelWhileHandlerRuns(t *testing.T) {
	t.Parallel()
	t.Run("packing", func(t *testing.T) {
		t.Parallel()
		var suite testsuite.WorkflowTestSuite
		env := suite.NewTestWorkflowEnvironment()
		release := make(chan struct{})
		defer close(release)
		temporal.Register(env, (&shop.Workflow{Warehouse: warehouse{release: release}, Payments: payments{}}).Driver())
		var got []cancelled
		env.RegisterDelayedCallback(func() { signal(t, env, order.Pay{PaymentRef: "pay-1"}) }, time.Second)
		env.RegisterDelayedCallback(func() { cancelRun(t, env, alice, &got) }, 2*time.Second)
		env.ExecuteWorkflow(order.Type, orderStart(t))
		var res temporal.Result
		if err := env.GetWorkflowResult(&res); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]cancelled{{Accepted: true, State: "REFUNDING"}}, got); diff != "" {
			t.Errorf("cancellations (-want +got):\n%s", diff)
		}
		wantMoves := []move{{"PENDING_PAYMENT", "PACKING", "Pay"}, {"PACKING", "REFUNDING", "Cancel"}, {"REFUNDING", "REFUNDED", "Refunded"}}
		if diff := cmp.Diff(wantMoves, moves(res.History)); diff != "" || res.Outcome != "refunded" {
			t.Errorf("outcome %q; transitions (-want +got):\n%s", res.Outcome, diff)
		}
	})
	t.Run("in transit", func(t *testing.T) {
		t.Parallel()
		var suite testsuite.WorkflowTestSuite
		env := suite.NewTestWorkflowEnvironment()
		release := make(chan struct{})
		close(release)
		temporal.Register(env, (&shop.Workflow{Warehouse: warehouse{release: release}, Payments: payments{}}).Driver())
		var got []cancelled
		env.RegisterDelayedCallback(func() { signal(t, env, order.Pay{PaymentRef: "pay-1"}) }, time.Second)
		env.RegisterDelayedCallback(func() {
			cancelRun(t, env, alice, &got)
			signal(t, env, order.Delivered{})
		}, time.Hour)
		env.RegisterDelayedCallback(func() { signal(t, env, order.Returned{}) }, 2*time.Hour)
		env.ExecuteWorkflow(order.Type, orderStart(t))
		if err := env.GetWorkflowError(); err != nil {
			t.Fatal(err)
		}
		want := []cancelled{{Type: "NOT_CANCELLABLE", Message: "cannot be cancelled in its state: state IN_TRANSIT of shop_order v1 has no transition on the cancel event Cancel"}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("cancellations (-want +got):\n%s", diff)
		}
	})
	t.Run("no cancel event", func(t *testing.T) {
		t.Parallel()
		var suite testsuite.WorkflowTestSuite
		env := suite.NewTestWorkflowEnvironment()
		temporal.Register(env, driverFor(&local.Screening{}).Driver())
		var got []cancelled
		env.RegisterDelayedCallback(func() {
			cancelRun(t, env, "", &got)
			signal(t, env, fcha.BackgroundCheckAuthorizationSigned{SignedBy: "user_456"})
		}, time.Hour)
		env.ExecuteWorkflow(fcha.Type, start(t, "clean"))
		if err := env.GetWorkflowError(); err != nil {
			t.Fatal(err)
		}
		want := []cancelled{{Type: "NO_CANCEL_EVENT", Message: "the machine has no cancel event: nyc-application-compliance v1 declares none"}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("cancellations (-want +got):\n%s", diff)
		}
	})
}
