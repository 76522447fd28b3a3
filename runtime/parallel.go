package runtime

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// ConfigurationSeparator joins the leaves of a configuration in its
// persisted form: a run in a parallel state persists the active leaf of
// each of its regions, in region order, joined by it ("Pending|Running").
// No state name holds it (Validate refuses one that does).
const ConfigurationSeparator = "|"

// Regions returns the regions of the parallel state named parallel, in
// declaration order; nil when it is not a parallel state.
func (d *Definition) Regions(parallel string) []string {
	if c, ok := d.Composite(parallel); !ok || !c.Parallel {
		return nil
	}
	return slices.Clone(d.names().children(parallel))
}

// Configuration splits a run's persisted state into its leaves: for a run
// in a parallel state, the active leaf of each region, in region order;
// else the one leaf the state names.
func (d *Definition) Configuration(state string) []string {
	return strings.Split(state, ConfigurationSeparator)
}

// JoinConfiguration returns the persisted state of a run whose active
// leaves are leaves (one per region, in region order, for a run in a
// parallel state): Configuration's inverse.
func (d *Definition) JoinConfiguration(leaves []string) string {
	return strings.Join(leaves, ConfigurationSeparator)
}

// StateOf returns the state a run whose persisted state is state is in:
// the leaf's StateSpec; for a configuration, a running state named by the
// configuration that waits when each of its leaves waits (else the engine
// has a handler to call). It reports false when a leaf is not a state of
// d.
func (d *Definition) StateOf(state string) (StateSpec, bool) {
	if !strings.Contains(state, ConfigurationSeparator) {
		return d.State(state)
	}
	leaves := d.Configuration(state)
	out := StateSpec{Name: state, Status: StatusRunning, Wait: true}
	for _, l := range leaves {
		s, ok := d.State(l)
		if !ok {
			return StateSpec{}, false
		}
		out.Wait = out.Wait && (s.Wait || s.Terminal())
	}
	return out, true
}

// parallelIndex maps each parallel state of d to its regions, in
// declaration order; nil for a machine without one.
func (d *Definition) parallelIndex() map[string][]string {
	var out map[string][]string
	n := d.names()
	for _, c := range d.Composites {
		if c.Parallel {
			if out == nil {
				out = map[string][]string{}
			}
			out[c.Name] = n.children(c.Name)
		}
	}
	return out
}

// RegionOf returns the parallel state the state named name is inside
// (the nearest) and the region of it that holds name; "" and "" outside
// parallel states.
func (d *Definition) RegionOf(name string) (parallel, region string) {
	child := name
	for _, a := range d.Ancestors(name) {
		if c, _ := d.Composite(a); c.Parallel {
			return a, child
		}
		child = a
	}
	return "", ""
}

// configurationOf returns the parallel state that the configuration
// state is of: its leaves are one leaf of each region of that state, in
// region order.
func (d *Definition) configurationOf(state string, parallel map[string][]string) (string, error) {
	leaves := d.Configuration(state)
	p, _ := d.RegionOf(leaves[0])
	if p == "" {
		return "", fmt.Errorf("%s is not a configuration: %s is in no parallel state", state, leaves[0])
	}
	regions := parallel[p]
	if len(leaves) != len(regions) {
		return "", fmt.Errorf("%s is not a configuration of %s: %d leaves for %d regions", state, p, len(leaves), len(regions))
	}
	for i, l := range leaves {
		if _, ok := d.State(l); !ok {
			return "", fmt.Errorf("%s is not a configuration of %s: unknown leaf %s", state, p, l)
		}
		if q, r := d.RegionOf(l); q != p || r != regions[i] {
			return "", fmt.Errorf("%s is not a configuration of %s: leaf %d, %s, is not in region %s", state, p, i+1, l, regions[i])
		}
	}
	return p, nil
}

