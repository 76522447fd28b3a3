// Package compliancetest is the conformance scenarios of the NYC
// Application Compliance workflow (machines/compliance), run on
// any runtime.Runner backend by the conformance suite of
// runtime/runnertest: every branch of FCHA through its typed handle
// fcha.Runs[compliance.Application], with the workflow's driver
// (Workflow.Driver, no executor: the backend retries the handlers) and the
// local adapters of machines/compliance/local.
//
//	runnertest.Run(t, backend)    // the suite's own scenarios
//	compliancetest.Run(t, backend) // FCHA's
//
// The scenarios, subtests of "fcha": approved, prequalification-denied,
// adverse-info-assessment-approved, adverse-info-assessment-denied,
// authorization-timeout (a runnertest.ClockSkipper moves the clock past
// the 7-day window; then a late authorization is refused with
// runtime.ErrSignalRefused and runtime.ErrRunFinished),
// late-authorization-refused (after the decision), retries-exhausted (the
// prequalifier down on each of the database policy's 5 tries: FAILED, the
// result holding its error code), evidence (a
// runnertest.EvidenceVerifier verifies the run's chain and lists its
// records; the compliance API's GetWorkflow lists their ids).
package compliancetest

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/machines/compliance"
	"github.com/fsmgen/fsmgen/machines/compliance/fcha"
	"github.com/fsmgen/fsmgen/machines/compliance/local"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/runnertest"
)

// The applicants of the FCHA scenarios, whom the test adapters treat
// differently.
const (
	applicantClean    = "applicant-clean"
	applicantDenied   = "applicant-prequal-denied"
	applicantAdverse  = "applicant-adverse"
	applicantRejected = "applicant-adverse-rejected"
)

// codeUnavailable is the error code of the prequalifier that is down.
const codeUnavailable = "PREQUALIFIER_UNAVAILABLE"

// fchaEnv is a deployment of FCHA with the test adapters.
type fchaEnv struct {
	*runnertest.Scenario
	d    runnertest.Deployment
	runs fcha.Handle[compliance.Application]
	// prequalifications counts the calls of the failing prequalifier.
	prequalifications *atomic.Int32
}

// downPrequalifier fails every call, as a prequalification service that is
// down does.
type downPrequalifier struct{ calls *atomic.Int32 }

func (p downPrequalifier) Prequalify(context.Context, compliance.Application) (compliance.Prequalification, error) {
	n := p.calls.Add(1)
	return compliance.Prequalification{}, runtime.WithCode(codeUnavailable, fmt.Errorf("prequalification service unavailable (call %d)", n))
}

// fchaDriver returns FCHA's driver (machines/compliance's, with no
// executor: the backend retries the handlers) with the local adapters:
// applicantDenied fails prequalification, applicantAdverse and
// applicantRejected have adverse findings and applicantRejected is denied
// by the assessment. With down not nil, the prequalifier fails every call,
// counting them in down.
func fchaDriver(down *atomic.Int32) runtime.Driver {
	ad := compliance.Adapters{
		Prequalifier: &local.Prequalifier{Fail: map[string]string{applicantDenied: "income below 40x the monthly rent"}},
		Screening: &local.Screening{Findings: map[string][]string{
			applicantAdverse:  {"misdemeanor, 2015"},
			applicantRejected: {"felony, 2024"},
		}},
		Notifier: &local.Notifier{},
		Assessor: &local.Assessor{Deny: map[string]bool{applicantRejected: true}},
	}
	if down != nil {
		ad.Prequalifier = downPrequalifier{down}
	}
	return compliance.New(nil, nil, ad).Driver()
}

// deployFCHA deploys FCHA's driver (see fchaDriver), its prequalifier down
// when down is set.
func deployFCHA(t *testing.T, b runnertest.Backend, down bool) *fchaEnv {
	t.Helper()
	v := &fchaEnv{Scenario: runnertest.NewScenario(t), prequalifications: new(atomic.Int32)}
	var calls *atomic.Int32
	if down {
		calls = v.prequalifications
	}
	v.d = b.Deploy(t, fchaDriver(calls))
	v.runs = fcha.Runs[compliance.Application](v.d.Runner())
	return v
}

