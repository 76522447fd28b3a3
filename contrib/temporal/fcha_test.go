package temporal_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/fsmgen/fsmgen/contrib/temporal"
	"github.com/fsmgen/fsmgen/machines/compliance"
	"github.com/fsmgen/fsmgen/machines/compliance/fcha"
	"github.com/fsmgen/fsmgen/machines/compliance/local"
	"github.com/fsmgen/fsmgen/runtime"
)

func driverFor(screening *local.Screening) *compliance.Workflow {
	return compliance.New(nil, nil, compliance.Adapters{
		Prequalifier: &local.Prequalifier{Fail: map[string]string{"bad-credit": "income below 40x monthly rent"}},
		Screening:    screening,
		Notifier:     &local.Notifier{},
		Assessor:     &local.Assessor{Deny: map[string]bool{"record-deny": true}},
	})
}

func findings() map[string][]string {
	return map[string][]string{"record-ok": {"misdemeanor, 2014"}, "record-deny": {"felony, 2023"}}
}

func start(t *testing.T, applicant string) temporal.Start {
	t.Helper()
	raw, err := json.Marshal(compliance.Application{ApplicationID: "app_" + applicant, ApplicantID: applicant, OrganizationID: "org_111", MarketID: "NYC"})
	if err != nil {
		t.Fatal(err)
	}
	return temporal.Start{RunID: "app_" + applicant, Input: raw, TenantID: "org_111"}
}

func authorization(t *testing.T) temporal.EventMessage {
	t.Helper()
	raw, err := json.Marshal(fcha.BackgroundCheckAuthorizationSigned{SignedAt: time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC), SignedBy: "user_456"})
	if err != nil {
		t.Fatal(err)
	}
	return temporal.EventMessage{Name: "BackgroundCheckAuthorizationSigned", Payload: raw}
}

type move struct{ From, To, Event string }

func moves(h []temporal.Step) []move {
	var out []move
	for _, s := range h {
		out = append(out, move{s.From, s.To, s.Event})
	}
	return out
}

