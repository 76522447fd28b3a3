package dsl

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/participle/v2/lexer"
)

// Upgrade says how the live runs of an older version of a machine move
// to a newer one. Both versions are machines of the same file with the
// same type; the upgrade belongs to the newer one.
type Upgrade struct {
	Pos lexer.Position
	// From is the older version's machine, To the newer one's.
	From, To *Machine
	// Drain reports "upgrade from N drain": no run moves, every run of
	// From finishes on From.
	Drain bool
	// Rules hold, for each non-terminal state of From in declaration order,
	// the rules written for it in the order written, or the implicit rule
	// that keeps a state by name.
	Rules []*UpgradeRule
	// Defaults fill the payload fields that To's events have and From's
	// lack, in the order written.
	Defaults []*FieldDefault
}

// UpgradeRule moves the runs in one state of the older version, those
// its condition admits, to a state of the newer one, or leaves them to
// drain.
type UpgradeRule struct {
	Pos lexer.Position
	// From is a leaf state of the older version; To a leaf of the newer,
	// nil when Drain. A rule written on a composite of the older version
	// stands for one rule per leaf inside it, and a rule to a composite of
	// the newer version (or a state kept by name that became one) moves
	// runs to its initial leaf.
	From, To *State
	// Drain leaves the runs on the older version.
	Drain bool
	// When is the condition, an event of the older version: the rule
	// admits a run whose current attempt has fired it (has not, when
	// Unless). Nil for an unconditional rule.
	When   *Event
	Unless bool
	// Timers is how the timers of To count for a moved run: "keep" (from
	// when the run entered From), "restart" (from the upgrade), or ""
	// when To has no timers.
	Timers string
	// Implicit marks the rule of a state that the newer version keeps by
	// name and that no written rule names.
	Implicit bool
}

// FieldDefault is the value a payload field of the newer version's event
// takes in the events that runs carry from the older version.
type FieldDefault struct {
	Pos   lexer.Position
	Event *Event
	Field *PayloadField
	// Value is the value as JSON.
	Value json.RawMessage
}

// typeVersion identifies a machine version across a file.
type typeVersion struct {
	typ     string
	version int
}

// upgrades resolves and checks the upgrade declarations of every machine
// of a file, once every machine is checked on its own.
func (c *checker) upgrades(f *File, machines []*Machine, checkers map[*Machine]*machineChecker) {
	byVersion := map[typeVersion]*Machine{}
	for _, m := range machines {
		if _, dup := byVersion[typeVersion{m.Type, m.Version}]; !dup {
			byVersion[typeVersion{m.Type, m.Version}] = m
		}
	}
	for i, md := range f.Machines {
		m := machines[i]
		seen := map[int]lexer.Position{}
		for _, it := range md.Items {
			d := it.Upgrade
			if d == nil {
				continue
			}
			n, err := parseCount(d.From.Value)
			if err != nil || n < 1 {
				c.errorf(d.From.Pos, "upgrade from %s: want a version, a whole number >= 1", d.From.Value)
				continue
			}
			if prev, dup := seen[n]; dup {
				c.errorf(it.Pos, "upgrade from %d declared twice (first at %s)", n, short(prev))
				continue
			}
			seen[n] = it.Pos
			if n >= m.Version {
				c.errorf(d.From.Pos, "upgrade from %d: a machine upgrades runs from an older version, and %s is version %d", n, m.Name, m.Version)
				continue
			}
			old := byVersion[typeVersion{m.Type, n}]
			if old == nil {
				var have []string
				for _, o := range machines {
					if o.Type == m.Type && o != m {
						have = append(have, strconv.Itoa(o.Version))
					}
				}
				hint := "none"
				if len(have) > 0 {
					hint = strings.Join(have, ", ")
				}
				c.errorf(d.From.Pos, "upgrade from %d: no machine of type %q has version %d in this file (versions here: %s); keep version %d's machine block next to this one, renamed %sV%d", n, m.Type, n, hint, n, m.Name, n)
				continue
			}
			if !d.Drain && len(old.Parallels)+len(m.Parallels) > 0 {
				c.errorf(d.From.Pos, "upgrade from %d: rules cannot move the runs of a machine with parallel states yet; write \"upgrade from %d drain\"", n, n)
				continue
			}
			mg := &Upgrade{Pos: it.Pos, From: old, To: m, Drain: d.Drain}
			if !d.Drain {
				mig := &upgradeChecker{checker: c, mg: mg, old: checkers[old], new: checkers[m]}
				mig.check(d)
			}
			m.Upgrades = append(m.Upgrades, mg)
		}
	}
}