// validateParallelRow checks a row of a machine with parallel states: its
// source is a leaf or a parallel state, its target a leaf or a whole
// configuration, and a row that targets a region's leaf comes from the
// same region.
func (d *Definition) validateParallelRow(t TransitionSpec, parallel map[string][]string) error {
	if strings.Contains(t.To, ConfigurationSeparator) {
		if _, err := d.configurationOf(t.To, parallel); err != nil {
			return fmt.Errorf("transition %s -> %s: %w", t.From, t.To, err)
		}
		return nil
	}
	p, region := d.RegionOf(t.To)
	if p == "" {
		return nil
	}
	fp, fregion := d.RegionOf(t.From)
	switch {
	case fp == p && fregion != region:
		return fmt.Errorf("transition %s -> %s crosses from region %s to region %s of parallel state %s", t.From, t.To, fregion, region, p)
	case fp != p || parallel[t.From] != nil:
		return fmt.Errorf("transition %s -> %s enters region %s of parallel state %s: a row entering it targets the whole configuration", t.From, t.To, region, p)
	}
	return nil
}

// validateParallel checks the parallel states: each has no initial child,
// two or more children, all composites (its regions), no history, and is
// inside no region of another; no composite inside one or above one has
// history.
func (d *Definition) validateParallel(comps map[string]CompositeSpec) error {
	for _, c := range d.Composites {
		if !c.Parallel {
			continue
		}
		if c.Initial != "" {
			return fmt.Errorf("parallel state %s has initial child %s: its regions are all entered", c.Name, c.Initial)
		}
		for _, s := range d.States {
			if s.Parent == c.Name {
				return fmt.Errorf("parallel state %s: child %s is a leaf: the children of a parallel state are its regions, composites", c.Name, s.Name)
			}
		}
		if n := len(d.Regions(c.Name)); n < 2 {
			return fmt.Errorf("parallel state %s has %d region, want at least 2", c.Name, n)
		}
		ancestors := d.Ancestors(c.Name)
		for _, a := range ancestors {
			if comps[a].Parallel {
				return fmt.Errorf("parallel state %s is inside parallel state %s: parallel states do not nest", c.Name, a)
			}
		}
		for _, other := range d.Composites {
			if len(other.History) == 0 {
				continue
			}
			if other.Name == c.Name || slices.Contains(ancestors, other.Name) || slices.Contains(d.Ancestors(other.Name), c.Name) {
				return fmt.Errorf("composite %s: history %s: history of, in or above parallel state %s is not supported", other.Name, other.History[0].Name, c.Name)
			}
		}
	}
	return nil
}

// historyNames returns the names of c's history pseudostates.
func historyNames(c CompositeSpec) []string {
	out := make([]string, len(c.History))
	for i, h := range c.History {
		out[i] = h.Name
	}
	return out
}

// Allows reports whether the table has a step from the persisted state
// from to the persisted state to on event: Refusal has no reason against
// it.
func (d *Definition) Allows(from, event, to string) bool {
	return d.Refusal(from, event, to) == ""
}

// Refusal says why the table has no step from the persisted state from
// to the persisted state to on event, or returns "" when it has one.
// Between two leaves, a step is a row. To or from a configuration it is
// what fsmgen_parallel_refusal (0016_parallel.sql) checks in the
// database:
//
//   - a row on event to the whole new state (a leaf, or a configuration
//     entered whole) from the old leaf, or from the old configuration's
//     parallel state or one of its leaves: entering, leaving, or leaving
//     and entering again;
//   - else, between two configurations of one parallel state, a row on
//     event of the region of each changed position, from its old leaf to
//     its new one; with no position changed, a row on event from one of
//     its leaves to itself.
//
// A configuration has one leaf of each region of one parallel state, in
// region order.
func (d *Definition) Refusal(from, event, to string) string {
	if d.hasRow(from, event, to) {
		return ""
	}
	olds, news := d.Configuration(from), d.Configuration(to)
	if len(olds) == 1 && len(news) == 1 {
		return fmt.Sprintf("no row %s -> %s on %q", from, to, event)
	}
	parallel := d.parallelIndex()
	var op, np string
	var err error
	if len(olds) > 1 {
		if op, err = d.configurationOf(from, parallel); err != nil {
			return err.Error()
		}
	}
	if len(news) > 1 {
		if np, err = d.configurationOf(to, parallel); err != nil {
			return err.Error()
		}
	}
	if op != "" && d.hasRow(op, event, to) || slices.ContainsFunc(olds, func(l string) bool { return d.hasRow(l, event, to) }) {
		return ""
	}
	if op == "" {
		return fmt.Sprintf("no row %s -> %s on %q", from, to, event)
	}
	if op != np {
		return fmt.Sprintf("no row from %s or its leaves to %s on %q", op, to, event)
	}
	moved := false
	for i := range olds {
		if olds[i] == news[i] {
			continue
		}
		if !d.hasRow(olds[i], event, news[i]) {
			return fmt.Sprintf("region %s of %s: no row %s -> %s on %q", parallel[op][i], op, olds[i], news[i], event)
		}
		moved = true
	}
	if moved || slices.ContainsFunc(olds, func(l string) bool { return d.hasRow(l, event, l) }) {
		return ""
	}
	return fmt.Sprintf("no row on %q from a leaf of %s to itself", event, op)
}

