package temporal_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/google/uuid"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/fsmgen/fsmgen/contrib/temporal"
	"github.com/fsmgen/fsmgen/contrib/temporal/devserver"
	"github.com/fsmgen/fsmgen/machines/compliance"
	"github.com/fsmgen/fsmgen/machines/compliance/fcha"
	"github.com/fsmgen/fsmgen/machines/compliance/local"
	"github.com/fsmgen/fsmgen/machines/shop"
	"github.com/fsmgen/fsmgen/machines/shop/order"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
)

// The dev server shared by the tests of this binary: started by the first
// test that asks for it, stopped by TestMain.
var shared struct {
	once sync.Once
	s    *devserver.Server
	err  error
}

func TestMain(m *testing.M) {
	code := pgtest.Run(m)
	if shared.s != nil {
		shared.s.Stop()
	}
	os.Exit(code)
}

// sharedServer returns the binary's dev server, starting it once.
func sharedServer(t *testing.T) *devserver.Server {
	t.Helper()
	shared.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		shared.s, shared.err = devserver.Start(ctx)
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.s
}

// bob is a user who owns no run.
const bob = "0b0b0b0b-0000-4000-8000-000000000000"

// fixture is a runner on the shared server with a worker of its own task
// queue, which runs FCHA (with adapters) and the shop's orders.
type fixture struct {
	c      client.Client
	runner *temporal.Runner
	worker worker.Worker
	queue  string
}

// newFixture returns the fixture and a context that ends with the test,
// or after two minutes.
func newFixture(t *testing.T, adapters compliance.Adapters) (context.Context, *fixture) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	c := sharedServer(t).Client
	queue := "runner-" + uuid.NewString()
	w := worker.New(c, queue, worker.Options{})
	fchaDriver := compliance.New(nil, nil, adapters).Driver()
	orderDriver := (&shop.Workflow{Warehouse: warehouse{release: make(chan struct{})}, Payments: payments{}}).Driver()
	temporal.Register(w, fchaDriver)
	temporal.Register(w, orderDriver)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	r, err := temporal.NewRunner(c, temporal.RunnerConfig{TaskQueue: queue, Definitions: []runtime.Definition{fchaDriver.Definition(), orderDriver.Definition()}})
	if err != nil {
		t.Fatal(err)
	}
	return ctx, &fixture{c: c, runner: r, worker: w, queue: queue}
}

// start starts the run req asks for, failing the test on an error.
func (f *fixture) start(ctx context.Context, t *testing.T, req runtime.StartRequest) runtime.Run {
	t.Helper()
	res, err := f.runner.Start(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return res.Run
}

// order is a start request of a shop order, in tenant.
func orderRequest(tenant string) runtime.StartRequest {
	return runtime.StartRequest{Type: order.Type, IdempotencyKey: "order/" + uuid.NewString(), Owner: runtime.Owner{TenantID: tenant, UserID: alice},
		Input: shop.Input{Items: []string{"book"}, TotalCents: 1200}}
}

// testAdapters are FCHA's adapters for the runner's tests: applicant
// "bad-credit" fails prequalification (DENIED), "flaky" fails it once with
// an error not retried (FAILED, then prequalified when restarted), the
// others pass and have a clean background check.
func testAdapters() compliance.Adapters {
	return compliance.Adapters{
		Prequalifier: &flakyPrequalifier{Prequalifier: &local.Prequalifier{Fail: map[string]string{"bad-credit": "income below 40x monthly rent"}},
			failures: map[string]int{"flaky": 1}},
		Screening: &local.Screening{Findings: findings()},
		Notifier:  &local.Notifier{},
		Assessor:  &local.Assessor{},
	}
}

// app is an FCHA start request for applicant, in tenant, with a key of
// the test's own.
func app(t *testing.T, applicant, tenant string) runtime.StartRequest {
	return runtime.StartRequest{Type: fcha.Type, IdempotencyKey: t.Name() + "/" + applicant + "/" + uuid.NewString(),
		Owner: runtime.Owner{TenantID: tenant, UserID: alice},
		Input: compliance.Application{ApplicationID: "app_" + applicant, ApplicantID: applicant, OrganizationID: tenant, MarketID: "NYC"}}
}

// eventually polls cond until it holds, or fails the test after a minute.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	delay := 10 * time.Millisecond
	for {
		ok, got := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still %s after a minute", what, got)
		}
		time.Sleep(delay)
		delay = min(2*delay, 250*time.Millisecond)
	}
}

// getState polls the run until it is in state.
func getState(ctx context.Context, t *testing.T, r runtime.Runner, id, state string) runtime.Run {
	t.Helper()
	var run runtime.Run
	eventually(t, "run "+id+" in "+state, func() (bool, string) {
		var err error
		run, err = r.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return run.State == state, run.State
	})
	return run
}

func TestNewRunnerConfig(t *testing.T) {
	t.Parallel()
	c := sharedServer(t).Client
	def := fcha.Definition()
	bad := def
	bad.Initial = "NOWHERE"
	for _, tc := range []struct {
		name string
		c    client.Client
		cfg  temporal.RunnerConfig
		want string
	}{
		{"empty", nil, temporal.RunnerConfig{}, "temporal: new runner: invalid config: no client; no task queue; no definitions"},
		{"invalid definition and twice a type", c, temporal.RunnerConfig{TaskQueue: "q", Definitions: []runtime.Definition{def, bad, def}},
			"temporal: new runner: invalid config: definition nyc-application-compliance v1: " + bad.Validate().Error() +
				"; definitions nyc-application-compliance v1 and v1: one version per type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := temporal.NewRunner(tc.c, tc.cfg)
			if !errors.Is(err, runtime.ErrInvalidConfig) || err.Error() != tc.want {
				t.Errorf("NewRunner = %v\nwant %s", err, tc.want)
			}
		})
	}
}