// start starts the application of applicant, with a key of its own.
func (v *fchaEnv) start(applicant string) fcha.Started {
	v.T.Helper()
	app := compliance.Application{ApplicationID: v.Key(applicant), ApplicantID: applicant, PropertyID: "property-1", UnitID: "unit-4b",
		OrganizationID: v.Owner.TenantID, MarketID: "nyc"}
	s, err := v.runs.Start(v.Ctx, app.ApplicationID, app, v.Owner)
	if err != nil {
		v.T.Fatalf("start the application of %s: %v", applicant, err)
	}
	if s.Outcome != runtime.StartCreated || s.State != fcha.StatePrequalification {
		v.T.Fatalf("start the application of %s: %s in %s, want %s in %s", applicant, s.Outcome, s.State, runtime.StartCreated, fcha.StatePrequalification)
	}
	return s
}

// offered waits for the conditional offer.
func (v *fchaEnv) offered(id string) {
	v.T.Helper()
	runnertest.WaitState(v.Scenario, id, fcha.StateConditionalOffer.String(), v.runs.Get, func(s fcha.Snapshot) string { return s.State.String() })
}

// authorize signs the background check authorization.
func (v *fchaEnv) authorize(id string) (fcha.Snapshot, error) {
	return v.runs.BackgroundCheckAuthorizationSigned(v.Ctx, id, fcha.BackgroundCheckAuthorizationSigned{
		SignedAt: time.Date(2026, 3, 2, 9, 30, 0, 0, time.UTC), SignedBy: v.Owner.UserID})
}

// authorized starts the application of applicant, waits for the
// conditional offer and signs the authorization.
func (v *fchaEnv) authorized(applicant string) fcha.Started {
	v.T.Helper()
	s := v.start(applicant)
	v.offered(s.ID)
	if _, err := v.authorize(s.ID); err != nil {
		v.T.Fatalf("authorize run %s: %v", s.ID, err)
	}
	return s
}

// finish waits for the run's end and checks its state, status, outcome and
// error code, and, when the deployment is a Historian, its transitions.
func (v *fchaEnv) finish(id string, state fcha.State, outcome, code string, history []string) fcha.Snapshot {
	v.T.Helper()
	got, err := v.runs.Wait(v.Ctx, id)
	if err != nil {
		v.T.Fatalf("wait for run %s: %v", id, err)
	}
	type end struct {
		State          string
		Status         runtime.Status
		Outcome, Code  string
		ResultRunID    string
		ResultNotEmpty bool
	}
	def := fcha.Definition()
	spec, _ := def.State(state.String())
	want := end{State: state.String(), Status: spec.Status, Outcome: outcome, Code: code, ResultRunID: id, ResultNotEmpty: true}
	g := end{State: got.State.String(), Status: got.Status}
	if got.Result != nil {
		g.Outcome, g.Code, g.ResultRunID, g.ResultNotEmpty = got.Result.Outcome, got.Result.ErrorCode, got.Result.RunID, true
	}
	if diff := cmp.Diff(want, g); diff != "" {
		v.T.Errorf("run %s ended (-want +got):\n%s", id, diff)
	}
	v.CheckHistory(v.d, id, history)
	return got
}

// The transitions of FCHA's branches.
const (
	toOffer      = "PREQUALIFICATION -PrequalificationCompleted-> CONDITIONAL_OFFER"
	toCheck      = "CONDITIONAL_OFFER -BackgroundCheckAuthorizationSigned-> BACKGROUND_CHECK_ALLOWED"
	checkToOK    = "BACKGROUND_CHECK_ALLOWED -BackgroundCheckCompleted-> APPROVED"
	toAssessment = "BACKGROUND_CHECK_ALLOWED -BackgroundCheckCompleted-> INDIVIDUALIZED_ASSESSMENT"
)

// Run runs FCHA's scenarios against b, as subtests of the subtest "fcha"
// of t, in parallel.
func Run(t *testing.T, b runnertest.Backend) {
	t.Run("fcha", func(t *testing.T) { runFCHA(t, b) })
}

