package pgstore

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/internal/dbsqlc"
)

// Nesting indexes the hierarchy of a nested definition: what the store
// needs to keep a run's timer anchors and history.
type Nesting struct {
	parent    map[string]string                // state or composite -> its parent
	timers    map[string][]runtime.Timer       // state or composite -> its timers, when it has any
	histories map[string][]runtime.HistorySpec // composite -> its histories
	eventless map[string]bool                  // leaf or parallel state -> it has eventless or completion rows
	regions   map[string]region                // leaf inside a parallel state -> its region
}

// NestingOf indexes def's hierarchy; nil for a flat machine (see
// runtime.Definition.Nested), whose transitions are written as before
// machines could nest.
func NestingOf(def runtime.Definition) *Nesting {
	if !def.Nested() {
		return nil
	}
	n := &Nesting{parent: map[string]string{}, timers: map[string][]runtime.Timer{}, histories: map[string][]runtime.HistorySpec{},
		eventless: map[string]bool{}, regions: map[string]region{}}
	for _, t := range def.Transitions {
		if t.Event == "" {
			n.eventless[t.From] = true
		}
	}
	for _, s := range def.States {
		n.parent[s.Name] = s.Parent
		if len(s.Timers) > 0 {
			n.timers[s.Name] = s.Timers
		}
	}
	for _, c := range def.Composites {
		n.parent[c.Name] = c.Parent
		if len(c.Timers) > 0 {
			n.timers[c.Name] = c.Timers
		}
		if len(c.History) > 0 {
			n.histories[c.Name] = c.History
		}
	}
	n.indexRegions(def)
	return n
}

// Active returns the active states of a run in the persisted state
// state: the leaf and the composites above it, innermost first. For a
// configuration: the leaf of each region and the composites above it
// inside the parallel state, the last region first, then the parallel
// state and the composites above it; read backwards, outermost first and
// the regions in region order.
func (n *Nesting) Active(state string) []string {
	if !configuration(state) {
		return n.above(state, "")
	}
	leaves := strings.Split(state, runtime.ConfigurationSeparator)
	p := n.regions[leaves[0]].parallel
	var out []string
	for _, l := range slices.Backward(leaves) {
		out = append(out, n.above(l, p)...)
	}
	return append(out, n.above(p, "")...)
}

// above returns name and the composites above it, innermost first, up to
// and without stop.
func (n *Nesting) above(name, stop string) []string {
	out := []string{name}
	for p := n.parent[name]; p != "" && p != stop && len(out) <= len(n.parent); p = n.parent[p] {
		out = append(out, p)
	}
	return out
}

// Timers returns the timers of the state or composite named name.
func (n *Nesting) Timers(name string) []runtime.Timer { return n.timers[name] }

// Eventless reports whether a run in the persisted state named name has
// eventless or completion rows: those of its leaf (its own or a
// composite's above it, listed from it); for a configuration, those of
// any of its leaves or of its parallel state.
func (n *Nesting) Eventless(name string) bool {
	if !configuration(name) {
		return n.eventless[name]
	}
	return slices.ContainsFunc(n.Active(name), func(s string) bool { return n.eventless[s] })
}

// Moves returns the states transition t of def exits and enters: those t
// names; else those of its row in the table (an internal row exits and
// enters nothing); else, from or to a configuration, none (the driver
// names them: a step of several regions is no one row); else its source
// and its target, as in a flat machine.
func Moves(def runtime.Definition, t runtime.Transition) (exited, entered []string) {
	if len(t.Exited)+len(t.Entered) > 0 {
		return t.Exited, t.Entered
	}
	for _, r := range def.Transitions {
		if r.From == t.From && r.Event == t.Event && r.To == t.To && (r.Internal || len(r.Exit)+len(r.Enter) > 0) {
			return r.Exit, r.Enter
		}
	}
	if configuration(t.From) || configuration(t.To) {
		return nil, nil
	}
	return []string{t.From}, []string{t.To}
}