// upgradeChecker checks one upgrade block.
type upgradeChecker struct {
	*checker
	mg       *Upgrade
	old, new *machineChecker
	// defaults by event and field name.
	defaults map[[2]string]*FieldDefault
	// reported holds the (event, field) pairs whose payload problem is
	// reported already.
	reported map[[2]string]bool
	// dropped holds the states of the older version whose rule is dropped
	// for an error in it, and unknownFrom records a rule from a state the
	// older version does not have: which rules those states have is not
	// known, and reporting them unmapped would only echo the error.
	dropped     map[*State]bool
	unknownFrom bool
}

func (mc *upgradeChecker) oldName() string {
	return fmt.Sprintf("version %d", mc.mg.From.Version)
}

func (mc *upgradeChecker) newName() string {
	return fmt.Sprintf("version %d", mc.mg.To.Version)
}

func (mc *upgradeChecker) check(d *UpgradeDecl) {
	mc.defaults = map[[2]string]*FieldDefault{}
	mc.reported = map[[2]string]bool{}
	mc.dropped = map[*State]bool{}
	for _, r := range d.Rules {
		if r.Default != nil {
			mc.fieldDefault(r.Default)
		}
	}
	written := map[*State][]*UpgradeRule{}
	// ended records, per state, the rule after which no other can apply.
	ended := map[*State]*UpgradeRule{}
	conds := map[*State]map[string]*UpgradeRule{}
	for _, r := range d.Rules {
		if r.Default != nil {
			continue
		}
		for _, rule := range mc.rule(r) {
			mc.written(r, rule, written, ended, conds)
		}
	}
	mc.implicit(written)
}

// written records a written rule of one leaf of the older version.
func (mc *upgradeChecker) written(r *UpgradeRuleDecl, rule *UpgradeRule, written map[*State][]*UpgradeRule, ended map[*State]*UpgradeRule, conds map[*State]map[string]*UpgradeRule) {
	{
		s := rule.From
		if prev := ended[s]; prev != nil {
			what := "moves every run in " + s.Name
			if prev.Drain {
				what = "leaves every run in " + s.Name + " to drain"
			}
			mc.errorf(r.Pos, "rule for %s can never apply: the one at %s %s", s.Name, short(prev.Pos), what)
			return
		}
		if rule.When != nil {
			key := fmt.Sprintf("%t %s", rule.Unless, rule.When.Name)
			if conds[s] == nil {
				conds[s] = map[string]*UpgradeRule{}
			}
			if prev := conds[s][key]; prev != nil {
				mc.errorf(r.Pos, "rule for %s can never apply: the one at %s has the same condition", s.Name, short(prev.Pos))
				return
			}
			conds[s][key] = rule
		} else {
			ended[s] = rule
		}
		written[s] = append(written[s], rule)
	}
}

// implicit completes the rules of each non-terminal leaf of the older
// version: kept by name when no rule names it, else reported.
func (mc *upgradeChecker) implicit(written map[*State][]*UpgradeRule) {
	for _, s := range mc.mg.From.States {
		if s.Terminal() {
			continue
		}
		rules := written[s]
		if mc.dropped[s] {
			continue
		}
		if len(rules) == 0 {
			if t := mc.new.states[s.Name]; t != nil && !t.Terminal() {
				rules = []*UpgradeRule{{Pos: mc.mg.Pos, From: s, To: t.InitialLeaf(), Implicit: true}}
			} else {
				if mc.unknownFrom {
					continue
				}
				target := "STATE"
				if c := closest(s.Name, mc.liveStates()); c != "" {
					target = c
				}
				why := "which " + mc.newName() + " does not have"
				if t != nil {
					why = "which is final in " + mc.newName()
				}
				mc.errorf(mc.mg.Pos, "state %s of %s is not mapped (%s): its runs would be stranded; add \"%s -> %s\" or \"%s drain\"", s.Name, mc.oldName(), why, s.Name, target, s.Name)
				continue
			}
		}
		if last := rules[len(rules)-1]; last.When != nil {
			mc.errorf(last.Pos, "runs in %s that no condition admits are neither moved nor left to drain; add \"%s -> STATE\" or \"%s drain\" after the conditional rules", s.Name, s.Name, s.Name)
		}
		for _, rule := range rules {
			if !rule.Drain {
				mc.target(rule)
			}
			if rule.Implicit {
				mc.keptByName(rule)
			}
		}
		mc.mg.Rules = append(mc.mg.Rules, rules...)
	}
}

