package fsmtest_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/fsmtest"
)

// A device authorization, nested, written by hand: BOOT leaves at once for
// AUTH's initial child POLL; AUTH expires after 1s, and WAIT polls again
// after 1s.
var auth = runtime.Definition{
	Machine: "Auth", Type: "auth", Version: 1, Initial: "BOOT",
	States: []runtime.StateSpec{
		{Name: "BOOT", Initial: true, Status: runtime.StatusRunning, Wait: true},
		{Name: "POLL", Status: runtime.StatusRunning, Wait: true, Parent: "AUTH"},
		{Name: "WAIT", Status: runtime.StatusRunning, Wait: true, Parent: "AUTH",
			Timers: []runtime.Timer{{After: time.Second, Event: "PollDue"}}},
		{Name: "EXPIRED", Status: runtime.StatusFailed},
	},
	Events: []runtime.EventSpec{{Name: "Pending"}, {Name: "PollDue"}, {Name: "CodeExpired"}},
	Transitions: []runtime.TransitionSpec{
		{From: "BOOT", To: "POLL", Exit: []string{"BOOT"}, Enter: []string{"AUTH", "POLL"}},
		{From: "POLL", To: "WAIT", Event: "Pending", Exit: []string{"POLL"}, Enter: []string{"WAIT"}},
		{From: "POLL", To: "EXPIRED", Event: "CodeExpired", Exit: []string{"POLL", "AUTH"}, Enter: []string{"EXPIRED"}},
		{From: "WAIT", To: "POLL", Event: "PollDue", Exit: []string{"WAIT"}, Enter: []string{"POLL"}},
		{From: "WAIT", To: "EXPIRED", Event: "CodeExpired", Exit: []string{"WAIT", "AUTH"}, Enter: []string{"EXPIRED"}},
	},
	Composites: []runtime.CompositeSpec{{Name: "AUTH", Initial: "POLL",
		Timers: []runtime.Timer{{After: time.Second, Event: "CodeExpired"}}}},
}

type named string

func (n named) EventName() string { return string(n) }

// tableMachine runs auth's table (no guards).
type tableMachine struct{ state string }

func (m *tableMachine) State() string { return m.state }

func (m *tableMachine) Fire(ctx context.Context, e runtime.Event) error {
	for _, r := range auth.Transitions {
		if r.From == m.state && r.Event == e.EventName() {
			m.state = r.To
			return m.Settle(ctx)
		}
	}
	return &runtime.TransitionError{Machine: "auth", State: m.state, Event: e.EventName(), Err: runtime.ErrIllegalTransition}
}

func (m *tableMachine) Settle(context.Context) error {
	for _, r := range auth.Transitions {
		if r.From == m.state && r.Event == "" {
			m.state = r.To
		}
	}
	return nil
}

// TestTracesNested: the traces start settled, as interpreters do (no trace
// is fired in BOOT), and of AUTH's and WAIT's timers due at the same
// instant, AUTH's fires: the state entered first.
func TestTracesNested(t *testing.T) {
	t.Parallel()
	tf, err := fsmtest.Traces(fsmtest.Machine{
		Definition: auth,
		Events:     []runtime.Event{named("Pending"), named("PollDue"), named("CodeExpired")},
		New: func(state string, _ map[string]bool, _ runtime.Recorder) (fsmtest.Instance, error) {
			return &tableMachine{state: state}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	byName := map[string]fsmtest.Trace{}
	for _, tr := range tf.Traces {
		names = append(names, tr.Name)
		byName[tr.Name] = tr
	}
	wantNames := []string{
		"POLL on Pending", "POLL on PollDue", "POLL on CodeExpired", "POLL after 1000ms (CodeExpired)",
		"WAIT on Pending", "WAIT on PollDue", "WAIT on CodeExpired", "WAIT after 1000ms (CodeExpired)",
		"EXPIRED on Pending", "EXPIRED on PollDue", "EXPIRED on CodeExpired",
	}
	if diff := cmp.Diff(wantNames, names); diff != "" {
		t.Errorf("traces (-want +got):\n%s", diff)
	}
	want := []fsmtest.Step{
		{Event: "Pending", Guards: map[string]bool{}, State: "WAIT"},
		{Event: "CodeExpired", TimerMS: 1000, Guards: map[string]bool{}, State: "EXPIRED"},
	}
	if diff := cmp.Diff(want, byName["WAIT after 1000ms (CodeExpired)"].Steps); diff != "" {
		t.Errorf("WAIT's timer (-want +got):\n%s", diff)
	}
}