// micros is ds in microseconds, as timer_anchors holds them.
func micros(ds []time.Duration) []int64 {
	out := make([]int64, len(ds))
	for i, d := range ds {
		out[i] = max(d, 0).Microseconds()
	}
	return out
}

// nestedParams fills in the part of p, the statement that records
// transition t of a nested machine, that keeps the run's timer anchors,
// history and log of exited and entered states: the anchors of the
// states neither exited nor entered are kept, those entered are anchored
// now; the histories of each composite exited record its child or leaf
// that was active. A state that waits is due at the first timer of the
// anchors (the statement computes it).
func (d *Definition) nestedParams(p *dbsqlc.AdvanceRunParams, t runtime.Transition, to runtime.StateSpec) error {
	n := d.Nest
	exited, entered := Moves(d.Def, t)
	p.Anchored = true
	p.Exited, p.Entered = append([]string{}, exited...), append([]string{}, entered...)
	keep, enter := map[string][]int64{}, map[string][]int64{}
	for _, s := range n.Active(t.To) {
		timers := n.timers[s]
		if len(timers) == 0 {
			continue
		}
		if slices.Contains(entered, s) {
			enter[s] = micros(runtime.TimerDurations(timers, t.Event, p.Payload))
		} else {
			// Kept: the anchor in the row, or for a state entered when
			// the attempt started, these durations from its start.
			keep[s] = micros(runtime.TimerDurations(timers, "", nil))
		}
	}
	var err error
	if p.AnchorKeep, err = json.Marshal(keep); err != nil {
		return err
	}
	if p.AnchorEnter, err = json.Marshal(enter); err != nil {
		return err
	}
	set := map[string]string{}
	active := n.Active(t.From)
	for _, c := range exited {
		for _, h := range n.histories[c] {
			if h.Deep {
				set[h.Name] = t.From
				continue
			}
			for _, s := range active {
				if n.parent[s] == c {
					set[h.Name] = s
				}
			}
		}
	}
	if len(set) > 0 {
		if p.HistorySet, err = json.Marshal(set); err != nil {
			return err
		}
	}
	if !StatusOf(to).Terminal() && to.Wait {
		p.NextDelayUs = pgtype.Int8{} // the first timer of the anchors
		if n.Eventless(t.To) {
			// Due at once: a worker takes the eventless rows the
			// recorder of this transition may not live to take.
			p.NextDelayUs = pgtype.Int8{Int64: 0, Valid: true}
		}
	}
	return nil
}

// initialDelay is InitialDelay for a nested machine: at once for a
// driven initial leaf and for one with eventless or completion rows,
// which a worker takes as soon as the run starts; else the first timer
// of the leaf and the composites above it, all entered at the start.
func (d *Definition) initialDelay() pgtype.Int8 {
	st := d.States[d.Def.Initial]
	if !st.Wait || d.Nest.eventless[st.Name] {
		return pgtype.Int8{Int64: 0, Valid: true}
	}
	var first time.Duration = -1
	for _, s := range d.Nest.Active(st.Name) {
		for _, t := range runtime.TimerDurations(d.Nest.timers[s], "", nil) {
			if first < 0 || t < first {
				first = t
			}
		}
	}
	if first < 0 {
		return pgtype.Int8{}
	}
	return pgtype.Int8{Int64: first.Microseconds(), Valid: true}
}

// checkNested refuses a transition of a nested machine whose exited or
// entered states are not states of it.
func (d *Definition) checkNested(t runtime.Transition) error {
	for _, s := range slices.Concat(t.Exited, t.Entered) {
		if _, leaf := d.States[s]; leaf {
			continue
		}
		if _, ok := d.Def.Composite(s); !ok {
			return fmt.Errorf("%w: %s v%d: transition %s -> %s names unknown state %q", runtime.ErrUnknownState, t.Machine, t.Version, t.From, t.To, s)
		}
	}
	return nil
}
