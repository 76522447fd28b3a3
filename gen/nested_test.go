package gen_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/alecthomas/participle/v2/lexer"

	"github.com/fsmgen/fsmgen/dsl"
	"github.com/fsmgen/fsmgen/gen"
)

// builder assembles a checked nested machine by hand, as dsl's checker
// would: leaves and composites indexed, rows flattened onto the leaves
// they apply to, innermost source first.
type builder struct {
	m      *dsl.Machine
	states map[string]*dsl.State
	hist   map[string]*dsl.History
	events map[string]*dsl.Event
	guards map[string]*dsl.Guard
	line   int
}

func newBuilder(name string) *builder {
	return &builder{
		m: &dsl.Machine{Pos: lexer.Position{Filename: "testdata/nested/" + name + ".fsm"}, Name: name,
			Type: name, Version: 1, Package: "x"},
		states: map[string]*dsl.State{},
		hist:   map[string]*dsl.History{},
		events: map[string]*dsl.Event{},
		guards: map[string]*dsl.Guard{},
	}
}

// state adds a state under parent ("" for the top level); opts: "initial",
// "wait", "final" (a final child without status), "succeeded", "failed",
// "cancelled".
func (b *builder) state(parent, name string, opts ...string) *dsl.State {
	s := &dsl.State{Name: name, GoName: name}
	for _, o := range opts {
		switch o {
		case "initial":
			s.Initial = true
		case "wait":
			s.Wait = true
		case "final":
			s.Done, s.Wait = true, true
		default:
			s.Status = o
		}
	}
	if p := b.states[parent]; p != nil {
		s.Parent, s.Depth = p, p.Depth+1
		p.Children = append(p.Children, s)
		if s.Initial {
			p.InitialChild = s
		}
	} else {
		b.m.Roots = append(b.m.Roots, s)
	}
	b.states[name] = s
	return s
}

func (b *builder) history(parent, name string, deep bool) {
	h := &dsl.History{Name: name, Deep: deep, Parent: b.states[parent]}
	h.Parent.History = append(h.Parent.History, h)
	b.m.Histories = append(b.m.Histories, h)
	b.hist[name] = h
}

func (b *builder) event(name string) *dsl.Event {
	if name == "" {
		return nil
	}
	e := b.events[name]
	if e == nil {
		e = &dsl.Event{Name: name, GoName: name}
		b.events[name] = e
		b.m.Events = append(b.m.Events, e)
	}
	return e
}

func (b *builder) action(name string) *dsl.Action {
	i := slices.IndexFunc(b.m.Actions, func(a *dsl.Action) bool { return a.Name == name })
	if i >= 0 {
		return b.m.Actions[i]
	}
	a := &dsl.Action{Name: name, GoName: name}
	b.m.Actions = append(b.m.Actions, a)
	return a
}

func (b *builder) entry(state string, actions ...string) {
	for _, a := range actions {
		b.states[state].Entry = append(b.states[state].Entry, b.action(a))
	}
}

func (b *builder) exit(state string, actions ...string) {
	for _, a := range actions {
		b.states[state].Exit = append(b.states[state].Exit, b.action(a))
	}
}

func (b *builder) timer(state string, after time.Duration, text, event string) {
	b.states[state].Timers = append(b.states[state].Timers, &dsl.Timer{After: after, Text: text, Event: b.event(event)})
}

// row adds a written row: from, to (a state or a history), its events
// (none: eventless; "done": a completion row), and opts: "internal",
// "when G", "unless G".
func (b *builder) row(from, to string, events []string, opts ...string) {
	b.line++
	src := b.states[from]
	var guard *dsl.Guard
	negated, internal := false, false
	for _, o := range opts {
		switch {
		case o == "internal":
			internal = true
		case len(o) > 5 && o[:5] == "when ":
			guard = b.guard(o[5:])
		case len(o) > 7 && o[:7] == "unless ":
			guard, negated = b.guard(o[7:]), true
		}
	}
	target, hist := b.states[to], b.hist[to]
	leaf := func() *dsl.State {
		if hist != nil {
			return hist.Parent.InitialLeaf()
		}
		return target.InitialLeaf()
	}
	if len(events) == 0 {
		events = []string{""}
	}
	for _, ev := range events {
		done := ev == "done"
		var e *dsl.Event
		if !done {
			e = b.event(ev)
		}
		if guard != nil && e != nil && !slices.Contains(guard.Events, e) {
			guard.Events = append(guard.Events, e)
		}
		// A completion row is taken in the source's final children.
		leaves := src.Leaves()
		if done {
			leaves = slices.DeleteFunc(slices.Clone(leaves), func(l *dsl.State) bool { return !l.Done })
		}
		for _, l := range leaves {
			b.m.Transitions = append(b.m.Transitions, &dsl.Transition{
				Pos:  lexer.Position{Filename: b.m.Pos.Filename, Line: b.line, Column: 5},
				From: l, To: leaf(), Event: e, Guard: guard, Negated: negated,
				Source: src, Target: target, History: hist, Done: done, Internal: internal,
			})
		}
	}
}

