package compliance_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/machines/compliance"
	"github.com/fsmgen/fsmgen/machines/compliance/local"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/activity"
	"github.com/fsmgen/fsmgen/runtime/engine"
	"github.com/fsmgen/fsmgen/runtime/evidence"
	"github.com/fsmgen/fsmgen/runtime/fsmtest"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

const (
	crashDSNEnv = "FCHA_CRASH_DSN"
	crashRunEnv = "FCHA_CRASH_RUN"
	actorID     = "8a5f2c1e-0000-4000-8000-0000000000a1"
)

func TestMain(m *testing.M) {
	if dsn := os.Getenv(crashDSNEnv); dsn != "" {
		crashChild(dsn, os.Getenv(crashRunEnv))
		os.Exit(3) // not reached: the child is killed after the activity
	}
	pgtest.Main(m)
}

// sleeps records the waits between an activity's tries.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(_ context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.d = append(s.d, d)
	return nil
}

type env struct {
	pool      *pgxpool.Pool
	clock     *fsmtest.Clock
	eng       *engine.Engine
	wf        *compliance.Workflow
	screening *local.Screening
	notifier  *local.Notifier
	sleeps    *sleeps
}

// adapters are the local services: applicant "bad-credit" fails
// prequalification, "record-ok" and "record-deny" have adverse findings,
// and "record-deny" is denied by the assessment.
func adapters(s *local.Screening, n *local.Notifier) compliance.Adapters {
	return compliance.Adapters{
		Prequalifier: &local.Prequalifier{Fail: map[string]string{"bad-credit": "income below 40x monthly rent"}},
		Screening:    s,
		Notifier:     n,
		Assessor:     &local.Assessor{Deny: map[string]bool{"record-deny": true}},
	}
}

func findings() map[string][]string {
	return map[string][]string{
		"record-ok":   {"misdemeanor, 2014"},
		"record-deny": {"felony, 2023"},
	}
}

// envOption changes what newEnv builds.
type envOption func(*envConfig)

type envConfig struct {
	// dbClock: the store reads the database's clock instead of the stubbed
	// one, so that the engine's own retries fall due.
	dbClock      bool
	prequalifier compliance.Prequalifier
}

// withPrequalifier replaces the local prequalifier, on the database's clock.
func withPrequalifier(p compliance.Prequalifier) envOption {
	return func(c *envConfig) { c.prequalifier, c.dbClock = p, true }
}

func newEnv(t *testing.T, pool *pgxpool.Pool, start time.Time, failFirst int, opts ...envOption) *env {
	t.Helper()
	var cfg envConfig
	for _, o := range opts {
		o(&cfg)
	}
	c := fsmtest.NewClock(start)
	st := store.New(pool, store.WithClock(c.Now))
	if cfg.dbClock {
		st = store.New(pool)
	}
	eng, err := engine.New(st, engine.Config{WorkerID: "fcha-test:" + t.Name(), DisableNotify: true})
	if err != nil {
		t.Fatal(err)
	}
	sl := &sleeps{}
	x := activity.NewExecutor(pool, activity.WithClock(c.Now), activity.WithSleep(sl.sleep), activity.WithRand(func() float64 { return 0.5 }))
	e := &env{pool: pool, clock: c, eng: eng, sleeps: sl,
		screening: &local.Screening{Findings: findings(), FailFirst: failFirst}, notifier: &local.Notifier{}}
	ad := adapters(e.screening, e.notifier)
	if cfg.prequalifier != nil {
		ad.Prequalifier = cfg.prequalifier
	}
	e.wf = compliance.New(eng, x, ad)
	if err := e.wf.Register(context.Background()); err != nil {
		t.Fatal(err)
	}
	return e
}

func application(id, applicant, org string) compliance.Application {
	return compliance.Application{ApplicationID: id, ApplicantID: applicant, PropertyID: "prop_789", UnitID: "unit_101", OrganizationID: org, MarketID: "NYC"}
}

var t0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