func TestFCHABranches(t *testing.T) {
	t.Parallel()
	const (
		pq = "PREQUALIFICATION"
		co = "CONDITIONAL_OFFER"
		bc = "BACKGROUND_CHECK_ALLOWED"
		ia = "INDIVIDUALIZED_ASSESSMENT"
	)
	tests := []struct {
		name      string
		applicant string
		signalAt  time.Duration // 0: no signal
		failFirst int
		want      []move
		outcome   string
		took      time.Duration // workflow time from start to end
	}{
		{name: "prequalification failed", applicant: "bad-credit",
			want: []move{{pq, "DENIED", "PrequalificationCompleted"}}, outcome: "denied"},
		{name: "clean check", applicant: "clean", signalAt: time.Hour,
			want:    []move{{pq, co, "PrequalificationCompleted"}, {co, bc, "BackgroundCheckAuthorizationSigned"}, {bc, "APPROVED", "BackgroundCheckCompleted"}},
			outcome: "approved", took: time.Hour},
		{name: "adverse then approved", applicant: "record-ok", signalAt: 48 * time.Hour,
			want: []move{{pq, co, "PrequalificationCompleted"}, {co, bc, "BackgroundCheckAuthorizationSigned"}, {bc, ia, "BackgroundCheckCompleted"},
				{ia, "APPROVED", "AssessmentCompleted"}},
			outcome: "approved", took: 48 * time.Hour},
		{name: "adverse then denied", applicant: "record-deny", signalAt: time.Hour,
			want: []move{{pq, co, "PrequalificationCompleted"}, {co, bc, "BackgroundCheckAuthorizationSigned"}, {bc, ia, "BackgroundCheckCompleted"},
				{ia, "DENIED", "AssessmentCompleted"}},
			outcome: "denied", took: time.Hour},
		{name: "no authorization in 7 days", applicant: "clean",
			want: []move{{pq, co, "PrequalificationCompleted"}, {co, "DENIED", "AuthorizationTimeout"}}, outcome: "denied", took: 7 * 24 * time.Hour},
		{name: "provider fails 4 times", applicant: "clean", signalAt: time.Hour, failFirst: 4,
			want:    []move{{pq, co, "PrequalificationCompleted"}, {co, bc, "BackgroundCheckAuthorizationSigned"}, {bc, "APPROVED", "BackgroundCheckCompleted"}},
			outcome: "approved", took: time.Hour + 15*time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestWorkflowEnvironment()
			screening := &local.Screening{Findings: findings(), FailFirst: tc.failFirst}
			temporal.Register(env, driverFor(screening).Driver())
			begin := env.Now()
			if tc.signalAt > 0 {
				env.RegisterDelayedCallback(func() {
					env.SignalWorkflow("AssessmentCompleted", temporal.EventMessage{Name: "AssessmentCompleted", Payload: json.RawMessage(`{"approved":true}`)})
					env.SignalWorkflow("BackgroundCheckAuthorizationSigned", authorization(t))
				}, tc.signalAt)
			}
			env.ExecuteWorkflow(fcha.Type, start(t, tc.applicant))
			if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
				t.Fatalf("workflow completed %v, error %v", env.IsWorkflowCompleted(), env.GetWorkflowError())
			}
			var res temporal.Result
			if err := env.GetWorkflowResult(&res); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, moves(res.History)); diff != "" {
				t.Errorf("transitions (-want +got):\n%s", diff)
			}
			if res.Outcome != tc.outcome || string(res.Status) != "succeeded" {
				t.Errorf("result %s/%s, want succeeded/%s", res.Status, res.Outcome, tc.outcome)
			}
			if tc.signalAt > 0 && (len(res.Refused) != 1 || res.Refused[0][:len("AssessmentCompleted")] != "AssessmentCompleted") {
				t.Errorf("refused = %q, want the AssessmentCompleted sent in CONDITIONAL_OFFER", res.Refused)
			}
			if got := env.Now().Sub(begin); got < tc.took || got > tc.took+time.Minute {
				t.Errorf("workflow time %v, want about %v", got, tc.took)
			}
			if tc.failFirst > 0 && screening.Calls() != tc.failFirst+1 {
				t.Errorf("provider called %d times, want %d", screening.Calls(), tc.failFirst+1)
			}
		})
	}
}

func TestQueryTypedState(t *testing.T) {
	t.Parallel()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	temporal.Register(env, driverFor(&local.Screening{}).Driver())
	var seen fcha.State
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(temporal.QueryName)
		if err != nil {
			t.Error(err)
			return
		}
		var snap temporal.Snapshot
		if err := v.Get(&snap); err != nil {
			t.Error(err)
			return
		}
		if seen, err = fcha.ParseState(snap.State); err != nil {
			t.Error(err)
		}
		env.SignalWorkflow("BackgroundCheckAuthorizationSigned", authorization(t))
	}, time.Hour)
	env.ExecuteWorkflow(fcha.Type, start(t, "clean"))
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if seen != fcha.StateConditionalOffer {
		t.Errorf("queried state %v, want CONDITIONAL_OFFER", seen)
	}
}

// updateOutcome is what the testsuite reported for one update.
type updateOutcome struct {
	Accepted bool
	Type     string // the refusal's ApplicationError type, "" when accepted
	Message  string
}

