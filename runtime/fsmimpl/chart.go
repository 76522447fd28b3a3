package fsmimpl

import (
	"context"
	"slices"

	"github.com/fsmgen/fsmgen/runtime"
)

// Chart is the table of a generated machine with parallel states, indexed
// for the steps its code takes: where a run is, a configuration, is its
// leaves, one outside any parallel state or one per region of the active
// parallel state, in region order.
type Chart[S StateType] struct {
	// ix numbers the states by name and lists the rows from each, in
	// table order: innermost first.
	ix  *Index[S]
	def *runtime.Definition
	// finals are the final children that complete their region.
	finals map[S]bool
}

// NewChart returns the chart of the machine of ix; finals are its leaves
// that complete their region (final children without status).
func NewChart[S StateType](ix *Index[S], finals ...S) *Chart[S] {
	c := &Chart[S]{ix: ix, def: ix.def, finals: map[S]bool{}}
	for _, s := range finals {
		c.finals[s] = true
	}
	return c
}

// A Step is the transition that an event, or none, takes from the
// configuration From to the configuration To: the rows taken, one per
// region that moved in region order or the one that left the parallel
// state, and the states exited, innermost first, region by region, then
// those entered, outermost first.
type Step[S StateType] struct {
	From, To    []S
	Rows        []int
	Exit, Enter []S
}

// Fire returns the step that the event named event takes from the
// configuration from, whose rows' guards admit tells (by row index), and
// whether there is one. The event is offered to every region in order,
// each taking its first admitted row; a row that leaves the parallel
// state is taken alone, by the first region that has one when no earlier
// region took a row, and dropped otherwise; the rows of the parallel
// state, and those written above it, apply only when no region took the
// event.
func (c *Chart[S]) Fire(from []S, event string, admit func(row int) bool) (Step[S], bool) {
	return c.step(from, func(t *runtime.TransitionSpec) bool { return t.Event == event && !t.Done }, admit)
}

// Settle returns the step of the first eventless row enabled in the
// configuration from, as Fire does for an event, with the completion rows
// of the parallel state once every region is in a final child.
func (c *Chart[S]) Settle(from []S, admit func(row int) bool) (Step[S], bool) {
	done := len(from) > 1 && !slices.ContainsFunc(from, func(s S) bool { return !c.finals[s] })
	return c.step(from, func(t *runtime.TransitionSpec) bool {
		// A completion row from a leaf is written on its parent, and the
		// leaf is a final child of it.
		from, _ := c.ix.id(t.From)
		return t.Event == "" && (!t.Done || done || int(from) < len(c.def.States))
	}, admit)
}

// step returns the step that the rows on matches take from from: the
// move runtime.Definition.Offer makes, each state offered taking its
// first row that on matches and admit admits.
func (c *Chart[S]) step(from []S, on func(*runtime.TransitionSpec) bool, admit func(int) bool) (Step[S], bool) {
	st := Step[S]{From: slices.Clone(from)}
	// The offer below returns no error, so neither does Offer.
	m, ok, _ := c.def.Offer(c.names(from), func(name string) (int, bool, error) {
		row, ok := c.first(name, on, admit)
		return row, ok, nil
	})
	if !ok {
		return st, false
	}
	st.To, st.Rows = c.states(m.To), m.Rows
	st.Exit, st.Enter = c.states(m.Exited), c.states(m.Entered)
	return st, true
}

// first returns the first row from the state named from that on matches
// and admit admits.
func (c *Chart[S]) first(from string, on func(*runtime.TransitionSpec) bool, admit func(int) bool) (int, bool) {
	s, ok := c.ix.id(from)
	if !ok {
		return 0, false
	}
	for _, row := range c.ix.from(s) {
		if on(&c.def.Transitions[row]) && admit(row) {
			return row, true
		}
	}
	return 0, false
}

// name returns the name of state s.
func (c *Chart[S]) name(s S) string { return StateName(c.def, s) }

// states returns the states named names.
func (c *Chart[S]) states(names []string) []S {
	out := make([]S, len(names))
	for i, n := range names {
		out[i], _ = c.ix.id(n)
	}
	return out
}

// Record records st on e (nil for an eventless step) with rec; actions,
// if not nil, runs in the recorder's write. Its Outcome is the last row's.
func (c *Chart[S]) Record(ctx context.Context, rec runtime.Recorder, st Step[S], e runtime.Event, actions func(context.Context) error) error {
	to := ConfigName(c.def, st.To)
	spec, _ := c.def.StateOf(to)
	t := runtime.Transition{
		Machine: c.def.Type,
		Version: c.def.Version,
		From:    ConfigName(c.def, st.From),
		To:      to,
		Status:  spec.Status,
		Actions: actions,
		Exited:  c.names(st.Exit),
		Entered: c.names(st.Enter),
	}
	if e != nil {
		t.Event, t.Payload = e.EventName(), e
	}
	for _, row := range st.Rows {
		t.Outcome = c.def.Transitions[row].Outcome
	}
	return rec.Record(ctx, t)
}

// names returns the names of states ss, nil for none.
func (c *Chart[S]) names(ss []S) []string {
	if len(ss) == 0 {
		return nil
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = c.name(s)
	}
	return out
}

// Loop returns the error of a machine that went through the
// configurations path taking eventless rows and would take one more, as
// EventlessLoop does for leaves.
func (c *Chart[S]) Loop(path [][]S) error {
	names := make([]string, len(path))
	for i, p := range path {
		names[i] = ConfigName(c.def, p)
	}
	return eventlessLoop(c.def, names)
}

// Refuse returns the *runtime.TransitionError of event e (nil for none)
// that no row takes in the configuration from: runtime.ErrGuardRejected,
// with the named guards of the rows on e, when a row from one of its
// leaves or from their parallel state has e, runtime.ErrIllegalTransition
// otherwise.
func (c *Chart[S]) Refuse(from []S, e runtime.Event) error {
	te := &runtime.TransitionError{Machine: c.def.Type, State: ConfigName(c.def, from), Err: runtime.ErrIllegalTransition}
	if e == nil {
		return te
	}
	te.Event = e.EventName()
	states := c.names(from)
	if p, _ := c.def.RegionOf(states[0]); p != "" {
		states = append(states, p)
	}
	for _, name := range states {
		s, _ := c.ix.id(name)
		for _, row := range c.ix.from(s) {
			if t := &c.def.Transitions[row]; t.Event == te.Event {
				te.Err = runtime.ErrGuardRejected
				if t.Guard != "" && !slices.Contains(te.Guards, t.Guard) {
					te.Guards = append(te.Guards, t.Guard)
				}
			}
		}
	}
	return te
}
