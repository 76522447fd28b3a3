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
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/fsmgen/fsmgen/contrib/temporal"
	"github.com/fsmgen/fsmgen/runtime"
)

// ev is the event of the hand-written machines below: a name and a JSON
// object.
type ev struct {
	name string
	data map[string]any
}

func (e ev) EventName() string { return e.name }

func (e ev) MarshalJSON() ([]byte, error) { return json.Marshal(e.data) }

// flatDriver is a hand-written runtime.Driver of a flat machine: handlers
// per state, guards by name over the event's data.
type flatDriver struct {
	def      runtime.Definition
	handlers map[string]func(ctx context.Context, run *runtime.Run) (runtime.Event, error)
	guards   map[string]func(e ev) bool
}

func (d flatDriver) Definition() runtime.Definition { return d.def }

func (d flatDriver) Handle(ctx context.Context, run *runtime.Run, state string) (runtime.Event, error) {
	h, ok := d.handlers[state]
	if !ok {
		return nil, fmt.Errorf("%s: %w", state, runtime.ErrNotDriven)
	}
	return h(ctx, run)
}

func (d flatDriver) Decode(name string, payload []byte) (runtime.Event, error) {
	out := ev{name: name}
	if len(payload) > 0 {
		if err := json.Unmarshal(payload, &out.data); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (d flatDriver) Fire(ctx context.Context, _ *runtime.Run, state string, e runtime.Event, rec runtime.Recorder) error {
	x := e.(ev)
	var tried []string
	for _, t := range d.def.Transitions {
		if t.From != state || t.Event != x.name {
			continue
		}
		if t.Guard != "" && !d.guards[t.Guard](x) {
			tried = append(tried, t.Guard)
			continue
		}
		to, _ := d.def.State(t.To)
		return rec.Record(ctx, runtime.Transition{Machine: d.def.Type, Version: d.def.Version, From: state, To: t.To, Event: x.name, Payload: x,
			Status: to.Status, Outcome: t.Outcome})
	}
	if len(tried) > 0 {
		return &runtime.TransitionError{Machine: d.def.Type, State: state, Event: x.name, Guards: tried, Err: runtime.ErrGuardRejected}
	}
	return &runtime.TransitionError{Machine: d.def.Type, State: state, Event: x.name, Err: runtime.ErrIllegalTransition}
}

// parentAndKid are the machines of the PostgreSQL engine's TestChildRun:
// the parent starts a kid and waits for it in P_WAIT, and ends P_DONE when
// the kid succeeded; its handler also enqueues a run of type enqueue, with
// the key "background", that it does not wait for. The kid waits an hour,
// then its handler solves it with a result. kidDone receives the payload
// of the parent's KidDone.
func parentAndKid(enqueue string, kidDone func(map[string]any)) (parent, kid flatDriver) {
	running := func(name string) runtime.StateSpec {
		return runtime.StateSpec{Name: name, Status: runtime.StatusRunning}
	}
	wait := func(name string) runtime.StateSpec {
		return runtime.StateSpec{Name: name, Status: runtime.StatusRunning, Wait: true}
	}
	final := func(name string, s runtime.Status) runtime.StateSpec { return runtime.StateSpec{Name: name, Status: s} }
	parent = flatDriver{def: runtime.Definition{Type: "parent", Version: 1, Initial: "P_START",
		States: []runtime.StateSpec{running("P_START"), wait("P_WAIT"), final("P_DONE", runtime.StatusSucceeded), final("P_FAILED", runtime.StatusFailed)},
		Events: []runtime.EventSpec{{Name: "Spawned"}, {Name: "KidDone", Fields: []runtime.FieldSpec{
			{Name: "childRunID", Type: "string"}, {Name: "status", Type: "string"}, {Name: "outcome", Type: "string"},
			{Name: "output", Type: "json.RawMessage"}, {Name: "costUSD", Type: "float64"}}}},
		Transitions: []runtime.TransitionSpec{{From: "P_START", Event: "Spawned", To: "P_WAIT"},
			{From: "P_WAIT", Event: "KidDone", To: "P_DONE", Guard: "KidSucceeded"}, {From: "P_WAIT", Event: "KidDone", To: "P_FAILED"}}},
		handlers: map[string]func(context.Context, *runtime.Run) (runtime.Event, error){
			"P_START": func(_ context.Context, run *runtime.Run) (runtime.Event, error) {
				if err := runtime.StartChild(run, runtime.Child{Type: "kid", Input: map[string]int{"n": 7}, Event: "KidDone"}); err != nil {
					return nil, err
				}
				run.Effects.Enqueue(enqueue, "background", map[string]int{"n": 8})
				return ev{name: "Spawned"}, nil
			}},
		guards: map[string]func(ev) bool{"KidSucceeded": func(e ev) bool {
			kidDone(e.data)
			return e.data["status"] == "succeeded"
		}}}
	parent.def.States[0].Initial = true
	kid = flatDriver{def: runtime.Definition{Type: "kid", Version: 1, Initial: "K1",
		States: []runtime.StateSpec{{Name: "K1", Initial: true, Status: runtime.StatusRunning, Wait: true, Timers: []runtime.Timer{{After: time.Hour, Event: "Next"}}},
			running("K2"), {Name: "KEND", Status: runtime.StatusSucceeded, Outcome: "solved"}},
		Events:      []runtime.EventSpec{{Name: "Next"}, {Name: "Solve"}},
		Transitions: []runtime.TransitionSpec{{From: "K1", Event: "Next", To: "K2"}, {From: "K2", Event: "Solve", To: "KEND"}}},
		handlers: map[string]func(context.Context, *runtime.Run) (runtime.Event, error){
			"K2": func(_ context.Context, run *runtime.Run) (runtime.Event, error) {
				run.Effects.SetResult(map[string]int{"answer": 42}, 0.25)
				return ev{name: "Solve"}, nil
			}}}
	return parent, kid
}

// TestChildRun: the parent's handler starts a child run, a child workflow
// with the id RunID(kid, "<parent id>/kid/1"), and enqueues another, a
// child workflow the parent abandons; the parent waits in P_WAIT, where a
// caller may not send the child's event, until the child ends an hour
// later, and the child's outcome fires KidDone with the payload the
// PostgreSQL engine builds (the fields the event declares: the child's id,
// status, outcome, and the output and cost its handler set).
func TestChildRun(t *testing.T) {
	t.Parallel()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	var mu sync.Mutex
	var payload map[string]any
	parent, kid := parentAndKid("kid", func(p map[string]any) {
		mu.Lock()
		defer mu.Unlock()
		payload = p
	})
	temporal.Register(env, parent)
	temporal.Register(env, kid)
	type started struct{ Type, ID, Input string }
	var children []started
	env.SetOnChildWorkflowStartedListener(func(info *workflow.Info, _ workflow.Context, args converter.EncodedValues) {
		var in temporal.Start
		if err := args.Get(&in); err != nil {
			t.Error(err)
		}
		children = append(children, started{info.WorkflowType.Name, info.WorkflowExecution.ID, string(in.Input)})
	})
	var refusal string
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow("KidDone", "", &testsuite.TestUpdateCallback{
			OnAccept: func() { t.Error("a caller's KidDone was accepted") },
			OnReject: func(err error) {
				var app *sdktemporal.ApplicationError
				if errors.As(err, &app) {
					refusal = app.Type() + ": " + app.Message()
				}
			},
			OnComplete: func(any, error) {},
		}, temporal.EventMessage{Name: "KidDone", Payload: json.RawMessage(`{"status":"succeeded"}`)})
	}, 30*time.Minute)
	begin := env.Now()
	env.ExecuteWorkflow("parent", temporal.Start{RunID: "parent-1", Type: "parent", IdempotencyKey: "p", TenantID: "t", UserID: alice})
	var res temporal.Result
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	childID := temporal.RunID("kid", "parent-1/kid/1")
	if diff := cmp.Diff([]timedMove{{"P_START", "P_WAIT", "Spawned", 0}, {"P_WAIT", "P_DONE", "KidDone", time.Hour}}, timedMoves(res.History, begin)); diff != "" {
		t.Errorf("parent's transitions (-want +got):\n%s", diff)
	}
	want := map[string]any{"childRunID": childID, "status": "succeeded", "outcome": "solved", "output": map[string]any{"answer": float64(42)}, "costUSD": 0.25}
	if diff := cmp.Diff(want, payload); diff != "" {
		t.Errorf("KidDone payload (-want +got):\n%s", diff)
	}
	wantChildren := []started{{"kid", childID, `{"n":7}`}, {"kid", temporal.RunID("kid", "background"), `{"n":8}`}}
	if diff := cmp.Diff(wantChildren, children); diff != "" {
		t.Errorf("child workflows started (-want +got):\n%s", diff)
	}
	if want := "INTERNAL_EVENT: callers may not send the event: parent v1 in state P_WAIT: KidDone is fired by the engine when a child run finishes"; refusal != want {
		t.Errorf("a caller's KidDone: %q, want %q", refusal, want)
	}
}

