package gen

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/fsmgen/fsmgen/dsl"
)

// statechart reports whether m uses a feature of nested machines:
// composite states, history, entry or exit actions, eventless, completion
// or internal rows, or a timer whose duration is an event's field. Such a
// machine's Fire is generated as nest writes it; any other machine's as
// it always was, so that the code of a flat machine does not change.
func statechart(m *dsl.Machine) bool {
	if len(m.Composites) > 0 || len(m.Histories) > 0 || len(m.Actions) > 0 {
		return true
	}
	for _, s := range m.States {
		if len(s.Entry) > 0 || len(s.Exit) > 0 || s.Done {
			return true
		}
		for _, tm := range s.Timers {
			if tm.Field != nil {
				return true
			}
		}
	}
	for _, t := range m.Transitions {
		if t.Event == nil || t.Done || t.Internal || t.History != nil {
			return true
		}
	}
	return false
}

// specRow is one row of the generated definition's table: a row of the
// machine, or, for a row that targets a history pseudostate, the row to
// one of the leaves the history may enter.
type specRow struct {
	t *dsl.Transition
	// to is the leaf entered and enter the states entered, outermost
	// first.
	to    *dsl.State
	enter []*dsl.State
	// record is the history's record that leads to this leaf: a child of
	// the history's composite (shallow) or a leaf (deep); nil for the row
	// taken without a record.
	record *dsl.State
	// index is the row's position in the definition's Transitions.
	index int
}

// nest holds what the generated code of a statechart is written from.
type nest struct {
	m *dsl.Machine
	// rows are the definition's rows in order, and byRow those of each
	// row of the machine, the one without a history record first.
	rows  []*specRow
	byRow map[*dsl.Transition][]*specRow
	// actions names the method that runs each distinct sequence of
	// actions, by the sequence's names joined with commas; actionSeqs
	// lists the sequences in order of first use.
	actions    map[string]string
	actionSeqs [][]*dsl.Action
	// norec is set while writing code that runs without a recorder.
	norec bool
}

func newNest(m *dsl.Machine) *nest {
	n := &nest{m: m, byRow: map[*dsl.Transition][]*specRow{}, actions: map[string]string{}}
	open := map[[2]any]bool{} // (leaf, event) whose rows may still be taken
	for _, t := range m.Transitions {
		if !takeable(t) {
			continue
		}
		k := [2]any{t.From, t.Event}
		if stillOpen, seen := open[k]; seen && !stillOpen {
			// An earlier unguarded row from the leaf on the event, its
			// own or an inner composite's, always wins: this row of an
			// outer composite is never taken there.
			continue
		}
		open[k] = t.Guard != nil || t.In != nil
		for _, r := range historyRows(t) {
			r.index = len(n.rows)
			n.rows = append(n.rows, r)
			n.byRow[t] = append(n.byRow[t], r)
		}
	}
	for _, r := range n.rows {
		if seq := stepActions(r); len(seq) > 0 {
			n.actionsName(seq)
		}
	}
	if seq := startActions(m); len(seq) > 0 {
		n.actionsName(seq)
	}
	return n
}

// startActions returns the entry actions of the states a run of m starts
// in (startStates), in the order they run.
func startActions(m *dsl.Machine) []*dsl.Action {
	var seq []*dsl.Action
	for _, s := range startStates(m) {
		seq = append(seq, s.Entry...)
	}
	return seq
}

// startStates returns the states a run of m starts in, outermost first:
// the initial leaf and the composites above it; for a run that starts in
// a parallel state, the composites above it, the parallel state, then
// each region down to its leaf, region by region.
func startStates(m *dsl.Machine) []*dsl.State {
	var out []*dsl.State
	p, _ := m.Initial.Region()
	if p == nil {
		out = slices.Collect(slices.Values(m.Initial.Ancestors()))
		slices.Reverse(out)
		return append(out, m.Initial)
	}
	out = append(slices.Clone(p.Ancestors()), p)
	slices.Reverse(out[:len(out)-1])
	for _, leaf := range m.InitialConfig {
		var down []*dsl.State
		for s := leaf; s != p; s = s.Parent {
			down = append(down, s)
		}
		slices.Reverse(down)
		out = append(out, down...)
	}
	return out
}

