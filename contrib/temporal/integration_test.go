package temporal_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
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
	"github.com/fsmgen/fsmgen/machines/compliance/fcha"
	"github.com/fsmgen/fsmgen/machines/compliance/local"
)

// temporalCLI finds the Temporal CLI: $TEMPORAL_CLI, PATH, or
// $HOME/go/bin/temporal (where go install puts it). A missing CLI fails
// the test with what to do.
func temporalCLI(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("TEMPORAL_CLI"); p != "" {
		return p
	}
	if p, err := exec.LookPath("temporal"); err == nil {
		return p
	}
	home, _ := os.UserHomeDir()
	if p := filepath.Join(home, "go", "bin", "temporal"); fileExists(p) {
		return p
	}
	t.Fatal("the Temporal CLI is not installed: go install github.com/temporalio/cli/cmd/temporal@v1.5.1 (or set TEMPORAL_CLI)")
	return ""
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// devServer starts temporal server start-dev --headless on free ports and
// returns a client on it; both stop when the test ends.
func devServer(t *testing.T) client.Client {
	t.Helper()
	port := freePort(t)
	cmd := exec.Command(temporalCLI(t), "server", "start-dev", "--headless", "--ip", "127.0.0.1",
		"--port", fmt.Sprint(port), "--http-port", fmt.Sprint(freePort(t)), "--metrics-port", fmt.Sprint(freePort(t)), "--log-level", "error")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The server is ready when it answers a health check; Dial waits on
	// the connection, CheckHealth on the frontend.
	for {
		c, err := client.DialContext(ctx, client.Options{HostPort: fmt.Sprintf("127.0.0.1:%d", port)})
		if err == nil {
			if _, err = c.CheckHealth(ctx, &client.CheckHealthRequest{}); err == nil {
				t.Cleanup(c.Close)
				return c
			}
			c.Close()
		}
		select {
		case e := <-exited:
			t.Fatalf("temporal server start-dev exited: %v\n%s", e, out.String())
		case <-ctx.Done():
			t.Fatalf("temporal dev server not ready: %v\n%s", err, out.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
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