// withTimer returns d as the machine of type typ whose first state's
// timer runs for after.
func withTimer(d flatDriver, typ string, after time.Duration) flatDriver {
	d.def.Type = typ
	d.def.States = slices.Clone(d.def.States)
	d.def.States[0].Timers = []runtime.Timer{{After: after, Event: d.def.States[0].Timers[0].Event}}
	return d
}

// TestDevServerChildRun: on a dev server, the parent waits for its child
// workflow and takes its outcome, and the run it enqueued, a child
// workflow it abandons, goes on after the parent ended and completes.
func TestDevServerChildRun(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := devServer(t)
	var mu sync.Mutex
	var payload map[string]any
	parent, kid := parentAndKid("slowkid", func(p map[string]any) {
		mu.Lock()
		defer mu.Unlock()
		payload = p
	})
	w := worker.New(c, "children", worker.Options{})
	temporal.Register(w, parent)
	temporal.Register(w, withTimer(kid, "kid", time.Second))
	temporal.Register(w, withTimer(kid, "slowkid", 3*time.Second))
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	id := temporal.RunID("parent", "p")
	wr, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: "children"}, "parent",
		temporal.Start{RunID: id, Type: "parent", IdempotencyKey: "p", TenantID: "t", UserID: alice})
	if err != nil {
		t.Fatal(err)
	}
	var res temporal.Result
	if err := wr.Get(ctx, &res); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]move{{"P_START", "P_WAIT", "Spawned"}, {"P_WAIT", "P_DONE", "KidDone"}}, moves(res.History)); diff != "" {
		t.Errorf("parent's transitions (-want +got):\n%s", diff)
	}
	mu.Lock()
	got := payload
	mu.Unlock()
	want := map[string]any{"childRunID": temporal.RunID("kid", id+"/kid/1"), "status": "succeeded", "outcome": "solved", "output": map[string]any{"answer": float64(42)}, "costUSD": 0.25}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("KidDone payload (-want +got):\n%s", diff)
	}
	var slow temporal.Result
	if err := c.GetWorkflow(ctx, temporal.RunID("slowkid", "background"), "").Get(ctx, &slow); err != nil || slow.State != "KEND" {
		t.Errorf("the enqueued run: %+v, %v; want it to end KEND after its parent", slow, err)
	}
}
