package temporal_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.temporal.io/sdk/testsuite"

	"github.com/fsmgen/fsmgen/contrib/temporal"
	"github.com/fsmgen/fsmgen/machines/specs/dhcpclient/dhcpclient"
	"github.com/fsmgen/fsmgen/machines/specs/podlifecycle/podlifecycle"
	"github.com/fsmgen/fsmgen/machines/specs/sipinvite/inviteclient"
	"github.com/fsmgen/fsmgen/runtime"
)

// actionLog records the entry and exit actions a machine runs.
type actionLog struct {
	mu   sync.Mutex
	runs []string
}

func (l *actionLog) add(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.runs = append(l.runs, name)
}

func (l *actionLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.runs)
}

type dhcpGuards struct{ remembers, acceptable bool }

func (g dhcpGuards) RemembersAddress(context.Context, dhcpclient.Event) bool { return g.remembers }
func (g dhcpGuards) Acceptable(context.Context, dhcpclient.Ack) bool         { return g.acceptable }

type dhcpActions struct{ log *actionLog }

func (a dhcpActions) SendDiscover(context.Context) error { a.log.add("SendDiscover"); return nil }
func (a dhcpActions) SendRequest(context.Context) error  { a.log.add("SendRequest"); return nil }
func (a dhcpActions) BroadcastRequest(context.Context) error {
	a.log.add("BroadcastRequest")
	return nil
}

// signal sends ev to the testsuite's workflow as the signal named by the
// event, as temporal.Signal sends it.
func signal(t *testing.T, env *testsuite.TestWorkflowEnvironment, ev runtime.Event) {
	t.Helper()
	raw, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	env.SignalWorkflow(ev.EventName(), temporal.EventMessage{Name: ev.EventName(), Payload: raw})
}

// snapshot queries the testsuite's workflow.
func snapshot(t *testing.T, env *testsuite.TestWorkflowEnvironment) temporal.Snapshot {
	t.Helper()
	v, err := env.QueryWorkflow(temporal.QueryName)
	if err != nil {
		t.Fatal(err)
	}
	var snap temporal.Snapshot
	if err := v.Get(&snap); err != nil {
		t.Fatal(err)
	}
	return snap
}

type timedMove struct {
	From, To, Event string
	After           time.Duration // since the workflow started
}

func timedMoves(h []temporal.Step, begin time.Time) []timedMove {
	var out []timedMove
	for _, s := range h {
		out = append(out, timedMove{s.From, s.To, s.Event, s.At.Sub(begin)})
	}
	return out
}

