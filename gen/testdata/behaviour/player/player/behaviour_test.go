package player

// Hand-written expectations about the nested machine of player.fsm: gen's
// TestGoldenPackages copies this file next to the golden package and runs
// it.

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/fsmgen/fsmgen/runtime"
)

// guards admits the guards it names.
type guards map[string]bool

func (g guards) Expired(context.Context, Event) bool  { return g["Expired"] }
func (g guards) PowerOff(context.Context, Event) bool { return g["PowerOff"] }

// log notes the actions run and fails the one named fail.
type log struct {
	ran  []string
	fail string
}

func (l *log) do(name string) error {
	if name == l.fail {
		return errors.New(name + " failed")
	}
	l.ran = append(l.ran, name)
	return nil
}
func (l *log) StartClock(context.Context) error  { return l.do("StartClock") }
func (l *log) StopClock(context.Context) error   { return l.do("StopClock") }
func (l *log) ShowPlaying(context.Context) error { return l.do("ShowPlaying") }
func (l *log) HidePaused(context.Context) error  { return l.do("HidePaused") }

// step fires e and checks the state reached and the actions run.
func step(t *testing.T, m *Machine, l *log, e Event, state State, actions ...string) {
	t.Helper()
	l.ran = nil
	if err := m.Fire(context.Background(), e); err != nil {
		t.Fatalf("%s: %v", e.EventName(), err)
	}
	if m.State() != state || !slices.Equal(l.ran, actions) {
		t.Fatalf("%s: state %s, actions %q; want %s, %q", e.EventName(), m.State(), l.ran, state, actions)
	}
}

// TestNesting: a composite's row applies in each of its leaves, exit
// actions run innermost first and entry actions outermost first, an
// internal row runs none while an external self-row re-enters its state.
func TestNesting(t *testing.T) {
	t.Parallel()
	l := &log{}
	m := New(guards{}, l)
	step(t, m, l, Play{}, StatePlaying, "StartClock", "ShowPlaying")
	step(t, m, l, Tick{}, StatePlaying)
	step(t, m, l, Seek{}, StatePlaying, "ShowPlaying")
	step(t, m, l, Pause{}, StatePaused)
	step(t, m, l, Stop{}, StateStopped, "HidePaused", "StopClock")
	step(t, m, l, Play{}, StatePlaying, "StartClock", "ShowPlaying")
	step(t, m, l, IdleTimeout{}, StateStopped, "StopClock")
}

// TestHistory: a shallow and a deep history enter the child and the leaf
// ACTIVE was left in; without a record, its initial leaf.
func TestHistory(t *testing.T) {
	t.Parallel()
	l := &log{}
	m := New(guards{}, l)
	step(t, m, l, Resume{}, StatePlaying, "StartClock", "ShowPlaying")
	step(t, m, l, Pause{}, StatePaused)
	step(t, m, l, Stop{}, StateStopped, "HidePaused", "StopClock")
	if got, want := m.History(), map[string]string{"RESUME": "PAUSED", "LAST": "PAUSED"}; !equal(got, want) {
		t.Fatalf("History() = %v, want %v", got, want)
	}
	step(t, m, l, Resume{}, StatePaused, "StartClock")
	step(t, m, l, Stop{}, StateStopped, "HidePaused", "StopClock")
	step(t, m, l, Rewind{}, StatePaused, "StartClock")

	// A machine built for a run takes the run's records back.
	m2 := New(guards{}, l, WithState(StateStopped))
	if err := m2.SetHistory(map[string]string{"LAST": "PAUSED"}); err != nil {
		t.Fatal(err)
	}
	step(t, m2, l, Rewind{}, StatePaused, "StartClock")
	err := m2.SetHistory(map[string]string{"LAST": "ACTIVE"})
	if !errors.Is(err, runtime.ErrUnknownState) || err.Error() != `player: history LAST: unknown state "ACTIVE": it records one of PLAYING, PAUSED, ENDED` {
		t.Errorf("SetHistory of a composite in a deep history: %v", err)
	}
}

