package problems_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/fsmgen/fsmgen/machines/problems"
	"github.com/fsmgen/fsmgen/machines/problems/local"
	rog "github.com/fsmgen/fsmgen/machines/problems/retrieveorgenerate"
	"github.com/fsmgen/fsmgen/runtime"
)

// trace is what driving a run came to.
type trace struct {
	States  []string
	Events  []string
	Outcome string
	// Tries counts the handler calls per state.
	Tries map[string]int
	// Effects are those of the handler calls whose transitions were
	// recorded, as the engine keeps them.
	Effects *effects
}

// driveOptions changes how drive plays the engine.
type driveOptions struct {
	// exhaust names states whose retries are taken as exhausted without
	// calling the handler (as after tries lost to expired leases): drive
	// fires the state's else event with an empty payload.
	exhaust map[string]bool
	// cancelIn names a state in which drive fires Cancel by cancelBy
	// instead of calling the handler.
	cancelIn, cancelBy string
}

// drive runs cmd to a terminal state without the engine, the way the
// engine does: it calls the handler of the current state through the
// driver, retries a failed handler per the state's retry policy (dropping
// the failed try's effects), fires the state's else event with an empty
// payload when the retries are exhausted, and fires the returned event
// through the driver with a recorder that keeps the transition in memory.
func drive(t *testing.T, wf *problems.Workflow, p problems.ExecutionPolicy, cmd problems.SubmitProblem, o driveOptions) trace {
	t.Helper()
	ctx := context.Background()
	def := rog.Definition()
	key, err := wf.Key(ctx, userID, cmd)
	if err != nil {
		t.Fatal(err)
	}
	run, _ := newRun(t, p, cmd)
	run.IdempotencyKey = key
	tr := trace{States: []string{def.Initial}, Tries: map[string]int{}, Effects: &effects{}}
	state := def.Initial
	for range 100 {
		spec, ok := def.State(state)
		if !ok {
			t.Fatalf("unknown state %s", state)
		}
		if spec.Terminal() {
			return tr
		}
		fx := &effects{}
		run.Effects = fx
		d := wf.Driver()
		var ev runtime.Event
		switch {
		case state == o.cancelIn:
			ev = rog.Cancel{UserID: o.cancelBy}
		case o.exhaust[state]:
			ev = exhausted(t, wf, run, spec, "LEASE_EXPIRED", "tries interrupted by expired leases")
		default:
			tr.Tries[state]++
			ev, err = d.Handle(ctx, run, state)
			if err != nil {
				pol := runtime.RetryPolicy{MaxAttempts: 1}
				if spec.Retry != nil {
					pol = *spec.Retry
				}
				if pol.Retryable(runtime.ErrorCode(err), run.StepAttempt) {
					run.StepAttempt++
					continue
				}
				if spec.OnExhausted == "" {
					t.Fatalf("%s: the run would be parked: %v", state, err)
				}
				fx = &effects{}
				run.Effects = fx
				ev = exhausted(t, wf, run, spec, runtime.ErrorCode(err), err.Error())
			}
		}
		var rec runtime.Transition
		err := d.Fire(ctx, run, state, ev, runtime.RecorderFunc(func(_ context.Context, t runtime.Transition) error {
			rec = t
			return nil
		}))
		if err != nil {
			t.Fatalf("fire %s in %s: %v", ev.EventName(), state, err)
		}
		tr.Effects.Steps = append(tr.Effects.Steps, fx.Steps...)
		tr.Effects.Emits = append(tr.Effects.Emits, fx.Emits...)
		tr.Effects.Enqueues = append(tr.Effects.Enqueues, fx.Enqueues...)
		tr.Effects.Results = append(tr.Effects.Results, fx.Results...)
		tr.Effects.Errors = append(tr.Effects.Errors, fx.Errors...)
		run.Events = append(run.Events, ev)
		run.StepAttempt = 1
		state = rec.To
		tr.States = append(tr.States, state)
		tr.Events = append(tr.Events, rec.Event)
		tr.Outcome = rec.Outcome
	}
	t.Fatal("the run did not end")
	return tr
}

