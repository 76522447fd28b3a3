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

// configuration reports whether the persisted state names a
// configuration of a parallel state rather than a leaf.
func configuration(state string) bool {
	return strings.Contains(state, runtime.ConfigurationSeparator)
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
