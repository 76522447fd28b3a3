package dsl

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// names lists the names of states.
func names(ss []*State) []string {
	out := []string{}
	for _, s := range ss {
		out = append(out, s.Name)
	}
	return out
}

// describeTransition renders a transition with every field the
// flattening fills.
func describeTransition(t *Transition) string {
	on := rowOn(t)
	target := "history " + fmt.Sprint(t.History != nil && t.History.Name != "")
	switch {
	case t.History != nil:
		target = "history " + t.History.Name
	case t.Target != nil:
		target = "target " + t.Target.Name
	}
	guard := ""
	if t.Guard != nil {
		guard = " when " + t.Guard.Name
	}
	internal := ""
	if t.Internal {
		internal = " internal"
	}
	return fmt.Sprintf("%s -> %s %s%s%s (row %d, source %s, %s) exit %v enter %v",
		t.From.Name, t.To.Name, on, guard, internal, t.Pos.Line, t.Source.Name, target, names(t.Exit), names(t.Enter))
}

// describeState renders the hierarchy fields of a state.
func describeState(s *State) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s depth %d", s.Name, s.Depth)
	if s.Parent != nil {
		fmt.Fprintf(&b, " in %s", s.Parent.Name)
	}
	if s.Composite() {
		fmt.Fprintf(&b, " children %v initial %s", names(s.Children), s.InitialChild.Name)
	}
	for _, h := range s.History {
		fmt.Fprintf(&b, " history %s deep=%v", h.Name, h.Deep)
	}
	for _, a := range s.Entry {
		fmt.Fprintf(&b, " entry %s", a.Name)
	}
	for _, a := range s.Exit {
		fmt.Fprintf(&b, " exit %s", a.Name)
	}
	if s.Done {
		b.WriteString(" done")
	}
	if s.Status != "" {
		b.WriteString(" " + s.Status)
	}
	if s.Wait {
		b.WriteString(" wait")
	}
	return b.String()
}

const nestedPlayer = `machine Player {
    initial STOPPED wait
    state ACTIVE after 30m IdleTimeout entry StartClock exit StopClock {
        initial PLAYING wait
        state PAUSED wait after 5m Stop
        state SEEKING entry StartClock {
            initial FORWARD wait
            state BACKWARD wait
        }
        history RESUME
        deep history LAST
        final ENDED
        final BROKEN failed
    }
    final OFF succeeded

    action StartClock
    action StopClock
    event Play
    event Pause
    event Stop
    event Resume
    event Tick
    event Seek
    event IdleTimeout
    guard Expired

    STOPPED -> ACTIVE on Play
    PLAYING -> PAUSED on Pause
    PAUSED -> PLAYING on Pause, Play
    ACTIVE -> STOPPED on Stop, IdleTimeout
    STOPPED -> RESUME on Resume
    PLAYING -> PLAYING on Tick internal
    ACTIVE -> SEEKING on Seek
    SEEKING -> BACKWARD on Seek internal
    FORWARD -> LAST on Resume
    BACKWARD -> ENDED on Tick
    PAUSED -> BROKEN on Tick
    ACTIVE -> OFF on done
    PAUSED -> STOPPED when Expired
}
`

