package subscription

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	subs "github.com/fsmgen/fsmgen/machines/subscription/subscription"
	"github.com/fsmgen/fsmgen/runtime"
)

// Plan is the input a subscription's run is started with: whom to charge,
// and how much each renewal costs.
type Plan struct {
	Customer    string `json:"customer"`
	AmountCents int64  `json:"amountCents"`
}

// Charger charges customers' cards: the payment provider.
type Charger interface {
	// Charge charges amountCents to the customer's card and returns the
	// invoice's id. key identifies the charge: a second call with the same
	// key must not charge again. A refused card gives an error matching
	// ErrCardDeclined.
	Charge(ctx context.Context, key, customer string, amountCents int64) (invoiceID string, err error)
}

// ErrCardDeclined is the error of a charge the customer's card refused; it
// is not retried, and the subscription becomes PAST_DUE.
var ErrCardDeclined = errors.New("card declined")

// CodeCardDeclined is the error code of a declined card, which the machine
// declares non-retryable.
const CodeCardDeclined = "CARD_DECLINED"

// Billing does the work of the Subscription machine's one driven state,
// CHARGING: it charges the renewal. Every other state waits for an event
// (CardUpdated, Pause, Resume) or a timer (RenewalDue, GraceExpired).
type Billing struct {
	Charger Charger
}

var _ subs.Handlers = Billing{}

// NewDriver returns the driver to register with the engine.
func NewDriver(charger Charger) runtime.Driver {
	return subs.NewDriver(Billing{Charger: charger})
}

// Charging charges the renewal. The charge's key is the run's id and the
// number of events the run has recorded, which is the same for every try of
// one renewal and different for the next one. A declined card gives
// PaymentFailed at once (the code is non-retryable); any other error is
// retried by the state's policy and gives PaymentFailed when the tries are
// used up.
func (b Billing) Charging(ctx context.Context, run *runtime.Run) (subs.ChargingEvent, error) {
	var p Plan
	if err := json.Unmarshal(run.Input, &p); err != nil {
		return nil, fmt.Errorf("subscription: run %s: input: %w", run.ID, err)
	}
	key := fmt.Sprintf("%s/%d", run.ID, len(run.Events))
	invoice, err := b.Charger.Charge(ctx, key, p.Customer, p.AmountCents)
	switch {
	case errors.Is(err, ErrCardDeclined):
		return nil, runtime.WithCode(CodeCardDeclined, fmt.Errorf("subscription: charge %s: %w", key, err))
	case err != nil:
		return nil, fmt.Errorf("subscription: charge %s: %w", key, err)
	}
	return subs.PaymentSucceeded{InvoiceID: invoice, AmountCents: p.AmountCents}, nil
}
