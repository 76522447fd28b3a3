package temporal_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/fsmgen/fsmgen/contrib/temporal"
	"github.com/fsmgen/fsmgen/machines/compliance"
	"github.com/fsmgen/fsmgen/machines/compliance/fcha"
	"github.com/fsmgen/fsmgen/machines/compliance/local"
	"github.com/fsmgen/fsmgen/runtime"
)

// slowPrequalifier takes longer than temporal.HeartbeatTimeout, counting
// its calls.
type slowPrequalifier struct {
	calls atomic.Int32
	local.Prequalifier
}

func (p *slowPrequalifier) Prequalify(ctx context.Context, app compliance.Application) (compliance.Prequalification, error) {
	p.calls.Add(1)
	select {
	case <-ctx.Done():
		return compliance.Prequalification{}, ctx.Err()
	case <-time.After(temporal.HeartbeatTimeout + 3*temporal.HeartbeatInterval):
	}
	return p.Prequalifier.Prequalify(ctx, app)
}

// TestHandlerLongerThanTheHeartbeatTimeout: a handler that runs longer
// than HeartbeatTimeout is not taken for lost while its worker lives (the
// activity heartbeats for it): it is called once, and its event moves the
// run. worker-killed (the conformance suite) shows the other side: a
// handler whose worker died is tried again after HeartbeatTimeout.
func TestHandlerLongerThanTheHeartbeatTimeout(t *testing.T) {
	t.Parallel()
	ad := testAdapters()
	slow := &slowPrequalifier{}
	ad.Prequalifier = slow
	ctx, f := newFixture(t, ad)
	runs := fcha.Runs[compliance.Application](f.runner)
	input := compliance.Application{ApplicationID: "app_slow", ApplicantID: "clean", OrganizationID: "org_111", MarketID: "NYC"}
	st, err := runs.Start(ctx, "slow/"+uuid.NewString(), input, runtime.Owner{TenantID: "org_111", UserID: alice})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "conditional offer", func() (bool, string) {
		s, err := runs.Get(ctx, st.ID)
		if err != nil {
			t.Fatal(err)
		}
		return s.State == fcha.StateConditionalOffer, s.State.String()
	})
	if n := slow.calls.Load(); n != 1 {
		t.Errorf("the slow handler was called %d times, want once", n)
	}
}
