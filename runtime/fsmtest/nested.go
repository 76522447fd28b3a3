package fsmtest

import (
	"context"
	"fmt"
	"slices"

	"github.com/fsmgen/fsmgen/runtime"
)

// The checks of a nested machine follow its semantics from the
// definition alone: after the row an event takes, the eventless and
// completion rows (Event "") enabled in the leaf reached are taken, the
// first admitted in table order, until none is; a row to a history
// pseudostate is listed once per leaf it may enter, and the one taken is
// the one its record leads to (the first of them without a record). In a
// flat machine none of this happens, and the checks are what they were.

// maxEventless is how many eventless moves a generated machine takes
// after one event at most.
const maxEventless = 64

// moved is one leaf move along row of the definition.
type moved struct {
	row   int
	event string
}

// alternate reports whether row i is a row to a history pseudostate other
// than the first listed for the row it was written as: one taken only
// with a history record.
func alternate(d runtime.Definition, i int) bool {
	r := d.Transitions[i]
	if r.History == "" {
		return false
	}
	for _, p := range d.Transitions[:i] {
		if p.From == r.From && p.Event == r.Event && p.Guard == r.Guard && p.Negated == r.Negated && p.History == r.History {
			return true
		}
	}
	return false
}

// initialLeaf follows name down through initial children to a leaf.
func initialLeaf(d runtime.Definition, name string) string {
	for range len(d.Composites) + 1 {
		c, ok := d.Composite(name)
		if !ok {
			break
		}
		name = c.Initial
	}
	return name
}

// historyOf returns the composite of the history pseudostate named h and
// whether it is deep.
func historyOf(d runtime.Definition, h string) (string, bool) {
	for _, c := range d.Composites {
		for _, hs := range c.History {
			if hs.Name == h {
				return c.Name, hs.Deep
			}
		}
	}
	return "", false
}

// resolve returns the row taken for row i, written to a history, with the
// records hist: the row to the leaf the record leads to, i itself without
// a record.
func resolve(d runtime.Definition, i int, hist map[string]string) int {
	r := d.Transitions[i]
	if r.History == "" {
		return i
	}
	c, deep := historyOf(d, r.History)
	rec := hist[r.History]
	if slices.Contains(r.Exit, c) {
		rec = d.HistoryRecord(c, deep, r.From)
	}
	if rec == "" {
		return i
	}
	leaf := rec
	if !deep {
		leaf = initialLeaf(d, rec)
	}
	for j, p := range d.Transitions {
		if p.From == r.From && p.Event == r.Event && p.Guard == r.Guard && p.Negated == r.Negated && p.History == r.History && p.To == leaf {
			return j
		}
	}
	return i
}

// follow returns the moves that taking row i with the records hist makes
// (which it updates): the row the records lead to, then the eventless
// rows enabled after it under admit; and whether they loop, more than a
// machine takes.
func follow(d runtime.Definition, i int, event string, admit map[string]bool, hist map[string]string) ([]moved, bool) {
	i = resolve(d, i, hist)
	out := []moved{{row: i, event: event}}
	d.RecordHistories(hist, d.Transitions[i].From, d.Transitions[i].Exit)
	state := d.Transitions[i].To
	for {
		next := -1
		for j, r := range d.Transitions {
			if r.From == state && r.Event == "" && (r.Guard == "" || admit[r.Guard] != r.Negated) {
				next = j
				break
			}
		}
		if next < 0 {
			return out, false
		}
		if len(out) > maxEventless {
			return out, true
		}
		next = resolve(d, next, hist)
		out = append(out, moved{row: next})
		d.RecordHistories(hist, d.Transitions[next].From, d.Transitions[next].Exit)
		state = d.Transitions[next].To
	}
}

// transitions returns what a recorder is given for moves.
func transitions(d runtime.Definition, moves []moved, e runtime.Event) []runtime.Transition {
	out := make([]runtime.Transition, len(moves))
	for k, mv := range moves {
		r := d.Transitions[mv.row]
		t := runtime.Transition{
			Machine: d.Type, Version: d.Version, From: r.From, To: r.To,
			Status: status(d, r.To), Outcome: r.Outcome, Exited: r.Exit, Entered: r.Enter,
		}
		if k == 0 && mv.event != "" {
			t.Event, t.Payload = mv.event, e
		}
		out[k] = t
	}
	return out
}

// transient reports whether the state named name has an unguarded
// eventless row, which leaves it as soon as it is entered.
func transient(d runtime.Definition, name string) bool {
	for _, r := range d.Transitions {
		if r.From == name && r.Event == "" && r.Guard == "" {
			return true
		}
	}
	return false
}

// take fires the event of row r at inst, or, for an eventless row, has it
// settle.
func take(m Machine, inst Instance, r runtime.TransitionSpec) error {
	ctx := context.Background()
	if r.Event == "" {
		st, ok := inst.(Settler)
		if !ok {
			return fmt.Errorf("%s -> %s is an eventless row, and the instance has no Settle", r.From, r.To)
		}
		return st.Settle(ctx)
	}
	e, err := event(m, r.Event)
	if err != nil {
		return err
	}
	return inst.Fire(ctx, e)
}