// liveStates lists the non-terminal states of the newer version.
func (mc *upgradeChecker) liveStates() []string {
	var out []string
	for _, s := range mc.mg.To.States {
		if !s.Terminal() {
			out = append(out, s.Name)
		}
	}
	return out
}

// rule resolves a written rule into one rule per leaf it applies to; nil
// when it is in error.
func (mc *upgradeChecker) rule(r *UpgradeRuleDecl) []*UpgradeRule {
	out := mc.ruleOf(r)
	if out == nil {
		return nil
	}
	var rules []*UpgradeRule
	for _, l := range out.From.Leaves() {
		if l.Terminal() {
			continue
		}
		c := *out
		c.From = l
		rules = append(rules, &c)
	}
	return rules
}

// drop records that the rules of the leaves in s are in error: whether
// they are mapped is not known.
func (mc *upgradeChecker) drop(s *State) {
	for _, l := range s.Leaves() {
		mc.dropped[l] = true
	}
}

// ruleOf resolves a written rule, its From as written; nil when it is in
// error.
func (mc *upgradeChecker) ruleOf(r *UpgradeRuleDecl) *UpgradeRule {
	out := &UpgradeRule{Pos: r.Pos, Drain: r.Drain}
	from := mc.old.states[r.From.Value]
	switch {
	case from == nil:
		mc.errorf(r.From.Pos, "unknown state %s of %s%s", r.From.Value, mc.oldName(), didYouMean(r.From.Value, keys(mc.old.states)))
		mc.unknownFrom = true
		return nil
	case from.Terminal():
		mc.errorf(r.From.Pos, "state %s of %s is final: its runs are over and are never upgraded", from.Name, mc.oldName())
		return nil
	}
	out.From = from
	if r.Drain {
		return out
	}
	to := mc.new.states[r.To.Value]
	switch {
	case to == nil:
		mc.errorf(r.To.Pos, "unknown state %s of %s%s", r.To.Value, mc.newName(), didYouMean(r.To.Value, keys(mc.new.states)))
		mc.drop(from)
		return nil
	case to.Terminal():
		mc.errorf(r.To.Pos, "state %s of %s is final; an upgrade moves live runs into a state they go on from", to.Name, mc.newName())
		mc.drop(from)
		return nil
	}
	out.To = to.InitialLeaf()
	if r.Cond != nil {
		ev := mc.old.events[r.Cond.Event.Value]
		if ev == nil {
			mc.errorf(r.Cond.Event.Pos, "unknown event %s of %s%s; a condition names an event of the older version that the run's current attempt has fired", r.Cond.Event.Value, mc.oldName(), didYouMean(r.Cond.Event.Value, keys(mc.old.events)))
			mc.drop(from)
			return nil
		}
		out.When, out.Unless = ev, r.Cond.Unless
	}
	if r.Timers != nil {
		switch v := r.Timers.Value; v {
		case "keep", "restart":
			if !hasTimer(to.InitialLeaf()) && !mc.new.lostTimer[to] {
				mc.errorf(r.Timers.Pos, "timers %s: state %s of %s has no timers", v, to.Name, mc.newName())
				mc.drop(from)
				return nil
			}
			out.Timers = v
		default:
			mc.errorf(r.Timers.Pos, "timers %s: want keep (count from when the run entered %s) or restart (count from the upgrade)%s", v, from.Name, didYouMean(v, []string{"keep", "restart"}))
			mc.drop(from)
			return nil
		}
	}
	return out
}

