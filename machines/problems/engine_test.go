package problems_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/machines/problems"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
	"github.com/fsmgen/fsmgen/runtime/store"
)

const tenant = "tenant-1"

// transition is one transition row of a run's log.
type transition struct{ From, To, Event string }

// newEngine returns an engine on the fixture's pool with wf registered.
func newEngine(t *testing.T, fx *fixture, wf *problems.Workflow, cfg engine.Config, opts ...store.Option) *engine.Engine {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Lease == 0 {
		cfg.Lease = 10 * time.Second
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 20 * time.Millisecond
	}
	eng := engine.New(fx.pool, store.New(fx.pool, opts...), cfg)
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

func submitReq(cmd problems.SubmitProblem, tier string) problems.SubmitRequest {
	return problems.SubmitRequest{UserID: userID, TenantID: tenant, SubscriptionTier: tier, Problem: cmd}
}

func TestEngineSubmitDriveHit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fx := newFixture(t)
	_, av := fx.stored(t, textNorm)
	eng := newEngine(t, fx, fx.wf, engine.Config{})
	res, err := fx.wf.Submit(ctx, eng, submitReq(textCmd, problems.TierPro))
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != store.Created {
		t.Fatalf("outcome %v, want created", res.Outcome)
	}
	run, err := eng.Drive(ctx, res.Run.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := []transition{
		{"INITIATED", "INGESTING", "Start"},
		{"INGESTING", "RETRIEVING", "MediaNormalized"},
		{"RETRIEVING", "SUCCEEDED", "RetrievalHit"},
	}
	if diff := cmp.Diff(want, transitions(t, eng, run.ID, 1)); diff != "" {
		t.Errorf("transitions (-want +got):\n%s", diff)
	}
	if run.Status != runtime.StatusSucceeded || run.Result == nil || run.Result.Outcome != "hit" {
		t.Fatalf("run %s %s, result %+v", run.State, run.Status, run.Result)
	}
	var out problems.Output
	if err := json.Unmarshal(run.Result.Output, &out); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(problems.Output{AssetVersionID: av}, out); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}