// states is the run's state sequence from its log.
func (e *env) states(t *testing.T, runID string) []string {
	t.Helper()
	hist, err := e.eng.Store().History(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range hist {
		switch s.Kind {
		case store.KindCreated:
			out = append(out, s.To)
		case store.KindTransition:
			out = append(out, s.To)
		}
	}
	return out
}

// chain verifies the run's evidence and returns each record as
// "kind" or "transition FROM->TO Event".
func (e *env) chain(t *testing.T, runID string) []string {
	t.Helper()
	ctx := context.Background()
	v, err := evidence.Verify(ctx, e.pool, runID)
	if err != nil {
		t.Fatalf("verify evidence of %s: %v", runID, err)
	}
	recs, err := evidence.Records(ctx, e.pool, runID)
	if err != nil {
		t.Fatal(err)
	}
	if v.Records != len(recs) || v.Head != recs[len(recs)-1].Hash {
		t.Errorf("verification %+v does not cover the %d records", v, len(recs))
	}
	var out []string
	prev := ""
	for _, r := range recs {
		if r.PrevHash != prev {
			t.Errorf("record %d links to %s, want %s", r.Seq, r.PrevHash, prev)
		}
		prev = r.Hash
		c, err := r.Decode()
		if err != nil {
			t.Fatal(err)
		}
		if r.Kind == "transition" {
			out = append(out, fmt.Sprintf("transition %s->%s %s", *c.StateBefore, *c.StateAfter, *c.Event))
			continue
		}
		out = append(out, r.Kind)
	}
	return out
}

// rationale returns the payload of the run's final_decision_rationale
// record, failing unless there is exactly one.
func (e *env) rationale(t *testing.T, runID string) map[string]any {
	t.Helper()
	return e.payload(t, runID, compliance.EvidenceFinalDecision)
}

// payload returns the payload of the run's evidence record of kind,
// failing unless there is exactly one.
func (e *env) payload(t *testing.T, runID, kind string) map[string]any {
	t.Helper()
	recs, err := evidence.Records(context.Background(), e.pool, runID)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, r := range recs {
		if r.Kind != kind {
			continue
		}
		c, err := r.Decode()
		if err != nil {
			t.Fatal(err)
		}
		var p map[string]any
		if err := json.Unmarshal(c.Payload, &p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	if len(out) != 1 {
		t.Fatalf("run %s has %d evidence records of kind %s, want 1: %v", runID, len(out), kind, out)
	}
	return out[0]
}

// drive drives the run inline until it is terminal or waits.
func (e *env) drive(t *testing.T, runID string) runtime.Run {
	t.Helper()
	run, err := e.eng.Drive(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func (e *env) signal(t *testing.T, runID string) {
	t.Helper()
	err := e.wf.SendSignal(context.Background(), runID, compliance.SignalAuthorizationSigned,
		compliance.Authorization{SignedAt: e.clock.Now().Add(time.Hour), SignedBy: "user_456"})
	if err != nil {
		t.Fatal(err)
	}
}

var (
	offerChain = []string{
		"created", "initialization", "prequalification_results", "conditional_offer_delivery",
		"transition PREQUALIFICATION->CONDITIONAL_OFFER PrequalificationCompleted",
	}
	// authorized: the signal's transition and the evidence it implies.
	authorized = []string{"transition CONDITIONAL_OFFER->BACKGROUND_CHECK_ALLOWED BackgroundCheckAuthorizationSigned", "background_check_authorization"}
)

func cat(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func TestBranches(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		applicant string
		signal    bool
		timeout   bool
		states    []string
		chain     []string
		rationale map[string]any
		approved  bool
	}{
		{
			name: "prequalification failed", applicant: "bad-credit",
			states: []string{"PREQUALIFICATION", "DENIED"},
			chain: []string{"created", "initialization", "prequalification_results", "final_decision_rationale",
				"transition PREQUALIFICATION->DENIED PrequalificationCompleted"},
			rationale: map[string]any{"decision": "denied", "rationale": "prequalification failed: income below 40x monthly rent"},
		},
		{
			name: "clean check", applicant: "clean", signal: true, approved: true,
			rationale: map[string]any{"decision": "approved", "rationale": "the background check found no adverse information"},
			states:    []string{"PREQUALIFICATION", "CONDITIONAL_OFFER", "BACKGROUND_CHECK_ALLOWED", "APPROVED"},
			chain: cat(offerChain, authorized, []string{"background_check_results", "final_decision_rationale",
				"transition BACKGROUND_CHECK_ALLOWED->APPROVED BackgroundCheckCompleted"}),
		},
		{
			name: "adverse then approved", applicant: "record-ok", signal: true, approved: true,
			rationale: map[string]any{"decision": "approved", "rationale": "findings [misdemeanor, 2014] outweighed by rehabilitation and time elapsed"},
			states:    []string{"PREQUALIFICATION", "CONDITIONAL_OFFER", "BACKGROUND_CHECK_ALLOWED", "INDIVIDUALIZED_ASSESSMENT", "APPROVED"},
			chain: cat(offerChain, authorized, []string{"background_check_results",
				"transition BACKGROUND_CHECK_ALLOWED->INDIVIDUALIZED_ASSESSMENT BackgroundCheckCompleted",
				"individualized_assessment_factors", "final_decision_rationale",
				"transition INDIVIDUALIZED_ASSESSMENT->APPROVED AssessmentCompleted"}),
		},
		{
			name: "adverse then denied", applicant: "record-deny", signal: true,
			rationale: map[string]any{"decision": "denied", "rationale": "findings [felony, 2023] bear directly on the safety of residents; denial necessary"},
			states:    []string{"PREQUALIFICATION", "CONDITIONAL_OFFER", "BACKGROUND_CHECK_ALLOWED", "INDIVIDUALIZED_ASSESSMENT", "DENIED"},
			chain: cat(offerChain, authorized, []string{"background_check_results",
				"transition BACKGROUND_CHECK_ALLOWED->INDIVIDUALIZED_ASSESSMENT BackgroundCheckCompleted",
				"individualized_assessment_factors", "final_decision_rationale",
				"transition INDIVIDUALIZED_ASSESSMENT->DENIED AssessmentCompleted"}),
		},
		{
			name: "no authorization in 7 days", applicant: "clean", timeout: true,
			rationale: map[string]any{"decision": "denied", "authorizationWindow": "168h0m0s",
				"rationale": "the background check authorization was not signed within the authorization window of 168h0m0s after the conditional offer"},
			states: []string{"PREQUALIFICATION", "CONDITIONAL_OFFER", "DENIED"},
			chain:  cat(offerChain, []string{"transition CONDITIONAL_OFFER->DENIED AuthorizationTimeout", "final_decision_rationale"}),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			e := newEnv(t, pgtest.NewPool(t), t0, 0)
			id, err := e.wf.StartWorkflow(ctx, application("app_"+tc.applicant, tc.applicant, "org_111"), actorID)
			if err != nil {
				t.Fatal(err)
			}
			run := e.drive(t, id)
			if tc.signal {
				if run.State != "CONDITIONAL_OFFER" {
					t.Fatalf("run is in %s, want CONDITIONAL_OFFER", run.State)
				}
				e.signal(t, id)
				run = e.drive(t, id)
			}
			if tc.timeout {
				e.clock.Advance(compliance.AuthorizationWindow - time.Second)
				if n, err := e.eng.RunDue(ctx); err != nil || n != 0 {
					t.Fatalf("a second before the deadline: RunDue = %d, %v; want nothing due", n, err)
				}
				e.clock.Advance(time.Second)
				if n, err := e.eng.RunDue(ctx); err != nil || n != 1 {
					t.Fatalf("at the deadline: RunDue = %d, %v; want the run", n, err)
				}
				if run, err = e.eng.Store().Get(ctx, id); err != nil {
					t.Fatal(err)
				}
				err := e.wf.SendSignal(ctx, id, compliance.SignalAuthorizationSigned, compliance.Authorization{SignedAt: e.clock.Now(), SignedBy: "user_456"})
				if !errors.Is(err, compliance.ErrSignalRefused) || !errors.Is(err, runtime.ErrRunFinished) || !strings.Contains(err.Error(), "authorization window of 168h0m0s closed at 2026-03-09T09:00:00Z") {
					t.Errorf("late signal: err = %v, want ErrSignalRefused saying the window closed", err)
				}
			}
			if !run.Terminal() {
				t.Fatalf("run ended in %s, not terminal", run.State)
			}
			if diff := cmp.Diff(tc.states, e.states(t, id)); diff != "" {
				t.Errorf("states (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.chain, e.chain(t, id)); diff != "" {
				t.Errorf("evidence (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.rationale, e.rationale(t, id)); diff != "" {
				t.Errorf("final decision rationale (-want +got):\n%s", diff)
			}
			if tc.signal {
				want := map[string]any{"signedAt": "2026-03-02T10:00:00Z", "signedBy": "user_456"}
				if diff := cmp.Diff(want, e.payload(t, id, compliance.EvidenceAuthorization)); diff != "" {
					t.Errorf("background check authorization (-want +got):\n%s", diff)
				}
			}
			got, err := e.wf.GetWorkflow(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if got.Output == nil || got.Output.Approved != tc.approved || len(got.Output.EvidenceIDs) != len(tc.chain) {
				t.Errorf("output = %+v, want approved %v with %d evidence ids", got.Output, tc.approved, len(tc.chain))
			}
			if got.CurrentStep != tc.states[len(tc.states)-1] || got.OrganizationID != "org_111" || got.ActorID != actorID ||
				got.WorkflowID != "app_"+tc.applicant || len(got.StateHistory) != len(tc.states)-1 {
				t.Errorf("execution = %+v", got)
			}
		})
	}
}

// TestProviderFailsFourTimes: the screening provider fails 4 times and then
// answers: 5 tries with the externalService waits, one cached result
// consumed by the transition, and the results in the evidence once.
func TestProviderFailsFourTimes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, pgtest.NewPool(t), t0, 4)
	id, err := e.wf.StartWorkflow(ctx, application("app_flaky", "clean", "org_111"), actorID)
	if err != nil {
		t.Fatal(err)
	}
	e.drive(t, id)
	e.signal(t, id)
	if run := e.drive(t, id); run.State != "APPROVED" {
		t.Fatalf("run ended in %s, want APPROVED", run.State)
	}
	if got := e.screening.Calls(); got != 5 {
		t.Errorf("provider called %d times, want 5", got)
	}
	if diff := cmp.Diff([]time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}, e.sleeps.d); diff != "" {
		t.Errorf("waits between tries (-want +got):\n%s", diff)
	}
	ex, err := activity.Executions(ctx, e.pool, id)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Name, Key, Status string
		Attempt           int
		Consumed          bool
	}
	var got []row
	for _, x := range ex {
		got = append(got, row{x.ActivityName, x.IdempotencyKey, x.Status, x.Attempt, x.ConsumedRunID == id && x.ConsumedAt != nil})
	}
	want := []row{
		{"prequalify", "prequalify:app_flaky", "completed", 1, true},
		{"deliver-conditional-offer", "conditional-offer:app_flaky", "completed", 1, true},
		{"background-check", "screening:app_flaky", "completed", 5, true},
	}
	if diff := cmp.Diff(want, got, cmpopts.SortSlices(func(a, b row) bool { return a.Key < b.Key })); diff != "" {
		t.Errorf("activity executions (-want +got):\n%s", diff)
	}
	chain := e.chain(t, id)
	n := 0
	for _, k := range chain {
		if k == "background_check_results" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("background check results recorded %d times in %v, want once", n, chain)
	}
}

// downPrequalifier is a prequalifier whose database is down: every call
// fails, with code PREQUAL_DB_DOWN.
type downPrequalifier struct{ calls atomic.Int32 }

func (p *downPrequalifier) Prequalify(context.Context, compliance.Application) (compliance.Prequalification, error) {
	p.calls.Add(1)
	return compliance.Prequalification{}, runtime.WithCode("PREQUAL_DB_DOWN", errors.New("prequalification database unavailable"))
}

// TestActivityRetriesNotMultiplied: a prequalifier that always fails is
// called 5 times, by the prequalify activity's database policy, waiting
// 500 ms, 1 s, 2 s and 4 s between the calls; the state's policy does not
// try the activity again. The engine's own retries would fall due on the
// database's clock.
func TestActivityRetriesNotMultiplied(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pq := &downPrequalifier{}
	e := newEnv(t, pgtest.NewPool(t), t0, 0, withPrequalifier(pq))
	id, err := e.wf.StartWorkflow(ctx, application("app_down", "clean", "org_111"), actorID)
	if err != nil {
		t.Fatal(err)
	}
	e.drive(t, id)
	if got := pq.calls.Load(); got != 5 {
		t.Errorf("prequalifier called %d times, want 5", got)
	}
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second}
	if diff := cmp.Diff(want, e.sleeps.d); diff != "" {
		t.Errorf("waits between calls (-want +got):\n%s", diff)
	}
	ex, err := activity.Executions(ctx, e.pool, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(ex) != 1 || ex[0].Status != "failed" || ex[0].Attempt != 5 || ex[0].ErrorCode != "PREQUAL_DB_DOWN" {
		t.Errorf("activity executions = %+v, want prequalify failed after 5 tries", ex)
	}
}

// TestExhaustedRunFails: once the prequalify activity gave up, the run ends
// FAILED, status failed, with the error's code and message: GetWorkflow
// says so, a query by status failed finds it, the run's log has the failed
// try, and ExecuteWorkflowSync returns ErrWorkflowFailed.
func TestExhaustedRunFails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, pgtest.NewPool(t), t0, 0, withPrequalifier(&downPrequalifier{}))
	id, err := e.wf.StartWorkflow(ctx, application("app_down", "clean", "org_111"), actorID)
	if err != nil {
		t.Fatal(err)
	}
	e.drive(t, id)
	const msg = "activity prequalify (key prequalify:app_down): tries used up: 5 of 5: PREQUAL_DB_DOWN: prequalification database unavailable"
	x, err := e.wf.GetWorkflow(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		Status           runtime.Status
		CurrentStep      string
		ErrorCode, Error string
		Output           *compliance.Output
		Completed        bool
		History          []string
	}
	g := got{Status: x.Status, CurrentStep: x.CurrentStep, ErrorCode: x.ErrorCode, Error: x.Error, Output: x.Output, Completed: x.CompletedAt != nil}
	for _, s := range x.StateHistory {
		g.History = append(g.History, s.From+"->"+s.To+" "+s.Event)
	}
	want := got{Status: runtime.StatusFailed, CurrentStep: "FAILED", ErrorCode: "PREQUAL_DB_DOWN", Error: msg, Completed: true,
		History: []string{"PREQUALIFICATION->FAILED RetriesExhausted"}}
	if diff := cmp.Diff(want, g); diff != "" {
		t.Fatalf("GetWorkflow (-want +got):\n%s", diff)
	}
	runs, err := e.wf.Query(ctx, compliance.Query{WorkflowName: compliance.WorkflowName, Status: runtime.StatusFailed, OrganizationID: "org_111"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]compliance.Execution{x}, runs); diff != "" {
		t.Errorf("query by status failed (-want +got):\n%s", diff)
	}
	hist, err := e.eng.Store().History(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range hist {
		if s.Name == "attempt_failed" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d attempt_failed steps in the run's log, want 1", n)
	}

	_, syncErr := e.wf.ExecuteWorkflowSync(ctx, application("app_down_sync", "clean", "org_111"), actorID)
	if !errors.Is(syncErr, compliance.ErrWorkflowFailed) {
		t.Fatalf("ExecuteWorkflowSync: err = %v, want ErrWorkflowFailed", syncErr)
	}
	runs, err = e.wf.Query(ctx, compliance.Query{Status: runtime.StatusFailed})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 {
		t.Fatalf("query by status failed found %d runs, want 2", len(runs))
	}
	want2 := fmt.Sprintf("compliance: execute %s: workflow failed in FAILED: PREQUAL_DB_DOWN: %s", runs[1].ID, strings.Replace(msg, "app_down", "app_down_sync", 1))
	if syncErr.Error() != want2 {
		t.Errorf("ExecuteWorkflowSync: err = %q, want %q", syncErr, want2)
	}
}

// TestStartTwice: the same application started twice is one run.
func TestStartTwice(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, pgtest.NewPool(t), t0, 0)
	app := application("app_twice", "clean", "org_111")
	a, err := e.wf.StartWorkflow(ctx, app, actorID)
	if err != nil {
		t.Fatal(err)
	}
	e.drive(t, a)
	b, err := e.wf.StartWorkflow(ctx, app, actorID)
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Errorf("second start gave run %s, want %s", b, a)
	}
	runs, err := e.wf.Query(ctx, compliance.Query{WorkflowName: compliance.WorkflowName, OrganizationID: "org_111"})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs[0].ID != a || runs[0].CurrentStep != "CONDITIONAL_OFFER" {
		t.Errorf("query = %+v, want the one run waiting in CONDITIONAL_OFFER", runs)
	}
	if got := len(e.notifier.Sent()); got != 1 {
		t.Errorf("%d conditional offers sent, want 1", got)
	}
}