// TestNestedDHCP runs RFC 2131's DHCP client, a nested machine, on the
// workflow: its eventless rows from BOOT where it starts, an internal row
// that runs no action, entry actions, and the timers of three nested
// states whose durations come from the DHCPACK's fields, each counted
// from when its own state was entered (T1 at 4h, T2 at 7h, the lease at
// 8h), the lease's expiry going back through INIT's eventless row.
func TestNestedDHCP(t *testing.T) {
	t.Parallel()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	log := &actionLog{}
	temporal.Register(env, dhcpclient.NewDriver(
		func(*runtime.Run) dhcpclient.Guards { return dhcpGuards{acceptable: true} },
		func(*runtime.Run) dhcpclient.Actions { return dhcpActions{log} }))
	begin := env.Now()
	env.RegisterDelayedCallback(func() {
		signal(t, env, dhcpclient.Offer{})
		signal(t, env, dhcpclient.Select{})
	}, time.Minute)
	env.RegisterDelayedCallback(func() {
		signal(t, env, dhcpclient.Ack{Lease: 8 * time.Hour, Renewal: 4 * time.Hour, Rebinding: 7 * time.Hour})
	}, time.Hour)
	var snap temporal.Snapshot
	env.RegisterDelayedCallback(func() {
		snap = snapshot(t, env)
		env.CancelWorkflow()
	}, 10*time.Hour)
	env.ExecuteWorkflow(dhcpclient.Type, temporal.Start{RunID: "dhcp-1", TenantID: "t"})
	if !env.IsWorkflowCompleted() {
		t.Fatal("the workflow did not end when cancelled")
	}
	want := []timedMove{
		{"BOOT", "INIT", "", 0},
		{"INIT", "SELECTING", "", 0},
		{"SELECTING", "SELECTING", "Offer", time.Minute},
		{"SELECTING", "REQUESTING", "Select", time.Minute},
		{"REQUESTING", "BOUND", "Ack", time.Hour},
		{"BOUND", "RENEWING", "T1", 5 * time.Hour},
		{"RENEWING", "REBINDING", "T2", 8 * time.Hour},
		{"REBINDING", "INIT", "LeaseExpired", 9 * time.Hour},
		{"INIT", "SELECTING", "", 9 * time.Hour},
	}
	if diff := cmp.Diff(want, timedMoves(snap.History, begin)); diff != "" {
		t.Errorf("transitions (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"SendDiscover", "SendRequest", "SendRequest", "BroadcastRequest", "SendDiscover"}, log.all()); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
	if snap.State != "SELECTING" || snap.Status != runtime.StatusRunning || len(snap.Refused) != 0 {
		t.Errorf("snapshot %s/%s refused %q, want SELECTING/running, nothing refused", snap.State, snap.Status, snap.Refused)
	}
}

type podGuards struct{ always bool }

func (g podGuards) RestartAlways(context.Context, podlifecycle.Event) bool { return g.always }
func (g podGuards) RestartNever(context.Context, podlifecycle.Event) bool  { return !g.always }

// drivenPod is the Pod machine whose containers' waiting leaves are
// driven states, each with a handler that starts its container: a
// machine with parallel states whose regions' handlers run in turn.
type drivenPod struct {
	runtime.Driver
	calls *actionLog
}

func (d drivenPod) Definition() runtime.Definition {
	def := d.Driver.Definition()
	def.States = slices.Clone(def.States)
	for i, s := range def.States {
		if s.Name == "ApiWaiting" || s.Name == "WorkerWaiting" {
			def.States[i].Wait = false
		}
	}
	return def
}

func (d drivenPod) Handle(_ context.Context, run *runtime.Run, state string) (runtime.Event, error) {
	d.calls.add(state + " in " + run.State)
	if state == "ApiWaiting" {
		return podlifecycle.APIStarted{}, nil
	}
	return podlifecycle.WorkerStarted{}, nil
}

// TestParallelPod runs the Kubernetes Pod, a machine with a parallel
// state of two regions, on the workflow: the handlers of the regions'
// driven leaves in turn, region by region (each its own activity), the
// events of each region moving its leaf alone, and the completion row
// once both containers ended; and the parallel state's own timer, the
// deadline, counted from when the run entered it, when they do not end by
// then.
func TestParallelPod(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		always  bool
		events  []runtime.Event
		want    []timedMove
		state   string
		status  runtime.Status
		outcome string
	}{
		{name: "both containers succeed", events: []runtime.Event{podlifecycle.APICompleted{}, podlifecycle.WorkerCompleted{}},
			want: []timedMove{
				{"Unscheduled", "ApiWaiting|WorkerWaiting", "Scheduled", time.Minute},
				{"ApiWaiting|WorkerWaiting", "ApiRunning|WorkerWaiting", "ApiStarted", time.Minute},
				{"ApiRunning|WorkerWaiting", "ApiRunning|WorkerRunning", "WorkerStarted", time.Minute},
				{"ApiRunning|WorkerRunning", "ApiSucceeded|WorkerRunning", "ApiCompleted", 5 * time.Minute},
				{"ApiSucceeded|WorkerRunning", "ApiSucceeded|WorkerSucceeded", "WorkerCompleted", 5 * time.Minute},
				{"ApiSucceeded|WorkerSucceeded", "Succeeded", "", 5 * time.Minute},
			}, state: "Succeeded", status: runtime.StatusSucceeded},
		{name: "a container fails", events: []runtime.Event{podlifecycle.WorkerError{}, podlifecycle.APICompleted{}},
			want: []timedMove{
				{"Unscheduled", "ApiWaiting|WorkerWaiting", "Scheduled", time.Minute},
				{"ApiWaiting|WorkerWaiting", "ApiRunning|WorkerWaiting", "ApiStarted", time.Minute},
				{"ApiRunning|WorkerWaiting", "ApiRunning|WorkerRunning", "WorkerStarted", time.Minute},
				{"ApiRunning|WorkerRunning", "ApiRunning|WorkerFailed", "WorkerError", 5 * time.Minute},
				{"ApiRunning|WorkerFailed", "ApiSucceeded|WorkerFailed", "ApiCompleted", 5 * time.Minute},
				{"ApiSucceeded|WorkerFailed", "Failed", "", 5 * time.Minute},
			}, state: "Failed", status: runtime.StatusFailed},
		{name: "deadline", always: true, events: []runtime.Event{podlifecycle.APICompleted{}},
			want: []timedMove{
				{"Unscheduled", "ApiWaiting|WorkerWaiting", "Scheduled", time.Minute},
				{"ApiWaiting|WorkerWaiting", "ApiRunning|WorkerWaiting", "ApiStarted", time.Minute},
				{"ApiRunning|WorkerWaiting", "ApiRunning|WorkerRunning", "WorkerStarted", time.Minute},
				{"ApiRunning|WorkerRunning", "ApiWaiting|WorkerRunning", "ApiCompleted", 5 * time.Minute},
				{"ApiWaiting|WorkerRunning", "ApiRunning|WorkerRunning", "ApiStarted", 5 * time.Minute},
				{"ApiRunning|WorkerRunning", "Failed", "DeadlineExceeded", 11 * time.Minute},
			}, state: "Failed", status: runtime.StatusFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestWorkflowEnvironment()
			calls := &actionLog{}
			temporal.Register(env, drivenPod{Driver: podlifecycle.NewDriver(func(*runtime.Run) podlifecycle.Guards { return podGuards{tc.always} }), calls: calls})
			begin := env.Now()
			env.RegisterDelayedCallback(func() { signal(t, env, podlifecycle.Scheduled{}) }, time.Minute)
			env.RegisterDelayedCallback(func() {
				for _, ev := range tc.events {
					signal(t, env, ev)
				}
			}, 5*time.Minute)
			env.ExecuteWorkflow(podlifecycle.Type, temporal.Start{RunID: "pod-1", TenantID: "t"})
			if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
				t.Fatalf("workflow completed %v, error %v", env.IsWorkflowCompleted(), env.GetWorkflowError())
			}
			var res temporal.Result
			if err := env.GetWorkflowResult(&res); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, timedMoves(res.History, begin)); diff != "" {
				t.Errorf("transitions (-want +got):\n%s", diff)
			}
			if res.State != tc.state || res.Status != tc.status || len(res.Refused) != 0 {
				t.Errorf("result %s/%s refused %q, want %s/%s, nothing refused", res.State, res.Status, res.Refused, tc.state, tc.status)
			}
			wantCalls := []string{"ApiWaiting in ApiWaiting|WorkerWaiting", "WorkerWaiting in ApiRunning|WorkerWaiting"}
			if tc.always {
				wantCalls = append(wantCalls, "ApiWaiting in ApiWaiting|WorkerRunning")
			}
			if diff := cmp.Diff(wantCalls, calls.all()); diff != "" {
				t.Errorf("handlers called (-want +got):\n%s", diff)
			}
		})
	}
}