// TestUpdateRefusedInWorkflow: the update's validator refuses, in
// CONDITIONAL_OFFER, an event the table has no row for, a driven state's
// handler's event, the timer's own event, and an event whose payload does
// not decode, each with its kind and the reason, and the SDK refuses an
// event the machine does not have (no update has its name); none of
// them reaches the history. The authorization is accepted and moves the run
// at once.
func TestUpdateRefusedInWorkflow(t *testing.T) {
	t.Parallel()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	temporal.Register(env, driverFor(&local.Screening{}).Driver())
	var got []updateOutcome
	send := func(msg temporal.EventMessage) {
		env.UpdateWorkflow(msg.Name, "", &testsuite.TestUpdateCallback{
			OnAccept: func() { got = append(got, updateOutcome{Accepted: true}) },
			OnReject: func(err error) {
				var app *sdktemporal.ApplicationError
				if !errors.As(err, &app) {
					// The SDK's own refusal of an update the workflow
					// has no handler for, its known updates in any order.
					msg, _, _ := strings.Cut(err.Error(), " KnownUpdates=")
					got = append(got, updateOutcome{Message: msg})
					return
				}
				got = append(got, updateOutcome{Type: app.Type(), Message: app.Message()})
			},
			OnComplete: func(_ any, err error) {
				if err != nil {
					t.Errorf("accepted update failed: %v", err)
				}
			},
		}, msg)
	}
	env.RegisterDelayedCallback(func() {
		send(temporal.EventMessage{Name: "BackgroundCheckCompleted", Payload: json.RawMessage(`{"adverseInfo":false}`)})
		send(temporal.EventMessage{Name: "AssessmentCompleted", Payload: json.RawMessage(`{"approved":true}`)})
		send(temporal.EventMessage{Name: "AuthorizationTimeout", Payload: json.RawMessage(`{}`)})
		send(temporal.EventMessage{Name: "Approve", Payload: json.RawMessage(`{}`)})
		send(temporal.EventMessage{Name: "BackgroundCheckAuthorizationSigned", Payload: json.RawMessage(`{"signedAt":5}`)})
		send(authorization(t))
	}, time.Hour)
	env.ExecuteWorkflow(fcha.Type, start(t, "clean"))
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	want := []updateOutcome{
		{Type: "ILLEGAL_TRANSITION", Message: "nyc-application-compliance: illegal transition: state CONDITIONAL_OFFER has no transition on event BackgroundCheckCompleted"},
		{Type: "INTERNAL_EVENT", Message: "callers may not send the event: nyc-application-compliance v1 in state CONDITIONAL_OFFER: AssessmentCompleted is returned by the handler of INDIVIDUALIZED_ASSESSMENT; declare it external to let callers send it"},
		{Type: "INTERNAL_EVENT", Message: "callers may not send the event: nyc-application-compliance v1 in state CONDITIONAL_OFFER: AuthorizationTimeout is fired by the timer of CONDITIONAL_OFFER; declare it external to let callers send it"},
		{Message: "unknown update Approve."},
		{Type: "UNKNOWN_EVENT", Message: "nyc-application-compliance: decode event BackgroundCheckAuthorizationSigned: Time.UnmarshalJSON: input is not a JSON string"},
		{Accepted: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("updates (-want +got):\n%s", diff)
	}
	var res temporal.Result
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	wantMoves := []move{
		{"PREQUALIFICATION", "CONDITIONAL_OFFER", "PrequalificationCompleted"},
		{"CONDITIONAL_OFFER", "BACKGROUND_CHECK_ALLOWED", "BackgroundCheckAuthorizationSigned"},
		{"BACKGROUND_CHECK_ALLOWED", "APPROVED", "BackgroundCheckCompleted"},
	}
	if diff := cmp.Diff(wantMoves, moves(res.History)); diff != "" || len(res.Refused) != 0 {
		t.Errorf("refused %q; transitions (-want +got):\n%s", res.Refused, diff)
	}
}

// TestSignalOfTimerEventRefused: the timer's event sent as a signal is
// refused and logged, as the PostgreSQL engine's Signal refuses it; the
// timer still fires at seven days.
func TestSignalOfTimerEventRefused(t *testing.T) {
	t.Parallel()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	temporal.Register(env, driverFor(&local.Screening{}).Driver())
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow("AuthorizationTimeout", temporal.EventMessage{Name: "AuthorizationTimeout", Payload: json.RawMessage(`{}`)})
	}, time.Hour)
	begin := env.Now()
	env.ExecuteWorkflow(fcha.Type, start(t, "clean"))
	var res temporal.Result
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"AuthorizationTimeout: callers may not send the event: nyc-application-compliance v1 in state CONDITIONAL_OFFER: AuthorizationTimeout is fired by the timer of CONDITIONAL_OFFER; declare it external to let callers send it"}, res.Refused); diff != "" {
		t.Errorf("refused (-want +got):\n%s", diff)
	}
	if got := env.Now().Sub(begin); got < compliance.AuthorizationWindow {
		t.Errorf("denied after %v, want the 7-day timer", got)
	}
}

