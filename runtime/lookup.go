package runtime

import (
	goruntime "runtime"
	"sync"
	"unsafe"
	"weak"
)

// indexedSize is the size (states, composites and rows together) from
// which a definition's lookups by name go through its index: below it,
// scanning the few states and rows costs less than finding the index.
const indexedSize = 32

// index is a definition's names indexed, built the first time a large
// definition (indexedSize) is asked for a state, a composite, an event or
// the rows from a state by name, and kept while its slices live: with it,
// a lookup costs the same in a machine of thirty states and in one of
// thousands. It holds positions in the definition's slices, and weak
// pointers to them, by which a definition whose slices were replaced is
// indexed again; a definition changed in place after its first lookup
// (which Definition's documentation forbids) is not.
type index struct {
	states weak.Pointer[StateSpec]
	// slices are the addresses and lengths of the definition's States,
	// Composites, Events and Transitions.
	slices [4]sliceOf

	state     map[string]int
	composite map[string]int
	event     map[string]int
	// rows lists the rows from a state on an event (every row, done
	// rows included), and onEvent the rows on an event, in table order.
	rows    map[fromEvent][]int
	onEvent map[string][]int
	// children lists the composites whose parent is a composite, in
	// declaration order: a parallel state's regions.
	children map[string][]string
	// firedBy says, by event, which timer or retry policy the engine
	// fires it with, as sender does.
	firedBy map[string]string
}

type fromEvent struct{ from, event string }

// sliceOf is the address and length of a slice.
type sliceOf struct {
	at  uintptr
	len int
}

// slicesOf returns the addresses and lengths of d's indexed slices.
func slicesOf(d *Definition) [4]sliceOf {
	return [4]sliceOf{
		{uintptr(unsafe.Pointer(unsafe.SliceData(d.States))), len(d.States)},
		{uintptr(unsafe.Pointer(unsafe.SliceData(d.Composites))), len(d.Composites)},
		{uintptr(unsafe.Pointer(unsafe.SliceData(d.Events))), len(d.Events)},
		{uintptr(unsafe.Pointer(unsafe.SliceData(d.Transitions))), len(d.Transitions)},
	}
}

// indexes holds the index of each large definition looked up, by the
// address of its States' first element.
var indexes sync.Map // uintptr -> *index

// index returns d's index, building it on first use; nil for a definition
// below indexedSize, whose lookups scan it.
func (d *Definition) index() *index {
	if len(d.States)+len(d.Composites)+len(d.Transitions) < indexedSize || len(d.States) == 0 {
		return nil
	}
	key := uintptr(unsafe.Pointer(unsafe.SliceData(d.States)))
	if v, ok := indexes.Load(key); ok {
		if ix := v.(*index); ix.of(d) {
			return ix
		}
	}
	ix := newIndex(d)
	if old, loaded := indexes.Swap(key, ix); !loaded || old.(*index).states.Value() == nil {
		// The entry goes when these states do, unless states at the
		// same address were indexed first. One cleanup per array: a
		// definition that shares its states with another and has other
		// rows replaces the entry, and no cleanup.
		goruntime.AddCleanup(unsafe.SliceData(d.States), dropIndex, key)
	}
	return ix
}

// dropIndex removes the entry of key whose states are gone.
func dropIndex(key uintptr) {
	if v, ok := indexes.Load(key); ok && v.(*index).states.Value() == nil {
		indexes.CompareAndDelete(key, v)
	}
}

// of reports whether ix indexes d's slices as they are: the same
// slices, and States the very array indexed, not one allocated at its
// address once it was gone.
func (ix *index) of(d *Definition) bool {
	return ix.slices == slicesOf(d) && ix.states.Value() == unsafe.SliceData(d.States)
}