// TestLoadNestedModel checks the model of a nested machine: the tree of
// states, and the transitions flattened to leaves with what they exit and
// enter, innermost rows first.
func TestLoadNestedModel(t *testing.T) {
	t.Parallel()
	spec, diags := Load("t.fsm", []byte(nestedPlayer))
	wantDiags := []string{`t.fsm:34:5: warning: state ACTIVE: the row ACTIVE -> SEEKING on Seek re-enters ACTIVE and restarts its timer "after 30m IdleTimeout"; add "internal" to keep it running`}
	if diff := cmp.Diff(wantDiags, diagStrings(diags)); diff != "" || spec == nil {
		t.Fatalf("diagnostics (-want +got):\n%s", diff)
	}
	m := spec.Machines[0]
	if diff := cmp.Diff([]string{"STOPPED", "PLAYING", "PAUSED", "FORWARD", "BACKWARD", "ENDED", "BROKEN", "OFF"}, names(m.States)); diff != "" {
		t.Errorf("States (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"ACTIVE", "SEEKING"}, names(m.Composites)); diff != "" {
		t.Errorf("Composites (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"STOPPED", "ACTIVE", "OFF"}, names(m.Roots)); diff != "" {
		t.Errorf("Roots (-want +got):\n%s", diff)
	}
	for i, s := range m.States {
		if s.Index != i {
			t.Errorf("state %s has Index %d, want %d", s.Name, s.Index, i)
		}
	}
	for i, s := range m.Composites {
		if s.Index != i {
			t.Errorf("composite %s has Index %d, want %d", s.Name, s.Index, i)
		}
	}
	if m.Initial.Name != "STOPPED" {
		t.Errorf("Initial = %s, want STOPPED", m.Initial.Name)
	}
	var states []string
	for _, s := range append(append([]*State{}, m.Composites...), m.States...) {
		states = append(states, describeState(s))
	}
	wantStates := []string{
		"ACTIVE depth 0 children [PLAYING PAUSED SEEKING ENDED BROKEN] initial PLAYING history RESUME deep=false history LAST deep=true entry StartClock exit StopClock",
		"SEEKING depth 1 in ACTIVE children [FORWARD BACKWARD] initial FORWARD entry StartClock",
		"STOPPED depth 0 wait",
		"PLAYING depth 1 in ACTIVE wait",
		"PAUSED depth 1 in ACTIVE wait",
		"FORWARD depth 2 in SEEKING wait",
		"BACKWARD depth 2 in SEEKING wait",
		"ENDED depth 1 in ACTIVE done wait",
		"BROKEN depth 1 in ACTIVE failed",
		"OFF depth 0 succeeded",
	}
	if diff := cmp.Diff(wantStates, states); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
	var hs []string
	for _, h := range m.Histories {
		hs = append(hs, fmt.Sprintf("%s of %s deep=%v", h.Name, h.Parent.Name, h.Deep))
	}
	if diff := cmp.Diff([]string{"RESUME of ACTIVE deep=false", "LAST of ACTIVE deep=true"}, hs); diff != "" {
		t.Errorf("Histories (-want +got):\n%s", diff)
	}
	var as []string
	for _, a := range m.Actions {
		as = append(as, a.Name+" "+a.GoName)
	}
	if diff := cmp.Diff([]string{"StartClock StartClock", "StopClock StopClock"}, as); diff != "" {
		t.Errorf("Actions (-want +got):\n%s", diff)
	}
	var got []string
	for _, tr := range m.Transitions {
		got = append(got, describeTransition(tr))
	}
	want := []string{
		// Depth 2 sources.
		"FORWARD -> PLAYING on Resume (row 36, source FORWARD, history LAST) exit [FORWARD SEEKING] enter [PLAYING]",
		"BACKWARD -> ENDED on Tick (row 37, source BACKWARD, target ENDED) exit [BACKWARD SEEKING] enter [ENDED]",
		// Depth 1 sources, in the order written.
		"PLAYING -> PAUSED on Pause (row 29, source PLAYING, target PAUSED) exit [PLAYING] enter [PAUSED]",
		"PAUSED -> PLAYING on Pause (row 30, source PAUSED, target PLAYING) exit [PAUSED] enter [PLAYING]",
		"PAUSED -> PLAYING on Play (row 30, source PAUSED, target PLAYING) exit [PAUSED] enter [PLAYING]",
		"PLAYING -> PLAYING on Tick internal (row 33, source PLAYING, target PLAYING) exit [] enter []",
		"FORWARD -> BACKWARD on Seek internal (row 35, source SEEKING, target BACKWARD) exit [FORWARD] enter [BACKWARD]",
		"BACKWARD -> BACKWARD on Seek internal (row 35, source SEEKING, target BACKWARD) exit [BACKWARD] enter [BACKWARD]",
		"PAUSED -> BROKEN on Tick (row 38, source PAUSED, target BROKEN) exit [PAUSED] enter [BROKEN]",
		"PAUSED -> STOPPED without an event when Expired (row 40, source PAUSED, target STOPPED) exit [PAUSED ACTIVE] enter [STOPPED]",
		// Top-level sources: a composite's rows apply to each of its
		// leaves that is not terminal.
		"STOPPED -> PLAYING on Play (row 28, source STOPPED, target ACTIVE) exit [STOPPED] enter [ACTIVE PLAYING]",
		"PLAYING -> STOPPED on Stop (row 31, source ACTIVE, target STOPPED) exit [PLAYING ACTIVE] enter [STOPPED]",
		"PAUSED -> STOPPED on Stop (row 31, source ACTIVE, target STOPPED) exit [PAUSED ACTIVE] enter [STOPPED]",
		"FORWARD -> STOPPED on Stop (row 31, source ACTIVE, target STOPPED) exit [FORWARD SEEKING ACTIVE] enter [STOPPED]",
		"BACKWARD -> STOPPED on Stop (row 31, source ACTIVE, target STOPPED) exit [BACKWARD SEEKING ACTIVE] enter [STOPPED]",
		"ENDED -> STOPPED on Stop (row 31, source ACTIVE, target STOPPED) exit [ENDED ACTIVE] enter [STOPPED]",
		"PLAYING -> STOPPED on IdleTimeout (row 31, source ACTIVE, target STOPPED) exit [PLAYING ACTIVE] enter [STOPPED]",
		"PAUSED -> STOPPED on IdleTimeout (row 31, source ACTIVE, target STOPPED) exit [PAUSED ACTIVE] enter [STOPPED]",
		"FORWARD -> STOPPED on IdleTimeout (row 31, source ACTIVE, target STOPPED) exit [FORWARD SEEKING ACTIVE] enter [STOPPED]",
		"BACKWARD -> STOPPED on IdleTimeout (row 31, source ACTIVE, target STOPPED) exit [BACKWARD SEEKING ACTIVE] enter [STOPPED]",
		"ENDED -> STOPPED on IdleTimeout (row 31, source ACTIVE, target STOPPED) exit [ENDED ACTIVE] enter [STOPPED]",
		// A history target enters its composite's initial leaf while
		// it has no record.
		"STOPPED -> PLAYING on Resume (row 32, source STOPPED, history RESUME) exit [STOPPED] enter [ACTIVE PLAYING]",
		// An external row of a composite to a state inside it exits
		// and re-enters the composite.
		"PLAYING -> FORWARD on Seek (row 34, source ACTIVE, target SEEKING) exit [PLAYING ACTIVE] enter [ACTIVE SEEKING FORWARD]",
		"PAUSED -> FORWARD on Seek (row 34, source ACTIVE, target SEEKING) exit [PAUSED ACTIVE] enter [ACTIVE SEEKING FORWARD]",
		"ENDED -> FORWARD on Seek (row 34, source ACTIVE, target SEEKING) exit [ENDED ACTIVE] enter [ACTIVE SEEKING FORWARD]",
		// The completion row leaves from the final child.
		"ENDED -> OFF on done (row 39, source ACTIVE, target OFF) exit [ENDED ACTIVE] enter [OFF]",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Transitions (-want +got):\n%s", diff)
	}
	g := m.Guards[0]
	if !g.Eventless || len(g.Events) != 0 {
		t.Errorf("guard %s: Eventless %v, Events %d; want true, 0", g.Name, g.Eventless, len(g.Events))
	}
}

// TestLoadFlatTransitionFields checks the fields of nesting in a flat
// machine: each row is its own source and target, exits its state and
// enters its target.
func TestLoadFlatTransitionFields(t *testing.T) {
	t.Parallel()
	spec, diags := Load("t.fsm", []byte(door("initial OPEN wait", "final CLOSED succeeded", "event Close", "event Knock",
		"OPEN -> OPEN on Knock", "OPEN -> CLOSED on Close")))
	if len(diags) > 0 {
		t.Fatalf("diagnostics:\n%s", strings.Join(diagStrings(diags), "\n"))
	}
	var got []string
	for _, tr := range spec.Machines[0].Transitions {
		got = append(got, describeTransition(tr))
	}
	want := []string{
		"OPEN -> OPEN on Knock (row 6, source OPEN, target OPEN) exit [OPEN] enter [OPEN]",
		"OPEN -> CLOSED on Close (row 7, source OPEN, target CLOSED) exit [OPEN] enter [CLOSED]",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Transitions (-want +got):\n%s", diff)
	}
	m := spec.Machines[0]
	if diff := cmp.Diff([]string{"OPEN", "CLOSED"}, names(m.Roots)); diff != "" {
		t.Errorf("Roots (-want +got):\n%s", diff)
	}
	if len(m.Composites) != 0 || len(m.Histories) != 0 || len(m.Actions) != 0 {
		t.Errorf("flat machine has %d composites, %d histories, %d actions", len(m.Composites), len(m.Histories), len(m.Actions))
	}
}

// TestParseNestedAST checks the tree the grammar builds for the new forms.
func TestParseNestedAST(t *testing.T) {
	t.Parallel()
	f, err := Parse("t.fsm", []byte(`machine M {
    initial A entry X exit Y after E.d min 1s max 1m T {
        // the first child
        initial B
        deep history H
        history G
        final C
    }
    A -> B on E, F when G internal
    B -> C
}`))
	if err != nil {
		t.Fatal(err)
	}
	sd := f.Machines[0].Items[0].State
	var opts []string
	for _, o := range sd.Options {
		switch {
		case o.Entry != nil:
			opts = append(opts, "entry "+o.Entry.Value)
		case o.Exit != nil:
			opts = append(opts, "exit "+o.Exit.Value)
		case o.Timer != nil:
			opts = append(opts, fmt.Sprintf("after %s.%s min %s max %s %s", o.Timer.FieldOf.Value, o.Timer.Field.Value, o.Timer.Min.Value, o.Timer.Max.Value, o.Timer.Event.Value))
		}
	}
	if diff := cmp.Diff([]string{"entry X", "exit Y", "after E.d min 1s max 1m T"}, opts); diff != "" {
		t.Errorf("options (-want +got):\n%s", diff)
	}
	var children []string
	for _, c := range sd.Children {
		switch {
		case c.State != nil:
			children = append(children, fmt.Sprintf("%s %s %v", c.State.Kind, c.State.Name.Value, c.Doc))
		case c.History != nil:
			children = append(children, fmt.Sprintf("history %s deep=%v", c.History.Name.Value, c.History.Deep))
		}
	}
	if diff := cmp.Diff([]string{"initial B [the first child]", "history H deep=true", "history G deep=false", "final C []"}, children); diff != "" {
		t.Errorf("children (-want +got):\n%s", diff)
	}
	if !sd.Block || sd.EndPos.Line != 8 {
		t.Errorf("Block %v, EndPos line %d; want true, 8", sd.Block, sd.EndPos.Line)
	}
	rows := f.Machines[0].Items[1:]
	r := rows[0].Transition
	if got := []string{r.Events()[0].Value, r.Events()[1].Value, r.Guard.Name.Value, fmt.Sprint(r.Internal)}; !cmp.Equal(got, []string{"E", "F", "G", "true"}) {
		t.Errorf("row 1 = %v", got)
	}
	if r := rows[1].Transition; r.Event != nil || r.Events() != nil || r.Internal {
		t.Errorf("eventless row = %+v", r)
	}
}

// TestParseNestedSyntaxErrors checks the messages of the obvious mistakes
// in a state's block, each reported once, the rest of the file read on.
func TestParseNestedSyntaxErrors(t *testing.T) {
	t.Parallel()
	src := `machine P {
    initial A wait
    state B entry X {
        initial C
        history
    }
    state B2 {
        initial C2
        C -> A on E
    }
    state B3 {
        initial C3
        event Z
    }
    state B4 {
        initial C4
        foo bar
    }
    state D after Ev.f min 1 max 2s E exit {
       initial Q
    }
    A -> B on E, F G
    A -> B internal x
}
machine Q {
    initial A wait
    state B {
        initial C
    event E
    A -> B on E
}
`
	want := []string{
		`t.fsm:6:5: syntax error: unexpected token "}", expected the history's name`,
		`t.fsm:9:9: syntax error: unexpected token "C", expected initial, state, final, a status (succeeded, failed or cancelled), parallel, wait, entry, exit, retry, after, deep, history, "{" or "}"`,
		`t.fsm:13:9: syntax error: unexpected token "event", expected initial, state, final, a status (succeeded, failed or cancelled), parallel, wait, entry, exit, retry, after, deep, history, "{" or "}"`,
		`t.fsm:17:9: syntax error: unexpected token "foo", expected initial, state, final, a status (succeeded, failed or cancelled), parallel, wait, entry, exit, retry, after, deep, history, "{" or "}"`,
		`t.fsm:19:28: syntax error: unexpected token "1", expected a duration (a number and a unit: ms, s, m, h or d, as in 30s)`,
		`t.fsm:22:20: syntax error: unexpected token "G", expected outcome, internal, when, unless, "," or the end of the row`,
		`t.fsm:23:21: syntax error: unexpected token "x", expected the end of the row`,
		`t.fsm:28:18: syntax error: unexpected end of line, expected initial, state, final, a status (succeeded, failed or cancelled), parallel, wait, entry, exit, retry, after, deep, history, "{" or "}"`,
	}
	_, err := Parse("t.fsm", []byte(src))
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("Parse error = %v, want an ErrorList", err)
	}
	if diff := cmp.Diff(want, diagStrings(Diagnostics(list))); diff != "" {
		t.Errorf("diagnostics (-want +got):\n%s", diff)
	}
}
