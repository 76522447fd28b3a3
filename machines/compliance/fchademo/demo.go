// Package fchademo runs the FCHA compliance workflow once per branch and
// prints each run with its evidence chain: the FCHA part of make demo.
package fchademo

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/machines/compliance"
	"github.com/fsmgen/fsmgen/machines/compliance/local"
	"github.com/fsmgen/fsmgen/runtime/activity"
	"github.com/fsmgen/fsmgen/runtime/engine"
	"github.com/fsmgen/fsmgen/runtime/evidence"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// Demo runs the FCHA workflow once per branch on pool (migrated) and
// prints each run's states and evidence chain: prequalification failed,
// a clean check, adverse information approved and denied by the
// assessment, and no authorization within 7 days (the store's clock is
// moved on by 7 days, not waited for). Application ids carry suffix, so
// that each demo starts new runs.
func Demo(ctx context.Context, pool *pgxpool.Pool, w io.Writer, suffix string) error {
	var mu sync.Mutex
	skew := time.Duration(0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return time.Now().Add(skew) }
	eng, err := engine.New(store.New(pool, store.WithClock(clock)), engine.Config{WorkerID: engine.DefaultWorkerID("fcha-demo"), DisableNotify: true})
	if err != nil {
		return err
	}
	wf := compliance.New(eng, activity.NewExecutor(pool, activity.WithClock(clock)), compliance.Adapters{
		Prequalifier: &local.Prequalifier{Fail: map[string]string{"applicant-low-income": "income below 40x monthly rent"}},
		Screening:    &local.Screening{Findings: map[string][]string{"applicant-2014": {"misdemeanor, 2014"}, "applicant-2023": {"felony, 2023"}}},
		Notifier:     &local.Notifier{},
		Assessor:     &local.Assessor{Deny: map[string]bool{"applicant-2023": true}},
	})
	if err := wf.Register(ctx); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n== FCHA: %s, one run per branch, with its evidence chain\n", compliance.WorkflowName)
	branches := []struct {
		title, applicant string
		sign, timeout    bool
	}{
		{"prequalification failed -> DENIED", "applicant-low-income", false, false},
		{"authorized, clean check -> APPROVED", "applicant-clean", true, false},
		{"adverse information, assessment approves -> APPROVED", "applicant-2014", true, false},
		{"adverse information, assessment denies -> DENIED", "applicant-2023", true, false},
		{"no authorization within 7 days -> DENIED", "applicant-silent", false, true},
	}
	for i, b := range branches {
		app := compliance.Application{ApplicationID: fmt.Sprintf("app-%d-%s", i+1, suffix), ApplicantID: b.applicant, PropertyID: "prop_789", UnitID: "unit_101", OrganizationID: "org_demo", MarketID: "NYC"}
		fmt.Fprintf(w, "\n-- %d. %s (application %s)\n", i+1, b.title, app.ApplicationID)
		out, err := wf.ExecuteWorkflowSync(ctx, app, "", compliance.OnWaiting(func(ctx context.Context, runID, state string) error {
			if b.sign {
				fmt.Fprintf(w, "waiting in %s; the applicant signs the authorization\n", state)
				return wf.SendSignal(ctx, runID, compliance.SignalAuthorizationSigned, compliance.Authorization{SignedAt: clock(), SignedBy: b.applicant})
			}
			fmt.Fprintf(w, "waiting in %s; no authorization comes: the clock moves on by %s\n", state, compliance.AuthorizationWindow)
			mu.Lock()
			skew += compliance.AuthorizationWindow
			mu.Unlock()
			if _, err := eng.RunDue(ctx); err != nil {
				return err
			}
			return nil
		}))
		if err != nil {
			return err
		}
		x, err := wf.GetWorkflow(ctx, out.RunID)
		if err != nil {
			return err
		}
		states := []string{"PREQUALIFICATION"}
		for _, s := range x.StateHistory {
			states = append(states, s.To)
		}
		fmt.Fprintf(w, "run %s: %s; approved %v\n", out.RunID, strings.Join(states, " -> "), out.Approved)
		if b.timeout {
			err := wf.SendSignal(ctx, out.RunID, compliance.SignalAuthorizationSigned, compliance.Authorization{SignedAt: clock(), SignedBy: b.applicant})
			fmt.Fprintf(w, "a late authorization is refused: %v\n", err)
		}
		recs, err := evidence.Records(ctx, pool, out.RunID)
		if err != nil {
			return err
		}
		for _, r := range recs {
			c, err := r.Decode()
			if err != nil {
				return err
			}
			what := r.Kind
			if c.Event != nil {
				what += " " + *c.Event
			}
			fmt.Fprintf(w, "  evidence %2d  %-48s hash %s  prev %s\n", r.Seq, what, r.Hash[:12], orDash(r.PrevHash))
		}
		v, err := evidence.Verify(ctx, pool, out.RunID)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "  chain verified: %d records, head %s (fsmctl evidence verify %s)\n", v.Records, v.Head[:12], out.RunID)
	}
	return nil
}

func orDash(h string) string {
	if h == "" {
		return "-"
	}
	return h[:12]
}
