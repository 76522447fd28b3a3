package defdiagram

import (
	"slices"
	"strconv"
	"strings"

	"github.com/fsmgen/fsmgen/dsl"
	"github.com/fsmgen/fsmgen/gen"
	"github.com/fsmgen/fsmgen/runtime"
)

// Machine returns the machine def describes as the model fsmgen's
// diagrams draw (gen.Mermaid, gen.DOT): its states in a tree, its
// composites with their initial children, histories, timers and actions,
// and its rows as written, so that a nested machine is drawn from its
// registered definition as from its .fsm file.
//
// The definition lists rows leaf to leaf; Machine writes them back onto
// the states they apply to: the rows that share an event, guard, target
// (or history), outcome and kind are one row written on the outermost
// states all of whose leaves they leave, drawn to the leaf they enter (a
// row written to a composite is drawn to its initial leaf, which the
// definition does not tell apart). A FROM list that names every child of a
// composite is drawn from the composite, which means the same. A parallel
// state's regions are drawn as its children; a row the definition lists
// to a configuration is drawn to the parallel state it enters, and a run
// that starts in a configuration starts in the leaf of each region.
func Machine(def runtime.Definition) *dsl.Machine {
	m := &dsl.Machine{Name: def.Machine, Type: def.Type, Version: def.Version}
	events := map[string]*dsl.Event{}
	for _, e := range def.Events {
		ev := &dsl.Event{Name: e.Name, GoName: e.Name, External: e.External}
		events[e.Name] = ev
		m.Events = append(m.Events, ev)
	}
	guards := map[string]*dsl.Guard{}
	for _, g := range def.Guards {
		guards[g] = &dsl.Guard{Name: g, GoName: g}
		m.Guards = append(m.Guards, guards[g])
	}
	actions := map[string]*dsl.Action{}
	for _, a := range def.Actions {
		actions[a] = &dsl.Action{Name: a, GoName: a}
		m.Actions = append(m.Actions, actions[a])
	}
	actionsOf := func(names []string) []*dsl.Action {
		var out []*dsl.Action
		for _, n := range names {
			a := actions[n]
			if a == nil {
				a = &dsl.Action{Name: n, GoName: n}
				actions[n] = a
			}
			out = append(out, a)
		}
		return out
	}
	timersOf := func(ts []runtime.Timer) []*dsl.Timer {
		var out []*dsl.Timer
		for _, tm := range ts {
			ev := events[tm.Event]
			if ev == nil {
				ev = &dsl.Event{Name: tm.Event}
			}
			text := Duration(tm.After)
			if tm.Field != "" {
				text = tm.Field + " min " + Duration(tm.Min) + " max " + Duration(tm.Max)
			}
			out = append(out, &dsl.Timer{After: tm.After, Text: text, Event: ev, Min: tm.Min, Max: tm.Max})
		}
		return out
	}

	states := map[string]*dsl.State{}
	comps := map[string]runtime.CompositeSpec{}
	for _, c := range def.Composites {
		comps[c.Name] = c
	}
	histories := map[string]*dsl.History{}
	// composite returns the composite named name, made (with its
	// ancestors) on first use: a composite comes in the tree where its
	// first leaf does, which is where it was declared.
	var composite func(name string) *dsl.State
	composite = func(name string) *dsl.State {
		if s := states[name]; s != nil {
			return s
		}
		c := comps[name]
		s := &dsl.State{Name: name, GoName: name, Parallel: c.Parallel, Timers: timersOf(c.Timers), Entry: actionsOf(c.Entry), Exit: actionsOf(c.Exit)}
		states[name] = s
		place(m, s, c.Parent, composite)
		s.Index = len(m.Composites)
		m.Composites = append(m.Composites, s)
		if s.Parallel {
			m.Parallels = append(m.Parallels, s)
		}
		for _, h := range c.History {
			hs := &dsl.History{Name: h.Name, Deep: h.Deep, Parent: s}
			s.History = append(s.History, hs)
			m.Histories = append(m.Histories, hs)
			histories[h.Name] = hs
		}
		return s
	}
	for _, st := range def.States {
		s := &dsl.State{Name: st.Name, GoName: st.Name, Initial: st.Initial, Wait: st.Wait, Outcome: st.Outcome,
			Timers: timersOf(st.Timers), Entry: actionsOf(st.Entry), Exit: actionsOf(st.Exit)}
		if st.Terminal() {
			s.Status = string(st.Status)
		}
		states[st.Name] = s
		place(m, s, st.Parent, composite)
		s.Index = len(m.States)
		m.States = append(m.States, s)
	}
	// A run starts in a leaf, or in a configuration of a parallel state:
	// the leaf of each region.
	for _, l := range def.Configuration(def.Initial) {
		if s := states[l]; s != nil {
			m.InitialConfig = append(m.InitialConfig, s)
		}
	}
	if len(m.InitialConfig) > 0 {
		m.Initial = m.InitialConfig[0]
	}
	for _, c := range def.Composites {
		s := composite(c.Name)
		s.InitialChild = states[c.Initial]
		if s.InitialChild != nil {
			s.InitialChild.Initial = true
		}
	}
	// A top-level composite the run starts in is the initial state of the
	// top level.
	if m.Initial == nil && len(m.States) > 0 {
		m.Initial = m.States[0]
	}
	for p := m.Initial.Parent; p != nil; p = p.Parent {
		if p.Parent == nil {
			p.Initial = true
		}
	}
	leaves := func(s *dsl.State) []*dsl.State {
		if s.Composite() {
			return s.Leaves()
		}
		return []*dsl.State{s}
	}

	// The rows, grouped by all but their source, in table order.
	type key struct {
		event, guard, target, history, outcome string
		negated, internal, done                bool
	}
	var order []key
	froms := map[key][]string{}
	firsts := map[key]map[string]int{}
	for i, t := range def.Transitions {
		k := key{t.Event, t.Guard, enteredState(def, t.To), t.History, t.Outcome, t.Negated, t.Internal, t.Done}
		if t.History != "" {
			k.target = ""
		}
		if _, ok := froms[k]; !ok {
			order = append(order, k)
			firsts[k] = map[string]int{}
		}
		if _, ok := firsts[k][t.From]; !ok {
			firsts[k][t.From] = i
		}
		if !slices.Contains(froms[k], t.From) {
			froms[k] = append(froms[k], t.From)
		}
	}
	type written struct {
		k     key
		src   *dsl.State
		first int
	}
	var rows []written
	for _, k := range order {
		from := froms[k]
		for _, f := range from {
			src := states[f]
			// Climb while every leaf of the parent leaves by this row (but
			// its terminal ones, which no row leaves).
			for src.Parent != nil && !slices.ContainsFunc(leaves(src.Parent), func(l *dsl.State) bool { return !l.Terminal() && !slices.Contains(from, l.Name) }) {
				src = src.Parent
			}
			// A completion row leaves from the final children of the
			// composite it was written on.
			if k.done && !src.Composite() && src.Parent != nil {
				src.Done = true
				src = src.Parent
			}
			if k.done && src.Parallel {
				markFinalChildren(def, src)
			}
			if !slices.ContainsFunc(rows, func(w written) bool { return w.k == k && w.src == src }) {
				rows = append(rows, written{k, src, firsts[k][f]})
			}
		}
	}
	slices.SortStableFunc(rows, func(a, b written) int { return a.first - b.first })
	for _, w := range rows {
		k, src := w.k, w.src
		var target *dsl.State
		var hist *dsl.History
		to := states[k.target]
		if k.history != "" {
			hist = histories[k.history]
			to = hist.Parent.InitialLeaf()
		} else {
			// The definition does not say whether the row named the leaf
			// or a composite entered through its initial children: it is
			// drawn to the leaf the run goes to, or to the parallel state
			// whose configuration it enters.
			target = to
		}
		if to == nil {
			continue
		}
		var ev *dsl.Event
		if k.event != "" {
			ev = events[k.event]
		}
		var g *dsl.Guard
		if k.guard != "" {
			g = guards[k.guard]
		}
		if g == nil && k.guard != "" {
			// A guard the definition does not declare, such as one on
			// the configuration, In(S): drawn as written.
			g = &dsl.Guard{Name: k.guard, GoName: k.guard}
		}
		m.Transitions = append(m.Transitions, &dsl.Transition{
			From: src.InitialLeaf(), To: to.InitialLeaf(), Event: ev, Guard: g, Negated: k.negated, Outcome: k.outcome,
			Source: src, Target: target, History: hist, Done: k.done, Internal: k.internal,
		})
	}
	return m
}