// exhausted returns the event the engine fires when the tries of spec are
// used up: the workflow's Exhausted, else the state's else event with an
// empty payload.
func exhausted(t *testing.T, wf *problems.Workflow, run *runtime.Run, spec runtime.StateSpec, code, detail string) runtime.Event {
	t.Helper()
	ev, err := wf.Exhausted(context.Background(), run, spec.Name, code, detail)
	if err != nil {
		t.Fatal(err)
	}
	if ev != nil {
		return ev
	}
	if ev, err = wf.Driver().Decode(spec.OnExhausted, nil); err != nil {
		t.Fatal(err)
	}
	return ev
}

func topics(fx *effects) []string {
	out := []string{}
	for _, e := range fx.Emits {
		out = append(out, e.Topic)
	}
	return out
}

func enqueuedTypes(fx *effects) []string {
	out := []string{}
	for _, e := range fx.Enqueues {
		out = append(out, e.Type+" "+e.Key)
	}
	return out
}

func stepNames(fx *effects) []string {
	out := []string{}
	for _, s := range fx.Steps {
		out = append(out, s.Name)
	}
	return out
}

func lastResult(fx *effects) *result {
	if len(fx.Results) == 0 {
		return nil
	}
	return &fx.Results[len(fx.Results)-1]
}