// specRowsOf returns the rows of m's definition: those of newNest for a
// statechart, else one per row of m.
func specRowsOf(m *dsl.Machine) []*specRow {
	if statechart(m) {
		return newNest(m).rows
	}
	// A flat machine's rows are all takeable.
	out := make([]*specRow, len(m.Transitions))
	for i, t := range m.Transitions {
		out[i] = &specRow{t: t, to: t.To, enter: t.Enter, index: i}
	}
	return out
}

// takeable reports whether row t can be taken: a completion row only in
// a final child of its composite, or from a parallel state, which
// completes once every region is in a final child.
func takeable(t *dsl.Transition) bool {
	return !t.Done || t.From.Done && t.From.Parent == t.Source || t.From.Parallel
}

// historyRows returns the definition's rows of row t: t itself, and when
// t targets a history pseudostate, one more per leaf a record may lead
// to, in the order of the composite's children or leaves. A leaf is
// listed once: the row without a record comes first.
func historyRows(t *dsl.Transition) []*specRow {
	out := []*specRow{{t: t, to: t.To, enter: t.Enter}}
	h := t.History
	if h == nil {
		return out
	}
	c := h.Parent
	var prefix []*dsl.State
	for _, s := range t.Enter {
		if s == c || !s.In(c) {
			prefix = append(prefix, s)
		}
	}
	add := func(record, leaf *dsl.State) {
		for _, r := range out {
			if r.to == leaf {
				return
			}
		}
		enter := slices.Clone(prefix)
		var down []*dsl.State
		for s := leaf; s != c; s = s.Parent {
			down = append(down, s)
		}
		slices.Reverse(down)
		out = append(out, &specRow{t: t, to: leaf, enter: append(enter, down...), record: record})
	}
	if h.Deep {
		for _, l := range c.Leaves() {
			if !l.Terminal() {
				add(l, l)
			}
		}
		return out
	}
	for _, ch := range c.Children {
		if l := ch.InitialLeaf(); !l.Terminal() {
			add(ch, l)
		}
	}
	return out
}

// stepActions returns the actions of row r in the order they run: the
// exit actions of the states exited, innermost first, then the entry
// actions of the states entered, outermost first.
func stepActions(r *specRow) []*dsl.Action {
	var out []*dsl.Action
	for _, s := range r.t.Exit {
		out = append(out, s.Exit...)
	}
	for _, s := range r.enter {
		out = append(out, s.Entry...)
	}
	return out
}

func actionsKey(seq []*dsl.Action) string {
	names := make([]string, len(seq))
	for i, a := range seq {
		names[i] = a.Name
	}
	return strings.Join(names, ",")
}

// actionsName returns the name of the method that runs seq, adding it.
func (n *nest) actionsName(seq []*dsl.Action) string {
	k := actionsKey(seq)
	if name, ok := n.actions[k]; ok {
		return name
	}
	name := fmt.Sprintf("actions%d", len(n.actionSeqs))
	n.actions[k] = name
	n.actionSeqs = append(n.actionSeqs, seq)
	return name
}

// histIndex is the position of h in the machine's histories, the index
// of its record in the generated Machine's hist.
func (n *nest) histIndex(h *dsl.History) int { return slices.Index(n.m.Histories, h) }

// childOn returns the child of c that is l or contains it.
func childOn(c, l *dsl.State) *dsl.State {
	for s := l; s != nil; s = s.Parent {
		if s.Parent == c {
			return s
		}
	}
	return nil
}

// historyRecord is what history pseudostate h records when its composite
// is exited from leaf l: the child of the composite the run was in
// (shallow) or l itself (deep).
func historyRecord(h *dsl.History, l *dsl.State) *dsl.State {
	if h.Deep {
		return l
	}
	return childOn(h.Parent, l)
}