// target checks what a run moved by rule finds in its new state: the
// events it waits for, its timers, and the payloads of the events it
// carries.
func (mc *upgradeChecker) target(rule *UpgradeRule) {
	s, t := rule.From, rule.To
	kept := ""
	if rule.Implicit {
		kept = " (kept by name)"
	}
	// A run waiting in s waits for what callers send; a wait state of the
	// newer version must still take it.
	if s.Wait && t.Wait {
		fired := mc.mg.From.RuntimeFired()
		var awaited []*Event
		for _, tr := range mc.mg.From.Transitions {
			if tr.From == s && tr.Event != nil && (!fired[tr.Event] || tr.Event.External) && !slices.Contains(awaited, tr.Event) {
				awaited = append(awaited, tr.Event)
			}
		}
		for _, e := range awaited {
			e2 := mc.new.events[e.Name]
			switch {
			case e2 == nil:
				mc.errorf(rule.Pos, "runs in %s of %s wait for %s, which %s does not declare: moved to %s%s, they would wait for an event nobody can send", s.Name, mc.oldName(), e.Name, mc.newName(), t.Name, kept)
			case !mc.new.mayHandle(t, e2):
				mc.errorf(rule.Pos, "runs in %s of %s wait for %s, but %s of %s%s has no transition on it", s.Name, mc.oldName(), e.Name, t.Name, mc.newName(), kept)
			}
		}
	}
	// Timers.
	if len(t.Timers) > 0 && rule.Timers == "" && !mc.old.lostTimer[s] && !mc.new.lostTimer[t] {
		if sameTimers(s.Timers, t.Timers) {
			rule.Timers = "keep"
		} else {
			mc.errorf(rule.Pos, "state %s of %s%s has timers (%s) that %s of %s does not: add \"timers restart\" to count them from the upgrade, or \"timers keep\" to count them from when the run entered %s", t.Name, mc.newName(), kept, describeTimers(t.Timers), s.Name, mc.oldName(), s.Name)
		}
	}
	// Payloads: the events of the run's current attempt are decoded with
	// the newer version's types.
	for _, e := range historyEvents(mc.mg.From, s) {
		e2 := mc.new.events[e.Name]
		if e2 == nil {
			continue // handlers of the newer version cannot ask for it
		}
		for _, f2 := range e2.Fields {
			key := [2]string{e.Name, f2.Name}
			if mc.reported[key] {
				continue
			}
			f1 := fieldNamed(e, f2.Name)
			switch {
			case f1 == nil && mc.defaults[key] == nil:
				mc.reported[key] = true
				mc.errorf(rule.Pos, "event %s of %s has field %s (%s), which %s's %s lacks and runs moved from %s%s carry: add \"default %s.%s VALUE\" to the upgrade block", e.Name, mc.newName(), f2.Name, f2.Type, mc.oldName(), e.Name, s.Name, kept, e.Name, f2.Name)
			case f1 != nil && f1.Type != f2.Type && f1.Type.Name != "" && f2.Type.Name != "":
				mc.reported[key] = true
				mc.errorf(rule.Pos, "field %s of event %s is %s in %s and %s in %s: the %s events that runs moved from %s%s carry would not decode", f2.Name, e.Name, f1.Type, mc.oldName(), f2.Type, mc.newName(), e.Name, s.Name, kept)
			}
		}
	}
}

func describeTimers(ts []*Timer) string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = "after " + t.Text + " " + t.Event.Name
	}
	return strings.Join(parts, ", ")
}

// sameTimers reports whether two states fire the same events after the
// same durations.
func sameTimers(a, b []*Timer) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].After != b[i].After || a[i].Event.Name != b[i].Event.Name {
			return false
		}
	}
	return true
}

