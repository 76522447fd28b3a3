package temporal_test

import (
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/fsmgen/fsmgen/contrib/temporal"
	"github.com/fsmgen/fsmgen/machines/compliance"
	"github.com/fsmgen/fsmgen/machines/compliance/fcha"
	"github.com/fsmgen/fsmgen/machines/compliance/local"
	"github.com/fsmgen/fsmgen/runtime"
)

// record rewrites the recorded histories under testdata/ from a dev
// server's:
//
//	cd contrib/temporal && go test -run TestRecordHistories -record .
var record = flag.Bool("record", false, "rewrite testdata/fcha_*.json from the histories a dev server records")

// historyBranch is a branch of FCHA whose history is recorded
// in testdata/fcha_<name>.json.
type historyBranch struct {
	name      string
	applicant string
	// queue is the task queue of the worker that runs it: "fcha" (the
	// local adapters), "fcha-short" (FCHA with its timer shortened to two
	// seconds, so that the authorization times out on a dev server's real
	// clock) or "fcha-down" (a prequalifier whose database is down).
	queue string
	// authorize sends the authorization with Send in CONDITIONAL_OFFER;
	// late sends it once the run ended.
	authorize, late bool
	want            []move
	state, status   string
}

func historyBranches() []historyBranch {
	const (
		pq = "PREQUALIFICATION"
		co = "CONDITIONAL_OFFER"
		bc = "BACKGROUND_CHECK_ALLOWED"
		ia = "INDIVIDUALIZED_ASSESSMENT"
	)
	return []historyBranch{
		{name: "clean", applicant: "clean", queue: "fcha", authorize: true,
			want:  []move{{pq, co, "PrequalificationCompleted"}, {co, bc, "BackgroundCheckAuthorizationSigned"}, {bc, "APPROVED", "BackgroundCheckCompleted"}},
			state: "APPROVED", status: "succeeded"},
		{name: "prequalification_denied", applicant: "bad-credit", queue: "fcha",
			want: []move{{pq, "DENIED", "PrequalificationCompleted"}}, state: "DENIED", status: "succeeded"},
		{name: "adverse_approved", applicant: "record-ok", queue: "fcha", authorize: true,
			want: []move{{pq, co, "PrequalificationCompleted"}, {co, bc, "BackgroundCheckAuthorizationSigned"}, {bc, ia, "BackgroundCheckCompleted"},
				{ia, "APPROVED", "AssessmentCompleted"}}, state: "APPROVED", status: "succeeded"},
		{name: "adverse_denied", applicant: "record-deny", queue: "fcha", authorize: true,
			want: []move{{pq, co, "PrequalificationCompleted"}, {co, bc, "BackgroundCheckAuthorizationSigned"}, {bc, ia, "BackgroundCheckCompleted"},
				{ia, "DENIED", "AssessmentCompleted"}}, state: "DENIED", status: "succeeded"},
		{name: "late_authorization", applicant: "late", queue: "fcha-short", late: true,
			want: []move{{pq, co, "PrequalificationCompleted"}, {co, "DENIED", "AuthorizationTimeout"}}, state: "DENIED", status: "succeeded"},
		{name: "exhausted", applicant: "down", queue: "fcha-down",
			want: []move{{pq, "FAILED", "RetriesExhausted"}}, state: "FAILED", status: "failed"},
	}
}

// replayDriver is the driver a branch's history is replayed with: its
// worker's definition (the replayer runs no activity).
func replayDriver(queue string) runtime.Driver {
	d := driverFor(&local.Screening{}).Driver()
	if queue == "fcha-short" {
		return shortTimers{Driver: d, after: 2 * time.Second}
	}
	return d
}

func historyFile(name string) string { return filepath.Join("testdata", "fcha_"+name+".json") }

// eventTypes lists the types of a history's events, but its workflow
// tasks', whose number depends on timing.
func eventTypes(h *historypb.History) []string {
	var out []string
	for _, e := range h.Events {
		switch e.EventType {
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED, enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
			continue
		}
		name := e.EventType.String()
		switch {
		case e.GetActivityTaskScheduledEventAttributes() != nil:
			name += " " + e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName()
		case e.GetWorkflowExecutionUpdateAcceptedEventAttributes() != nil:
			name += " " + e.GetWorkflowExecutionUpdateAcceptedEventAttributes().GetAcceptedRequest().GetInput().GetName()
		}
		out = append(out, name)
	}
	return out
}

func readHistory(t *testing.T, file string) *historypb.History {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	h := &historypb.History{}
	if err := protojson.Unmarshal(raw, h); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return h
}