// eventless returns the eventless and completion rows that may be taken
// in leaf l, in the order tried: a completion row only in a final child
// of its composite.
func (n *nest) eventless(l *dsl.State) []*dsl.Transition {
	var out []*dsl.Transition
	for _, t := range n.m.Transitions {
		if t.From != l || t.Event != nil {
			continue
		}
		if !takeable(t) {
			continue
		}
		out = append(out, t)
	}
	return out
}

// anyEventless reports whether the machine has an eventless or completion
// row that may be taken.
func (n *nest) anyEventless() bool {
	for _, l := range n.m.States {
		if len(n.eventless(l)) > 0 {
			return true
		}
	}
	return false
}

// rowText describes row t for comments: FROM -> TO on E when G.
func rowText(t *dsl.Transition) string {
	to := t.To.Name
	if t.History != nil {
		to = t.History.Name
	} else if t.Target != nil {
		to = t.Target.Name
	}
	from := t.From.Name
	if t.Source != nil && t.Source != t.From {
		from = t.Source.Name + " (in " + t.From.Name + ")"
	}
	s := from + " -> " + to
	switch {
	case t.Done:
		s += " on done"
	case t.Event != nil:
		s += " on " + t.Event.Name
	}
	if t.Guard != nil {
		if t.Negated {
			s += " unless " + t.Guard.Name
		} else {
			s += " when " + t.Guard.Name
		}
	}
	if t.Internal {
		s += " internal"
	}
	return s
}

// step writes the statements that take the definition's row r: record
// it (the recorder runs the actions in its write) or run its actions,
// then note the history records of the composites it exits and set the
// state. ev is the event as the recorder gets it ("e", or "nil" for an
// eventless row); fail is the statement that returns an error err.
func (n *nest) step(f *goFile, indent int, r *specRow, ev, fail string) {
	act := "nil"
	seq := stepActions(r)
	if len(seq) > 0 {
		act = "(*Machine)." + n.actionsName(seq)
	}
	switch {
	case n.norec && len(seq) > 0:
		f.line(indent, "if err := m.", n.actionsName(seq), "(ctx); err != nil {")
		f.line(indent+1, fail)
		f.line(indent, "}")
	case n.norec:
	default:
		n.recordOrAct(f, indent, r, ev, fail, act, seq)
	}
	for _, s := range r.t.Exit {
		for _, h := range s.History {
			f.line(indent, fmt.Sprintf("m.hist[%d] = %s + 1", n.histIndex(h), stateConst(historyRecord(h, r.t.From))))
		}
	}
	f.line(indent, "m.state = ", stateConst(r.to))
}

// recordOrAct writes the statements that record row r, or, without a
// recorder, run its actions seq (act names their method, or is nil).
func (n *nest) recordOrAct(f *goFile, indent int, r *specRow, ev, fail, act string, seq []*dsl.Action) {
	f.line(indent, "if m.rec != nil {")
	f.line(indent+1, fmt.Sprintf("if err := m.record(ctx, %s, %s, %d, %s); err != nil {", stateConst(r.to), ev, r.index, act))
	f.line(indent+2, fail)
	f.line(indent+1, "}")
	if len(seq) > 0 {
		f.line(indent, "} else if err := m.", n.actionsName(seq), "(ctx); err != nil {")
		f.line(indent+1, fail)
	}
	f.line(indent, "}")
}