func fieldNamed(e *Event, name string) *PayloadField {
	for _, f := range e.Fields {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// historyEvents returns the events that a run in state s of m may have
// fired in its current attempt: those of the rows into s or into a state
// from which s can be reached, in declaration order.
func historyEvents(m *Machine, s *State) []*Event {
	prev := map[*State][]*State{}
	for _, t := range m.Transitions {
		prev[t.To] = append(prev[t.To], t.From)
	}
	before := walk([]*State{s}, prev)
	seen := map[*Event]bool{}
	for _, t := range m.Transitions {
		if before[t.To] {
			seen[t.Event] = true
		}
	}
	var out []*Event
	for _, e := range m.Events {
		if seen[e] {
			out = append(out, e)
		}
	}
	return out
}

// fieldDefault resolves a default: a field of an event of the newer
// version that the older version's event of that name lacks, and a value
// of the field's type.
func (mc *upgradeChecker) fieldDefault(d *DefaultDecl) {
	e := mc.new.events[d.Event.Value]
	if e == nil {
		mc.errorf(d.Event.Pos, "unknown event %s of %s%s", d.Event.Value, mc.newName(), didYouMean(d.Event.Value, keys(mc.new.events)))
		return
	}
	f := fieldNamed(e, d.Field.Value)
	if f == nil {
		names := make([]string, len(e.Fields))
		for i, x := range e.Fields {
			names[i] = x.Name
		}
		mc.errorf(d.Field.Pos, "event %s of %s has no field %s%s", e.Name, mc.newName(), d.Field.Value, didYouMean(d.Field.Value, names))
		return
	}
	key := [2]string{e.Name, f.Name}
	if prev := mc.defaults[key]; prev != nil {
		mc.errorf(d.Pos, "default %s.%s given twice (first at %s)", e.Name, f.Name, short(prev.Pos))
		return
	}
	if old := mc.old.events[e.Name]; old != nil {
		if f1 := fieldNamed(old, f.Name); f1 != nil && f1.Type == f.Type {
			mc.errorf(d.Pos, "default %s.%s: %s's %s has field %s already; a default fills a field that older payloads lack", e.Name, f.Name, mc.oldName(), e.Name, f.Name)
			return
		}
	}
	raw, err := defaultValue(f.Type, d.Value.Value)
	if err != nil {
		mc.errorf(d.Value.Pos, "default %s.%s: %v", e.Name, f.Name, err)
		// The field has a default, if a bad one: not echoed as missing.
		mc.defaults[key] = &FieldDefault{Pos: d.Pos, Event: e, Field: f}
		return
	}
	mc.defaults[key] = &FieldDefault{Pos: d.Pos, Event: e, Field: f, Value: raw}
	mc.mg.Defaults = append(mc.mg.Defaults, mc.defaults[key])
}

// defaultValue returns the JSON of lit, a literal as written, for a field
// of type t.
func defaultValue(t Type, lit string) (json.RawMessage, error) {
	quoted := strings.HasPrefix(lit, `"`)
	want := func(what string) error {
		return fmt.Errorf("%s is not a value of type %s; want %s", lit, t, what)
	}
	if t.Slice {
		return nil, fmt.Errorf("a default for a field of type %s is not supported; give the field a scalar type or handle its absence in Go", t)
	}
	switch {
	case t.Path == "time" && t.Name == "Time":
		if !quoted {
			return nil, want(`a quoted RFC 3339 time, such as "2026-01-02T15:04:05Z"`)
		}
		s, err := unquote(lit)
		if err != nil {
			return nil, err
		}
		tm, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return nil, want(`a quoted RFC 3339 time, such as "2026-01-02T15:04:05Z"`)
		}
		return json.Marshal(tm)
	case t.Path == "time" && t.Name == "Duration":
		d, err := ParseDuration(lit)
		if err != nil {
			return nil, want("a duration, such as 30s")
		}
		return json.Marshal(int64(d))
	case t.Path != "":
		return nil, fmt.Errorf("a default for a field of type %s is not supported; give the field a scalar type or handle its absence in Go", t)
	case t.Name == "string":
		if !quoted {
			return nil, want("a quoted string")
		}
		s, err := unquote(lit)
		if err != nil {
			return nil, err
		}
		return json.Marshal(s)
	case t.Name == "bool":
		if lit != "true" && lit != "false" {
			return nil, want("true or false")
		}
		return json.RawMessage(lit), nil
	case t.Name == "float32" || t.Name == "float64":
		if _, err := strconv.ParseFloat(lit, 64); err != nil || quoted {
			return nil, want("a number")
		}
		return json.RawMessage(lit), nil
	default: // the integer types
		bits := 64
		switch t.Name {
		case "int8", "uint8", "byte":
			bits = 8
		case "int16", "uint16":
			bits = 16
		case "int32", "uint32", "rune":
			bits = 32
		}
		var err error
		if strings.HasPrefix(t.Name, "uint") || t.Name == "byte" {
			_, err = strconv.ParseUint(lit, 10, bits)
		} else {
			_, err = strconv.ParseInt(lit, 10, bits)
		}
		if err != nil {
			return nil, want("a whole number that fits in " + t.Name)
		}
		return json.RawMessage(lit), nil
	}
}

// keptByName warns about a state kept by name that the newer version
// enters from other states than the older one did: its meaning may have
// changed (a step split in two, say), and the runs in it would skip what
// now comes before it.
func (mc *upgradeChecker) keptByName(rule *UpgradeRule) {
	before := func(m *Machine, s *State) []string {
		var out []string
		for _, t := range m.Transitions {
			if t.To == s && t.From != s && !slices.Contains(out, t.From.Name) {
				out = append(out, t.From.Name)
			}
		}
		slices.Sort(out)
		return out
	}
	a, b := before(mc.mg.From, rule.From), before(mc.mg.To, rule.To)
	if len(a) == 0 || len(b) == 0 || slices.Equal(a, b) {
		return
	}
	mc.warnf(mc.mg.Pos, "runs in %s stay in %s (kept by name), which %s enters from %s rather than %s; write \"%s -> %s\" if that is intended, or map them to the state that now comes first",
		rule.From.Name, rule.To.Name, mc.newName(), strings.Join(b, ", "), strings.Join(a, ", "), rule.From.Name, rule.To.Name)
}