// TestReplayHistories replays the history of each FCHA branch that a dev
// server recorded (see record): the workflow's code must make the same
// decisions from it, with the same activities, updates, timers and
// search attributes.
func TestReplayHistories(t *testing.T) {
	t.Parallel()
	for _, b := range historyBranches() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			replayer := worker.NewWorkflowReplayer()
			temporal.Register(replayerRegistry{replayer}, replayDriver(b.queue))
			if err := replayer.ReplayWorkflowHistory(nil, readHistory(t, historyFile(b.name))); err != nil {
				t.Errorf("replay %s: %v", historyFile(b.name), err)
			}
		})
	}
}

// searchAttributes reads the run's search attributes FsmState, FsmStatus,
// FsmTenant and FsmIdempotencyKey from the server.
func searchAttributes(ctx context.Context, t *testing.T, c client.Client, id string) map[string]string {
	t.Helper()
	desc, err := c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for k, p := range desc.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields() {
		if !strings.HasPrefix(k, "Fsm") {
			continue // the server's own (BuildIds)
		}
		var v string
		if err := converter.GetDefaultDataConverter().FromPayload(p, &v); err != nil {
			t.Fatalf("search attribute %s: %v", k, err)
		}
		out[k] = v
	}
	return out
}

// TestRecordHistories runs each FCHA branch on a dev server: the run's
// transitions, the search attributes its workflow upserted, and a late
// authorization refused as sent to a finished run; its history replays,
// and has the same events as the one recorded under testdata/ (with
// -record, it is written there).
func TestRecordHistories(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel) // after the parallel subtests
	c := devServer(t)
	workers := map[string]runtime.Driver{
		"fcha":       driverFor(&local.Screening{Findings: findings()}).Driver(),
		"fcha-short": shortTimers{Driver: driverFor(&local.Screening{}).Driver(), after: 2 * time.Second},
		"fcha-down":  compliance.New(nil, nil, compliance.Adapters{Prequalifier: &downPrequalifier{wrap: func(err error) error { return err }}}).Driver(),
	}
	for queue, d := range workers {
		w := worker.New(c, queue, worker.Options{})
		temporal.Register(w, d)
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Stop)
	}
	auth := fcha.BackgroundCheckAuthorizationSigned{SignedAt: time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC), SignedBy: "user_456"}
	for _, b := range historyBranches() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			st := start(t, b.applicant)
			st.Type, st.IdempotencyKey, st.Attempt, st.UserID = fcha.Type, "app_"+b.applicant, 1, alice
			st.RunID = temporal.RunID(st.Type, st.IdempotencyKey)
			wr, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: st.RunID, TaskQueue: b.queue}, fcha.Type, st)
			if err != nil {
				t.Fatal(err)
			}
			if b.authorize {
				waitState(ctx, t, c, st.RunID, fcha.StateConditionalOffer)
				if _, err := temporal.Send(ctx, c, st.RunID, auth); err != nil {
					t.Fatal(err)
				}
			}
			var res temporal.Result
			if err := wr.Get(ctx, &res); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(b.want, moves(res.History)); diff != "" || res.State != b.state || string(res.Status) != b.status {
				t.Errorf("result %s/%s, want %s/%s; transitions (-want +got):\n%s", res.State, res.Status, b.state, b.status, diff)
			}
			if b.late {
				_, err := temporal.Send(ctx, c, st.RunID, auth)
				if !errors.Is(err, compliance.ErrSignalRefused) || !errors.Is(err, runtime.ErrRunFinished) {
					t.Errorf("late authorization: %v, want refused by the finished run", err)
				}
			}
			want := map[string]string{"FsmState": b.state, "FsmStatus": b.status, "FsmTenant": "org_111", "FsmIdempotencyKey": st.IdempotencyKey}
			if diff := cmp.Diff(want, searchAttributes(ctx, t, c, st.RunID)); diff != "" {
				t.Errorf("search attributes (-want +got):\n%s", diff)
			}
			hist, err := collect(c.GetWorkflowHistory(ctx, st.RunID, wr.GetRunID(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT))
			if err != nil {
				t.Fatal(err)
			}
			replayer := worker.NewWorkflowReplayer()
			temporal.Register(replayerRegistry{replayer}, replayDriver(b.queue))
			if err := replayer.ReplayWorkflowHistory(nil, hist); err != nil {
				t.Errorf("replay of the fresh history: %v", err)
			}
			file := historyFile(b.name)
			if *record {
				raw, err := protojson.MarshalOptions{Indent: " "}.Marshal(hist)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(file, raw, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if diff := cmp.Diff(eventTypes(readHistory(t, file)), eventTypes(hist)); diff != "" {
				t.Errorf("%s is not the history the workflow makes now; re-record it (go test -run TestRecordHistories -record .) (-recorded +now):\n%s", file, diff)
			}
		})
	}
}
