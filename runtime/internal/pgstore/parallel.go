package pgstore

import (
	"slices"
	"strings"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/internal/dbsqlc"
)

// region places a leaf inside a parallel state: the parallel state, the
// number of its region (from 1) and how many regions it has.
type region struct {
	parallel string
	n, of    int
}

// indexRegions fills in n.regions from def: the region of each leaf
// inside a parallel state.
func (n *Nesting) indexRegions(def runtime.Definition) {
	for _, c := range def.Composites {
		if !c.Parallel {
			continue
		}
		regions := def.Regions(c.Name)
		for _, s := range def.States {
			child, p := s.Name, n.parent[s.Name]
			for p != "" && p != c.Name {
				child, p = p, n.parent[p]
			}
			if i := slices.Index(regions, child); p == c.Name && i >= 0 {
				n.regions[s.Name] = region{parallel: c.Name, n: i + 1, of: len(regions)}
			}
		}
	}
}

// parallelOf returns the parallel state whose configuration leaves is
// (one leaf of each of its regions, in region order), or "" when leaves
// is none. It is what fsmgen_parallel_of (0016_parallel.sql) computes.
func (n *Nesting) parallelOf(leaves []string) string {
	if len(leaves) < 2 {
		return ""
	}
	p := n.regions[leaves[0]].parallel
	for i, l := range leaves {
		r, ok := n.regions[l]
		if !ok || r.parallel != p || r.n != i+1 || r.of != len(leaves) {
			return ""
		}
	}
	return p
}

// configuration reports whether the persisted state names a
// configuration of a parallel state rather than a leaf.
func configuration(state string) bool {
	return strings.Contains(state, runtime.ConfigurationSeparator)
}

// allowsParallel reports whether the table has the move from one persisted
// state to another on event, one of them a configuration: the check that
// fsmgen_parallel_refusal (0016_parallel.sql) makes in the database, made
// before the write. A row to the whole new state from the old leaf, or
// from the old configuration's parallel state or one of its leaves
// (entering, leaving, or leaving and entering again); else, between two
// configurations of one parallel state, a row of its region for each
// changed position, or with none changed, a row from a leaf to itself.
func (d *Definition) allowsParallel(from, event, to string) bool {
	olds, news := strings.Split(from, runtime.ConfigurationSeparator), strings.Split(to, runtime.ConfigurationSeparator)
	op, np := d.Nest.parallelOf(olds), d.Nest.parallelOf(news)
	if (len(olds) > 1 && op == "") || (len(news) > 1 && np == "") {
		return false
	}
	sources := olds
	if op != "" {
		sources = append(slices.Clip(olds), op)
	}
	for _, s := range sources {
		if d.Moves[[3]string{s, event, to}] {
			return true
		}
	}
	if op == "" || op != np {
		return false
	}
	moved := false
	for i := range olds {
		if olds[i] == news[i] {
			continue
		}
		if !d.Moves[[3]string{olds[i], event, news[i]}] {
			return false
		}
		moved = true
	}
	return moved || slices.ContainsFunc(olds, func(l string) bool { return d.Moves[[3]string{l, event, l}] })
}

// StatesParams returns the states of def to register: its leaves, with
// the region of those inside a parallel state, and, with status running,
// each parallel state and each configuration a row enters, which the
// rows written on a parallel state and those entering one name (see
// 0016_parallel.sql).
func StatesParams(def runtime.Definition) dbsqlc.InsertStatesParams {
	sp := dbsqlc.InsertStatesParams{WorkflowType: def.Type, Version: int32(def.Version)}
	nest := NestingOf(def)
	add := func(name string, status runtime.Status, outcome string, r region) {
		sp.States = append(sp.States, name)
		sp.Statuses = append(sp.Statuses, string(status))
		sp.Outcomes = append(sp.Outcomes, outcome)
		sp.Initials = append(sp.Initials, name == def.Initial)
		sp.ParallelStates = append(sp.ParallelStates, r.parallel)
		sp.Regions = append(sp.Regions, int32(r.n))
		sp.RegionCounts = append(sp.RegionCounts, int32(r.of))
	}
	for _, st := range def.States {
		var r region
		if nest != nil {
			r = nest.regions[st.Name]
		}
		add(st.Name, StatusOf(st), st.Outcome, r)
	}
	for _, c := range def.Composites {
		if c.Parallel {
			add(c.Name, runtime.StatusRunning, "", region{})
		}
	}
	seen := map[string]bool{}
	for _, t := range def.Transitions {
		if configuration(t.To) && !seen[t.To] {
			seen[t.To] = true
			add(t.To, runtime.StatusRunning, "", region{})
		}
	}
	return sp
}