// TestQuery: getWorkflow and query by workflow name, status and
// organization.
func TestQuery(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, pgtest.NewPool(t), t0, 0)
	ids := map[string]string{}
	for _, a := range []compliance.Application{
		application("app_1", "clean", "org_a"), application("app_2", "bad-credit", "org_a"), application("app_3", "clean", "org_b"),
	} {
		id, err := e.wf.StartWorkflow(ctx, a, actorID)
		if err != nil {
			t.Fatal(err)
		}
		e.drive(t, id)
		ids[a.ApplicationID] = id
		e.clock.Advance(time.Minute) // runs listed in the order they started
	}
	key := func(es []compliance.Execution) []string {
		var out []string
		for _, x := range es {
			out = append(out, x.WorkflowID+" "+string(x.Status)+" "+x.CurrentStep)
		}
		return out
	}
	tests := []struct {
		q    compliance.Query
		want []string
	}{
		{compliance.Query{WorkflowName: compliance.WorkflowName, Status: runtime.StatusRunning, OrganizationID: "org_a"}, []string{"app_1 running CONDITIONAL_OFFER"}},
		{compliance.Query{WorkflowName: compliance.WorkflowName, OrganizationID: "org_a"}, []string{"app_1 running CONDITIONAL_OFFER", "app_2 succeeded DENIED"}},
		{compliance.Query{Status: runtime.StatusRunning}, []string{"app_1 running CONDITIONAL_OFFER", "app_3 running CONDITIONAL_OFFER"}},
		{compliance.Query{WorkflowName: "other"}, nil},
	}
	for _, tc := range tests {
		got, err := e.wf.Query(ctx, tc.q)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, key(got)); diff != "" {
			t.Errorf("query %+v (-want +got):\n%s", tc.q, diff)
		}
	}
	x, err := e.wf.GetWorkflow(ctx, ids["app_2"])
	if err != nil {
		t.Fatal(err)
	}
	if x.Output == nil || x.Output.Approved || x.Output.Decision != "denied" || x.CompletedAt == nil {
		t.Errorf("denied run = %+v, output %+v", x, x.Output)
	}
	if _, err := e.wf.GetWorkflow(ctx, "5d3c1a2b-0000-4000-8000-000000000000"); !errors.Is(err, runtime.ErrRunNotFound) {
		t.Errorf("unknown run: err = %v, want ErrRunNotFound", err)
	}
}