type sipActions struct{ log *actionLog }

func (a sipActions) SendInvite(context.Context) error { a.log.add("SendInvite"); return nil }
func (a sipActions) SendAck(context.Context) error    { a.log.add("SendAck"); return nil }

// TestNestedSIPInvite runs RFC 3261's INVITE client transaction, a nested
// machine that starts in a state with an entry action (the driver's
// runtime.Starter sends the first INVITE): timer A doubles from state to
// state below CALLING while CALLING's timer B, counted from the start,
// ends the transaction at 32s; a provisional response leaves CALLING, and
// its timers with it.
func TestNestedSIPInvite(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		events  []runtime.Event
		want    []timedMove
		invites int
		outcome string
	}{
		{name: "timer B", want: []timedMove{
			{"SENT_1", "SENT_2", "TimerA", 500 * time.Millisecond},
			{"SENT_2", "SENT_3", "TimerA", 1500 * time.Millisecond},
			{"SENT_3", "SENT_4", "TimerA", 3500 * time.Millisecond},
			{"SENT_4", "SENT_5", "TimerA", 7500 * time.Millisecond},
			{"SENT_5", "SENT_6", "TimerA", 15500 * time.Millisecond},
			{"SENT_6", "SENT_7", "TimerA", 31500 * time.Millisecond},
			{"SENT_7", "TERMINATED", "TimerB", 32 * time.Second},
		}, invites: 7, outcome: "timeout"},
		{name: "provisional, then success", events: []runtime.Event{inviteclient.Provisional{}, inviteclient.Success{}}, want: []timedMove{
			{"SENT_1", "SENT_2", "TimerA", 500 * time.Millisecond},
			{"SENT_2", "SENT_3", "TimerA", 1500 * time.Millisecond},
			{"SENT_3", "PROCEEDING", "Provisional", 2 * time.Second},
			{"PROCEEDING", "TERMINATED", "Success", 2 * time.Second},
		}, invites: 3, outcome: "2xx"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestWorkflowEnvironment()
			log := &actionLog{}
			temporal.Register(env, inviteclient.NewDriver(func(*runtime.Run) inviteclient.Actions { return sipActions{log} }))
			begin := env.Now()
			env.RegisterDelayedCallback(func() {
				for _, ev := range tc.events {
					signal(t, env, ev)
				}
			}, 2*time.Second)
			env.ExecuteWorkflow(inviteclient.Type, temporal.Start{RunID: "invite-1", TenantID: "t"})
			var res temporal.Result
			if err := env.GetWorkflowResult(&res); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, timedMoves(res.History, begin)); diff != "" {
				t.Errorf("transitions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(slices.Repeat([]string{"SendInvite"}, tc.invites), log.all()); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
			if res.Outcome != tc.outcome || res.Status != runtime.StatusSucceeded {
				t.Errorf("result %s/%s, want succeeded/%s", res.Status, res.Outcome, tc.outcome)
			}
		})
	}
}