// take writes the statements that take row t and return: done is the
// statement that returns after a move to leaf to.
func (n *nest) take(f *goFile, indent int, t *dsl.Transition, ev, fail string, done func(to *dsl.State) string) {
	rows := n.byRow[t]
	h := t.History
	if h == nil || len(rows) == 1 {
		n.step(f, indent, rows[0], ev, fail)
		f.line(indent, done(rows[0].to))
		return
	}
	if slices.Contains(t.Exit, h.Parent) {
		// The row exits the history's composite first: the record it
		// enters is the one that exit makes.
		rec := historyRecord(h, t.From)
		leaf := rec
		if !h.Deep {
			leaf = rec.InitialLeaf()
		}
		for _, r := range rows {
			if r.to == leaf {
				n.step(f, indent, r, ev, fail)
				f.line(indent, done(r.to))
				return
			}
		}
	}
	f.line(indent, fmt.Sprintf("switch m.hist[%d] {", n.histIndex(h)))
	for _, r := range rows[1:] {
		f.line(indent, "case ", stateConst(r.record), " + 1:")
		n.step(f, indent+1, r, ev, fail)
		f.line(indent+1, done(r.to))
	}
	// No record, or one that leads to the leaf of the row without one.
	f.line(indent, "default:")
	n.step(f, indent+1, rows[0], ev, fail)
	f.line(indent+1, done(rows[0].to))
	f.line(indent, "}")
}

// historyChoices returns what h may record: the children of its
// composite (shallow) or its leaves (deep).
func (n *nest) historyChoices(h *dsl.History) []*dsl.State {
	if h.Deep {
		return h.Parent.Leaves()
	}
	return h.Parent.Children
}

// afterMove is the statement an event's method returns with after a move
// to leaf to: the eventless rows are taken there when it has any.
func (n *nest) afterMove(to *dsl.State) string {
	if len(n.eventless(to)) > 0 {
		return "return m.settle(ctx)"
	}
	return "return nil"
}

// eventBody writes the statements of the method of event e at indent:
// with the recorder's path unless n.norec is set.
func (n *nest) eventBody(f *goFile, indent int, e *dsl.Event) {
	i := indent
	if leaves := statesAccepting(n.m, e); len(leaves) > 0 {
		f.line(i, "switch m.state {")
		for _, l := range leaves {
			f.line(i, "case ", stateConst(l), ":")
			for _, t := range n.m.Transitions {
				if t.From != l || t.Event != e {
					continue
				}
				if t.Guard == nil {
					f.line(i+1, "// ", rowText(t))
					n.take(f, i+1, t, "e", "return err", n.afterMove)
					break
				}
				f.line(i+1, "if ", guardCall(t), " { // ", rowText(t))
				n.take(f, i+2, t, "e", "return err", n.afterMove)
				f.line(i+1, "}")
			}
		}
		f.line(i, "}")
	}
	f.line(i, "return m.refuse(e)")
}

// fire writes Fire: with a recorder, it calls the event's method; without
// one, it does the method's work in place, so that the event is not
// passed on through a call the compiler cannot inline.
func (n *nest) fire(f *goFile) {
	f.text(`
// Fire applies event e as the method named after it does; a nil e returns a
// *runtime.TransitionError matching runtime.ErrIllegalTransition. Without a
// recorder it does the method's work itself, written out in place.
func (m *Machine) Fire(ctx context.Context, e Event) error {
`)
	if len(n.m.Events) > 0 {
		f.line(1, "if m.rec != nil {")
		f.line(2, "switch e := e.(type) {")
		for _, e := range n.m.Events {
			f.line(2, "case ", e.GoName, ":")
			f.line(3, "return m.", e.GoName, "(ctx, e)")
		}
		f.line(2, "}")
		f.line(2, "return m.refuse(nil)")
		f.line(1, "}")
		f.line(1, "switch e := e.(type) {")
		n.norec = true
		for _, e := range n.m.Events {
			f.line(1, "case ", e.GoName, ":")
			n.eventBody(f, 2, e)
		}
		n.norec = false
		f.line(1, "}")
	}
	f.line(1, "return m.refuse(nil)")
	f.line(0, "}")
}

// maxEventless is how many eventless moves one Fire or Settle takes at
// most: one more enabled is an error.
const maxEventless = 64