// hasRow reports whether the table has a row from one state to another
// on event, whatever its guard.
func (d *Definition) hasRow(from, event, to string) bool {
	found := false
	d.names().rowsFrom(from, event, func(i int) bool {
		found = d.Transitions[i].To == to
		return !found
	})
	return found
}

// A Move is what one step takes a run in a configuration to: the rows
// taken (indices into Definition.Transitions), one per region that moved
// in region order or the one row taken alone; the leaves
// the run is in after it; and the states exited, innermost first, region
// by region, then those entered, outermost first.
type Move struct {
	Rows            []int
	To              []string
	Exited, Entered []string
}

// Offer returns the move a run in the configuration leaves makes when an
// event is offered to it, and whether it makes one. offer returns the row
// the state named from takes (an index into d.Transitions), if any. In a
// leaf, it is the leaf's row. In a configuration, the event is offered to
// each region in region order, and each takes at most its leaf's row:
// the rows within their regions make one move; a row that leaves the
// parallel state is taken alone, when no earlier region moved, and is
// dropped otherwise; the rows of the parallel state, and those written
// above it, apply only when no region took the event. A row that leaves
// the parallel state exits every region's leaf and the composites above
// it, region by region, the parallel state, then what the row exits above
// it; one written internal stays in the configuration and exits nothing.
// An error of offer is returned as is.
func (d *Definition) Offer(leaves []string, offer func(from string) (row int, ok bool, err error)) (Move, bool, error) {
	p, _ := d.RegionOf(leaves[0])
	if len(leaves) == 1 || p == "" {
		return d.offerAlone(leaves, "", leaves[0], offer)
	}
	m := Move{To: slices.Clone(leaves)}
	for i, l := range leaves {
		row, ok, err := offer(l)
		switch {
		case err != nil:
			return Move{}, false, err
		case !ok:
		case !d.leavesParallel(p, &d.Transitions[row]):
			r := &d.Transitions[row]
			m.Rows = append(m.Rows, row)
			m.Exited, m.Entered = append(m.Exited, r.Exit...), append(m.Entered, r.Enter...)
			m.To[i] = r.To
		case len(m.Rows) == 0:
			return d.alone(leaves, p, row), true, nil
		}
	}
	if len(m.Rows) > 0 {
		return m, true, nil
	}
	return d.offerAlone(leaves, p, p, offer)
}

// offerAlone offers the event to the state named from, of the
// configuration leaves (of parallel state p, "" for a leaf outside any),
// and returns the move of its row taken alone.
func (d *Definition) offerAlone(leaves []string, p, from string, offer func(string) (int, bool, error)) (Move, bool, error) {
	row, ok, err := offer(from)
	if err != nil || !ok {
		return Move{}, false, err
	}
	return d.alone(leaves, p, row), true, nil
}

// alone returns the move of row taken alone from the configuration
// leaves, of parallel state p ("" for a leaf outside any): it leaves
// where the run is, or, written internal, stays there.
func (d *Definition) alone(leaves []string, p string, row int) Move {
	r := &d.Transitions[row]
	m := Move{Rows: []int{row}, To: d.Configuration(r.To), Exited: slices.Clip(r.Exit), Entered: slices.Clip(r.Enter)}
	switch {
	case r.Internal:
		m.To = slices.Clone(leaves)
	case p != "":
		m.Exited = d.exitAll(leaves, p)
		if i := slices.Index(r.Exit, p); i >= 0 {
			m.Exited = append(m.Exited[:len(m.Exited)-1], r.Exit[i:]...)
		}
	}
	return m
}