func equal(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestCompletion: entering the final child ENDED completes ACTIVE, whose
// "on done" row is taken by the same Fire; eventless rows are taken after
// a move and by Settle.
func TestCompletion(t *testing.T) {
	t.Parallel()
	l := &log{}
	m := New(guards{}, l, WithState(StatePlaying))
	step(t, m, l, End{}, StateOff, "StopClock")

	g := guards{}
	m = New(g, l, WithState(StatePlaying))
	step(t, m, l, Pause{}, StatePaused)
	g["Expired"] = true
	if err := m.Settle(context.Background()); err != nil || m.State() != StateStopped {
		t.Fatalf("Settle with Expired: %v, state %s", err, m.State())
	}
	g["PowerOff"] = true
	m = New(g, l)
	if err := m.Settle(context.Background()); err != nil || m.State() != StateOff {
		t.Fatalf("Settle in STOPPED with PowerOff: %v, state %s", err, m.State())
	}
}

// TestFailingAction: an action's error comes back from Fire and the
// machine stays where it was, its history records too.
func TestFailingAction(t *testing.T) {
	t.Parallel()
	l := &log{fail: "StopClock"}
	m := New(guards{}, l, WithState(StatePaused))
	if err := m.Fire(context.Background(), Stop{}); err == nil || err.Error() != "StopClock failed" {
		t.Fatalf("Stop with StopClock failing: %v", err)
	}
	if m.State() != StatePaused || m.History() != nil {
		t.Errorf("after a failing action: state %s, history %v", m.State(), m.History())
	}
}

// TestHierarchy: states know their parent and ancestors; a composite is
// no state a run can be in; a composite's view has the transitions every
// leaf allows.
func TestHierarchy(t *testing.T) {
	t.Parallel()
	if p, ok := StatePaused.Parent(); !ok || p != StateActive {
		t.Errorf("PAUSED's parent: %s, %v", p, ok)
	}
	if _, ok := StateStopped.Parent(); ok {
		t.Error("STOPPED has a parent")
	}
	if got := slices.Collect(StateEnded.Ancestors()); !slices.Equal(got, []State{StateActive}) {
		t.Errorf("ENDED's ancestors: %v", got)
	}
	if !StatePaused.In(StateActive) || StateStopped.In(StateActive) || !StateActive.In(StateActive) {
		t.Error("In")
	}
	if StateActive.Leaf() || !StatePaused.Leaf() || StateActive.String() != "ACTIVE" {
		t.Errorf("ACTIVE: leaf %v, name %s", StateActive.Leaf(), StateActive)
	}
	_, err := ParseState("ACTIVE")
	if !errors.Is(err, runtime.ErrUnknownState) || err.Error() != `player: unknown state "ACTIVE": a composite state, and a run is always in one of its leaves` {
		t.Errorf("ParseState(ACTIVE): %v", err)
	}
	var s State
	if err := s.UnmarshalText([]byte("ACTIVE")); !errors.Is(err, runtime.ErrUnknownState) {
		t.Errorf("UnmarshalText(ACTIVE): %v", err)
	}

	l := &log{}
	m := New(guards{}, l, WithState(StatePaused))
	v, ok := m.InActive()
	if !ok {
		t.Fatal("PAUSED is not in ACTIVE's view")
	}
	// Stop and Break apply in every leaf of ACTIVE; Pause does not (ENDED).
	if err := v.Stop(context.Background(), Stop{}); err != nil || m.State() != StateStopped {
		t.Fatalf("InActive.Stop: %v, state %s", err, m.State())
	}
	if _, ok := m.InActive(); ok {
		t.Error("STOPPED is in ACTIVE's view")
	}
	m = New(guards{}, l, WithState(StateBroken))
	if _, ok := m.InActive(); ok {
		t.Error("BROKEN, where the run has ended, is in ACTIVE's view")
	}
}

// TestDriver: the engine's driver restores a run's history records before
// it fires, and settles a run whose state has an enabled eventless row.
func TestDriver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := guards{}
	d := NewDriver(func(*runtime.Run) Guards { return g }, func(*runtime.Run) Actions { return &log{} })
	var got []runtime.Transition
	rec := runtime.RecorderFunc(func(ctx context.Context, tr runtime.Transition) error {
		if err := tr.Actions(ctx); err != nil {
			return err
		}
		tr.Actions = nil
		got = append(got, tr)
		return nil
	})
	run := &runtime.Run{ID: "r1", History: map[string]string{"RESUME": "PAUSED"}}
	if err := d.Fire(ctx, run, "STOPPED", Resume{}, rec); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].To != "PAUSED" || !slices.Equal(got[0].Entered, []string{"ACTIVE", "PAUSED"}) {
		t.Fatalf("Resume with PAUSED recorded: %+v", got)
	}
	run.History = map[string]string{"RESUME": "NOWHERE"}
	if err := d.Fire(ctx, run, "STOPPED", Resume{}, rec); !errors.Is(err, runtime.ErrUnknownState) {
		t.Errorf("Resume with a bad record: %v", err)
	}
	s, ok := d.(runtime.Settler)
	if !ok {
		t.Fatalf("%T is no runtime.Settler", d)
	}
	got = nil
	g["Expired"] = true
	if err := s.Settle(ctx, &runtime.Run{}, "PAUSED", rec); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].From != "PAUSED" || got[0].To != "STOPPED" || got[0].Event != "" {
		t.Errorf("Settle in PAUSED with Expired recorded %+v", got)
	}
}