// code writes the declarations of a statechart after those of every
// machine, at the end of fsm.go: Fire, the states' hierarchy, the history
// records, the recording of a move, the actions and the eventless rows.
func (n *nest) code(g *goGen) {
	f := g.f
	m := n.m
	n.fire(f)
	if len(m.Composites) > 0 {
		n.hierarchy(f)
	}
	if len(m.Histories) > 0 {
		n.history(f)
	}
	if seq := startActions(m); len(seq) > 0 {
		n.enter(f, seq)
	}
	// record
	f.text(`
// record records the move to leaf to along row of the definition, on
// event e (nil for an eventless row): the recorder runs act, the move's
// exit and entry actions, in its write. The caller applies the move once
// it returns nil.
//
//go:noinline
func (m *Machine) record(ctx context.Context, to State, e Event, row int, act func(*Machine, context.Context) error) error {
	var actions func(context.Context) error
	if act != nil {
		actions = func(ctx context.Context) error { return act(m, ctx) }
	}
	return fsmimpl.RecordStep(ctx, &definition, m.rec, m.state, to, e, row, actions)
}
`)
	for i, seq := range n.actionSeqs {
		names := make([]string, len(seq))
		for j, a := range seq {
			names[j] = a.Name
		}
		f.line(0)
		if len(names) == 1 {
			f.comment(0, fmt.Sprintf("actions%d runs %s.", i, names[0]))
		} else {
			f.comment(0, fmt.Sprintf("actions%d runs %s, in that order, and stops at the first error.", i, joinAnd(names)))
		}
		f.line(0, fmt.Sprintf("func (m *Machine) actions%d(ctx context.Context) error {", i))
		for j, a := range seq {
			if j == len(seq)-1 {
				f.line(1, "return m.actions.", a.GoName, "(ctx)")
				break
			}
			f.line(1, "if err := m.actions.", a.GoName, "(ctx); err != nil {")
			f.line(2, "return err")
			f.line(1, "}")
		}
		f.line(0, "}")
	}
	if n.anyEventless() {
		n.settle(f)
	}
}

// hierarchy writes the methods of State that know the hierarchy.
func (n *nest) hierarchy(f *goFile) {
	m := n.m
	f.text(`
// Parent returns the composite state that contains s, and false for a
// state at the top level.
func (s State) Parent() (State, bool) {
	if int(s) >= len(parents) || parents[s] == s {
		return 0, false
	}
	return parents[s], true
}

// Ancestors yields the composite states that contain s, innermost first.
func (s State) Ancestors() iter.Seq[State] {
	return func(yield func(State) bool) {
		for p, ok := s.Parent(); ok && yield(p); p, ok = p.Parent() {
		}
	}
}

// In reports whether s is c or inside c: a run in leaf s is in each of
// its ancestors.
func (s State) In(c State) bool {
	for {
		if s == c {
			return true
		}
		p, ok := s.Parent()
		if !ok {
			return false
		}
		s = p
	}
}

`)
	f.line(0, "// Leaf reports whether s is a leaf, a state a run can be in: the leaves")
	f.line(0, "// come first, then the composite states.")
	f.line(0, fmt.Sprintf("func (s State) Leaf() bool { return s < %s }", stateConst(m.Composites[0])))
	f.text("\n// parents holds the parent of each state, the state itself at the top level.\n")
	f.line(0, "var parents = [...]State{")
	for _, s := range slices.Concat(m.States, m.Composites) {
		p := s
		if s.Parent != nil {
			p = s.Parent
		}
		f.line(1, stateConst(s), ": ", stateConst(p), ",")
	}
	f.line(0, "}")
	all := make([]string, len(m.Composites))
	for i, s := range m.Composites {
		all[i] = stateConst(s)
	}
	f.text("\n// Composites returns every composite state in declaration order.\n")
	f.line(0, "func Composites() []State {")
	f.line(1, "return []State{", strings.Join(all, ", "), "}")
	f.line(0, "}")
}