// leavesParallel reports whether row r leaves the parallel state p: it
// is written on p or above it, its target is outside p, or it enters p
// again (its target is a configuration).
func (d *Definition) leavesParallel(p string, r *TransitionSpec) bool {
	if r.From == p || !slices.Contains(d.Ancestors(r.From), p) || strings.Contains(r.To, ConfigurationSeparator) {
		return true
	}
	return !slices.Contains(d.Ancestors(r.To), p)
}

// Step returns the transition a run in the persisted state state takes
// on event, the row of each state offered the event chosen by choose from
// that state's rows on it (choose is called only with some, and returns
// one of them; it reports false to take none of them), and whether there
// is one: the move Offer makes, its outcome the last row's. Its status is
// that of the state it enters. An error of choose is returned as is.
func (d *Definition) Step(state, event string, choose func(from string, rows []TransitionSpec) (TransitionSpec, bool, error)) (Transition, bool, error) {
	leaves := d.Configuration(state)
	if len(leaves) > 1 {
		if _, err := d.configurationOf(state, d.parallelIndex()); err != nil {
			return Transition{}, false, err
		}
	}
	m, ok, err := d.Offer(leaves, func(from string) (int, bool, error) { return d.chosen(from, event, choose) })
	if err != nil || !ok {
		return Transition{}, false, err
	}
	to := d.JoinConfiguration(m.To)
	spec, _ := d.StateOf(to)
	return Transition{Machine: d.Type, Version: d.Version, From: state, To: to, Event: event, Status: spec.Status,
		Outcome: d.Transitions[m.Rows[len(m.Rows)-1]].Outcome, Exited: m.Exited, Entered: m.Entered}, true, nil
}

// chosen returns the index of the row that choose picks of the rows on
// event from the state named from, and whether it picks one.
func (d *Definition) chosen(from, event string, choose func(string, []TransitionSpec) (TransitionSpec, bool, error)) (int, bool, error) {
	var index []int
	var rows []TransitionSpec
	d.names().rowsFrom(from, event, func(i int) bool {
		if t := d.Transitions[i]; !t.Done {
			index, rows = append(index, i), append(rows, t)
		}
		return true
	})
	if len(rows) == 0 {
		return 0, false, nil
	}
	row, ok, err := choose(from, rows)
	if err != nil || !ok {
		return 0, false, err
	}
	i := slices.IndexFunc(rows, func(r TransitionSpec) bool { return reflect.DeepEqual(r, row) })
	if i < 0 {
		return 0, false, fmt.Errorf("row %s -> %s on %q is not one of the rows of %s on it", row.From, row.To, event, from)
	}
	return index[i], true, nil
}

// exitAll lists what leaving parallel state p from its configuration
// leaves exits: each region's leaf and the composites above it inside
// p, region by region, then p.
func (d *Definition) exitAll(leaves []string, p string) []string {
	var out []string
	for _, l := range leaves {
		out = append(out, l)
		for _, a := range d.Ancestors(l) {
			if a == p {
				break
			}
			out = append(out, a)
		}
	}
	return append(out, p)
}

// Sources names the states whose rows apply to a run in the persisted
// state state: its leaf; for a configuration, its leaves and the
// composites above them (rows are listed from leaves and from parallel
// states).
func (d *Definition) Sources(state string) []string {
	sources := d.Configuration(state)
	if len(sources) > 1 {
		sources = append(sources, d.Ancestors(sources[0])...)
	}
	return sources
}

// Accepts reports whether a row on event applies to a run in the
// persisted state state, whatever its guard.
func (d *Definition) Accepts(state, event string) bool {
	n := d.names()
	return slices.ContainsFunc(d.Sources(state), func(from string) bool {
		found := false
		n.rowsFrom(from, event, func(int) bool { found = true; return false })
		return found
	})
}