// TestExecuteWorkflowSync: the seed's integration test.
func TestExecuteWorkflowSync(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, pgtest.NewPool(t), t0, 0)
	var waited []string
	res, err := e.wf.ExecuteWorkflowSync(ctx, application("app_123", "clean", "org_111"), actorID,
		compliance.OnWaiting(func(ctx context.Context, runID, state string) error {
			waited = append(waited, state)
			return e.wf.SendSignal(ctx, runID, compliance.SignalAuthorizationSigned, compliance.Authorization{SignedAt: t0, SignedBy: "user_456"})
		}))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Approved || len(res.EvidenceIDs) == 0 || res.Decision != "approved" {
		t.Errorf("result = %+v, want approved with evidence", res)
	}
	if diff := cmp.Diff([]string{"CONDITIONAL_OFFER"}, waited); diff != "" {
		t.Errorf("waited in (-want +got):\n%s", diff)
	}
	if err := e.wf.SendSignal(ctx, res.RunID, "something_else", compliance.Authorization{}); !errors.Is(err, compliance.ErrSignalRefused) {
		t.Errorf("unknown signal: err = %v, want ErrSignalRefused", err)
	}
}

// TestEvidenceTamper: the database refuses to change evidence, and a
// change made with the guard turned off is found by Verify at its record.
func TestEvidenceTamper(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, pgtest.NewPool(t), t0, 0)
	id, err := e.wf.StartWorkflow(ctx, application("app_t", "bad-credit", "org_111"), actorID)
	if err != nil {
		t.Fatal(err)
	}
	e.drive(t, id)
	for _, sql := range []string{
		`UPDATE evidence_records SET kind = 'x' WHERE workflow_run_id = $1`,
		`DELETE FROM evidence_records WHERE workflow_run_id = $1`,
	} {
		_, err := e.pool.Exec(ctx, sql, id)
		if !errors.Is(evidence.Translate(err), evidence.ErrAppendOnly) {
			t.Errorf("%s: err = %v, want ErrAppendOnly", sql, err)
		}
	}
	tx, err := e.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `ALTER TABLE evidence_records DISABLE TRIGGER evidence_records_append_only`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `UPDATE evidence_records SET content = jsonb_set(content, '{payload,passed}', 'true') WHERE workflow_run_id = $1 AND seq = 3`, id); err != nil {
		t.Fatal(err)
	}
	_, err = evidence.Verify(ctx, tx, id)
	var brk *evidence.Break
	if !errors.As(err, &brk) || !errors.Is(err, evidence.ErrBroken) || brk.Seq != 3 || !strings.Contains(brk.Reason, "content hashes to") {
		t.Errorf("verify after tampering: err = %v, want a break at record 3", err)
	}
	var buf strings.Builder
	if err := evidence.WriteJSON(ctx, tx, id, &buf); !errors.Is(err, evidence.ErrBroken) {
		t.Errorf("export of a broken chain: err = %v", err)
	}
	var ex evidence.Export
	if err := json.Unmarshal([]byte(buf.String()), &ex); err != nil || ex.Verified || len(ex.Records) != 5 {
		t.Errorf("export = %+v, %v; want 5 records, not verified", ex, err)
	}
}

