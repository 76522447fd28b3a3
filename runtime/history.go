package runtime

import "slices"

// HistoryRecord returns what a history pseudostate of composite c records
// when a run in leaf leaves c: the leaf itself for a deep history, for a
// shallow one c's child on the way up from the leaf; "" when the leaf is
// not below c.
func (d *Definition) HistoryRecord(c string, deep bool, leaf string) string {
	if deep {
		return leaf
	}
	path := append([]string{leaf}, d.Ancestors(leaf)...)
	if i := slices.Index(path, c); i > 0 {
		return path[i-1]
	}
	return ""
}

// RecordHistories sets in hist, for each history pseudostate of the
// composites in exited, what it records when a run in leaf leaves them
// (HistoryRecord), and returns hist, made when nil and a record is set.
// Run.History is such a map.
func (d *Definition) RecordHistories(hist map[string]string, leaf string, exited []string) map[string]string {
	for _, x := range exited {
		c, ok := d.Composite(x)
		if !ok {
			continue
		}
		for _, h := range c.History {
			if hist == nil {
				hist = map[string]string{}
			}
			hist[h.Name] = d.HistoryRecord(c.Name, h.Deep, leaf)
		}
	}
	return hist
}

// Driven returns the state whose handler runs for a run in st, a state
// that does not wait: st itself; for a configuration of a parallel state,
// the leaf of the first region, in region order, that has a handler (one
// that neither waits nor is final). The run's tries are that leaf's until
// its event moves the run; the next call looks again from the first
// region.
func (d *Definition) Driven(st StateSpec) StateSpec {
	for _, name := range d.Configuration(st.Name) {
		if leaf, ok := d.State(name); ok && !leaf.Wait && !leaf.Terminal() {
			return leaf
		}
	}
	return st
}