// blockingScreening is a screening provider whose check does not answer
// until it is released or its context ends.
type blockingScreening struct{ release chan struct{} }

func (s blockingScreening) Check(ctx context.Context, _ compliance.ScreeningRequest) (compliance.ScreeningReport, error) {
	select {
	case <-s.release:
		return compliance.ScreeningReport{}, nil
	case <-ctx.Done():
		return compliance.ScreeningReport{}, ctx.Err()
	}
}

// TestUpdateWhileHandlerRuns: an event sent by update while the state's
// handler runs, and that the state accepts, moves the run; the handler's
// activity is cancelled and its event (a clean check, which would have
// approved) dropped, as the PostgreSQL engine refuses a handler's
// transition after a signal.
func TestUpdateWhileHandlerRuns(t *testing.T) {
	t.Parallel()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	release := make(chan struct{})
	defer close(release)
	wf := compliance.New(nil, nil, compliance.Adapters{
		Prequalifier: &local.Prequalifier{}, Screening: blockingScreening{release: release},
		Notifier: &local.Notifier{}, Assessor: &local.Assessor{},
	})
	temporal.Register(env, wf.Driver())
	env.RegisterDelayedCallback(func() { env.SignalWorkflow("BackgroundCheckAuthorizationSigned", authorization(t)) }, time.Hour)
	raw, err := json.Marshal(fcha.BackgroundCheckCompleted{AdverseInfo: true, Findings: []string{"reported by the provider's callback"}})
	if err != nil {
		t.Fatal(err)
	}
	accepted := false
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow("BackgroundCheckCompleted", "", &testsuite.TestUpdateCallback{
			OnAccept:   func() { accepted = true },
			OnReject:   func(err error) { t.Errorf("update rejected: %v", err) },
			OnComplete: func(any, error) {},
		}, temporal.EventMessage{Name: "BackgroundCheckCompleted", Payload: raw})
	}, time.Hour+time.Millisecond)
	env.ExecuteWorkflow(fcha.Type, start(t, "clean"))
	var res temporal.Result
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	want := []move{
		{"PREQUALIFICATION", "CONDITIONAL_OFFER", "PrequalificationCompleted"},
		{"CONDITIONAL_OFFER", "BACKGROUND_CHECK_ALLOWED", "BackgroundCheckAuthorizationSigned"},
		{"BACKGROUND_CHECK_ALLOWED", "INDIVIDUALIZED_ASSESSMENT", "BackgroundCheckCompleted"},
		{"INDIVIDUALIZED_ASSESSMENT", "APPROVED", "AssessmentCompleted"},
	}
	if diff := cmp.Diff(want, moves(res.History)); diff != "" || !accepted {
		t.Errorf("accepted %v; transitions (-want +got):\n%s", accepted, diff)
	}
}

// downPrequalifier is a prequalifier whose database is down: every call
// fails, with code PREQUAL_DB_DOWN, its error passed through wrap.
type downPrequalifier struct {
	calls atomic.Int32
	wrap  func(error) error
}

func (p *downPrequalifier) Prequalify(context.Context, compliance.Application) (compliance.Prequalification, error) {
	p.calls.Add(1)
	return compliance.Prequalification{}, p.wrap(runtime.WithCode("PREQUAL_DB_DOWN", errors.New("prequalification database unavailable")))
}