// TestCrashAfterActivity: a worker process is killed after the screening
// activity ran and stored its result, before the transition; the run is
// recovered by another engine, which uses the cached result: the provider
// is not called again and its results are in the evidence once.
func TestCrashAfterActivity(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	start := time.Now().UTC()
	e := newEnv(t, pool, start, 0)
	id, err := e.wf.StartWorkflow(ctx, application("app_crash", "clean", "org_111"), actorID)
	if err != nil {
		t.Fatal(err)
	}
	e.drive(t, id)
	e.signal(t, id)

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashDSNEnv+"="+dsn, crashRunEnv+"="+id)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child: %v, want killed by SIGKILL; output:\n%s", err, out)
	}
	ex, err := activity.Executions(ctx, pool, id)
	if err != nil {
		t.Fatal(err)
	}
	if check := find(ex, "background-check"); check.Status != "completed" || check.ConsumedAt != nil {
		t.Fatalf("after the crash: %+v, want the check completed and not consumed", check)
	}

	e.clock.Advance(time.Hour) // the dead worker's lease has expired
	run := e.drive(t, id)
	if run.State != "APPROVED" {
		t.Fatalf("recovered run ended in %s, want APPROVED", run.State)
	}
	if got := e.screening.Calls(); got != 0 {
		t.Errorf("the recovering engine called the provider %d times, want 0", got)
	}
	ex, err = activity.Executions(ctx, pool, id)
	if err != nil {
		t.Fatal(err)
	}
	if check := find(ex, "background-check"); check.Attempt != 1 || check.ConsumedRunID != id {
		t.Errorf("check after recovery: %+v, want one try, consumed by the run", check)
	}
	want := cat(offerChain, authorized, []string{"background_check_results", "final_decision_rationale",
		"transition BACKGROUND_CHECK_ALLOWED->APPROVED BackgroundCheckCompleted"})
	if diff := cmp.Diff(want, e.chain(t, id)); diff != "" {
		t.Errorf("evidence (-want +got):\n%s", diff)
	}
}

// crashChild drives run runID in this process and kills the process with
// SIGKILL right after the background check activity stored its result.
func crashChild(dsn, runID string) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(4)
	}
	eng, err := engine.New(store.New(pool), engine.Config{WorkerID: "fcha-crash-child", DisableNotify: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(4)
	}
	wf := compliance.New(eng, activity.NewExecutor(pool), adapters(&local.Screening{Findings: findings()}, &local.Notifier{}))
	compliance.SetActivityHook(wf, func(name string) {
		if name == "background-check" {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
	})
	if err := wf.Register(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(4)
	}
	_, err = eng.Drive(ctx, runID)
	fmt.Fprintln(os.Stderr, "drive returned:", err)
	os.Exit(5)
}

func find(ex []activity.Execution, name string) activity.Execution {
	for _, x := range ex {
		if x.ActivityName == name {
			return x
		}
	}
	return activity.Execution{}
}
