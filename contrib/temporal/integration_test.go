package temporal_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/fsmgen/fsmgen/contrib/temporal"
	"github.com/fsmgen/fsmgen/contrib/temporal/devserver"
	"github.com/fsmgen/fsmgen/machines/compliance"
	"github.com/fsmgen/fsmgen/machines/compliance/fcha"
	"github.com/fsmgen/fsmgen/machines/compliance/local"
	"github.com/fsmgen/fsmgen/runtime"
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

// approve is an event FCHA does not have.
type approve struct{}

func (approve) EventName() string { return "Approve" }

// shortTimers is FCHA's driver with its timers shortened to after, so
// that the authorization timeout fires on a dev server, whose clock is
// real, within the test.
type shortTimers struct {
	runtime.Driver
	after time.Duration
}

func (d shortTimers) Definition() runtime.Definition {
	def := d.Driver.Definition()
	states := slices.Clone(def.States)
	for i := range states {
		timers := slices.Clone(states[i].Timers)
		for j := range timers {
			timers[j].After = d.after
		}
		states[i].Timers = timers
	}
	def.States = states
	return def
}

// waitState queries workflow id until it is in want, or ctx is done.
func waitState(ctx context.Context, t *testing.T, c client.Client, id string, want fcha.State) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		state, _, err := temporal.QueryState(ctx, c, id, fcha.ParseState)
		if err == nil && state == want {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("workflow %s never reached %v (last %v, %v)", id, want, state, err)
		case <-tick.C:
		}
	}
}

// TestDevServerSend: on a real dev server, Send reports to its sender the
// events the run refuses, with the errors the PostgreSQL engine's
// workflows report (compliance.ErrSignalRefused and the cause), and
// returns the run's new state for the one it takes; a late authorization,
// after the timeout denied the application and the workflow closed, is
// refused as sent to a finished run, naming the timeout.
func TestDevServerSend(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := devServer(t)
	// The clean run's workers have FCHA's seven days to take the
	// authorization; the late run's, two seconds.
	const queue, short = "fcha-send", "fcha-send-short"
	for q, d := range map[string]runtime.Driver{
		queue: driverFor(&local.Screening{Findings: findings()}).Driver(),
		short: shortTimers{Driver: driverFor(&local.Screening{}).Driver(), after: 2 * time.Second},
	} {
		w := worker.New(c, q, worker.Options{})
		temporal.Register(w, d)
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Stop)
	}
	auth := fcha.BackgroundCheckAuthorizationSigned{SignedAt: time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC), SignedBy: "user_456"}

	st := start(t, "clean")
	wr, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: st.RunID, TaskQueue: queue}, fcha.Type, st)
	if err != nil {
		t.Fatal(err)
	}
	waitState(ctx, t, c, st.RunID, fcha.StateConditionalOffer)
	refusals := []struct {
		ev    runtime.Event
		cause error
		msg   string
	}{
		{fcha.BackgroundCheckCompleted{}, runtime.ErrIllegalTransition,
			"temporal: send BackgroundCheckCompleted to app_clean: signal refused: nyc-application-compliance: illegal transition: state CONDITIONAL_OFFER has no transition on event BackgroundCheckCompleted"},
		{fcha.AssessmentCompleted{Approved: true}, runtime.ErrNotCallerEvent,
			"temporal: send AssessmentCompleted to app_clean: signal refused: callers may not send the event: nyc-application-compliance v1 in state CONDITIONAL_OFFER: AssessmentCompleted is returned by the handler of INDIVIDUALIZED_ASSESSMENT; declare it external to let callers send it"},
		{fcha.AuthorizationTimeout{}, runtime.ErrNotCallerEvent,
			"temporal: send AuthorizationTimeout to app_clean: signal refused: callers may not send the event: nyc-application-compliance v1 in state CONDITIONAL_OFFER: AuthorizationTimeout is fired by the timer of CONDITIONAL_OFFER; declare it external to let callers send it"},
		{approve{}, runtime.ErrUnknownEvent, `temporal: send Approve to app_clean: signal refused: unknown event "Approve"`},
	}
	for _, r := range refusals {
		_, err := temporal.Send(ctx, c, st.RunID, r.ev)
		var refused *temporal.RefusedError
		if !errors.As(err, &refused) || !errors.Is(err, compliance.ErrSignalRefused) || !errors.Is(err, r.cause) || refused.State != "CONDITIONAL_OFFER" {
			t.Errorf("send %s: err = %v, want a RefusedError in CONDITIONAL_OFFER matching ErrSignalRefused and %v", r.ev.EventName(), err, r.cause)
		} else if err.Error() != r.msg {
			t.Errorf("send %s:\n got %s\nwant %s", r.ev.EventName(), err, r.msg)
		}
	}
	_, err = temporal.Cancel(ctx, c, st.RunID, "")
	if want := "temporal: cancel app_clean: the machine has no cancel event: nyc-application-compliance v1 declares none"; !errors.Is(err, runtime.ErrNoCancelEvent) || err.Error() != want {
		t.Errorf("cancel: %v, want %s", err, want)
	}
	snap, err := temporal.Send(ctx, c, st.RunID, auth)
	if err != nil || snap.State != "BACKGROUND_CHECK_ALLOWED" {
		t.Fatalf("send the authorization: %+v, %v; want the run in BACKGROUND_CHECK_ALLOWED", snap, err)
	}
	var res temporal.Result
	if err := wr.Get(ctx, &res); err != nil || res.State != "APPROVED" || len(res.Refused) != 0 {
		t.Fatalf("result %+v, %v; want APPROVED with nothing refused in the workflow", res, err)
	}
	_, err = temporal.Send(ctx, c, st.RunID, auth)
	if !errors.Is(err, compliance.ErrSignalRefused) || !errors.Is(err, runtime.ErrRunFinished) ||
		!strings.HasPrefix(err.Error(), "temporal: send BackgroundCheckAuthorizationSigned to app_clean: signal refused: the run finished in APPROVED on BackgroundCheckCompleted at ") {
		t.Errorf("second authorization: err = %v, want refused by the finished run", err)
	}
	_, err = temporal.Cancel(ctx, c, st.RunID, "")
	if !errors.Is(err, runtime.ErrRunFinished) || errors.Is(err, runtime.ErrSignalRefused) ||
		!strings.HasPrefix(err.Error(), "temporal: cancel app_clean: run is finished: the run finished in APPROVED on BackgroundCheckCompleted at ") {
		t.Errorf("cancel of the finished run: err = %v, want refused by the finished run", err)
	}

	// The timeout branch: no authorization before the shortened timer.
	late := start(t, "late")
	wr, err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: late.RunID, TaskQueue: short}, fcha.Type, late)
	if err != nil {
		t.Fatal(err)
	}
	if err := wr.Get(ctx, &res); err != nil || res.State != "DENIED" {
		t.Fatalf("result %+v, %v; want DENIED by the timeout", res, err)
	}
	_, err = temporal.Send(ctx, c, late.RunID, auth)
	var refused *temporal.RefusedError
	if !errors.As(err, &refused) || !errors.Is(err, compliance.ErrSignalRefused) || !errors.Is(err, runtime.ErrRunFinished) || refused.State != "DENIED" ||
		!strings.HasPrefix(err.Error(), "temporal: send BackgroundCheckAuthorizationSigned to app_late: signal refused: the run finished in DENIED on AuthorizationTimeout at ") {
		t.Errorf("late authorization: err = %v, want refused, naming the timeout", err)
	}
}