func (b *builder) guard(name string) *dsl.Guard {
	g := b.guards[name]
	if g == nil {
		g = &dsl.Guard{Name: name, GoName: name}
		b.guards[name] = g
		b.m.Guards = append(b.m.Guards, g)
	}
	return g
}

// done fills in what the checker computes: the leaves and composites in
// declaration order with their indexes, the initial leaf, and the rows in
// the order the machine tries them (by leaf, innermost source first, in
// written order within one source).
func (b *builder) done() *dsl.Machine {
	var walk func(s *dsl.State)
	walk = func(s *dsl.State) {
		if s.Composite() {
			s.Index = len(b.m.Composites)
			b.m.Composites = append(b.m.Composites, s)
			for _, c := range s.Children {
				walk(c)
			}
			return
		}
		s.Index = len(b.m.States)
		b.m.States = append(b.m.States, s)
	}
	for _, r := range b.m.Roots {
		walk(r)
		if r.Initial {
			b.m.Initial = r.InitialLeaf()
		}
	}
	slices.SortStableFunc(b.m.Transitions, func(x, y *dsl.Transition) int {
		if x.From.Index != y.From.Index {
			return x.From.Index - y.From.Index
		}
		return y.Source.Depth - x.Source.Depth
	})
	return b.m
}

// player is the machine of STATECHARTS.md, built by hand.
func player() *dsl.Machine {
	b := newBuilder("Player")
	b.state("", "STOPPED", "initial", "wait")
	b.state("", "ACTIVE")
	b.timer("ACTIVE", 30*time.Minute, "30m", "IdleTimeout")
	b.entry("ACTIVE", "StartClock")
	b.exit("ACTIVE", "StopClock")
	b.state("ACTIVE", "PLAYING", "initial", "wait")
	b.state("ACTIVE", "PAUSED", "wait")
	b.timer("PAUSED", 5*time.Minute, "5m", "Stop")
	b.history("ACTIVE", "RESUME", false)
	b.history("ACTIVE", "LAST", true)
	b.state("ACTIVE", "ENDED", "final")
	b.state("ACTIVE", "BROKEN", "failed")
	b.state("", "OFF", "succeeded")
	b.row("STOPPED", "ACTIVE", []string{"Play"})
	b.row("PLAYING", "PAUSED", []string{"Pause"})
	b.row("PAUSED", "PLAYING", []string{"Pause", "Play"})
	b.row("ACTIVE", "STOPPED", []string{"Stop"})
	b.row("STOPPED", "RESUME", []string{"Resume"})
	b.row("STOPPED", "LAST", []string{"Recall"})
	b.row("PLAYING", "PLAYING", []string{"Tick"}, "internal")
	b.row("ACTIVE", "OFF", []string{"done"})
	b.row("PAUSED", "STOPPED", nil, "when Expired")
	b.row("PLAYING", "ENDED", []string{"Finish"})
	b.row("PLAYING", "BROKEN", []string{"Fail"})
	b.row("ACTIVE", "OFF", []string{"IdleTimeout"})
	return b.done()
}

// golden compares got with testdata/nested/NAME; go test ./gen -update
// rewrites it.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	file := filepath.Join("testdata", "nested", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run go test ./gen -update)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs from its golden file (-want +got):\n%s", name, diff)
	}
}

// TestDiagramNested draws a nested machine: Mermaid composites with their
// start points, histories and final children; DOT clusters with edges
// clipped at their borders; rows drawn once, from the state they were
// written on.
func TestDiagramNested(t *testing.T) {
	t.Parallel()
	m := player()
	golden(t, "player.mmd", gen.Mermaid(m))
	golden(t, "player.dot", gen.DOT(m))
	golden(t, "player.md", gen.Page("player.fsm", m, gen.Mermaid(m)))
}

// TestExportNested exports a nested machine to XState and SCXML.
func TestExportNested(t *testing.T) {
	t.Parallel()
	m := player()
	x, err := gen.XState(m)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "player.xstate.json", x)
	sc, err := gen.SCXML(m)
	if err != nil {
		t.Fatal(err)
	}
	wellFormedSCXML(t, sc)
	golden(t, "player.scxml", sc)
}