// history writes History, SetHistory and the table of the history
// pseudostates.
func (n *nest) history(f *goFile) {
	f.text(`
// History returns the records of the machine's history pseudostates: the
// name of each pseudostate that has one, mapped to the name of the state
// it recorded (a child of its composite for a shallow history, a leaf
// for a deep one). They are part of a run's data: SetHistory gives them
// back to a machine built for the run.
func (m *Machine) History() map[string]string { return fsmimpl.HistoryOf(histories[:], m.hist[:]) }

// SetHistory sets the records of the machine's history pseudostates, as
// History returns them. A name that is no history pseudostate of the
// machine, or a state that the pseudostate cannot record, is an error and
// leaves the records unchanged.
func (m *Machine) SetHistory(h map[string]string) error {
	return fsmimpl.SetHistory(Type, histories[:], m.hist[:], h)
}

// histories are the history pseudostates, in the order of m.hist, with
// the states each may record.
`)
	f.line(0, "var histories = [...]fsmimpl.History[State]{")
	for _, h := range n.m.Histories {
		var recs []string
		for _, s := range n.historyChoices(h) {
			if !s.Terminal() {
				recs = append(recs, stateConst(s))
			}
		}
		f.line(1, fmt.Sprintf("{Name: %q, Records: []State{%s}},", h.Name, strings.Join(recs, ", ")))
	}
	f.line(0, "}")
}

// settle writes Settle, settle and eventless.
func (n *nest) settle(f *goFile) {
	f.text(fmt.Sprintf(`
// Settle takes the eventless and completion rows enabled in the machine's
// state, innermost first, one move at a time, as Fire does after each
// move: call it once after New for a run that starts in a state where
// such a row may be enabled. A guard of an eventless row is given a nil
// event. At most %[1]d moves are taken: one more enabled is an error that
// names the states gone through, and the machine stays where it is.
func (m *Machine) Settle(ctx context.Context) error { return m.settle(ctx) }

func (m *Machine) settle(ctx context.Context) error {
	var path [%[1]d + 1]State
	for i := range path {
		path[i] = m.state
		took, err := m.eventless(ctx, i < len(path)-1)
		if err != nil || !took {
			return err
		}
	}
	return fsmimpl.EventlessLoop(&definition, path[:])
}

// eventless takes the first eventless or completion row enabled in the
// machine's state, only reporting it when take is false, and reports
// whether there was one.
func (m *Machine) eventless(ctx context.Context, take bool) (bool, error) {
`, maxEventless))
	f.line(1, "switch m.state {")
	for _, l := range n.m.States {
		rows := n.eventless(l)
		if len(rows) == 0 {
			continue
		}
		f.line(1, "case ", stateConst(l), ":")
		for _, t := range rows {
			indent := 2
			if t.Guard != nil {
				f.line(2, "if ", strings.Replace(guardCall(t), "(ctx, e)", "(ctx, nil)", 1), " { // ", rowText(t))
				indent = 3
			} else {
				f.line(2, "// ", rowText(t))
			}
			f.line(indent, "if !take {")
			f.line(indent+1, "return true, nil")
			f.line(indent, "}")
			n.take(f, indent, t, "nil", "return false, err", func(*dsl.State) string { return "return true, nil" })
			if t.Guard == nil {
				break
			}
			f.line(2, "}")
		}
	}
	f.line(1, "}")
	f.line(1, "return false, nil")
	f.line(0, "}")
}

// compositeEvents returns the events that every leaf of composite c but
// the final ones (where a run has ended) has a row on, in declaration
// order: the methods of c's view.
func (n *nest) compositeEvents(g *goGen, c *dsl.State) []*dsl.Event {
	var leaves []*dsl.State
	for _, l := range c.Leaves() {
		if !l.Terminal() {
			leaves = append(leaves, l)
		}
	}
	if len(leaves) == 0 {
		return nil
	}
	var out []*dsl.Event
	for _, e := range g.eventsOf(leaves[0]) {
		all := true
		for _, l := range leaves[1:] {
			if !slices.Contains(g.eventsOf(l), e) {
				all = false
				break
			}
		}
		if all {
			out = append(out, e)
		}
	}
	return out
}