// runFCHA runs the workflow's scenarios: every branch of FCHA through
// its typed handle.
func runFCHA(t *testing.T, b runnertest.Backend) {
	// The branches that end in a decision.
	branches := []struct {
		name      string
		applicant string
		state     fcha.State
		history   []string
	}{
		{"approved", applicantClean, fcha.StateApproved, []string{toOffer, toCheck, checkToOK}},
		{"prequalification-denied", applicantDenied, fcha.StateDenied, []string{"PREQUALIFICATION -PrequalificationCompleted-> DENIED"}},
		{"adverse-info-assessment-approved", applicantAdverse, fcha.StateApproved, []string{toOffer, toCheck, toAssessment,
			"INDIVIDUALIZED_ASSESSMENT -AssessmentCompleted-> APPROVED"}},
		{"adverse-info-assessment-denied", applicantRejected, fcha.StateDenied, []string{toOffer, toCheck, toAssessment,
			"INDIVIDUALIZED_ASSESSMENT -AssessmentCompleted-> DENIED"}},
	}
	for _, br := range branches {
		t.Run(br.name, func(t *testing.T) {
			t.Parallel()
			v := deployFCHA(t, b, false)
			var s fcha.Started
			if br.applicant == applicantDenied {
				s = v.start(br.applicant)
			} else {
				s = v.authorized(br.applicant)
			}
			outcome := "approved"
			if br.state == fcha.StateDenied {
				outcome = "denied"
			}
			v.finish(s.ID, br.state, outcome, "", br.history)
		})
	}
	t.Run("authorization-timeout", func(t *testing.T) {
		t.Parallel()
		v := deployFCHA(t, b, false)
		clock := runnertest.Require[runnertest.ClockSkipper](t, v.d)
		s := v.start(applicantClean)
		v.offered(s.ID)
		clock.SkipClock(t, compliance.AuthorizationWindow+time.Minute)
		v.finish(s.ID, fcha.StateDenied, "denied", "", []string{toOffer, "CONDITIONAL_OFFER -AuthorizationTimeout-> DENIED"})
		// The window closed: a late authorization is refused.
		_, err := v.authorize(s.ID)
		runnertest.Refused(t, "authorization after the window closed", err, runtime.ErrRunFinished)
	})
	t.Run("late-authorization-refused", func(t *testing.T) {
		t.Parallel()
		v := deployFCHA(t, b, false)
		s := v.authorized(applicantClean)
		v.finish(s.ID, fcha.StateApproved, "approved", "", []string{toOffer, toCheck, checkToOK})
		_, err := v.authorize(s.ID)
		runnertest.Refused(t, "authorization after the decision", err, runtime.ErrRunFinished)
	})
	t.Run("retries-exhausted", func(t *testing.T) {
		t.Parallel()
		v := deployFCHA(t, b, true)
		s := v.start(applicantClean)
		v.finish(s.ID, fcha.StateFailed, "", codeUnavailable, []string{"PREQUALIFICATION -RetriesExhausted-> FAILED"})
		if got, want := int(v.prequalifications.Load()), runtime.RetryDatabase.MaxAttempts; got != want {
			t.Errorf("the prequalifier was called %d times, want %d (the database policy's attempts)", got, want)
		}
	})
	t.Run("evidence", func(t *testing.T) {
		t.Parallel()
		v := deployFCHA(t, b, false)
		ev := runnertest.Require[runnertest.EvidenceVerifier](t, v.d)
		s := v.authorized(applicantAdverse)
		v.finish(s.ID, fcha.StateApproved, "approved", "", []string{toOffer, toCheck, toAssessment,
			"INDIVIDUALIZED_ASSESSMENT -AssessmentCompleted-> APPROVED"})
		kinds, err := ev.VerifyEvidence(v.Ctx, s.ID)
		if err != nil {
			t.Fatalf("verify the evidence of run %s: %v", s.ID, err)
		}
		want := []string{
			"created",
			compliance.EvidenceInitialization, compliance.EvidencePrequalification, compliance.EvidenceConditionalOffer, "transition",
			"transition",
			compliance.EvidenceBackgroundCheckResults, "transition",
			compliance.EvidenceAssessmentFactors, compliance.EvidenceFinalDecision, "transition",
		}
		if diff := cmp.Diff(want, kinds); diff != "" {
			t.Errorf("evidence records of run %s (-want +got):\n%s", s.ID, diff)
		}
		// The compliance API's execution lists the same records' ids, in
		// chain order.
		x, err := compliance.New(v.d.Runner(), nil, compliance.Adapters{}).GetWorkflow(v.Ctx, s.ID)
		if err != nil {
			t.Fatalf("get workflow %s: %v", s.ID, err)
		}
		if x.Output == nil {
			t.Fatalf("get workflow %s: no output, status %s", s.ID, x.Status)
		}
		if ids := x.Output.EvidenceIDs; len(ids) != len(kinds) || !slices.IsSorted(ids) || len(slices.Compact(slices.Clone(ids))) != len(ids) {
			t.Errorf("get workflow %s: evidence ids %v, want %d ascending ids, one per record", s.ID, ids, len(kinds))
		}
	})
}