func TestDriveEveryBranch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fx := newFixture(t)
	_, storedAV := fx.stored(t, textNorm)
	down := errors.New("model unavailable")
	failingSolver := fx.with(t, func(a *problems.Adapters) {
		s := *fx.set.Solver
		s.Fail = func(problems.SolveRequest) error { return down }
		a.Solver = &s
	})
	expensive := fx.with(t, func(a *problems.Adapters) {
		s := *fx.set.Solver
		s.CostUSD = 0.75
		a.Solver = &s
	})
	slowIndex := fx.with(t, func(a *problems.Adapters) {
		ix := *fx.set.Indexer
		ix.Timeout, ix.Delay = 50*time.Millisecond, 2*time.Second
		a.Indexer = &ix
	})
	searchDown := fx.with(t, func(a *problems.Adapters) { a.Retriever = failingRetriever{errors.New("index down")} })
	async := problems.DefaultPolicy()
	skip := async
	skip.VideoGeneration = problems.VideoSkip
	twoRetries := async
	twoRetries.RetryMax = 2

	// nearText's best candidate is textNorm at a hybrid 0.8 × 0.7727 + 0.2
	// = 0.818: a miss under 0.83, but above 0.70.
	near := problems.SubmitProblem{Text: "Solve for x: 2x + 3 = 17"}
	farText := problems.SubmitProblem{Text: "What is 6 * 7?"}
	newProblem := func(text string) problems.SubmitProblem { return problems.SubmitProblem{Text: text} }
	generated := []string{"INITIATED", "INGESTING", "RETRIEVING", "GENERATING_SOLUTION", "REGISTERING", "INDEXING", "SUCCEEDED"}

	type expect struct {
		states  []string
		events  []string
		outcome string
		tries   map[string]int
		emits   []string
		enqueue []string // type and key, the key's asset version id left out
		steps   []string
		result  *result
		errors  []coded
	}
	tests := []struct {
		name string
		wf   *problems.Workflow
		p    problems.ExecutionPolicy
		cmd  problems.SubmitProblem
		o    driveOptions
		want expect
	}{
		{name: "hit", wf: fx.wf, p: async, cmd: textCmd, want: expect{
			states:  []string{"INITIATED", "INGESTING", "RETRIEVING", "SUCCEEDED"},
			events:  []string{"Start", "MediaNormalized", "RetrievalHit"},
			outcome: "hit",
			tries:   map[string]int{"INITIATED": 1, "INGESTING": 1, "RETRIEVING": 1},
			emits:   []string{"ingestion.MediaNormalized", "retrieval.RetrievalHit"},
			steps:   []string{"policy_applied"},
			result:  &result{problems.Output{AssetVersionID: storedAV}, 0},
		}},
		{name: "miss, generated, registered, indexed, video enqueued", wf: fx.wf, p: async, cmd: newProblem("Solve 5y - 4 = 11"), want: expect{
			states:  generated,
			events:  []string{"Start", "MediaNormalized", "RetrievalMiss", "SolveSucceeded", "AssetsRegistered", "DocumentIndexed"},
			outcome: "new",
			tries:   map[string]int{"INITIATED": 1, "INGESTING": 1, "RETRIEVING": 1, "GENERATING_SOLUTION": 1, "REGISTERING": 1, "INDEXING": 1},
			emits: []string{"ingestion.MediaNormalized", "retrieval.RetrievalMiss", "asset.ProblemRegistered",
				"asset.AssetVersionCreated", "retrieval.DocumentIndexed"},
			enqueue: []string{"video_generation video:"},
			steps:   []string{"policy_applied"},
		}},
		{name: "generated, video skipped by the policy", wf: fx.wf, p: skip, cmd: newProblem("What is 2^10 - 1?"), want: expect{
			states:  generated,
			events:  []string{"Start", "MediaNormalized", "RetrievalMiss", "SolveSucceeded", "AssetsRegistered", "DocumentIndexed"},
			outcome: "new",
			tries:   map[string]int{"INITIATED": 1, "INGESTING": 1, "RETRIEVING": 1, "GENERATING_SOLUTION": 1, "REGISTERING": 1, "INDEXING": 1},
			emits: []string{"ingestion.MediaNormalized", "retrieval.RetrievalMiss", "asset.ProblemRegistered",
				"asset.AssetVersionCreated", "retrieval.DocumentIndexed"},
			steps: []string{"policy_applied"},
		}},
		{name: "index timed out: succeeded, reindex enqueued", wf: slowIndex, p: async, cmd: newProblem("Solve 7z + 1 = 50"), want: expect{
			states:  generated,
			events:  []string{"Start", "MediaNormalized", "RetrievalMiss", "SolveSucceeded", "AssetsRegistered", "IndexTimedOut"},
			outcome: "new",
			tries:   map[string]int{"INITIATED": 1, "INGESTING": 1, "RETRIEVING": 1, "GENERATING_SOLUTION": 1, "REGISTERING": 1, "INDEXING": 1},
			emits:   []string{"ingestion.MediaNormalized", "retrieval.RetrievalMiss", "asset.ProblemRegistered", "asset.AssetVersionCreated"},
			enqueue: []string{"admin.reindex_asset reindex:", "video_generation video:"},
			steps:   []string{"policy_applied", "index_deferred"},
		}},
		{name: "media rejected", wf: fx.wf, p: async, cmd: newProblem("?!"), want: expect{
			states: []string{"INITIATED", "INGESTING", "FAILED"},
			events: []string{"Start", "MediaRejected"},
			tries:  map[string]int{"INITIATED": 1, "INGESTING": 1},
			emits:  []string{"ingestion.MediaRejected"},
			steps:  []string{"policy_applied"},
			errors: []coded{{"MEDIA_REJECTED", "empty_content"}},
		}},
		{name: "solve failed after the policy's retries, no near miss", wf: failingSolver, p: twoRetries, cmd: farText, want: expect{
			states: []string{"INITIATED", "INGESTING", "RETRIEVING", "GENERATING_SOLUTION", "FAILED"},
			events: []string{"Start", "MediaNormalized", "RetrievalMiss", "SolveFailed"},
			tries:  map[string]int{"INITIATED": 1, "INGESTING": 1, "RETRIEVING": 1, "GENERATING_SOLUTION": 3},
			emits:  []string{"ingestion.MediaNormalized", "retrieval.RetrievalMiss"},
			steps:  []string{"policy_applied"},
			result: &result{nil, 0},
			errors: []coded{{"SOLVE_FAILED", "local: solve: model unavailable"}},
		}},
		{name: "solve failed after the policy's retries, near miss served", wf: failingSolver, p: twoRetries, cmd: near, want: expect{
			states:  []string{"INITIATED", "INGESTING", "RETRIEVING", "GENERATING_SOLUTION", "SUCCEEDED"},
			events:  []string{"Start", "MediaNormalized", "RetrievalMiss", "SolveFailed"},
			outcome: "hit",
			tries:   map[string]int{"INITIATED": 1, "INGESTING": 1, "RETRIEVING": 1, "GENERATING_SOLUTION": 3},
			emits:   []string{"ingestion.MediaNormalized", "retrieval.RetrievalMiss"},
			steps:   []string{"policy_applied", "near_miss_served"},
			result:  &result{problems.Output{AssetVersionID: storedAV, IsApproximate: true}, 0},
		}},
		// Fired by the engine, SolveFailed is built by Workflow.Exhausted,
		// which sets the near miss's output as the handler would.
		{name: "engine exhausts the solve, near miss", wf: fx.wf, p: async, cmd: near, o: driveOptions{exhaust: map[string]bool{"GENERATING_SOLUTION": true}}, want: expect{
			states:  []string{"INITIATED", "INGESTING", "RETRIEVING", "GENERATING_SOLUTION", "SUCCEEDED"},
			events:  []string{"Start", "MediaNormalized", "RetrievalMiss", "SolveFailed"},
			outcome: "hit",
			tries:   map[string]int{"INITIATED": 1, "INGESTING": 1, "RETRIEVING": 1},
			emits:   []string{"ingestion.MediaNormalized", "retrieval.RetrievalMiss"},
			steps:   []string{"policy_applied", "near_miss_served"},
			result:  &result{problems.Output{AssetVersionID: storedAV, IsApproximate: true}, 0},
		}},
		{name: "engine exhausts the solve, no near miss", wf: fx.wf, p: async, cmd: farText, o: driveOptions{exhaust: map[string]bool{"GENERATING_SOLUTION": true}}, want: expect{
			states: []string{"INITIATED", "INGESTING", "RETRIEVING", "GENERATING_SOLUTION", "FAILED"},
			events: []string{"Start", "MediaNormalized", "RetrievalMiss", "SolveFailed"},
			tries:  map[string]int{"INITIATED": 1, "INGESTING": 1, "RETRIEVING": 1},
			emits:  []string{"ingestion.MediaNormalized", "retrieval.RetrievalMiss"},
			steps:  []string{"policy_applied"},
			result: &result{nil, 0},
			errors: []coded{{"LEASE_EXPIRED", "tries interrupted by expired leases"}},
		}},
		{name: "cost cap exceeded", wf: expensive, p: async, cmd: near, want: expect{
			states: []string{"INITIATED", "INGESTING", "RETRIEVING", "GENERATING_SOLUTION", "FAILED"},
			events: []string{"Start", "MediaNormalized", "RetrievalMiss", "CostCapExceeded"},
			tries:  map[string]int{"INITIATED": 1, "INGESTING": 1, "RETRIEVING": 1, "GENERATING_SOLUTION": 1},
			emits:  []string{"ingestion.MediaNormalized", "retrieval.RetrievalMiss"},
			steps:  []string{"policy_applied"},
			result: &result{nil, 0.75},
			errors: []coded{{"COST_CAP_EXCEEDED", "solving needs 0.7500 USD, the cap is 0.5000 USD"}},
		}},
		{name: "retrieval failed after its retries", wf: searchDown, p: async, cmd: textCmd, want: expect{
			states: []string{"INITIATED", "INGESTING", "RETRIEVING", "FAILED"},
			events: []string{"Start", "MediaNormalized", "RetrievalFailed"},
			tries:  map[string]int{"INITIATED": 1, "INGESTING": 1, "RETRIEVING": 3},
			emits:  []string{"ingestion.MediaNormalized"},
			steps:  []string{"policy_applied"},
		}},
		{name: "cancelled by its owner", wf: fx.wf, p: async, cmd: textCmd, o: driveOptions{cancelIn: "RETRIEVING", cancelBy: userID}, want: expect{
			states: []string{"INITIATED", "INGESTING", "RETRIEVING", "CANCELLED"},
			events: []string{"Start", "MediaNormalized", "Cancel"},
			tries:  map[string]int{"INITIATED": 1, "INGESTING": 1},
			emits:  []string{"ingestion.MediaNormalized"},
			steps:  []string{"policy_applied"},
		}},
	}
	for _, tt := range tests {
		tr := drive(t, tt.wf, tt.p, tt.cmd, tt.o)
		var enq []string
		for _, e := range enqueuedTypes(tr.Effects) {
			enq = append(enq, e[:len(e)-36]) // drop the asset version id
		}
		got := expect{
			states: tr.States, events: tr.Events, outcome: tr.Outcome, tries: tr.Tries,
			emits: topics(tr.Effects), enqueue: enq, steps: stepNames(tr.Effects), errors: tr.Effects.Errors,
		}
		if tt.want.outcome != "new" { // checkNewResult checks those against the rows
			got.result = lastResult(tr.Effects)
		}
		if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(expect{}), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
		if tt.want.outcome == "new" {
			checkNewResult(t, ctx, fx, tt.p, tr)
		}
	}
}