// outcome is what taking a row does, as the generated tests expect it:
// the moves recorded, the actions run, the state and history records
// after. loop reports more eventless moves than a Fire takes.
type outcome struct {
	moves   []*specRow
	actions []*dsl.Action
	state   *dsl.State
	hist    map[*dsl.History]*dsl.State
	loop    bool
}

// admits reports whether the guard of row t admits under admit.
func admits(t *dsl.Transition, admit map[string]bool) bool {
	return t.Guard == nil || admit[t.Guard.Name] != t.Negated
}

// resolve returns the definition's row that taking t from t.From enters
// with the history records hist.
func (n *nest) resolve(t *dsl.Transition, hist map[*dsl.History]*dsl.State) *specRow {
	rows := n.byRow[t]
	h := t.History
	if h == nil {
		return rows[0]
	}
	rec := hist[h]
	if slices.Contains(t.Exit, h.Parent) {
		rec = historyRecord(h, t.From)
	}
	if rec == nil {
		return rows[0]
	}
	leaf := rec
	if !h.Deep {
		leaf = rec.InitialLeaf()
	}
	for _, r := range rows {
		if r.to == leaf {
			return r
		}
	}
	return rows[0]
}

// simulate takes the definition's row r, with the history records hist
// and the guards admitting as admit says, then the eventless rows
// enabled after it, as the machine's semantics say, from the model alone.
func (n *nest) simulate(r *specRow, hist map[*dsl.History]*dsl.State, admit map[string]bool) outcome {
	o := outcome{hist: maps.Clone(hist)}
	if o.hist == nil {
		o.hist = map[*dsl.History]*dsl.State{}
	}
	apply := func(r *specRow) {
		o.moves = append(o.moves, r)
		o.actions = append(o.actions, stepActions(r)...)
		for _, s := range r.t.Exit {
			for _, h := range s.History {
				o.hist[h] = historyRecord(h, r.t.From)
			}
		}
		o.state = r.to
	}
	apply(r)
	for range maxEventless + 1 {
		var next *dsl.Transition
		for _, t := range n.eventless(o.state) {
			if admits(t, admit) {
				next = t
				break
			}
		}
		if next == nil {
			return o
		}
		if len(o.moves) > maxEventless {
			o.loop = true
			return o
		}
		apply(n.resolve(next, o.hist))
	}
	o.loop = true
	return o
}

// admitFor returns guard outcomes under which row t is the first row
// taken from t.From on its event (or among the eventless rows), and false
// when no outcome makes it so: an earlier row is unguarded or has the
// same guard.
func (n *nest) admitFor(t *dsl.Transition) (map[string]bool, bool) {
	admit := map[string]bool{}
	for _, p := range n.m.Transitions {
		if p == t {
			break
		}
		if p.From != t.From || p.Event != t.Event || !takeable(p) {
			continue
		}
		if p.Guard == nil {
			return nil, false
		}
		admit[p.Guard.Name] = p.Negated
	}
	if t.Guard != nil {
		if v, ok := admit[t.Guard.Name]; ok && v != !t.Negated {
			return nil, false
		}
		admit[t.Guard.Name] = !t.Negated
	}
	return admit, true
}

// enter writes Enter, which runs seq, the entry actions of the states a
// machine starts in.
func (n *nest) enter(f *goFile, seq []*dsl.Action) {
	what := make([]string, len(seq))
	for i, a := range seq {
		what[i] = a.Name
	}
	f.line(0)
	f.comment(0, fmt.Sprintf("Enter runs the entry actions of the states a machine starts in, outermost first (%s), and stops at the first error. "+
		"A run of the engine runs them in the transaction that creates it; call Enter once after New where the machine is used without the engine.", joinAnd(what)))
	f.line(0, "func (m *Machine) Enter(ctx context.Context) error { return m.", n.actionsName(seq), "(ctx) }")
}