// markFinalChildren marks as final children (Done) the leaves of the
// regions of parallel state p that no row leaves: the definition lists
// p's completion rows from p, not from them.
func markFinalChildren(def runtime.Definition, p *dsl.State) {
	for _, l := range p.Leaves() {
		if l.Terminal() || slices.ContainsFunc(def.Transitions, func(t runtime.TransitionSpec) bool { return t.From == l.Name }) {
			continue
		}
		l.Done = true
	}
}

// enteredState is the state a row of def enters, as the diagrams draw
// it: to, or for a configuration (a row entering a parallel state) the
// innermost composite that holds each of its leaves, which the row was
// written to or into.
func enteredState(def runtime.Definition, to string) string {
	leaves := def.Configuration(to)
	if len(leaves) == 1 {
		return to
	}
	for _, a := range def.Ancestors(leaves[0]) {
		if slices.IndexFunc(leaves, func(l string) bool { return !slices.Contains(def.Ancestors(l), a) }) < 0 {
			return a
		}
	}
	return leaves[0]
}

// place puts s in the tree under the composite named parent.
func place(m *dsl.Machine, s *dsl.State, parent string, composite func(string) *dsl.State) {
	if parent == "" {
		m.Roots = append(m.Roots, s)
		return
	}
	p := composite(parent)
	s.Parent, s.Depth = p, p.Depth+1
	p.Children = append(p.Children, s)
}

// nestedMermaid draws a nested machine's definition with fsmgen's own
// Mermaid, its first comment naming the registered definition.
func nestedMermaid(def runtime.Definition) []byte {
	lines := strings.SplitN(string(gen.Mermaid(Machine(def))), "\n", 3)
	lines[1] = "    %% Drawn from the registered definition of " + mermaidText(def.Type) + " v" + strconv.Itoa(def.Version) + "."
	return []byte(strings.Join(lines, "\n"))
}
