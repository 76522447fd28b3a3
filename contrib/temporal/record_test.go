package temporal_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
	sdkactivity "go.temporal.io/sdk/activity"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/fsmgen/fsmgen/contrib/temporal"
	"github.com/fsmgen/fsmgen/db"
	"github.com/fsmgen/fsmgen/machines/compliance"
	"github.com/fsmgen/fsmgen/machines/compliance/fcha"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/activity"
	"github.com/fsmgen/fsmgen/runtime/engine"
	"github.com/fsmgen/fsmgen/runtime/evidence"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// activities registers the activities Register gives it in an activity
// test environment, and ignores the workflow.
type activities struct {
	*testsuite.TestActivityEnvironment
}

func (activities) RegisterWorkflowWithOptions(any, workflow.RegisterOptions) {}

// recordEnv is FCHA registered with a record on a database of its own, as
// the runtime role, with FCHA's evidence enabled (by an engine that
// registered the type).
type recordEnv struct {
	st  *store.Store
	env *testsuite.TestActivityEnvironment
	typ string
}

func newRecordEnv(t *testing.T) recordEnv {
	t.Helper()
	ctx := context.Background()
	st := store.New(pgtest.RolePool(t, pgtest.NewDatabase(t), db.RoleRuntime))
	eng, err := engine.New(st, engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	w := compliance.New(eng, nil, compliance.Adapters{})
	if err := w.Register(ctx); err != nil {
		t.Fatal(err)
	}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	d := w.Driver()
	temporal.Register(activities{env}, d, temporal.WithRecord(st))
	return recordEnv{st: st, env: env, typ: d.Definition().Type}
}

// record runs the record activity with in.
func (e recordEnv) record(in temporal.RecordInput) (temporal.RecordOutput, error) {
	var out temporal.RecordOutput
	v, err := e.env.ExecuteActivity(temporal.RecordActivityName(e.typ), in)
	if err != nil {
		return out, err
	}
	return out, v.Get(&out)
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// An FCHA run, recorded transition by transition, each record run twice as
// an activity whose acknowledgement was lost: written once, its evidence
// chain checks out, its outbox message keeps its id, its execution reads
// as the engine's, and the activity result its handler used is marked
// consumed by the transition.
func TestRecordWritesAnFCHARunOnce(t *testing.T) {
	t.Parallel()
	e := newRecordEnv(t)
	ctx := context.Background()
	key := "app_1"
	id := temporal.RunID(e.typ, key)
	app := compliance.Application{ApplicationID: "app_1", ApplicantID: "applicant-1", OrganizationID: "org_111", MarketID: "NYC"}
	base := temporal.RecordInput{RunID: id, Type: e.typ, Version: 1, Attempt: 1}

	x := activity.NewExecutor(e.st.Pool())
	prequalify := activity.Activity[string, bool]{Name: "prequalify", IdempotencyKey: func(s string) string { return "prequalify:" + s },
		Execute: func(context.Context, string) (bool, error) { return true, nil }}
	cached, err := activity.Execute(ctx, x, id, prequalify, "applicant-1")
	if err != nil {
		t.Fatal(err)
	}

	start := base
	start.Start = &temporal.Start{RunID: id, Type: e.typ, IdempotencyKey: key, Attempt: 1, Input: mustJSON(t, app), TenantID: "org_111",
		UserID: "00000000-0000-4000-8000-00000000a11c"}
	steps := []struct {
		from, event, to string
		payload         any
		effects         temporal.Effects
	}{
		{"PREQUALIFICATION", "PrequalificationCompleted", "CONDITIONAL_OFFER", fcha.PrequalificationCompleted{Passed: true}, temporal.Effects{
			Steps: []temporal.LoggedStep{
				{Name: "evidence." + compliance.EvidenceInitialization, Payload: mustJSON(t, map[string]any{"application": app})},
				{Name: "evidence." + compliance.EvidencePrequalification, Payload: mustJSON(t, map[string]any{"passed": true})},
				{Name: "evidence." + compliance.EvidenceConditionalOffer, Payload: mustJSON(t, map[string]any{"deliveryId": "d1"})},
			},
			Messages: []temporal.Message{{Topic: "fcha.offer", Payload: mustJSON(t, map[string]string{"applicationId": "app_1"})}},
			Consumed: []string{cached.Key},
		}},
		{"CONDITIONAL_OFFER", "BackgroundCheckAuthorizationSigned", "BACKGROUND_CHECK_ALLOWED",
			fcha.BackgroundCheckAuthorizationSigned{SignedAt: time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC), SignedBy: "user_456"}, temporal.Effects{}},
		{"BACKGROUND_CHECK_ALLOWED", "BackgroundCheckCompleted", "APPROVED", fcha.BackgroundCheckCompleted{Findings: []string{}}, temporal.Effects{
			Steps: []temporal.LoggedStep{
				{Name: "evidence." + compliance.EvidenceBackgroundCheckResults, Payload: mustJSON(t, map[string]any{"adverseInfo": false})},
				{Name: "evidence." + compliance.EvidenceFinalDecision, Payload: mustJSON(t, map[string]any{"decision": "approved"})},
			},
			Result: true, Output: mustJSON(t, map[string]string{"decision": "approved"}), CostUSD: 1.5,
		}},
	}
	rv := int64(0)
	for n := range 2 {
		out, err := e.record(start)
		if err != nil {
			t.Fatal(err)
		}
		if out.RowVersion != 1 {
			t.Fatalf("start %d: row version %d", n, out.RowVersion)
		}
		rv = out.RowVersion
	}
	for _, s := range steps {
		in := base
		in.RowVersion = rv
		in.Transition = &temporal.Transition{From: s.from, To: s.to, Event: s.event, Payload: mustJSON(t, s.payload)}
		in.Effects = s.effects
		for n, applied := range []bool{false, true} {
			out, err := e.record(in)
			if err != nil {
				t.Fatalf("%s, try %d: %v", s.event, n, err)
			}
			if out.RowVersion != rv+1 || out.AlreadyApplied != applied {
				t.Fatalf("%s, try %d: %+v", s.event, n, out)
			}
		}
		rv++
		if s.event == "PrequalificationCompleted" {
			msgs, err := e.st.Outbox(ctx, id)
			if err != nil || len(msgs) != 1 {
				t.Fatalf("outbox: %v %v", msgs, err)
			}
			defer func(first store.Message) {
				msgs, err := e.st.Outbox(ctx, id)
				if err != nil || len(msgs) != 1 || msgs[0].ID != first.ID {
					t.Errorf("outbox after the retries: %+v %v, want only message %d", msgs, err, first.ID)
				}
			}(msgs[0])
		}
	}

	v, err := evidence.Verify(ctx, e.st.Pool(), id)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := evidence.Records(ctx, e.st.Pool(), id)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, r := range recs {
		kinds = append(kinds, r.Kind)
	}
	want := []string{"created", compliance.EvidenceInitialization, compliance.EvidencePrequalification, compliance.EvidenceConditionalOffer,
		"transition", "transition", compliance.EvidenceAuthorization, compliance.EvidenceBackgroundCheckResults, compliance.EvidenceFinalDecision, "transition"}
	if diff := cmp.Diff(want, kinds); diff != "" || v.Records != len(want) {
		t.Errorf("evidence (-want +got):\n%s(%d verified)", diff, v.Records)
	}
	got, err := e.st.Execution(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var states []string
	for _, c := range got.StateHistory {
		states = append(states, fmt.Sprintf("%s->%s %s", c.From, c.To, c.Event))
	}
	wantStates := []string{"PREQUALIFICATION->CONDITIONAL_OFFER PrequalificationCompleted",
		"CONDITIONAL_OFFER->BACKGROUND_CHECK_ALLOWED BackgroundCheckAuthorizationSigned", "BACKGROUND_CHECK_ALLOWED->APPROVED BackgroundCheckCompleted"}
	if diff := cmp.Diff(wantStates, states); diff != "" {
		t.Errorf("state history (-want +got):\n%s", diff)
	}
	if got.Status != runtime.StatusSucceeded || got.Result == nil || got.Result.Outcome != "approved" || got.Result.CostUSD != 1.5 ||
		string(got.Result.Output) != `{"decision": "approved"}` || len(got.EvidenceIDs) != len(want) {
		t.Errorf("execution: %s %+v, %d evidence ids", got.Status, got.Result, len(got.EvidenceIDs))
	}
	execs, err := activity.Executions(ctx, e.st.Pool(), id)
	if err != nil {
		t.Fatal(err)
	}
	if len(execs) != 1 || execs[0].ConsumedRunID != id || execs[0].ConsumedRowVersion != 2 {
		t.Errorf("activity executions: %+v", execs)
	}
}

// A record that does not follow the run as recorded is refused for good
// (not retried), and writes nothing.
func TestRecordRefusesATransitionThatDoesNotFollow(t *testing.T) {
	t.Parallel()
	e := newRecordEnv(t)
	id := temporal.RunID(e.typ, "app_2")
	in := temporal.RecordInput{RunID: id, Type: e.typ, Version: 1, Attempt: 1,
		Start: &temporal.Start{RunID: id, IdempotencyKey: "app_2", Input: json.RawMessage(`{}`), TenantID: "org_111"}}
	if _, err := e.record(in); err != nil {
		t.Fatal(err)
	}
	in.Start, in.RowVersion = nil, 3
	in.Transition = &temporal.Transition{From: "PREQUALIFICATION", To: "FAILED", Event: "RetriesExhausted", Payload: json.RawMessage(`{}`)}
	_, err := e.record(in)
	var ae *sdktemporal.ApplicationError
	want := "store: record RetriesExhausted run " + id + ": conflict: the run moved since it was read: expected PREQUALIFICATION at row version 3, the run is in PREQUALIFICATION at row version 1"
	if !errors.As(err, &ae) || !ae.NonRetryable() || ae.Type() != "RECORD_REFUSED" || ae.Message() != want {
		t.Errorf("got %v\nwant a non-retryable RECORD_REFUSED: %s", err, want)
	}
}

// emitting is FCHA's driver with a handler of PREQUALIFICATION that also
// emits a message to the outbox.
type emitting struct{ runtime.Driver }

func (d emitting) Handle(ctx context.Context, run *runtime.Run, state string) (runtime.Event, error) {
	ev, err := d.Driver.Handle(ctx, run, state)
	if err == nil && state == "PREQUALIFICATION" {
		run.Effects.Emit("fcha.prequalified", map[string]string{"applicationId": "app_dev"})
	}
	return ev, err
}

// lossy is a worker that loses the acknowledgement of the first try of
// the record of the run's first transition: the try writes, then fails.
type lossy struct {
	worker.Worker
	mu    sync.Mutex
	tries []temporal.RecordOutput
}

func (l *lossy) RegisterActivityWithOptions(a any, o sdkactivity.RegisterOptions) {
	f, ok := a.(func(context.Context, temporal.RecordInput) (temporal.RecordOutput, error))
	if !ok {
		l.Worker.RegisterActivityWithOptions(a, o)
		return
	}
	l.Worker.RegisterActivityWithOptions(func(ctx context.Context, in temporal.RecordInput) (temporal.RecordOutput, error) {
		out, err := f(ctx, in)
		if err != nil || in.Transition == nil || in.Transition.Event != "PrequalificationCompleted" {
			return out, err
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		l.tries = append(l.tries, out)
		if len(l.tries) == 1 {
			return out, errors.New("connection reset before the acknowledgement")
		}
		return out, nil
	}, o)
}

// An FCHA run on the dev server, recorded in PostgreSQL: its evidence
// chain checks out, its execution reads with its states and evidence ids,
// the activity results its handlers used are marked consumed by their
// transitions, and the message its handler emitted is written once, with
// one id, though the record of its transition was written twice.
func TestDevServerRecordsFCHA(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	c := sharedServer(t).Client
	st := store.New(pgtest.RolePool(t, pgtest.NewDatabase(t), db.RoleRuntime))
	eng, err := engine.New(st, engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := compliance.New(eng, nil, compliance.Adapters{}).Register(ctx); err != nil {
		t.Fatal(err)
	}
	x := activity.NewExecutor(st.Pool())
	d := emitting{compliance.New(nil, x, testAdapters()).Driver()}

	queue := "record-" + uuid.NewString()
	w := &lossy{Worker: worker.New(c, queue, worker.Options{})}
	temporal.Register(w, d, temporal.WithRecord(st))
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	r, err := temporal.NewRunner(c, temporal.RunnerConfig{TaskQueue: queue, Definitions: []runtime.Definition{d.Definition()}})
	if err != nil {
		t.Fatal(err)
	}
	run := getStarted(ctx, t, r, app(t, "clean", "org_111"))
	getState(ctx, t, r, run.ID, "CONDITIONAL_OFFER")
	if _, err := r.Signal(ctx, run.ID, fcha.BackgroundCheckAuthorizationSigned{SignedAt: time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC), SignedBy: "user_456"}); err != nil {
		t.Fatal(err)
	}
	if done, err := r.Wait(ctx, run.ID); err != nil || done.State != "APPROVED" {
		t.Fatalf("wait: %s %v", done.State, err)
	}

	// The workflow completes once its records are written.
	v, err := evidence.Verify(ctx, st.Pool(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	x2, err := st.Execution(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	var states []string
	for _, s := range x2.StateHistory {
		states = append(states, s.From+"->"+s.To)
	}
	want := []string{"PREQUALIFICATION->CONDITIONAL_OFFER", "CONDITIONAL_OFFER->BACKGROUND_CHECK_ALLOWED", "BACKGROUND_CHECK_ALLOWED->APPROVED"}
	if diff := cmp.Diff(want, states); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
	if x2.Status != runtime.StatusSucceeded || x2.Result == nil || x2.Result.Outcome != "approved" || len(x2.EvidenceIDs) != v.Records || v.Records < 9 {
		t.Errorf("execution %s %+v, %d evidence ids, %d records verified", x2.Status, x2.Result, len(x2.EvidenceIDs), v.Records)
	}
	w.mu.Lock()
	tries := slices.Clone(w.tries)
	w.mu.Unlock()
	if len(tries) != 2 || tries[0].AlreadyApplied || !tries[1].AlreadyApplied || tries[0].RowVersion != tries[1].RowVersion {
		t.Errorf("records of the first transition: %+v", tries)
	}
	msgs, err := st.Outbox(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 || msgs[0].Topic != "fcha.prequalified" {
		t.Errorf("outbox: %+v", msgs)
	}
	execs, err := activity.Executions(ctx, st.Pool(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	consumed := map[string]int64{}
	for _, e := range execs {
		consumed[e.ActivityName] = e.ConsumedRowVersion
	}
	if len(execs) == 0 || consumed["prequalify"] != 2 {
		t.Errorf("activity executions consumed at %v", consumed)
	}
}

// getStarted starts req on r, failing the test on an error.
func getStarted(ctx context.Context, t *testing.T, r runtime.Runner, req runtime.StartRequest) runtime.Run {
	t.Helper()
	res, err := r.Start(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return res.Run
}
