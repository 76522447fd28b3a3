package runtime

import (
	"encoding/json"
	"fmt"
	"slices"
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
// drain.
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
