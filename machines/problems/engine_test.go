package problems_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/fsmgen/fsmgen/machines/problems"
	rog "github.com/fsmgen/fsmgen/machines/problems/retrieveorgenerate"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
	"github.com/fsmgen/fsmgen/runtime/enginetest"
	"github.com/fsmgen/fsmgen/runtime/fsmtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

const tenant = "tenant-1"

// transition is one transition row of a run's log.
type transition struct{ From, To, Event string }

// ended is what a run came to: its transitions and its result record.
type ended struct {
	Transitions []transition
	State       string
	Status      runtime.Status
	Outcome     string
	Attempt     int
	Output      any // a problems.Output, problems.VideoOutput, ... or nil
	CostUSD     float64
	ErrorCode   string
	ErrorDetail string
}

var (
	hitPath = []transition{
		{"INITIATED", "INGESTING", "Start"},
		{"INGESTING", "RETRIEVING", "MediaNormalized"},
		{"RETRIEVING", "SUCCEEDED", "RetrievalHit"},
	}
	toSolve = []transition{
		{"INITIATED", "INGESTING", "Start"},
		{"INGESTING", "RETRIEVING", "MediaNormalized"},
		{"RETRIEVING", "GENERATING_SOLUTION", "RetrievalMiss"},
	}
	newPath = append(toSolve[:3:3],
		transition{"GENERATING_SOLUTION", "REGISTERING", "SolveSucceeded"},
		transition{"REGISTERING", "INDEXING", "AssetsRegistered"},
		transition{"INDEXING", "SUCCEEDED", "DocumentIndexed"},
	)
	solveFailedTo = func(to string) []transition {
		return append(toSolve[:3:3], transition{"GENERATING_SOLUTION", to, "SolveFailed"})
	}
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// newEngine returns an engine on the fixture's pool with wf registered. Its
// retries are not jittered (Jitter 0.5 is the middle of the range).
func newEngine(t *testing.T, fx *fixture, wf *problems.Workflow, cfg engine.Config, opts ...store.Option) *engine.Engine {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quiet
	}
	if cfg.Lease == 0 {
		cfg.Lease = 10 * time.Second
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 20 * time.Millisecond
	}
	if cfg.Jitter == nil {
		cfg.Jitter = func() float64 { return 0.5 }
	}
	eng, err := engine.New(store.New(fx.pool, opts...), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := wf.Register(context.Background(), eng); err != nil {
		t.Fatal(err)
	}
	return eng
}

// transitions returns the (from, to, event) of the run's transition rows
// of attempt attempt, oldest first.
func transitions(t *testing.T, eng *engine.Engine, runID string, attempt int) []transition {
	t.Helper()
	steps, err := eng.Store().History(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	out := []transition{}
	for _, s := range steps {
		if s.Kind == store.KindTransition && s.Attempt == attempt {
			out = append(out, transition{s.From, s.To, s.Event})
		}
	}
	return out
}

// steps returns the payloads of the run's logged steps named name.
func steps(t *testing.T, eng *engine.Engine, runID, name string) []map[string]any {
	t.Helper()
	h, err := eng.Store().History(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	out := []map[string]any{}
	for _, s := range h {
		if s.Kind == store.KindStep && s.Name == name {
			var m map[string]any
			if err := json.Unmarshal(s.Payload, &m); err != nil {
				t.Fatal(err)
			}
			out = append(out, m)
		}
	}
	return out
}

// end summarises a terminal run; output decodes the result's output.
func end(t *testing.T, eng *engine.Engine, run runtime.Run, output func(json.RawMessage) (any, error)) ended {
	t.Helper()
	e := ended{Transitions: transitions(t, eng, run.ID, run.Attempt), State: run.State, Status: run.Status, Attempt: run.Attempt}
	if run.Result == nil {
		return e
	}
	r := run.Result
	e.Outcome, e.CostUSD, e.ErrorCode, e.ErrorDetail = r.Outcome, r.CostUSD, r.ErrorCode, r.ErrorDetail
	if r.Status != run.Status || r.RunID != run.ID || r.Attempt != run.Attempt {
		t.Errorf("result %+v of run %s %s attempt %d", r, run.ID, run.Status, run.Attempt)
	}
	if len(r.Output) > 0 && string(r.Output) != "null" {
		out, err := output(r.Output)
		if err != nil {
			t.Fatalf("output %s: %v", r.Output, err)
		}
		e.Output = out
	}
	return e
}

func decodeAs[T any](raw json.RawMessage) (any, error) {
	var v T
	err := json.Unmarshal(raw, &v)
	return v, err
}

var workflowOutput = decodeAs[problems.Output]

func submitReq(cmd problems.SubmitProblem, tier string) problems.SubmitRequest {
	return problems.SubmitRequest{UserID: userID, TenantID: tenant, SubscriptionTier: tier, Problem: cmd}
}

// submit submits cmd and requires a new run.
func submit(t *testing.T, wf *problems.Workflow, eng *engine.Engine, cmd problems.SubmitProblem, tier string) runtime.Run {
	t.Helper()
	res, err := wf.Submit(context.Background(), eng, submitReq(cmd, tier))
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != runtime.StartCreated {
		t.Fatalf("submit: outcome %v, want created", res.Outcome)
	}
	return res.Run
}

// submitAndDrive submits cmd and drives its run inline to its end.
func submitAndDrive(t *testing.T, wf *problems.Workflow, eng *engine.Engine, cmd problems.SubmitProblem, tier string) runtime.Run {
	t.Helper()
	run := submit(t, wf, eng, cmd, tier)
	run, err := eng.Drive(context.Background(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !run.Terminal() {
		t.Fatalf("Drive returned with the run in %s", run.State)
	}
	return run
}

// runDue drives run to its end with RunDue, moving clk to each retry's due
// time, and returns it.
func runDue(t *testing.T, eng *engine.Engine, clk *fsmtest.Clock, runID string) runtime.Run {
	t.Helper()
	ctx := context.Background()
	for range 30 {
		if _, err := eng.RunDue(ctx); err != nil {
			t.Fatal(err)
		}
		run, err := eng.Store().Get(ctx, runID)
		if err != nil {
			t.Fatal(err)
		}
		if run.Terminal() {
			return run
		}
		if !run.ParkedAt.IsZero() || run.NextRunAt.IsZero() {
			t.Fatalf("run parked or waiting in %s: %s %s", run.State, run.LastErrorCode, run.LastError)
		}
		clk.Advance(run.NextRunAt.Sub(clk.Now()))
	}
	t.Fatal("the run did not end")
	return runtime.Run{}
}

// background returns the run of type typ started with key.
func background(t *testing.T, eng *engine.Engine, typ, key string) runtime.Run {
	t.Helper()
	runs, err := eng.Store().List(context.Background(), store.Filter{Filter: runtime.Filter{Type: typ}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if r.IdempotencyKey == key {
			return r
		}
	}
	t.Fatalf("no %s run with key %s among %d", typ, key, len(runs))
	return runtime.Run{}
}

// flakyIndexer times out on its first n writes, then writes through inner.
type flakyIndexer struct {
	inner problems.Indexer
	n     atomic.Int32
}

func (f *flakyIndexer) Upsert(ctx context.Context, doc problems.IndexDocument) error {
	if f.n.Add(-1) >= 0 {
		return fmt.Errorf("index %s: %w", doc.AssetVersionID, problems.ErrIndexTimeout)
	}
	return f.inner.Upsert(ctx, doc)
}

// switchSolver refuses every solve as over the cost cap while over is set.
type switchSolver struct {
	inner problems.Solver
	over  atomic.Bool
}

func (s *switchSolver) Solve(ctx context.Context, req problems.SolveRequest) (problems.Solution, error) {
	if s.over.Load() {
		return problems.Solution{}, &problems.CostCapError{CapUSD: req.BudgetUSD, SpentUSD: 9}
	}
	return s.inner.Solve(ctx, req)
}

// blockingSolver blocks every solve until its context is done, telling
// entered when it starts.
type blockingSolver struct{ entered chan struct{} }

func (b blockingSolver) Solve(ctx context.Context, _ problems.SolveRequest) (problems.Solution, error) {
	select {
	case b.entered <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return problems.Solution{}, context.Cause(ctx)
}

func TestEngineHit(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	_, av := fx.stored(t, textNorm)
	eng := newEngine(t, fx, fx.wf, engine.Config{})
	run := submitAndDrive(t, fx.wf, eng, textCmd, problems.TierPro)
	want := ended{Transitions: hitPath, State: "SUCCEEDED", Status: runtime.StatusSucceeded, Outcome: "hit", Attempt: 1,
		Output: problems.Output{AssetVersionID: av}}
	if diff := cmp.Diff(want, end(t, eng, run, workflowOutput)); diff != "" {
		t.Errorf("run (-want +got):\n%s", diff)
	}
	// Policy first: the snapshot on the run, and step policy_applied.
	var pol problems.ExecutionPolicy
	if err := json.Unmarshal(run.Policy, &pol); err != nil {
		t.Fatal(err)
	}
	wantPol := problems.ExecutionPolicy{RetrievalThreshold: 0.85, VideoGeneration: problems.VideoAsync, RetryMax: 3, CostCapUSD: 0.5,
		SubscriptionTier: problems.TierPro, Sensitivity: problems.SensitivityStandard}
	if diff := cmp.Diff(wantPol, pol); diff != "" {
		t.Errorf("policy snapshot (-want +got):\n%s", diff)
	}
	applied := steps(t, eng, run.ID, "policy_applied")
	wantApplied := []map[string]any{{"policy": map[string]any{"retrieval_threshold": 0.85, "video_generation": "async", "retry_max": 3.0,
		"cost_cap_usd": 0.5, "subscription_tier": "pro", "sensitivity": "standard"}}}
	if diff := cmp.Diff(wantApplied, applied); diff != "" {
		t.Errorf("policy_applied steps (-want +got):\n%s", diff)
	}
}

// The miss path on workers: the run and its video run are driven by Work.
func TestEngineNewWithVideoOnWorkers(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fx := newFixture(t)
	eng := newEngine(t, fx, fx.wf, engine.Config{Concurrency: 4})
	errc := make(chan error, 1)
	go func() { errc <- eng.Work(ctx) }()
	defer func() {
		cancel()
		if err := <-errc; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("Work: %v", err)
		}
	}()

	run := submit(t, fx.wf, eng, problems.SubmitProblem{Text: "Solve 3y - 4 = 11"}, problems.TierPro)
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	run, err := eng.Wait(wctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	var out problems.Output
	if err := json.Unmarshal(run.Result.Output, &out); err != nil {
		t.Fatal(err)
	}
	want := ended{Transitions: newPath, State: "SUCCEEDED", Status: runtime.StatusSucceeded, Outcome: "new", Attempt: 1,
		Output: problems.Output{AssetVersionID: out.AssetVersionID, VideoPending: true}, CostUSD: 0.01}
	if diff := cmp.Diff(want, end(t, eng, run, workflowOutput)); diff != "" {
		t.Errorf("run (-want +got):\n%s", diff)
	}
	if _, ok, err := fx.set.Indexer.Indexed(ctx, mustProblem(t, fx, out.AssetVersionID)); err != nil || !ok {
		t.Errorf("the new solution is not indexed (%v)", err)
	}

	video := background(t, eng, problems.VideoWorkflowType, "video:"+out.AssetVersionID)
	if video.UserID != userID || video.TenantID != tenant || video.CorrelationID != run.CorrelationID {
		t.Errorf("video run of %s/%s/%s, want the run's", video.UserID, video.TenantID, video.CorrelationID)
	}
	video, err = eng.Wait(wctx, video.ID)
	if err != nil {
		t.Fatal(err)
	}
	wantVideo := ended{
		Transitions: []transition{{"RENDERING", "RENDERED", "Rendered"}},
		State:       "RENDERED", Status: runtime.StatusSucceeded, Outcome: "rendered", Attempt: 1,
		Output: problems.VideoOutput{SolutionAssetVersionID: out.AssetVersionID, StorageKey: "video:" + out.AssetVersionID},
	}
	if diff := cmp.Diff(wantVideo, end(t, eng, video, decodeAs[problems.VideoOutput])); diff != "" {
		t.Errorf("video run (-want +got):\n%s", diff)
	}
	key, renders, ok, err := fx.set.Videos.Rendered(ctx, out.AssetVersionID)
	if err != nil || !ok || key != "video:"+out.AssetVersionID || renders != 1 {
		t.Errorf("video row: %q, %d renders, %v, %v", key, renders, ok, err)
	}
}

// mustProblem returns the problem of an asset version.
func mustProblem(t *testing.T, fx *fixture, assetVersionID string) string {
	t.Helper()
	v, err := fx.set.Registry.Version(context.Background(), assetVersionID)
	if err != nil {
		t.Fatal(err)
	}
	return v.ProblemID
}

func TestEngineVideoSkippedByPolicy(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	eng := newEngine(t, fx, fx.wf, engine.Config{})
	run := submitAndDrive(t, fx.wf, eng, problems.SubmitProblem{Text: "Solve 5k + 2 = 12"}, problems.TierFree)
	got := end(t, eng, run, workflowOutput)
	av := got.Output.(problems.Output).AssetVersionID
	want := ended{Transitions: newPath, State: "SUCCEEDED", Status: runtime.StatusSucceeded, Outcome: "new", Attempt: 1,
		Output: problems.Output{AssetVersionID: av}, CostUSD: 0.01}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("run (-want +got):\n%s", diff)
	}
	runs, err := eng.Store().List(context.Background(), store.Filter{Filter: runtime.Filter{Type: problems.VideoWorkflowType}})
	if err != nil || len(runs) != 0 {
		t.Errorf("video runs: %d (%v), want none", len(runs), err)
	}
}

func TestEngineMediaRejected(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	eng := newEngine(t, fx, fx.wf, engine.Config{})
	run := submitAndDrive(t, fx.wf, eng, problems.SubmitProblem{Text: "?!"}, problems.TierPro)
	want := ended{
		Transitions: []transition{{"INITIATED", "INGESTING", "Start"}, {"INGESTING", "FAILED", "MediaRejected"}},
		State:       "FAILED", Status: runtime.StatusFailed, Attempt: 1,
		ErrorCode: problems.CodeMediaRejected, ErrorDetail: "empty_content",
	}
	if diff := cmp.Diff(want, end(t, eng, run, workflowOutput)); diff != "" {
		t.Errorf("run (-want +got):\n%s", diff)
	}
}

// The solver fails on every try: the engine retries GENERATING_SOLUTION
// after 1 s and 4 s (RetrieveOrGenerate's backoff, unjittered), and the third try,
// the last that the pro policy's retry_max and the machine allow, returns
// SolveFailed.
func TestEngineSolveFailsAfterRetries(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	_, storedAV := fx.stored(t, textNorm)
	var calls atomic.Int32
	failing := fx.with(t, func(a *problems.Adapters) {
		s := *fx.set.Solver
		s.Fail = func(problems.SolveRequest) error { calls.Add(1); return errors.New("model unavailable") }
		a.Solver = &s
	})
	tests := []struct {
		name  string
		cmd   problems.SubmitProblem
		want  ended
		steps []map[string]any
	}{
		{
			name: "no near miss: failed",
			cmd:  problems.SubmitProblem{Text: "What is 6 * 7?"},
			want: ended{Transitions: solveFailedTo("FAILED"), State: "FAILED", Status: runtime.StatusFailed, Attempt: 1,
				ErrorCode: problems.CodeSolveFailed, ErrorDetail: "local: solve: model unavailable"},
			steps: []map[string]any{},
		},
		{
			// "Solve for x: 2x + 3 = 17" misses the stored "2x + 3 = 7"
			// with a hybrid 0.818: under 0.83, above 0.70.
			name: "near miss: served as an approximate hit",
			cmd:  problems.SubmitProblem{Text: "Solve for x: 2x + 3 = 17"},
			want: ended{Transitions: solveFailedTo("SUCCEEDED"), State: "SUCCEEDED", Status: runtime.StatusSucceeded, Outcome: "hit", Attempt: 1,
				Output: problems.Output{AssetVersionID: storedAV, IsApproximate: true}},
			steps: []map[string]any{{"asset_version_id": storedAV, "error_code": "SOLVE_FAILED"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			calls.Store(0)
			clk := fsmtest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			eng := newEngine(t, fx, failing, engine.Config{}, store.WithClock(clk.Now))
			run := submit(t, failing, eng, tc.cmd, problems.TierPro)
			run = runDue(t, eng, clk, run.ID)
			if diff := cmp.Diff(tc.want, end(t, eng, run, workflowOutput)); diff != "" {
				t.Errorf("run (-want +got):\n%s", diff)
			}
			// The pro tier's retry_max is 3: four tries, within the
			// machine's bound of six.
			if n := calls.Load(); n != 4 {
				t.Errorf("%d solves, want 4", n)
			}
			var delays []float64
			for _, s := range steps(t, eng, run.ID, "attempt_failed") {
				if s["retry"] == true { // the last failure is logged without a retry
					delays = append(delays, s["delay_ms"].(float64))
				}
			}
			if diff := cmp.Diff([]float64{1000, 4000, 16000}, delays); diff != "" {
				t.Errorf("retry delays (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.steps, steps(t, eng, run.ID, "near_miss_served")); diff != "" {
				t.Errorf("near_miss_served (-want +got):\n%s", diff)
			}
		})
	}
}

// The tries of GENERATING_SOLUTION are used up by workers that died
// holding the run, so the engine rather than the handler ends the state:
// Workflow.Exhausted still serves the near miss, with its output.
func TestEngineSolveExhaustedByTheEngine(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	_, storedAV := fx.stored(t, textNorm)
	failing := fx.with(t, func(a *problems.Adapters) {
		s := *fx.set.Solver
		s.Fail = func(problems.SolveRequest) error { return errors.New("model unavailable") }
		a.Solver = &s
	})
	detail := "4 tries of GENERATING_SOLUTION were interrupted by expired leases"
	tests := []struct {
		name  string
		cmd   problems.SubmitProblem
		want  ended
		steps []map[string]any
	}{
		{
			name: "near miss: served as an approximate hit",
			cmd:  problems.SubmitProblem{Text: "Solve for x: 2x + 3 = 17"},
			want: ended{Transitions: solveFailedTo("SUCCEEDED"), State: "SUCCEEDED", Status: runtime.StatusSucceeded, Outcome: "hit", Attempt: 1,
				Output: problems.Output{AssetVersionID: storedAV, IsApproximate: true}},
			steps: []map[string]any{{"asset_version_id": storedAV, "error_code": "LEASE_EXPIRED"}},
		},
		{
			name: "no near miss: failed",
			cmd:  problems.SubmitProblem{Text: "What is 6 * 7?"},
			want: ended{Transitions: solveFailedTo("FAILED"), State: "FAILED", Status: runtime.StatusFailed, Attempt: 1,
				ErrorCode: "LEASE_EXPIRED", ErrorDetail: detail},
			steps: []map[string]any{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			clk := fsmtest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			eng := newEngine(t, fx, failing, engine.Config{}, store.WithClock(clk.Now))
			run := submit(t, failing, eng, tc.cmd, problems.TierPro)
			// The first try fails and is scheduled again.
			if _, err := eng.RunDue(ctx); err != nil {
				t.Fatal(err)
			}
			// Three workers claim it in turn and die: the pro tier's four
			// tries are used up.
			for range 3 {
				clk.Advance(time.Minute)
				if _, err := enginetest.AbandonClaim(ctx, eng.Store(), "dead-worker", run.ID, time.Second); err != nil {
					t.Fatalf("claim by a worker about to die: %v", err)
				}
			}
			clk.Advance(time.Minute)
			run = runDue(t, eng, clk, run.ID)
			if diff := cmp.Diff(tc.want, end(t, eng, run, workflowOutput)); diff != "" {
				t.Errorf("run (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.steps, steps(t, eng, run.ID, "near_miss_served")); diff != "" {
				t.Errorf("near_miss_served (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEngineCostCapExceeded(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	expensive := fx.with(t, func(a *problems.Adapters) {
		s := *fx.set.Solver
		s.CostUSD = 0.75
		a.Solver = &s
	})
	eng := newEngine(t, fx, expensive, engine.Config{})
	run := submitAndDrive(t, expensive, eng, problems.SubmitProblem{Text: "Solve 9q - 1 = 8"}, problems.TierPro)
	want := ended{
		Transitions: append(toSolve[:3:3], transition{"GENERATING_SOLUTION", "FAILED", "CostCapExceeded"}),
		State:       "FAILED", Status: runtime.StatusFailed, Attempt: 1, CostUSD: 0.75,
		ErrorCode: problems.CodeCostCapExceeded, ErrorDetail: "solving needs 0.7500 USD, the cap is 0.5000 USD",
	}
	if diff := cmp.Diff(want, end(t, eng, run, workflowOutput)); diff != "" {
		t.Errorf("run (-want +got):\n%s", diff)
	}
}

// The index write times out: the run succeeds, and the reindex run it
// enqueued writes the index in the background.
func TestEngineIndexTimeoutReindexes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fx := newFixture(t)
	ix := &flakyIndexer{inner: fx.set.Indexer}
	ix.n.Store(1)
	slow := fx.with(t, func(a *problems.Adapters) { a.Indexer = ix })
	eng := newEngine(t, fx, slow, engine.Config{})
	run := submitAndDrive(t, slow, eng, problems.SubmitProblem{Text: "Solve 7z + 1 = 50"}, problems.TierPro)
	got := end(t, eng, run, workflowOutput)
	av := got.Output.(problems.Output).AssetVersionID
	want := ended{
		Transitions: append(newPath[:5:5], transition{"INDEXING", "SUCCEEDED", "IndexTimedOut"}),
		State:       "SUCCEEDED", Status: runtime.StatusSucceeded, Outcome: "new", Attempt: 1,
		Output: problems.Output{AssetVersionID: av, VideoPending: true}, CostUSD: 0.01,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("run (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]map[string]any{{"reason": "timeout"}}, steps(t, eng, run.ID, "index_deferred")); diff != "" {
		t.Errorf("index_deferred (-want +got):\n%s", diff)
	}
	pid := mustProblem(t, fx, av)
	if _, ok, err := fx.set.Indexer.Indexed(ctx, pid); err != nil || ok {
		t.Fatalf("indexed before the reindex run: %v, %v", ok, err)
	}

	reindex := background(t, eng, problems.ReindexWorkflowType, "reindex:"+av)
	reindex, err := eng.Drive(ctx, reindex.ID)
	if err != nil {
		t.Fatal(err)
	}
	wantReindex := ended{
		Transitions: []transition{{"REINDEXING", "INDEXED", "Reindexed"}},
		State:       "INDEXED", Status: runtime.StatusSucceeded, Outcome: "indexed", Attempt: 1,
		Output: problems.ReindexOutput{AssetVersionID: av},
	}
	if diff := cmp.Diff(wantReindex, end(t, eng, reindex, decodeAs[problems.ReindexOutput])); diff != "" {
		t.Errorf("reindex run (-want +got):\n%s", diff)
	}
	if got, ok, err := fx.set.Indexer.Indexed(ctx, pid); err != nil || !ok || got != av {
		t.Errorf("after the reindex run the index serves %q, %v (%v), want %s", got, ok, err, av)
	}
	// The solution is now found by retrieval: the same problem is a hit.
	again := submitAndDrive(t, slow, eng, problems.SubmitProblem{Text: "Solve 7z + 1 = 50", Intent: "explain"}, problems.TierPro)
	if diff := cmp.Diff(hitPath, transitions(t, eng, again.ID, 1)); diff != "" {
		t.Errorf("the same problem again (-want +got):\n%s", diff)
	}
}

func TestEngineIdempotentStart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fx := newFixture(t)
	solver := &switchSolver{inner: fx.set.Solver}
	wf := fx.with(t, func(a *problems.Adapters) { a.Solver = solver })
	eng := newEngine(t, fx, wf, engine.Config{})
	cmd := problems.SubmitProblem{Text: "Solve 4w + 4 = 20"}

	t.Run("same problem, user and intent: the same run, then its cached result", func(t *testing.T) {
		first := submit(t, wf, eng, cmd, problems.TierPro)
		// Spelled differently, the same normalized problem.
		res, err := wf.Submit(ctx, eng, submitReq(problems.SubmitProblem{Text: "  solve 4W + 4 = 20 "}, problems.TierPro))
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome != runtime.StartRunning || res.Run.ID != first.ID || res.Run.State != "INITIATED" {
			t.Errorf("second submission: %v %s in %s, want running %s", res.Outcome, res.Run.ID, res.Run.State, first.ID)
		}
		run, err := eng.Drive(ctx, first.ID)
		if err != nil {
			t.Fatal(err)
		}
		res, err = wf.Submit(ctx, eng, submitReq(cmd, problems.TierPro))
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome != runtime.StartCached || res.Run.ID != first.ID {
			t.Fatalf("after success: %v %s, want cached %s", res.Outcome, res.Run.ID, first.ID)
		}
		if diff := cmp.Diff(run.Result, res.Run.Result); diff != "" {
			t.Errorf("cached result (-driven +cached):\n%s", diff)
		}
		if diff := cmp.Diff(newPath, transitions(t, eng, first.ID, 1)); diff != "" {
			t.Errorf("transitions (-want +got):\n%s", diff)
		}
		// Another intent, or another user, is another run.
		other := cmd
		other.Intent = "explain"
		if r := submit(t, wf, eng, other, problems.TierPro); r.ID == first.ID {
			t.Error("another intent got the same run")
		}
	})

	t.Run("failed: restarted in place as attempt 2", func(t *testing.T) {
		cmd := problems.SubmitProblem{Text: "Solve 6m - 6 = 30"}
		solver.over.Store(true)
		failed := submitAndDrive(t, wf, eng, cmd, problems.TierPro)
		if failed.State != "FAILED" || failed.Result.ErrorCode != problems.CodeCostCapExceeded {
			t.Fatalf("first attempt: %s %+v", failed.State, failed.Result)
		}
		solver.over.Store(false)
		res, err := wf.Submit(ctx, eng, submitReq(cmd, problems.TierPro))
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome != runtime.StartRestarted || res.Run.ID != failed.ID || res.Run.Attempt != 2 || res.Run.State != "INITIATED" {
			t.Fatalf("resubmitted: %v %s attempt %d in %s", res.Outcome, res.Run.ID, res.Run.Attempt, res.Run.State)
		}
		run, err := eng.Drive(ctx, res.Run.ID)
		if err != nil {
			t.Fatal(err)
		}
		got := end(t, eng, run, workflowOutput)
		want := ended{Transitions: newPath, State: "SUCCEEDED", Status: runtime.StatusSucceeded, Outcome: "new", Attempt: 2,
			Output: problems.Output{AssetVersionID: got.Output.(problems.Output).AssetVersionID, VideoPending: true}, CostUSD: 0.01}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("attempt 2 (-want +got):\n%s", diff)
		}
		wantFirst := append(toSolve[:3:3], transition{"GENERATING_SOLUTION", "FAILED", "CostCapExceeded"})
		if diff := cmp.Diff(wantFirst, transitions(t, eng, run.ID, 1)); diff != "" {
			t.Errorf("attempt 1 (-want +got):\n%s", diff)
		}
		if n := len(steps(t, eng, run.ID, "policy_applied")); n != 2 {
			t.Errorf("%d policy_applied steps, want one per attempt", n)
		}
	})
}

func TestEngineCancel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fx := newFixture(t)
	block := blockingSolver{entered: make(chan struct{}, 1)}
	wf := fx.with(t, func(a *problems.Adapters) { a.Solver = block })
	// A short lease: the handler learns of the cancellation at its next
	// heartbeat, a third of it.
	eng := newEngine(t, fx, wf, engine.Config{Lease: 600 * time.Millisecond})
	run := submit(t, wf, eng, problems.SubmitProblem{Text: "Solve 2p + 2 = 8"}, problems.TierPro)
	type driven struct {
		run runtime.Run
		err error
	}
	done := make(chan driven, 1)
	go func() {
		r, err := eng.Drive(ctx, run.ID)
		done <- driven{r, err}
	}()
	select {
	case <-block.entered:
	case <-time.After(20 * time.Second):
		t.Fatal("the solver was not called")
	}

	// The typed handle cancels through the engine and reads the state typed.
	runs := rog.Runs[problems.RunInput](eng)
	// No caller pre-empts the solver with the event its handler returns.
	_, err := runs.Signal(ctx, run.ID, rog.SolveSucceeded{StorageKey: "forged"})
	wantErr := "engine: signal SolveSucceeded run " + run.ID + ": callers may not send the event: retrieve_or_generate v1 in state GENERATING_SOLUTION: SolveSucceeded is returned by the handler of GENERATING_SOLUTION; declare it external to let callers send it"
	if !errors.Is(err, runtime.ErrNotCallerEvent) || err.Error() != wantErr {
		t.Errorf("Signal(SolveSucceeded) in GENERATING_SOLUTION: %v\nwant %s", err, wantErr)
	}
	const stranger = "8a5f2c1e-0000-4000-8000-0000000000ff"
	if _, err := runs.Cancel(ctx, run.ID, stranger); !errors.Is(err, runtime.ErrNotOwner) {
		t.Errorf("cancel by another user: %v, want ErrNotOwner", err)
	}
	cancelled, err := runs.Cancel(ctx, run.ID, userID)
	if err != nil {
		t.Fatal(err)
	}
	if cancelled.State != rog.StateCancelled {
		t.Errorf("cancelled run in %s", cancelled.State)
	}
	var d driven
	select {
	case d = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("Drive did not return after the cancellation")
	}
	// The handler in flight lost its lease and wrote nothing.
	if d.err != nil && !errors.Is(d.err, runtime.ErrLeaseLost) {
		t.Errorf("Drive: %v", d.err)
	}
	run, err = eng.Store().Get(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := ended{
		Transitions: append(toSolve[:3:3], transition{"GENERATING_SOLUTION", "CANCELLED", "Cancel"}),
		State:       "CANCELLED", Status: runtime.StatusCancelled, Attempt: 1,
		ErrorCode: "CANCELLED", ErrorDetail: "cancelled by user " + userID,
	}
	if diff := cmp.Diff(want, end(t, eng, run, workflowOutput), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("run (-want +got):\n%s", diff)
	}
	if _, err := runs.Cancel(ctx, run.ID, userID); !errors.Is(err, runtime.ErrRunFinished) {
		t.Errorf("cancel of a cancelled run: %v, want ErrRunFinished", err)
	}
	// A cancellation is final for its key.
	res, err := wf.Submit(ctx, eng, submitReq(problems.SubmitProblem{Text: "Solve 2p + 2 = 8"}, problems.TierPro))
	if err != nil || res.Outcome != runtime.StartCancelled || res.Run.ID != run.ID {
		t.Errorf("resubmitted after the cancellation: %v %s (%v)", res.Outcome, res.Run.ID, err)
	}
}

// downPolicies is a policy engine that can be taken down: while down, every
// Policy call fails with errPolicyDown. It counts the calls.
type downPolicies struct {
	inner problems.PolicyEngine
	down  atomic.Bool
	calls atomic.Int32
}

var errPolicyDown = errors.New("policy engine unavailable")

func (p *downPolicies) Policy(ctx context.Context, req problems.PolicyRequest) (problems.ExecutionPolicy, error) {
	p.calls.Add(1)
	if p.down.Load() {
		return problems.ExecutionPolicy{}, errPolicyDown
	}
	return p.inner.Policy(ctx, req)
}

// TestEngineIdempotencyBeforePolicy: the run lifecycle's checks
// idempotency before anything else, so with the policy engine down a
// problem whose run succeeded is still answered from its cached result,
// one under way is still reported running, and the policy engine is not
// asked; only a start that would create or restart a run needs it.
func TestEngineIdempotencyBeforePolicy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fx := newFixture(t)
	policies := &downPolicies{inner: fx.set.Adapters().Policies}
	wf := fx.with(t, func(a *problems.Adapters) { a.Policies = policies })
	eng := newEngine(t, fx, wf, engine.Config{})

	done := submitAndDrive(t, wf, eng, problems.SubmitProblem{Text: "Solve 7x = 49"}, problems.TierPro)
	if done.Status != runtime.StatusSucceeded {
		t.Fatalf("first run: %s in %s", done.Status, done.State)
	}
	running := submit(t, wf, eng, problems.SubmitProblem{Text: "Solve 3y = 12"}, problems.TierPro)

	policies.down.Store(true)
	before := policies.calls.Load()
	res, err := wf.Submit(ctx, eng, submitReq(problems.SubmitProblem{Text: "Solve 7x = 49"}, problems.TierPro))
	if err != nil {
		t.Fatalf("resubmitting a succeeded problem with the policy engine down: %v", err)
	}
	if res.Outcome != runtime.StartCached || res.Run.ID != done.ID {
		t.Errorf("resubmitted: %v %s, want cached %s", res.Outcome, res.Run.ID, done.ID)
	}
	if diff := cmp.Diff(done.Result, res.Run.Result); diff != "" {
		t.Errorf("cached result (-driven +cached):\n%s", diff)
	}
	res, err = wf.Submit(ctx, eng, submitReq(problems.SubmitProblem{Text: "Solve 3y = 12"}, problems.TierPro))
	if err != nil || res.Outcome != runtime.StartRunning || res.Run.ID != running.ID {
		t.Errorf("resubmitting a run under way: %v %s, %v; want running %s", res.Outcome, res.Run.ID, err, running.ID)
	}
	if n := policies.calls.Load() - before; n != 0 {
		t.Errorf("the policy engine was asked %d times for runs that exist", n)
	}

	_, err = wf.Submit(ctx, eng, submitReq(problems.SubmitProblem{Text: "Solve 5z = 10"}, problems.TierPro))
	if !errors.Is(err, runtime.ErrPolicy) || !errors.Is(err, errPolicyDown) {
		t.Errorf("a new problem with the policy engine down: %v, want ErrPolicy and the engine's error", err)
	}
}

// TestEngineRetriesFromThePolicy: a run's tries of ingestion and solving
// are its policy's retry_max + 1, within the machine's bound (retry up to
// 6), not capped below the policy; and a solve retried after a failed try
// runs on the fallback model, the solver being told the attempt.
func TestEngineRetriesFromThePolicy(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	var mu sync.Mutex
	var normalized, solved []int
	wf := fx.with(t, func(a *problems.Adapters) {
		a.Policies = fixedPolicies{retryMax: 4}
		n := a.Normalizer
		a.Normalizer = normalizerFunc(func(ctx context.Context, c problems.Content) (problems.Media, error) {
			if c.Text != "What is 9 * 9?" {
				return n.Normalize(ctx, c)
			}
			mu.Lock()
			defer mu.Unlock()
			normalized = append(normalized, len(normalized)+1)
			return problems.Media{}, errors.New("ocr unavailable")
		})
		s := *fx.set.Solver
		s.Fail = func(req problems.SolveRequest) error {
			mu.Lock()
			defer mu.Unlock()
			solved = append(solved, req.Attempt)
			if req.Attempt == 1 {
				return errors.New("primary model unavailable")
			}
			return nil
		}
		a.Solver = &s
	})

	clk := fsmtest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	eng := newEngine(t, fx, wf, engine.Config{}, store.WithClock(clk.Now))
	// Submit would normalize the problem for its key: start it with one.
	res, err := eng.Start(context.Background(), runtime.StartRequest{Type: rog.Type, IdempotencyKey: "ocr-down", Owner: runtime.Owner{TenantID: tenant, UserID: userID},
		Input: problems.RunInput{SubmitProblem: problems.SubmitProblem{Text: "What is 9 * 9?"}, SubscriptionTier: problems.TierPro}})
	if err != nil {
		t.Fatal(err)
	}
	run := runDue(t, eng, clk, res.Run.ID)
	mu.Lock()
	tries := len(normalized)
	mu.Unlock()
	if run.State != "FAILED" || tries != 5 {
		t.Errorf("ingestion failing on every try: %s after %d tries, want FAILED after 5 (retry_max 4)", run.State, tries)
	}

	run = submit(t, wf, eng, problems.SubmitProblem{Text: "Solve 5k + 5 = 30"}, problems.TierPro)
	run = runDue(t, eng, clk, run.ID)
	if run.State != "SUCCEEDED" {
		t.Fatalf("run in %s, want SUCCEEDED", run.State)
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]int{1, 2}, solved); diff != "" {
		t.Errorf("the solver's attempts (-want +got):\n%s", diff)
	}
	h, err := eng.Store().History(context.Background(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	var provenance []string
	for _, s := range h {
		if s.Event == "SolveSucceeded" {
			var ok rog.SolveSucceeded
			if err := json.Unmarshal(s.Payload, &ok); err != nil {
				t.Fatal(err)
			}
			provenance = append(provenance, ok.Provenance)
		}
	}
	if diff := cmp.Diff([]string{"local-solver/1 model=fallback method=linear-equation"}, provenance); diff != "" {
		t.Errorf("the solution's provenance (-want +got):\n%s", diff)
	}
}

// fixedPolicies resolves every run to the default policy with retryMax
// retries.
type fixedPolicies struct{ retryMax int }

func (f fixedPolicies) Policy(context.Context, problems.PolicyRequest) (problems.ExecutionPolicy, error) {
	p := problems.DefaultPolicy()
	p.RetryMax = f.retryMax
	return p, nil
}

type normalizerFunc func(context.Context, problems.Content) (problems.Media, error)

func (f normalizerFunc) Normalize(ctx context.Context, c problems.Content) (problems.Media, error) {
	return f(ctx, c)
}
