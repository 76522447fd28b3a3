package temporal_test

import (
	"context"
	"flag"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/fsmgen/fsmgen/contrib/temporal"
	"github.com/fsmgen/fsmgen/contrib/temporal/devserver"
	"github.com/fsmgen/fsmgen/machines/compliance/fcha"
	"github.com/fsmgen/fsmgen/machines/compliance/local"
)

// devServer starts a dev server for the test, stopped when it ends.
func devServer(t *testing.T) client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := devserver.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s.Client
}

// TestDevServer runs the clean FCHA branch on a real Temporal dev server
// with a worker, signals it from the client, queries its typed state, and
// replays its recorded history with worker.WorkflowReplayer.
func TestDevServer(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := devServer(t)
	const queue = "fcha"
	w := worker.New(c, queue, worker.Options{})
	temporal.Register(w, driverFor(&local.Screening{Findings: findings()}).Driver())
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)

	st := start(t, "clean")
	wr, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: st.RunID, TaskQueue: queue}, fcha.Type, st)
	if err != nil {
		t.Fatal(err)
	}
	// Signals are buffered in the workflow: the authorization is taken
	// once the run waits in CONDITIONAL_OFFER.
	if err := temporal.Signal(ctx, c, st.RunID, fcha.BackgroundCheckAuthorizationSigned{SignedAt: time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC), SignedBy: "user_456"}); err != nil {
		t.Fatal(err)
	}
	var res temporal.Result
	if err := wr.Get(ctx, &res); err != nil {
		t.Fatal(err)
	}
	want := []move{
		{"PREQUALIFICATION", "CONDITIONAL_OFFER", "PrequalificationCompleted"},
		{"CONDITIONAL_OFFER", "BACKGROUND_CHECK_ALLOWED", "BackgroundCheckAuthorizationSigned"},
		{"BACKGROUND_CHECK_ALLOWED", "APPROVED", "BackgroundCheckCompleted"},
	}
	if diff := cmp.Diff(want, moves(res.History)); diff != "" || res.Outcome != "approved" {
		t.Errorf("outcome %q, transitions (-want +got):\n%s", res.Outcome, diff)
	}
	state, _, err := temporal.QueryState(ctx, c, st.RunID, fcha.ParseState)
	if err != nil || state != fcha.StateApproved {
		t.Errorf("QueryState = %v, %v; want APPROVED", state, err)
	}

	iter := c.GetWorkflowHistory(ctx, st.RunID, wr.GetRunID(), false, 0)
	var events int
	replayer := worker.NewWorkflowReplayer()
	temporal.Register(replayerRegistry{replayer}, driverFor(&local.Screening{}).Driver())
	hist, err := collect(iter)
	if err != nil {
		t.Fatal(err)
	}
	events = len(hist.Events)
	record(t, hist)
	if err := replayer.ReplayWorkflowHistory(nil, hist); err != nil {
		t.Errorf("replay of the recorded history (%d events): %v", events, err)
	}
}

// replayerRegistry lets Register register the workflow with a replayer,
// which runs no activities.
type replayerRegistry struct{ r worker.WorkflowReplayer }

func (r replayerRegistry) RegisterWorkflowWithOptions(w interface{}, o workflow.RegisterOptions) {
	r.r.RegisterWorkflowWithOptions(w, o)
}

func (replayerRegistry) RegisterActivityWithOptions(interface{}, activity.RegisterOptions) {}

func collect(iter client.HistoryEventIterator) (*historypb.History, error) {
	h := &historypb.History{}
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			return nil, err
		}
		h.Events = append(h.Events, ev)
	}
	return h, nil
}

var update = flag.Bool("update", false, "rewrite testdata/fcha_clean_history.json from the dev server's history")

const recorded = "testdata/fcha_clean_history.json"

func record(t *testing.T, h *historypb.History) {
	t.Helper()
	if !*update {
		return
	}
	raw, err := protojson.MarshalOptions{Indent: "  "}.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(recorded, raw, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestReplayRecorded replays the history of the clean FCHA branch that a
// dev server recorded (go test -run TestDevServer -update rewrites it):
// the workflow's code must make the same decisions from it.
func TestReplayRecorded(t *testing.T) {
	t.Parallel()
	replayer := worker.NewWorkflowReplayer()
	temporal.Register(replayerRegistry{replayer}, driverFor(&local.Screening{}).Driver())
	if err := replayer.ReplayWorkflowHistoryFromJSONFile(nil, recorded); err != nil {
		t.Fatalf("replay %s: %v", recorded, err)
	}
}
