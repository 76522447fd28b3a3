package runtime

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Upgrade says how the live runs of an older version of a machine move
// to a newer one: what fsmgen generated from an "upgrade from N" block of a
// .fsm file, checked against both versions. A generated Definition holds
// the upgrades into its version in Upgrades; registering the
// definition with the engine registers them, and the database then
// refuses any move of a run between versions that they do not declare.
type Upgrade struct {
	// Type is the machine's persisted type; runs move from version From to
	// version To.
	Type     string
	From, To int
	// Drain reports that no run moves: every run of From finishes on From.
	Drain bool
	// Rules hold, for each non-terminal state of From, the rules of that
	// state in the order they are tried: the first whose condition admits
	// the run decides. A state without rules is not upgraded.
	Rules []UpgradeRule
	// Defaults fill the payload fields that To's events have and From's
	// events of the same name lack, in the events a moved run carries.
	Defaults []FieldDefault
}

// UpgradeRule moves the runs in state From of the older version, those
// its condition admits, to state To of the newer one, or leaves them to
// drain. From is a leaf; To is a leaf or a parallel state, which a run
// enters at its initial configuration (see Upgrade.Map).
type UpgradeRule struct {
	From string
	// To is empty when Drain.
	To    string
	Drain bool
	// When names an event of the older version: the rule admits a run
	// whose current attempt has fired it (has not, when Unless). Empty for
	// a rule that admits every run.
	When   string `json:",omitempty"`
	Unless bool   `json:",omitempty"`
	// Timers says from when the timers of To count for a moved run:
	// TimersKeep, from when the run entered From; TimersRestart, from the
	// upgrade. Empty when To has no timers.
	Timers string `json:",omitempty"`
}

// The values of UpgradeRule.Timers.
const (
	TimersKeep    = "keep"
	TimersRestart = "restart"
)

// FieldDefault is the value, as JSON, that payload field Field of event
// Event takes in the events a run carries from before its upgrade.
type FieldDefault struct {
	Event, Field string
	Value        json.RawMessage
}

// Clone returns a deep copy of m.
func (m Upgrade) Clone() Upgrade {
	m.Rules = slices.Clone(m.Rules)
	m.Defaults = slices.Clone(m.Defaults)
	for i := range m.Defaults {
		m.Defaults[i].Value = slices.Clone(m.Defaults[i].Value)
	}
	return m
}

// Decide returns the rule that decides for a run in state, given whether
// its current attempt has fired each event (fired reports it), and
// whether there is one: false when state has no rule or no rule admits
// the run.
func (m Upgrade) Decide(state string, fired func(event string) bool) (UpgradeRule, bool) {
	for _, r := range m.Rules {
		if r.From != state {
			continue
		}
		if r.When == "" || fired(r.When) != r.Unless {
			return r, true
		}
	}
	return UpgradeRule{}, false
}

// Validate checks the upgrade against the definitions of both
// versions: the type and versions match, every rule names a non-terminal
// state of each, conditions name events of the older version, and
// defaults name fields of the newer version's events. Generated
// upgrades always pass; it guards hand-built ones.
func (m Upgrade) Validate(from, to Definition) error {
	where := fmt.Sprintf("upgrade of %s from v%d to v%d", m.Type, m.From, m.To)
	if from.Type != m.Type || to.Type != m.Type || from.Version != m.From || to.Version != m.To {
		return fmt.Errorf("%s: given the definitions of %s v%d and %s v%d", where, from.Type, from.Version, to.Type, to.Version)
	}
	if m.From >= m.To {
		return fmt.Errorf("%s: runs are upgraded from an older version to a newer one", where)
	}
	if m.Drain && len(m.Rules) > 0 {
		return fmt.Errorf("%s: drains and has rules", where)
	}
	events := map[string]bool{}
	for _, e := range from.Events {
		events[e.Name] = true
	}
	for _, r := range m.Rules {
		s, ok := from.State(r.From)
		if !ok || s.Terminal() {
			return fmt.Errorf("%s: rule from %s, which is no running state of v%d", where, r.From, m.From)
		}
		if r.When != "" && !events[r.When] {
			return fmt.Errorf("%s: rule from %s on the unknown event %s of v%d", where, r.From, r.When, m.From)
		}
		if r.Drain {
			if r.To != "" {
				return fmt.Errorf("%s: rule from %s drains and moves to %s", where, r.From, r.To)
			}
			continue
		}
		t, ok := to.State(r.To)
		if c, parallel := to.Composite(r.To); !ok && parallel && c.Parallel {
			t, ok = StateSpec{Name: r.To, Status: StatusRunning}, true
		}
		if !ok || t.Terminal() {
			return fmt.Errorf("%s: rule from %s to %s, which is no running state of v%d", where, r.From, r.To, m.To)
		}
		switch r.Timers {
		case "", TimersKeep, TimersRestart:
		default:
			return fmt.Errorf("%s: rule from %s: timers %q, want keep or restart", where, r.From, r.Timers)
		}
	}
	for _, d := range m.Defaults {
		ok := false
		for _, e := range to.Events {
			if e.Name == d.Event {
				for _, f := range e.Fields {
					ok = ok || f.Name == d.Field
				}
			}
		}
		if !ok || !json.Valid(d.Value) {
			return fmt.Errorf("%s: default %s.%s names no field of v%d or holds no JSON value", where, d.Event, d.Field, m.To)
		}
	}
	return nil
}

// ErrUpgradeRefused is matched by errors.Is when an upgrade's rules map
// a run in a configuration to no state of the newer version; the error
// that wraps it names the configuration, what its leaves map to and why.
var ErrUpgradeRefused = errors.New("upgrade refused")