// checkNewResult checks the result of a run that generated a solution
// against the registry and index rows it wrote.
func checkNewResult(t *testing.T, ctx context.Context, fx *fixture, p problems.ExecutionPolicy, tr trace) {
	t.Helper()
	r := lastResult(tr.Effects)
	if r == nil {
		t.Fatal("no result")
	}
	out, ok := r.Output.(problems.Output)
	if !ok {
		t.Fatalf("output %#v, want a problems.Output", r.Output)
	}
	v, err := fx.set.Registry.Version(ctx, out.AssetVersionID)
	if err != nil {
		t.Fatal(err)
	}
	page, err := fx.set.Registry.Content(ctx, v.StorageKey)
	if err != nil || page == "" {
		t.Errorf("stored page: %q, %v", page, err)
	}
	if diff := cmp.Diff(result{problems.Output{AssetVersionID: v.ID, VideoPending: p.VideoGeneration != problems.VideoSkip}, local.DefaultSolveCostUSD}, *r); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	indexed, ok, err := fx.set.Indexer.Indexed(ctx, v.ProblemID)
	timedOut := tr.Events[len(tr.Events)-1] == "IndexTimedOut"
	if err != nil || ok == timedOut || (ok && indexed != v.ID) {
		t.Errorf("index of %s: %q, %v, %v; timed out %v", v.ProblemID, indexed, ok, err, timedOut)
	}
}

func TestDriveRefusesACancelByAnotherUser(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fx := newFixture(t)
	run, _ := newRun(t, problems.DefaultPolicy(), textCmd, rog.Start{}, normalized)
	d := fx.wf.Driver()
	recorded := 0
	rec := runtime.RecorderFunc(func(context.Context, runtime.Transition) error { recorded++; return nil })
	err := d.Fire(ctx, run, "RETRIEVING", rog.Cancel{UserID: "someone-else"}, rec)
	if !errors.Is(err, runtime.ErrGuardRejected) || recorded != 0 {
		t.Errorf("cancel by another user: %v, %d recorded; want ErrGuardRejected, none", err, recorded)
	}
	if err := d.Fire(ctx, run, "RETRIEVING", rog.Cancel{UserID: userID}, rec); err != nil || recorded != 1 {
		t.Errorf("cancel by the owner: %v, %d recorded", err, recorded)
	}
}