// TestStartOutcomes: each branch of Start on Temporal, by the run that
// the (type, key)'s workflow id names: created, running (with the same
// id), cached with its result, restarted after a failure (a new workflow
// run, attempt 2, the first run's input and creation time), cancelled.
func TestStartOutcomes(t *testing.T) {
	t.Parallel()
	ctx, f := newFixture(t, testAdapters())
	r := f.runner

	t.Run("created then running", func(t *testing.T) {
		req := app(t, "flaky", "org_outcomes")
		req.Policy = map[string]int{"retry_max": 2}
		first, err := r.Start(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if first.Outcome != runtime.StartCreated || first.Run.ID != temporal.RunID(fcha.Type, req.IdempotencyKey) ||
			first.Run.State != "PREQUALIFICATION" || first.Run.Attempt != 1 || first.Run.Version != fcha.Version {
			t.Errorf("first start = %+v", first)
		}
		failed, err := r.Wait(ctx, first.Run.ID)
		if err != nil {
			t.Fatal(err)
		}
		type got struct {
			State   string
			Status  runtime.Status
			Attempt int
			Code    string
		}
		if diff := cmp.Diff(got{"FAILED", runtime.StatusFailed, 1, "PREQUAL_DB_DOWN"},
			got{failed.State, failed.Status, failed.Attempt, failed.Result.ErrorCode}); diff != "" {
			t.Errorf("failed run (-want +got):\n%s", diff)
		}

		// Restarted by another user, with another input and no policy:
		// the first attempt's owner, input and policy stay, as on the
		// engine.
		restart := req
		restart.Owner = runtime.Owner{TenantID: "org_other", UserID: bob}
		restart.Input, restart.Policy = compliance.Application{ApplicationID: "other"}, nil
		again, err := r.Start(ctx, restart)
		if err != nil {
			t.Fatal(err)
		}
		type attempt struct {
			Outcome       runtime.StartOutcome
			ID            string
			Attempt       int
			Owner         runtime.Owner
			Created       time.Time
			Input, Policy string
		}
		view := func(s runtime.Started) attempt {
			return attempt{s.Outcome, s.Run.ID, s.Run.Attempt, s.Run.Owner, s.Run.CreatedAt, string(s.Run.Input), string(s.Run.Policy)}
		}
		want := view(first)
		want.Outcome, want.Attempt = runtime.StartRestarted, 2
		if diff := cmp.Diff(want, view(again)); diff != "" {
			t.Errorf("restart (-want +got):\n%s", diff)
		}
		offered := getState(ctx, t, r, first.Run.ID, "CONDITIONAL_OFFER")
		if diff := cmp.Diff(want, view(runtime.Started{Outcome: runtime.StartRestarted, Run: offered}), cmpopts.EquateApproxTime(time.Millisecond)); diff != "" ||
			offered.Status != runtime.StatusRunning {
			t.Errorf("restarted run, %s (-want +got):\n%s", offered.Status, diff)
		}
		running, err := r.Start(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if running.Outcome != runtime.StartRunning || running.Run.ID != first.Run.ID || running.Run.State != "CONDITIONAL_OFFER" || running.Run.Attempt != 2 {
			t.Errorf("start of a run under way = %+v", running)
		}
		// The failed attempt is not listed; the workflow id lists once.
		eventually(t, "one run listed for the key", func() (bool, string) {
			runs, err := r.List(ctx, runtime.Filter{Type: fcha.Type, IdempotencyKey: req.IdempotencyKey})
			if err != nil {
				t.Fatal(err)
			}
			states := states(runs)
			return slices.Equal(states, []string{"CONDITIONAL_OFFER"}), fmt.Sprint(states)
		})
	})

	t.Run("cached", func(t *testing.T) {
		req := app(t, "bad-credit", "org_outcomes")
		first, err := r.Start(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		done, err := r.Wait(ctx, first.Run.ID)
		if err != nil {
			t.Fatal(err)
		}
		again, err := r.Start(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if again.Outcome != runtime.StartCached || again.Run.State != "DENIED" || again.Run.Result == nil || again.Run.Result.Outcome != "denied" ||
			again.Run.Attempt != 1 {
			t.Errorf("start of a succeeded run = %+v", again)
		}
		if diff := cmp.Diff(done, again.Run); diff != "" {
			t.Errorf("cached run differs from the waited one (-waited +cached):\n%s", diff)
		}
	})

	t.Run("cancelled", func(t *testing.T) {
		req := orderRequest("org_outcomes")
		first, err := r.Start(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Cancel(ctx, first.Run.ID, alice); err != nil {
			t.Fatal(err)
		}
		again, err := r.Start(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if again.Outcome != runtime.StartCancelled || again.Run.State != "CANCELLED" || again.Run.Status != runtime.StatusCancelled ||
			again.Run.Result.ErrorCode != "CANCELLED" {
			t.Errorf("start of a cancelled run = %+v", again)
		}
	})

	t.Run("eta", func(t *testing.T) {
		// No shop order has succeeded: no ETA.
		req := orderRequest("org_outcomes")
		f.start(ctx, t, req)
		res, err := r.Start(ctx, req)
		if err != nil || res.Outcome != runtime.StartRunning || !res.ETA.IsZero() {
			t.Errorf("start of an order under way = %+v, %v; want running without an ETA", res, err)
		}
		// FCHA runs have succeeded (cached's, at least) once visibility
		// lists them: the ETA is the run's start plus their median, a
		// matter of seconds here.
		eventually(t, "a succeeded run listed", func() (bool, string) {
			runs, err := r.List(ctx, runtime.Filter{Type: fcha.Type, Status: runtime.StatusSucceeded, Limit: 1})
			return err == nil && len(runs) == 1, fmt.Sprint(len(runs), err)
		})
		offered := app(t, "clean", "org_outcomes")
		f.start(ctx, t, offered)
		res, err = r.Start(ctx, offered)
		if err != nil || res.Outcome != runtime.StartRunning || !res.ETA.After(res.Run.StartedAt) || res.ETA.After(res.Run.StartedAt.Add(time.Minute)) {
			t.Errorf("start of an application under way = %+v, %v; want running with an ETA after its start", res, err)
		}
	})

	t.Run("concurrent", func(t *testing.T) {
		req := app(t, "clean", "org_outcomes")
		outcomes := make([]runtime.StartOutcome, 8)
		ids := make([]string, 8)
		var wg sync.WaitGroup
		for i := range outcomes {
			wg.Go(func() {
				res, err := r.Start(ctx, req)
				if err != nil {
					t.Error(err)
				}
				outcomes[i], ids[i] = res.Outcome, res.Run.ID
			})
		}
		wg.Wait()
		slices.Sort(outcomes)
		want := []runtime.StartOutcome{runtime.StartCreated}
		for range 7 {
			want = append(want, runtime.StartRunning)
		}
		if diff := cmp.Diff(want, outcomes); diff != "" {
			t.Errorf("outcomes (-want +got):\n%s", diff)
		}
		if ids[0] == "" || slices.ContainsFunc(ids, func(id string) bool { return id != ids[0] }) {
			t.Errorf("ids %v, want one", ids)
		}
	})
}

// flakyPrequalifier fails the first calls for an applicant of failures
// with an error it does not retry; the Prequalifier prequalifies the
// others.
type flakyPrequalifier struct {
	compliance.Prequalifier
	mu       sync.Mutex
	failures map[string]int
}

func (p *flakyPrequalifier) Prequalify(ctx context.Context, a compliance.Application) (compliance.Prequalification, error) {
	p.mu.Lock()
	fail := p.failures[a.ApplicantID] > 0
	p.failures[a.ApplicantID]--
	p.mu.Unlock()
	if fail {
		return compliance.Prequalification{}, runtime.NoRetry(runtime.WithCode("PREQUAL_DB_DOWN", errors.New("prequalification database unavailable")))
	}
	return p.Prequalifier.Prequalify(ctx, a)
}

func states(runs []runtime.Run) []string {
	var out []string
	for _, r := range runs {
		out = append(out, r.State)
	}
	return out
}

// TestStartRefused: requests that Start refuses before anything runs, and
// ResolvePolicy, called only for a run about to be created or restarted,
// whose error starts nothing.
func TestStartRefused(t *testing.T) {
	t.Parallel()
	ctx, f := newFixture(t, testAdapters())
	r := f.runner
	enter := app(t, "clean", "t")
	enter.Enter = func(context.Context, runtime.Run) error { return nil }
	v2 := app(t, "clean", "t")
	v2.Version = 2
	other := app(t, "clean", "t")
	other.Type = "nope"
	badUser := app(t, "clean", "t")
	badUser.UserID = "bob"
	noTenant := app(t, "clean", "")
	badInput := app(t, "clean", "t")
	badInput.Input = func() {}
	notJSON := app(t, "clean", "t")
	notJSON.Policy = json.RawMessage(`{"maxAttempts":`)
	for _, tc := range []struct {
		name     string
		req      runtime.StartRequest
		sentinel error
		want     string
	}{
		{"Enter", enter, runtime.ErrInvalidInput, "invalid input: StartRequest.Enter is not supported on Temporal: a run's workflow runs the entry actions of its initial states itself"},
		{"version", v2, runtime.ErrNotRegistered, "definition not registered with this engine: nyc-application-compliance v2 (the runner starts v1)"},
		{"type", other, runtime.ErrNotRegistered, "definition not registered with this engine: nope (the runner starts nyc-application-compliance, shop_order)"},
		{"user id", badUser, runtime.ErrInvalidInput, `invalid input: user id "bob" is not a UUID`},
		{"tenant", noTenant, runtime.ErrInvalidInput, "invalid input: type, idempotency key and tenant id are required"},
		{"input", badInput, runtime.ErrPayload, "bad payload: input of type func() does not encode to JSON: json: unsupported type: func()"},
		{"policy", notJSON, runtime.ErrPayload, "bad payload: policy is not valid JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := r.Start(ctx, tc.req)
			want := "temporal: start " + tc.req.Type + "/" + tc.req.IdempotencyKey + ": " + tc.want
			if !errors.Is(err, tc.sentinel) || err == nil || err.Error() != want {
				t.Errorf("Start = %v\nwant %s", err, want)
			}
		})
	}

	t.Run("ResolvePolicy", func(t *testing.T) {
		req := app(t, "clean", "t")
		req.IdempotencyKey = "policy/" + uuid.NewString()
		down := errors.New("policy engine down")
		req.ResolvePolicy = func(context.Context) (json.RawMessage, error) { return nil, down }
		id := temporal.RunID(req.Type, req.IdempotencyKey)
		if _, err := r.Start(ctx, req); !errors.Is(err, down) || err.Error() != "temporal: start "+req.Type+"/"+req.IdempotencyKey+" run "+id+": policy engine down" {
			t.Errorf("Start with a failing policy = %v", err)
		}
		if _, err := r.Get(ctx, id); !errors.Is(err, runtime.ErrRunNotFound) {
			t.Errorf("Get after a refused start = %v, want run not found", err)
		}
		calls := 0
		req.ResolvePolicy = func(context.Context) (json.RawMessage, error) {
			calls++
			return json.RawMessage(`{"retry_max":0}`), nil
		}
		res, err := r.Start(ctx, req)
		if err != nil || string(res.Run.Policy) != `{"retry_max":0}` {
			t.Fatalf("Start = %+v, %v", res, err)
		}
		if res, err = r.Start(ctx, req); err != nil || res.Outcome != runtime.StartRunning {
			t.Fatalf("Start again = %+v, %v", res, err)
		}
		got, err := r.Get(ctx, id)
		if err != nil || calls != 1 || string(got.Policy) != `{"retry_max":0}` {
			t.Errorf("policy resolved %d times, stored %s (%v); want once", calls, got.Policy, err)
		}
	})
}

// refusal is what a test expects of a refused call: the sentinels the
// error matches and its message.
type refusal struct {
	sentinels []error
	message   string
}

func checkRefusal(t *testing.T, what string, err error, want refusal) {
	t.Helper()
	if err == nil {
		t.Errorf("%s succeeded, want %s", what, want.message)
		return
	}
	for _, s := range want.sentinels {
		if !errors.Is(err, s) {
			t.Errorf("%s = %v, does not match %v", what, err, s)
		}
	}
	var runErr *runtime.RunError
	if !errors.As(err, &runErr) || err.Error() != want.message {
		t.Errorf("%s = %v\nwant %s", what, err, want.message)
	}
}

func authorize() fcha.BackgroundCheckAuthorizationSigned {
	return fcha.BackgroundCheckAuthorizationSigned{SignedAt: time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC), SignedBy: "user_456"}
}

// TestSignal: an event the run takes moves it, and the run comes back as
// the event left it; refused events are errors matching
// runtime.ErrSignalRefused and the cause's sentinel, with the run named.
func TestSignal(t *testing.T) {
	t.Parallel()
	ctx, f := newFixture(t, testAdapters())
	r := f.runner
	id := f.start(ctx, t, app(t, "clean", "org_signal")).ID
	getState(ctx, t, r, id, "CONDITIONAL_OFFER")
	orderID := f.start(ctx, t, orderRequest("org_signal")).ID
	unknown := uuid.NewString()
	for _, tc := range []struct {
		name string
		id   string
		ev   runtime.Event
		want refusal
	}{
		{"illegal", id, fcha.BackgroundCheckCompleted{}, refusal{[]error{runtime.ErrSignalRefused, runtime.ErrIllegalTransition},
			"temporal: signal BackgroundCheckCompleted run " + id + ": nyc-application-compliance: illegal transition: state CONDITIONAL_OFFER has no transition on event BackgroundCheckCompleted"}},
		{"handler's event", id, fcha.AssessmentCompleted{Approved: true}, refusal{[]error{runtime.ErrSignalRefused, runtime.ErrNotCallerEvent},
			"temporal: signal AssessmentCompleted run " + id + ": callers may not send the event: nyc-application-compliance v1 in state CONDITIONAL_OFFER: " +
				"AssessmentCompleted is returned by the handler of INDIVIDUALIZED_ASSESSMENT; declare it external to let callers send it"}},
		{"timer's event", id, fcha.AuthorizationTimeout{}, refusal{[]error{runtime.ErrSignalRefused, runtime.ErrNotCallerEvent},
			"temporal: signal AuthorizationTimeout run " + id + ": callers may not send the event: nyc-application-compliance v1 in state CONDITIONAL_OFFER: " +
				"AuthorizationTimeout is fired by the timer of CONDITIONAL_OFFER; declare it external to let callers send it"}},
		{"another machine's event", id, order.Pay{PaymentRef: "p"}, refusal{[]error{runtime.ErrSignalRefused, runtime.ErrUnknownEvent},
			"temporal: signal Pay run " + id + `: unknown event "Pay"`}},
		{"guards", orderID, order.Cancel{UserID: "bob"}, refusal{[]error{runtime.ErrSignalRefused, runtime.ErrGuardRejected},
			"temporal: signal Cancel run " + orderID + ": shop_order: event Cancel in state PENDING_PAYMENT rejected by guards [UserOwnsRun]"}},
		{"unknown run", unknown, authorize(), refusal{[]error{runtime.ErrRunNotFound},
			"temporal: signal BackgroundCheckAuthorizationSigned run " + unknown + ": run not found"}},
		{"not a UUID", "nope", authorize(), refusal{[]error{runtime.ErrInvalidID},
			"temporal: signal BackgroundCheckAuthorizationSigned run nope: malformed run id: invalid UUID length: 4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := r.Signal(ctx, tc.id, tc.ev)
			checkRefusal(t, "Signal", err, tc.want)
		})
	}

	run, err := r.Signal(ctx, id, authorize())
	if err != nil {
		t.Fatal(err)
	}
	if run.ID != id || !slices.Contains([]string{"BACKGROUND_CHECK_ALLOWED", "APPROVED"}, run.State) || run.RowVersion < 2 {
		t.Errorf("signalled run = %+v, want BACKGROUND_CHECK_ALLOWED or later", run)
	}
	done, err := r.Wait(ctx, id)
	if err != nil || done.State != "APPROVED" {
		t.Fatalf("Wait = %+v, %v", done, err)
	}
	_, err = r.Signal(ctx, id, authorize())
	checkRefusal(t, "Signal of a finished run", err, refusal{[]error{runtime.ErrSignalRefused, runtime.ErrRunFinished},
		"temporal: signal BackgroundCheckAuthorizationSigned run " + id + ": run is finished: the run finished in APPROVED on BackgroundCheckCompleted at " +
			done.UpdatedAt.UTC().Format(time.RFC3339)})
}

// TestCancel: only the run's owner cancels a run, through the machine's
// cancel event; a machine without one, and a finished run, refuse.
func TestCancel(t *testing.T) {
	t.Parallel()
	ctx, f := newFixture(t, testAdapters())
	r := f.runner
	id := f.start(ctx, t, orderRequest("org_cancel")).ID
	_, err := r.Cancel(ctx, id, bob)
	checkRefusal(t, "Cancel by another user", err, refusal{[]error{runtime.ErrNotOwner},
		"temporal: cancel run " + id + `: not authorized: not the run's owner: user "` + bob + `" may not cancel a run of user "` + alice + `"`})

	run, err := r.Cancel(ctx, id, alice)
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		State  string
		Status runtime.Status
		UserID string
	}
	if diff := cmp.Diff(got{"CANCELLED", runtime.StatusCancelled, alice}, got{run.State, run.Status, run.UserID}); diff != "" {
		t.Errorf("cancelled run (-want +got):\n%s", diff)
	}
	done, err := r.Wait(ctx, id)
	if err != nil || done.Result == nil || done.Result.ErrorCode != "CANCELLED" || done.Result.ErrorDetail != "cancelled by user "+alice {
		t.Errorf("Wait = %+v (result %+v), %v", done, done.Result, err)
	}
	_, err = r.Cancel(ctx, id, alice)
	checkRefusal(t, "Cancel of a finished run", err, refusal{[]error{runtime.ErrRunFinished},
		"temporal: cancel run " + id + ": run is finished: the run finished in CANCELLED on Cancel at " + done.UpdatedAt.UTC().Format(time.RFC3339)})

	fchaID := f.start(ctx, t, app(t, "clean", "org_cancel")).ID
	getState(ctx, t, r, fchaID, "CONDITIONAL_OFFER")
	_, err = r.Cancel(ctx, fchaID, alice)
	checkRefusal(t, "Cancel of a machine without a cancel event", err, refusal{[]error{runtime.ErrNoCancelEvent},
		"temporal: cancel run " + fchaID + ": the machine has no cancel event: nyc-application-compliance v1 declares none"})
}

// TestGetAndWait: Get reads a run under way (query) and a closed one
// (its result, from the history) with no worker running; Wait returns
// when the run ends, or with ctx's error.
func TestGetAndWait(t *testing.T) {
	t.Parallel()
	ctx, f := newFixture(t, testAdapters())
	r := f.runner
	denied := f.start(ctx, t, app(t, "bad-credit", "org_get"))
	req := app(t, "clean", "org_get")
	req.CorrelationID = "0c0c0c0c-0000-4000-8000-000000000000"
	req.Policy = map[string]int{"retry_max": 3}
	offered := f.start(ctx, t, req)

	short, stop := context.WithTimeout(ctx, 100*time.Millisecond)
	_, err := r.Wait(short, offered.ID)
	stop()
	checkRefusal(t, "Wait past its deadline", err, refusal{[]error{context.DeadlineExceeded},
		"temporal: wait run " + offered.ID + ": context deadline exceeded"})

	closed, err := r.Wait(ctx, denied.ID)
	if err != nil {
		t.Fatal(err)
	}
	running := getState(ctx, t, r, offered.ID, "CONDITIONAL_OFFER")
	type view struct {
		ID, Type, Key, State string
		Status               runtime.Status
		Version, Attempt     int
		Owner                runtime.Owner
		Input, Policy        string
		RowVersion           int64
		Result               *runtime.Result
		Finished             bool
	}
	viewOf := func(run runtime.Run) view {
		if run.Result != nil {
			res := *run.Result
			res.DurationMS = 0
			run.Result = &res
		}
		return view{run.ID, run.Type, run.IdempotencyKey, run.State, run.Status, run.Version, run.Attempt, run.Owner, string(run.Input), string(run.Policy),
			run.RowVersion, run.Result, !run.FinishedAt.IsZero()}
	}
	want := view{ID: offered.ID, Type: fcha.Type, Key: req.IdempotencyKey, State: "CONDITIONAL_OFFER", Status: runtime.StatusRunning, Version: 1, Attempt: 1,
		Owner: req.Owner, Input: `{"applicationId":"app_clean","applicantId":"clean","propertyId":"","unitId":"","organizationId":"org_get","marketId":"NYC"}`,
		Policy: `{"retry_max":3}`, RowVersion: 1}
	if diff := cmp.Diff(want, viewOf(running)); diff != "" {
		t.Errorf("running run (-want +got):\n%s", diff)
	}
	if !running.UpdatedAt.After(running.StartedAt) || running.CreatedAt.After(running.StartedAt) {
		t.Errorf("running run's times: created %v, started %v, updated %v", running.CreatedAt, running.StartedAt, running.UpdatedAt)
	}

	f.worker.Stop()
	got, err := r.Get(ctx, denied.ID)
	if err != nil {
		t.Fatal(err)
	}
	wantClosed := view{ID: denied.ID, Type: fcha.Type, Key: denied.IdempotencyKey, State: "DENIED", Status: runtime.StatusSucceeded, Version: 1, Attempt: 1,
		Owner: denied.Owner, Input: string(denied.Input), RowVersion: 1, Finished: true,
		Result: &runtime.Result{Status: runtime.StatusSucceeded, Outcome: "denied", RunID: denied.ID, Attempt: 1}}
	if diff := cmp.Diff(wantClosed, viewOf(got)); diff != "" {
		t.Errorf("closed run read with no worker (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(closed, got); diff != "" {
		t.Errorf("Get differs from Wait (-wait +get):\n%s", diff)
	}
	if got.Result.DurationMS != got.FinishedAt.Sub(got.StartedAt).Milliseconds() {
		t.Errorf("duration %d ms, want %v", got.Result.DurationMS, got.FinishedAt.Sub(got.StartedAt))
	}
	unknown := uuid.NewString()
	_, err = r.Get(ctx, unknown)
	checkRefusal(t, "Get of an unknown run", err, refusal{[]error{runtime.ErrRunNotFound}, "temporal: get run " + unknown + ": run not found"})
	_, err = r.Wait(ctx, unknown)
	checkRefusal(t, "Wait of an unknown run", err, refusal{[]error{runtime.ErrRunNotFound}, "temporal: wait run " + unknown + ": run not found"})
}

// hostileTenants are tenant names, each ending with u, that would change
// a query that did not quote them; each is listed exactly.
func hostileTenants(u string) []string {
	return []string{`x' OR FsmTenant != 'x` + u, `x' OR 1=1 -- ` + u}
}

// looseTenants are pairs of tenant names, each ending with u, that the dev
// server's SQLite visibility matches loosely: its query for the first also
// finds the second's runs (it drops a literal's leading and trailing
// quotes, and reads backslashes and double quotes its own way), which List
// must not list.
func looseTenants(u string) [][2]string {
	return [][2]string{
		{`'` + u + `'`, u},
		{`') OR (WorkflowType != '` + u, `) OR (WorkflowType != ` + u},
		{`a\b` + u, `a\\b` + u},
		{`a"b` + u, `a\"b` + u},
		{"a\nb" + u, `a\nb` + u},
		{`x\' OR FsmTenant != \'x` + u, `x\\' OR FsmTenant != \\'x` + u},
	}
}

// TestList: List selects runs by type, state, status, tenant and key
// through visibility, honours its limit, and a tenant's name, whatever it
// holds, selects that tenant's runs only.
func TestList(t *testing.T) {
	t.Parallel()
	ctx, f := newFixture(t, testAdapters())
	r := f.runner
	tenant := "org_list_" + uuid.NewString()
	start := func(req runtime.StartRequest) string { return f.start(ctx, t, req).ID }
	offer1, offer2 := start(app(t, "clean", tenant)), start(app(t, "clean", tenant))
	deniedID := start(app(t, "bad-credit", tenant))
	failedID := start(app(t, "flaky", tenant))
	orderID := start(orderRequest(tenant))
	u := uuid.NewString()
	hostile := map[string]string{}
	for _, h := range hostileTenants(u) {
		hostile[h] = start(app(t, "bad-credit", h))
	}
	for _, pair := range looseTenants(u) {
		for _, h := range pair {
			hostile[h] = start(app(t, "bad-credit", h))
		}
	}
	for _, id := range []string{deniedID, failedID} {
		if _, err := r.Wait(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	getState(ctx, t, r, offer1, "CONDITIONAL_OFFER")
	getState(ctx, t, r, offer2, "CONDITIONAL_OFFER")

	ids := func(runs []runtime.Run) []string {
		out := []string{}
		for _, run := range runs {
			out = append(out, run.ID)
		}
		slices.Sort(out)
		return out
	}
	sorted := func(ids ...string) []string {
		slices.Sort(ids)
		return ids
	}
	for _, tc := range []struct {
		name string
		f    runtime.Filter
		want []string
	}{
		{"tenant", runtime.Filter{TenantID: tenant}, sorted(offer1, offer2, deniedID, failedID, orderID)},
		{"type", runtime.Filter{TenantID: tenant, Type: order.Type}, sorted(orderID)},
		{"states", runtime.Filter{TenantID: tenant, States: []string{"CONDITIONAL_OFFER", "PENDING_PAYMENT"}}, sorted(offer1, offer2, orderID)},
		{"running", runtime.Filter{TenantID: tenant, Type: fcha.Type, Status: runtime.StatusRunning}, sorted(offer1, offer2)},
		{"succeeded", runtime.Filter{TenantID: tenant, Status: runtime.StatusSucceeded}, sorted(deniedID)},
		{"failed", runtime.Filter{TenantID: tenant, Status: runtime.StatusFailed}, sorted(failedID)},
		{"key", runtime.Filter{Type: fcha.Type, IdempotencyKey: app(t, "x", "y").IdempotencyKey}, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eventually(t, "listed", func() (bool, string) {
				runs, err := r.List(ctx, tc.f)
				if err != nil {
					t.Fatal(err)
				}
				got := ids(runs)
				return slices.Equal(got, tc.want), fmt.Sprintf("%v, want %v", got, tc.want)
			})
		})
	}
	t.Run("limit", func(t *testing.T) {
		runs, err := r.List(ctx, runtime.Filter{TenantID: tenant, Limit: 2})
		if err != nil || len(runs) != 2 {
			t.Errorf("List with limit 2 = %d runs, %v", len(runs), err)
		}
		_, err = r.List(ctx, runtime.Filter{Limit: 10001})
		if !errors.Is(err, runtime.ErrInvalidInput) || err.Error() != "temporal: list: invalid input: limit 10001, want 0..10000" {
			t.Errorf("List with limit 10001 = %v", err)
		}
	})
	t.Run("hostile tenants", func(t *testing.T) {
		for _, h := range hostileTenants(u) {
			eventually(t, fmt.Sprintf("tenant %q listed", h), func() (bool, string) {
				runs, err := r.List(ctx, runtime.Filter{TenantID: h})
				if err != nil {
					t.Fatalf("List of tenant %q: %v", h, err)
				}
				got := ids(runs)
				return slices.Equal(got, []string{hostile[h]}) && runs[0].TenantID == h, fmt.Sprint(got)
			})
		}
		runs, err := r.List(ctx, runtime.Filter{TenantID: `' OR '1'='1`})
		if err != nil || len(runs) != 0 {
			t.Errorf("List of a tenant with no runs = %v, %v", ids(runs), err)
		}
		for _, pair := range looseTenants(u) {
			for _, h := range pair {
				runs, err := r.List(ctx, runtime.Filter{TenantID: h})
				if err != nil {
					t.Fatalf("List of tenant %q: %v", h, err)
				}
				for _, run := range runs {
					if run.TenantID != h || run.ID != hostile[h] {
						t.Errorf("List of tenant %q lists run %s of tenant %q", h, run.ID, run.TenantID)
					}
				}
			}
		}
	})
}

// TestTypedHandle: the generated typed handle of FCHA drives a run on the
// Temporal runner, as it does on the engine: created, authorized, approved
// by a clean check, then cached.
func TestTypedHandle(t *testing.T) {
	t.Parallel()
	ctx, f := newFixture(t, testAdapters())
	runs := fcha.Runs[compliance.Application](f.runner)
	key := "typed/" + uuid.NewString()
	input := compliance.Application{ApplicationID: "app_1", ApplicantID: "clean", OrganizationID: "org_111", MarketID: "NYC"}
	owner := runtime.Owner{TenantID: "org_111", UserID: alice}
	st, err := runs.Start(ctx, key, input, owner)
	if err != nil || st.Outcome != runtime.StartCreated || st.State != fcha.StatePrequalification {
		t.Fatalf("Start = %+v, %v", st, err)
	}
	eventually(t, "conditional offer", func() (bool, string) {
		s, err := runs.Get(ctx, st.ID)
		if err != nil {
			t.Fatal(err)
		}
		return s.State == fcha.StateConditionalOffer, s.State.String()
	})
	if _, err := runs.BackgroundCheckAuthorizationSigned(ctx, st.ID, authorize()); err != nil {
		t.Fatal(err)
	}
	done, err := runs.Wait(ctx, st.ID)
	if err != nil || done.State != fcha.StateApproved || done.Result == nil || done.Result.Outcome != "approved" {
		t.Fatalf("Wait = %+v, %v", done, err)
	}
	again, err := runs.Start(ctx, key, input, owner)
	if err != nil || again.Outcome != runtime.StartCached || again.State != fcha.StateApproved {
		t.Errorf("Start again = %+v, %v", again, err)
	}
}

// TestSearchAttributesChecked: NewRunner refuses a namespace without the
// search attributes and names them; the operator's command that
// CreateSearchAttributesCommand returns creates them, after which it
// accepts the namespace.
func TestSearchAttributesChecked(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := sharedServer(t)
	ns := "bare-" + uuid.NewString()
	if _, err := s.Client.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace: ns, WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	c, err := client.Dial(client.Options{HostPort: s.HostPort, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cfg := temporal.RunnerConfig{TaskQueue: "q", Definitions: []runtime.Definition{fcha.Definition()}}
	want := "temporal: new runner: temporal: search attributes are not registered in the client's namespace: FsmState, FsmStatus, FsmTenant, FsmIdempotencyKey " +
		"(create them, of type Keyword, with: temporal operator search-attribute create --namespace <namespace> " +
		"--name FsmState --type Keyword --name FsmStatus --type Keyword --name FsmTenant --type Keyword --name FsmIdempotencyKey --type Keyword)"
	// A namespace just registered is known to every frontend within
	// moments.
	var nsErr *serviceerror.NamespaceNotFound
	eventually(t, "namespace "+ns+" known", func() (bool, string) {
		_, err := temporal.NewRunner(c, cfg)
		return !errors.As(err, &nsErr), fmt.Sprint(err)
	})
	if _, err := temporal.NewRunner(c, cfg); !errors.Is(err, temporal.ErrSearchAttributes) || err.Error() != want {
		t.Fatalf("NewRunner = %v\nwant %s", err, want)
	}

	cli, err := devserver.CLI()
	if err != nil {
		t.Fatal(err)
	}
	args := temporal.CreateSearchAttributesCommand(ns)
	if args[0] != "temporal" {
		t.Fatalf("command %v", args)
	}
	out, err := exec.CommandContext(ctx, cli, append(args[1:], "--address", s.HostPort)...).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
	eventually(t, "search attributes of "+ns+" created", func() (bool, string) {
		_, err := temporal.NewRunner(c, cfg)
		return err == nil, fmt.Sprint(err)
	})
}

// TestSeedAPIOnTemporal: machines/compliance's seed API (StartWorkflow,
// SendSignal, GetWorkflow, Query, ExecuteWorkflowSync) on the Temporal
// runner, given to compliance.New where the PostgreSQL engine was: the
// only change, with the same handlers and guards on the worker.
func TestSeedAPIOnTemporal(t *testing.T) {
	t.Parallel()
	ctx, f := newFixture(t, testAdapters())
	wf := compliance.New(f.runner, nil, testAdapters())
	org := "org_seed_" + uuid.NewString()
	application := func(applicant string) compliance.Application {
		return compliance.Application{ApplicationID: "app_" + uuid.NewString(), ApplicantID: applicant, OrganizationID: org, MarketID: "NYC"}
	}
	signedAt := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	authorize := compliance.OnWaiting(func(ctx context.Context, runID, state string) error {
		if state != "CONDITIONAL_OFFER" {
			t.Errorf("told the run waits in %s", state)
		}
		return wf.SendSignal(ctx, runID, compliance.SignalAuthorizationSigned, compliance.Authorization{SignedAt: signedAt, SignedBy: "user_456"})
	})

	app := application("clean")
	out, err := wf.ExecuteWorkflowSync(ctx, app, alice, authorize)
	if err != nil {
		t.Fatal(err)
	}
	id := temporal.RunID(fcha.Type, app.ApplicationID)
	if diff := cmp.Diff(compliance.Output{RunID: id, Approved: true, Decision: "approved"}, out); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
	x, err := wf.GetWorkflow(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	type move struct{ From, To, Event string }
	var moves []move
	for _, s := range x.StateHistory {
		moves = append(moves, move{s.From, s.To, s.Event})
	}
	wantMoves := []move{{"PREQUALIFICATION", "CONDITIONAL_OFFER", "PrequalificationCompleted"},
		{"CONDITIONAL_OFFER", "BACKGROUND_CHECK_ALLOWED", "BackgroundCheckAuthorizationSigned"}, {"BACKGROUND_CHECK_ALLOWED", "APPROVED", "BackgroundCheckCompleted"}}
	if diff := cmp.Diff(wantMoves, moves); diff != "" {
		t.Errorf("state history (-want +got):\n%s", diff)
	}
	type view struct {
		WorkflowID, Name, Version, Step, Actor, Org string
		Status                                      runtime.Status
		Input                                       compliance.Application
		Output                                      *compliance.Output
		Completed                                   bool
	}
	want := view{app.ApplicationID, fcha.Type, "1", "APPROVED", alice, org, runtime.StatusSucceeded, app, &out, true}
	if diff := cmp.Diff(want, view{x.WorkflowID, x.WorkflowName, x.WorkflowVersion, x.CurrentStep, x.ActorID, x.OrganizationID, x.Status, x.Input, x.Output, x.CompletedAt != nil}); diff != "" {
		t.Errorf("execution (-want +got):\n%s", diff)
	}

	err = wf.SendSignal(ctx, id, compliance.SignalAuthorizationSigned, compliance.Authorization{SignedAt: signedAt, SignedBy: "user_456"})
	wantErr := "compliance: signal background_check_authorization_signed to run " + id + ": signal refused: the run is in APPROVED: temporal: signal BackgroundCheckAuthorizationSigned run " +
		id + ": run is finished: the run finished in APPROVED on BackgroundCheckCompleted at " + x.StateHistory[2].At.UTC().Format(time.RFC3339)
	if !errors.Is(err, compliance.ErrSignalRefused) || !errors.Is(err, runtime.ErrRunFinished) || err.Error() != wantErr {
		t.Errorf("late signal = %v\nwant %s", err, wantErr)
	}

	deniedApp := application("bad-credit")
	denied, err := wf.ExecuteWorkflowSync(ctx, deniedApp, alice, authorize)
	if err != nil || denied.Approved || denied.Decision != "denied" {
		t.Errorf("denied application = %+v, %v", denied, err)
	}
	failedApp := application("flaky")
	failedID := temporal.RunID(fcha.Type, failedApp.ApplicationID)
	_, err = wf.ExecuteWorkflowSync(ctx, failedApp, alice)
	wantErr = "compliance: execute " + failedID + ": workflow failed in FAILED: PREQUAL_DB_DOWN: PREQUAL_DB_DOWN: prequalification database unavailable"
	if !errors.Is(err, compliance.ErrWorkflowFailed) || err.Error() != wantErr {
		t.Errorf("failed application = %v\nwant %s", err, wantErr)
	}

	eventually(t, "the organization's succeeded runs queried", func() (bool, string) {
		xs, err := wf.Query(ctx, compliance.Query{WorkflowName: compliance.WorkflowName, Status: runtime.StatusSucceeded, OrganizationID: org})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, x := range xs {
			got = append(got, x.WorkflowID+" "+x.CurrentStep)
		}
		slices.Sort(got)
		want := []string{app.ApplicationID + " APPROVED", deniedApp.ApplicationID + " DENIED"}
		slices.Sort(want)
		return slices.Equal(got, want), fmt.Sprint(got)
	})
	if err := wf.Register(ctx); !errors.Is(err, runtime.ErrNoEngine) {
		t.Errorf("Register on Temporal = %v, want ErrNoEngine", err)
	}
	unknown := uuid.NewString()
	if _, err := wf.GetWorkflow(ctx, unknown); !errors.Is(err, runtime.ErrRunNotFound) {
		t.Errorf("GetWorkflow of an unknown run = %v, want ErrRunNotFound", err)
	}
}
