package fsmimpl_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/fsmimpl"
)

// nested is a nested machine: leaves STOPPED, PLAYING, PAUSED, then the
// composite ACTIVE (state 3).
var nested = runtime.Definition{
	Machine: "Player", Type: "player", Version: 1, Initial: "STOPPED",
	States: []runtime.StateSpec{
		{Name: "STOPPED", Initial: true, Status: runtime.StatusRunning, Wait: true},
		{Name: "PLAYING", Status: runtime.StatusRunning, Wait: true, Parent: "ACTIVE"},
		{Name: "PAUSED", Status: runtime.StatusRunning, Wait: true, Parent: "ACTIVE"},
	},
	Events: []runtime.EventSpec{{Name: "Stop"}},
	Transitions: []runtime.TransitionSpec{
		{From: "PLAYING", To: "STOPPED", Event: "Stop", Exit: []string{"PLAYING", "ACTIVE"}, Enter: []string{"STOPPED"}},
		{From: "PAUSED", To: "STOPPED", Exit: []string{"PAUSED", "ACTIVE"}, Enter: []string{"STOPPED"}},
	},
	Composites: []runtime.CompositeSpec{{Name: "ACTIVE", Initial: "PLAYING", History: []runtime.HistorySpec{{Name: "H"}}}},
}

type nstate uint16

func (s nstate) String() string { return fsmimpl.StateName(&nested, s) }

type stop struct{}

func (stop) EventName() string { return "Stop" }

func TestNestedStates(t *testing.T) {
	t.Parallel()
	if got := fsmimpl.StateName(&nested, nstate(3)); got != "ACTIVE" {
		t.Errorf("StateName of the composite = %q", got)
	}
	if got := fsmimpl.StateName(&nested, nstate(4)); got != "State(4)" {
		t.Errorf("StateName past the composites = %q", got)
	}
	_, err := fsmimpl.ParseState(fsmimpl.NewIndex[nstate](&nested), "ACTIVE")
	if !errors.Is(err, runtime.ErrUnknownState) {
		t.Fatalf("ParseState of a composite: %v", err)
	}
	if want := `player: unknown state "ACTIVE": a composite state, and a run is always in one of its leaves`; err.Error() != want {
		t.Errorf("ParseState of a composite: %q, want %q", err, want)
	}
}

func TestRecordStep(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var got []runtime.Transition
	var ran int
	rec := runtime.RecorderFunc(func(ctx context.Context, tr runtime.Transition) error {
		if err := tr.Actions(ctx); err != nil {
			return err
		}
		tr.Actions = nil
		got = append(got, tr)
		return nil
	})
	act := func(context.Context) error { ran++; return nil }
	if err := fsmimpl.RecordStep(ctx, &nested, rec, nstate(1), nstate(0), stop{}, 0, act); err != nil {
		t.Fatal(err)
	}
	if err := fsmimpl.RecordStep(ctx, &nested, rec, nstate(2), nstate(0), nil, 1, act); err != nil {
		t.Fatal(err)
	}
	want := []runtime.Transition{
		{Machine: "player", Version: 1, From: "PLAYING", To: "STOPPED", Event: "Stop", Payload: stop{}, Status: runtime.StatusRunning,
			Exited: []string{"PLAYING", "ACTIVE"}, Entered: []string{"STOPPED"}},
		{Machine: "player", Version: 1, From: "PAUSED", To: "STOPPED", Status: runtime.StatusRunning,
			Exited: []string{"PAUSED", "ACTIVE"}, Entered: []string{"STOPPED"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("recorded (-want +got):\n%s", diff)
	}
	if ran != 2 {
		t.Errorf("actions ran %d times, want 2", ran)
	}
	boom := errors.New("boom")
	err := fsmimpl.RecordStep(ctx, &nested, rec, nstate(1), nstate(0), stop{}, 0, func(context.Context) error { return boom })
	if !errors.Is(err, boom) || len(got) != 2 {
		t.Errorf("a failing action: %v, %d recorded", err, len(got))
	}
}

func TestHistory(t *testing.T) {
	t.Parallel()
	hs := []fsmimpl.History[nstate]{{Name: "H", Records: []nstate{1, 2}}, {Name: "D", Records: []nstate{1}}}
	rec := make([]nstate, 2)
	if got := fsmimpl.HistoryOf(hs, rec); got != nil {
		t.Errorf("HistoryOf without records = %v", got)
	}
	if err := fsmimpl.SetHistory("player", hs, rec, map[string]string{"H": "PAUSED"}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"H": "PAUSED"}, fsmimpl.HistoryOf(hs, rec)); diff != "" {
		t.Errorf("HistoryOf (-want +got):\n%s", diff)
	}
	for _, c := range []struct {
		h    map[string]string
		want string
	}{
		{map[string]string{"X": "PAUSED"}, `player: history "X": unknown state: no history pseudostate of the machine is named so`},
		{map[string]string{"D": "PAUSED", "H": "PLAYING"}, `player: history D: unknown state "PAUSED": it records one of PLAYING`},
	} {
		err := fsmimpl.SetHistory("player", hs, rec, c.h)
		if !errors.Is(err, runtime.ErrUnknownState) || err.Error() != c.want {
			t.Errorf("SetHistory(%v) = %v, want %q", c.h, err, c.want)
		}
	}
	if rec[0] != 3 || rec[1] != 0 {
		t.Errorf("records after failed SetHistory: %v, want unchanged [3 0]", rec)
	}
	if err := fsmimpl.SetHistory("player", hs, rec, nil); err != nil || fsmimpl.HistoryOf(hs, rec) != nil {
		t.Errorf("SetHistory(nil): %v, records %v", err, rec)
	}
}

func TestEventlessLoop(t *testing.T) {
	t.Parallel()
	path := make([]nstate, 65)
	for i := range path {
		path[i] = nstate(1 + i%2)
	}
	err := fsmimpl.EventlessLoop(&nested, path)
	want := "player: eventless rows loop: PLAYING -> PAUSED -> PLAYING ...: more than 64 eventless moves in a row"
	if err == nil || err.Error() != want {
		t.Errorf("EventlessLoop = %v, want %q", err, want)
	}
}
