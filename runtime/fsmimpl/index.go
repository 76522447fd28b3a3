package fsmimpl

import "github.com/fsmgen/fsmgen/runtime"

// Index is the definition of a generated machine indexed by state, built
// once per machine (a generated package's index variable, NewIndex at
// package initialization): the state of each name and the rows from each
// state. With it, parsing a state's name, following a row, recording a
// transition and refusing an event cost the same in a machine of five
// states and in one of thousands.
//
// An Index reads its definition but never writes it, and is safe for
// concurrent use; the definition must not change after NewIndex.
type Index[S StateType] struct {
	def *runtime.Definition
	// ids numbers the leaves and the composites by name, as the generated
	// State does: the leaves first, then the composites.
	ids map[string]S
	// rows lists, for each state number, the indexes in def.Transitions
	// of the rows from that state, in table order.
	rows [][]int
	// targets is the state number of each row's target, -1 for a target
	// that is no single state (a configuration of a parallel state).
	targets []int
}

// NewIndex indexes def, the definition of a generated machine whose
// states S number def's leaves, then its composites.
func NewIndex[S StateType](def *runtime.Definition) *Index[S] {
	n := len(def.States) + len(def.Composites)
	ix := &Index[S]{
		def:     def,
		ids:     make(map[string]S, n),
		rows:    make([][]int, n),
		targets: make([]int, len(def.Transitions)),
	}
	for i := range def.States {
		ix.ids[def.States[i].Name] = S(i)
	}
	for i := range def.Composites {
		ix.ids[def.Composites[i].Name] = S(len(def.States) + i)
	}
	for i := range def.Transitions {
		t := &def.Transitions[i]
		if from, ok := ix.ids[t.From]; ok {
			ix.rows[from] = append(ix.rows[from], i)
		}
		ix.targets[i] = -1
		if to, ok := ix.ids[t.To]; ok {
			ix.targets[i] = int(to)
		}
	}
	return ix
}

// Definition returns the definition ix indexes.
func (ix *Index[S]) Definition() *runtime.Definition { return ix.def }

// id returns the state named name, a leaf or a composite.
func (ix *Index[S]) id(name string) (S, bool) {
	s, ok := ix.ids[name]
	return s, ok
}

// from returns the indexes in the definition's Transitions of the rows
// from state s, in table order.
func (ix *Index[S]) from(s S) []int {
	if int(s) < len(ix.rows) {
		return ix.rows[s]
	}
	return nil
}

// row returns the index of the first row on the event named event from
// state s.
func (ix *Index[S]) row(s S, event string) (int, bool) {
	for _, i := range ix.from(s) {
		if ix.def.Transitions[i].Event == event {
			return i, true
		}
	}
	return 0, false
}