// UpgradeMove is what an upgrade does with one run (see Upgrade.Map).
type UpgradeMove struct {
	// To is the persisted state the run moves to on the newer version: a
	// leaf, or a configuration. Empty when the run does not move.
	To string
	// Rules are the rules that decided, in the order of the run's leaves;
	// a leaf of a configuration kept by name without a rule has none.
	Rules []UpgradeRule
	// Drain reports that a rule leaves the run to drain on the older
	// version; Unmatched names the leaf no rule admits, whose run stays
	// on the older version too.
	Drain     bool
	Unmatched string
}

// Restart reports whether the timers of the state the run moves to
// count from the upgrade: a rule that decided says timers restart.
func (mv UpgradeMove) Restart() bool {
	return slices.ContainsFunc(mv.Rules, func(r UpgradeRule) bool { return r.Timers == TimersRestart })
}

// Describe renders the rules that decided as the .fsm file writes them,
// joined by "; ".
func (mv UpgradeMove) Describe() string {
	parts := make([]string, len(mv.Rules))
	for i, r := range mv.Rules {
		parts[i] = r.Describe()
	}
	return strings.Join(parts, "; ")
}

// Describe renders the rule as the .fsm file writes it.
func (r UpgradeRule) Describe() string {
	s := r.From + " -> " + r.To
	if r.Drain {
		s = r.From + " drain"
	}
	if r.When != "" {
		if r.Unless {
			s += " unless " + r.When
		} else {
			s += " when " + r.When
		}
	}
	if r.Timers != "" {
		s += " timers " + r.Timers
	}
	return s
}

// Map decides where a run in the persisted state state of the older
// version, from, moves on the newer one, to, given whether its current
// attempt has fired each event (fired reports it).
//
// A run in a leaf moves as the leaf's first rule that admits it says
// (Decide); none admitting it leaves it unmatched. A run in a
// configuration maps each leaf the same way, except that a leaf no rule
// names keeps its name when the newer version has it as a running leaf;
// a leaf that a rule leaves to drain drains the run, and a leaf that no
// rule admits leaves it unmatched. The states the leaves map to, each
// once, make the state the run moves to: a parallel state stands for its
// initial configuration; leaves that all lie in the regions of one
// parallel state, at most one per region, make its configuration, in
// the newer version's region order, a region that none lies in entered
// at its initial leaf; a single leaf outside parallel states is the
// state itself (the regions collapsed onto one state). Anything else is
// refused with an error matching ErrUpgradeRefused.
func (m Upgrade) Map(from, to Definition, state string, fired func(event string) bool) (UpgradeMove, error) {
	leaves := from.Configuration(state)
	var mv UpgradeMove
	var targets []string
	for _, l := range leaves {
		r, ok := m.Decide(l, fired)
		switch {
		case ok && r.Drain:
			return UpgradeMove{Rules: []UpgradeRule{r}, Drain: true}, nil
		case ok:
			mv.Rules = append(mv.Rules, r)
			targets = append(targets, r.To)
		case len(leaves) > 1 && m.keeps(to, l):
			targets = append(targets, l)
		default:
			return UpgradeMove{Unmatched: l}, nil
		}
	}
	target, err := to.upgradeTarget(targets)
	if err != nil {
		return UpgradeMove{}, fmt.Errorf("%w: %s of v%d maps to %s in v%d: %w", ErrUpgradeRefused, state, m.From, strings.Join(targets, ", "), m.To, err)
	}
	mv.To = target
	return mv, nil
}

// keeps reports whether leaf, which no rule of m names, keeps its name
// on version to: to has it as a running leaf.
func (m Upgrade) keeps(to Definition, leaf string) bool {
	if slices.ContainsFunc(m.Rules, func(r UpgradeRule) bool { return r.From == leaf }) {
		return false
	}
	s, ok := to.State(leaf)
	return ok && !s.Terminal()
}

// upgradeTarget makes the persisted state of d that the states targets
// map a run to (see Upgrade.Map).
func (d *Definition) upgradeTarget(targets []string) (string, error) {
	var leaves []string
	for _, t := range targets {
		for _, l := range d.entered(t) {
			if !slices.Contains(leaves, l) {
				leaves = append(leaves, l)
			}
		}
	}
	parallel := d.parallelIndex()
	p, _ := d.RegionOf(leaves[0])
	if len(leaves) == 1 && p == "" {
		return leaves[0], nil
	}
	if p == "" {
		return "", fmt.Errorf("%s is in no parallel state", leaves[0])
	}
	regions := parallel[p]
	config := make([]string, len(regions))
	for _, l := range leaves {
		q, region := d.RegionOf(l)
		if q != p {
			return "", fmt.Errorf("%s is not in a region of %s", l, p)
		}
		i := slices.Index(regions, region)
		if config[i] != "" {
			return "", fmt.Errorf("region %s of %s would hold both %s and %s", region, p, config[i], l)
		}
		config[i] = l
	}
	for i, r := range regions {
		if config[i] == "" {
			config[i] = d.entered(r)[0]
		}
	}
	return d.JoinConfiguration(config), nil
}

// entered returns the leaves a move to the state name enters: name
// itself for a leaf; for a composite, its initial child's, and for a
// parallel state, those of each region, in region order.
func (d *Definition) entered(name string) []string {
	c, ok := d.Composite(name)
	switch {
	case !ok:
		return []string{name}
	case c.Parallel:
		var out []string
		for _, r := range d.Regions(name) {
			out = append(out, d.entered(r)...)
		}
		return out
	}
	return d.entered(c.Initial)
}