// TestFCHAPrequalifierDown: a prequalifier that always fails is called 5
// times (the database policy of PREQUALIFICATION, 500 ms, 1 s, 2 s and 4 s
// apart), after which the run ends FAILED, status failed, with the error's
// code and message in its result, as on the PostgreSQL engine
// (compliance.TestExhaustedRunFails); an error marked runtime.NoRetry is
// not tried again.
func TestFCHAPrequalifierDown(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		wrap  func(error) error
		calls int32
		took  time.Duration
	}{
		{"retried by the state's policy", func(err error) error { return err }, 5, 7500 * time.Millisecond},
		{"marked NoRetry", runtime.NoRetry, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestWorkflowEnvironment()
			pq := &downPrequalifier{wrap: tc.wrap}
			temporal.Register(env, compliance.New(nil, nil, compliance.Adapters{Prequalifier: pq}).Driver())
			begin := env.Now()
			env.ExecuteWorkflow(fcha.Type, start(t, "clean"))
			if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
				t.Fatalf("workflow completed %v, error %v", env.IsWorkflowCompleted(), env.GetWorkflowError())
			}
			var res temporal.Result
			if err := env.GetWorkflowResult(&res); err != nil {
				t.Fatal(err)
			}
			type got struct {
				State, Status, ErrorCode, Error string
				Moves                           []move
				Calls                           int32
			}
			want := got{State: "FAILED", Status: "failed", ErrorCode: "PREQUAL_DB_DOWN", Error: "PREQUAL_DB_DOWN: prequalification database unavailable",
				Moves: []move{{"PREQUALIFICATION", "FAILED", "RetriesExhausted"}}, Calls: tc.calls}
			if diff := cmp.Diff(want, got{res.State, string(res.Status), res.ErrorCode, res.Error, moves(res.History), pq.calls.Load()}); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if took := env.Now().Sub(begin); took < tc.took || took > tc.took+time.Minute {
				t.Errorf("workflow time %v, want about %v", took, tc.took)
			}
		})
	}
}

// warnings is a workflow logger that keeps the warnings.
type warnings struct {
	mu  sync.Mutex
	got []string
}

func (w *warnings) Debug(string, ...any) {}
func (w *warnings) Info(string, ...any)  {}
func (w *warnings) Error(string, ...any) {}
func (w *warnings) Warn(msg string, _ ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.got = append(w.got, msg)
}

// TestSignalsDrainedAtCompletion: a signal still buffered when the run
// finishes (a second authorization, sent with the first, that no wait
// state read) is refused as sent to a finished run and logged, one of an
// event the machine does not have as an unknown event, and the SDK has no
// unhandled signal to warn about.
func TestSignalsDrainedAtCompletion(t *testing.T) {
	t.Parallel()
	var suite testsuite.WorkflowTestSuite
	logger := &warnings{}
	suite.SetLogger(logger)
	env := suite.NewTestWorkflowEnvironment()
	env.SetStartTime(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	temporal.Register(env, driverFor(&local.Screening{}).Driver())
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow("Approve", temporal.EventMessage{Name: "Approve"})
		env.SignalWorkflow("BackgroundCheckAuthorizationSigned", authorization(t))
		env.SignalWorkflow("BackgroundCheckAuthorizationSigned", authorization(t))
	}, time.Hour)
	env.ExecuteWorkflow(fcha.Type, start(t, "clean"))
	var res temporal.Result
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"BackgroundCheckAuthorizationSigned: run is finished: the run finished in APPROVED on BackgroundCheckCompleted at 2026-03-02T10:00:00Z",
		`Approve: nyc-application-compliance: unknown event "Approve"`,
	}
	if diff := cmp.Diff(want, res.Refused); diff != "" {
		t.Errorf("refused (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"event refused", "event refused"}, logger.got); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}
