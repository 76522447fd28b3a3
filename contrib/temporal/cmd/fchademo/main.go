// Command fchademo runs the FCHA compliance workflow on Temporal: it starts
// a dev server (temporal server start-dev --headless), a worker with the
// machine registered by contrib/temporal, and four applications, one per
// branch that a signal decides, and prints each run's transitions and the
// typed state its query returns. The authorization is signalled at once;
// the workflow takes it when the run waits for it, and refuses it, as sent
// to a finished run, when prequalification denied the application first.
// make demo-temporal runs it. The seven-day authorization timeout is shown
// by the tests on the SDK's skipped clock (go test ./contrib/temporal -run
// TestFCHABranches), not waited for here.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/fsmgen/fsmgen/contrib/temporal"
	"github.com/fsmgen/fsmgen/contrib/temporal/devserver"
	"github.com/fsmgen/fsmgen/machines/compliance"
	"github.com/fsmgen/fsmgen/machines/compliance/fcha"
	"github.com/fsmgen/fsmgen/machines/compliance/local"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "fchademo:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	fmt.Println("Starting temporal server start-dev --headless on free ports...")
	s, err := devserver.Start(ctx)
	if err != nil {
		return err
	}
	defer s.Stop()
	wf := compliance.New(nil, nil, compliance.Adapters{
		Prequalifier: &local.Prequalifier{Fail: map[string]string{"applicant-low-income": "income below 40x monthly rent"}},
		Screening:    &local.Screening{Findings: map[string][]string{"applicant-2014": {"misdemeanor, 2014"}, "applicant-2023": {"felony, 2023"}}},
		Notifier:     &local.Notifier{},
		Assessor:     &local.Assessor{Deny: map[string]bool{"applicant-2023": true}},
	})
	w := worker.New(s.Client, "fcha", worker.Options{})
	temporal.Register(w, wf.Driver())
	if err := w.Start(); err != nil {
		return err
	}
	defer w.Stop()
	for i, b := range []struct{ title, applicant string }{
		{"prequalification failed -> DENIED", "applicant-low-income"},
		{"authorized, clean check -> APPROVED", "applicant-clean"},
		{"adverse information, assessment approves -> APPROVED", "applicant-2014"},
		{"adverse information, assessment denies -> DENIED", "applicant-2023"},
	} {
		id := fmt.Sprintf("app-%d-%d", i+1, time.Now().UnixNano())
		input, err := json.Marshal(compliance.Application{ApplicationID: id, ApplicantID: b.applicant, OrganizationID: "org_demo", MarketID: "NYC"})
		if err != nil {
			return err
		}
		fmt.Printf("\n-- %d. %s (workflow %s)\n", i+1, b.title, id)
		wr, err := s.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: "fcha"}, fcha.Type, temporal.Start{RunID: id, Input: input, TenantID: "org_demo"})
		if err != nil {
			return err
		}
		if err := temporal.Signal(ctx, s.Client, id, fcha.BackgroundCheckAuthorizationSigned{SignedAt: time.Now().UTC(), SignedBy: b.applicant}); err != nil {
			return err
		}
		var res temporal.Result
		if err := wr.Get(ctx, &res); err != nil {
			return err
		}
		for _, h := range res.History {
			fmt.Printf("  %-25s -> %-25s on %s\n", h.From, h.To, h.Event)
		}
		for _, r := range res.Refused {
			fmt.Printf("  refused: %s\n", r)
		}
		state, _, err := temporal.QueryState(ctx, s.Client, id, fcha.ParseState)
		if err != nil {
			return err
		}
		fmt.Printf("  query: state %v (fcha.State), outcome %s\n", state, res.Outcome)
	}
	return nil
}