// newIndex indexes d. A name declared twice (which Validate refuses) is
// indexed at its first declaration, as a scan finds it.
func newIndex(d *Definition) *index {
	ix := &index{
		states:    weak.Make(unsafe.SliceData(d.States)),
		slices:    slicesOf(d),
		state:     make(map[string]int, len(d.States)),
		composite: make(map[string]int, len(d.Composites)),
		event:     make(map[string]int, len(d.Events)),
		rows:      make(map[fromEvent][]int, len(d.Transitions)),
		onEvent:   make(map[string][]int, len(d.Events)),
		children:  map[string][]string{},
		firedBy:   map[string]string{},
	}
	first := func(m map[string]int, name string, i int) {
		if _, ok := m[name]; !ok {
			m[name] = i
		}
	}
	fired := func(event, by string) {
		if _, ok := ix.firedBy[event]; !ok {
			ix.firedBy[event] = by
		}
	}
	for i := range d.States {
		s := &d.States[i]
		first(ix.state, s.Name, i)
		for _, t := range s.Timers {
			fired(t.Event, "fired by the timer of "+s.Name)
		}
		if s.OnExhausted != "" {
			fired(s.OnExhausted, "fired by the engine when the tries of "+s.Name+" are used up")
		}
	}
	for i := range d.Composites {
		c := &d.Composites[i]
		first(ix.composite, c.Name, i)
		if c.Parent != "" {
			ix.children[c.Parent] = append(ix.children[c.Parent], c.Name)
		}
	}
	for i := range d.Composites {
		for _, t := range d.Composites[i].Timers {
			fired(t.Event, "fired by the timer of "+d.Composites[i].Name)
		}
	}
	for i := range d.Events {
		first(ix.event, d.Events[i].Name, i)
	}
	for i := range d.Transitions {
		t := &d.Transitions[i]
		k := fromEvent{t.From, t.Event}
		ix.rows[k] = append(ix.rows[k], i)
		ix.onEvent[t.Event] = append(ix.onEvent[t.Event], i)
	}
	return ix
}

// names looks up d's states, composites, events and rows by name: through
// its index, or by scanning a small definition.
type names struct {
	d  *Definition
	ix *index
}

// names returns d's lookups by name; a method that makes several takes it
// once.
func (d *Definition) names() names { return names{d, d.index()} }

// stateAt returns the position in n.d.States of the state named name.
func (n names) stateAt(name string) (int, bool) {
	if ix := n.ix; ix != nil {
		i, ok := ix.state[name]
		return i, ok
	}
	for i := range n.d.States {
		if n.d.States[i].Name == name {
			return i, true
		}
	}
	return 0, false
}

// compositeAt returns the position in n.d.Composites of the composite
// named name.
func (n names) compositeAt(name string) (int, bool) {
	if ix := n.ix; ix != nil {
		i, ok := ix.composite[name]
		return i, ok
	}
	for i := range n.d.Composites {
		if n.d.Composites[i].Name == name {
			return i, true
		}
	}
	return 0, false
}

// eventAt returns the position in n.d.Events of the event named name.
func (n names) eventAt(name string) (int, bool) {
	if ix := n.ix; ix != nil {
		i, ok := ix.event[name]
		return i, ok
	}
	for i := range n.d.Events {
		if n.d.Events[i].Name == name {
			return i, true
		}
	}
	return 0, false
}

// rowsFrom calls yield with the position in n.d.Transitions of each row
// from the state named from on event (done rows included), in table
// order, until yield returns false.
func (n names) rowsFrom(from, event string, yield func(int) bool) {
	if ix := n.ix; ix != nil {
		for _, i := range ix.rows[fromEvent{from, event}] {
			if !yield(i) {
				return
			}
		}
		return
	}
	for i := range n.d.Transitions {
		if t := &n.d.Transitions[i]; t.From == from && t.Event == event && !yield(i) {
			return
		}
	}
}

// rowsOn calls yield with the position in n.d.Transitions of each row on
// event, in table order, until yield returns false.
func (n names) rowsOn(event string, yield func(int) bool) {
	if ix := n.ix; ix != nil {
		for _, i := range ix.onEvent[event] {
			if !yield(i) {
				return
			}
		}
		return
	}
	for i := range n.d.Transitions {
		if n.d.Transitions[i].Event == event && !yield(i) {
			return
		}
	}
}

// children returns the names of the composites whose parent is the
// composite named parent, in declaration order; the caller must not
// change the slice.
func (n names) children(parent string) []string {
	if ix := n.ix; ix != nil {
		return ix.children[parent]
	}
	var out []string
	for _, c := range n.d.Composites {
		if c.Parent == parent {
			out = append(out, c.Name)
		}
	}
	return out
}

// firedBy says which timer or retry policy the engine fires event with
// ("fired by the timer of AWAIT"), the first in declaration order; ""
// for none.
func (n names) firedBy(event string) string {
	if ix := n.ix; ix != nil {
		return ix.firedBy[event]
	}
	for _, s := range n.d.States {
		for _, t := range s.Timers {
			if t.Event == event {
				return "fired by the timer of " + s.Name
			}
		}
		if s.OnExhausted != "" && s.OnExhausted == event {
			return "fired by the engine when the tries of " + s.Name + " are used up"
		}
	}
	for _, c := range n.d.Composites {
		for _, t := range c.Timers {
			if t.Event == event {
				return "fired by the timer of " + c.Name
			}
		}
	}
	return ""
}
