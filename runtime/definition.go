package runtime

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Status is the generic status of a run, the only terminal vocabulary the
// runtime knows. Business outcomes ("hit", "approved", ...) travel beside it.
type Status string

// The generic statuses.
const (
	StatusRunning   Status = "running"
	StatusSucceeded Status = "succeeded"
	StatusFailed    Status = "failed"
	StatusCancelled Status = "cancelled"
)

// Terminal reports whether s is one of the terminal statuses.
func (s Status) Terminal() bool {
	return s == StatusSucceeded || s == StatusFailed || s == StatusCancelled
}

// Definition is a machine's definition as data: what fsmgen generated from a
// .fsm file, in a form the runtime can register, check transitions against,
// and draw. A generated package exposes its Definition through a function;
// callers must not modify the slices it holds. Its methods find states,
// composites, events and rows by name in constant time: a large definition
// is indexed at its first lookup, and again when its slices are replaced
// (not when their elements are changed in place).
type Definition struct {
	// Machine is the machine's Go name and Doc its doc comment.
	Machine string
	Doc     string
	// Type is the persisted type name and Version the definition version.
	Type    string
	Version int
	// Initial is the name of the initial state: a leaf, or, for a run
	// that starts in a parallel state, the configuration it starts in, its
	// leaves joined by ConfigurationSeparator.
	Initial string
	// States, Events and Guards are in declaration order.
	States []StateSpec
	Events []EventSpec
	Guards []string
	// Transitions holds one row per (from, event, guard) in the order the
	// machine tries them: a FROM list or * is expanded to one row per state.
	Transitions []TransitionSpec
	// Cancel names the machine's cancel event, the one a run's owner fires to
	// cancel it; empty when the machine declares none.
	Cancel string
	// Composites are the composite states of a nested machine, in
	// declaration order (parents before their children); empty for a
	// flat machine. States holds the leaves only: a run is always in a
	// leaf, and a composite is active while the run is in one of its
	// descendants.
	Composites []CompositeSpec `json:",omitempty"`
	// Actions names the entry and exit actions the states run, in
	// declaration order; empty when the machine declares none.
	Actions []string `json:",omitempty"`
	// Upgrades say how the runs of older versions move to this one, one
	// per older version the machine upgrades from. They are not part of
	// the definition's identity: adding one to a registered version is no
	// conflict.
	Upgrades []Upgrade `json:",omitempty"`
}

// StateSpec describes one state.
type StateSpec struct {
	Name    string
	Initial bool
	// Status is StatusRunning for a non-terminal state.
	Status Status
	// Outcome is the business outcome a terminal state declares, if any.
	Outcome string
	// Wait marks a state that waits for an external event or a timer: the
	// runtime parks runs there instead of calling a handler.
	Wait bool
	// Retry is the state's retry policy, nil when the state declares none.
	Retry *RetryPolicy
	// OnExhausted names the event fired, with an empty payload, when the
	// state's retry policy gives up; the last error's code and detail go to
	// the run's result. Empty when the state names none: the run is then
	// parked with its error for an operator.
	OnExhausted string
	// Timers fire events after the run has spent a duration in the state.
	Timers []Timer
	// Parent names the composite the state is a child of; empty for a
	// top-level state.
	Parent string `json:",omitempty"`
	// Entry and Exit name the actions run, in order, when a transition
	// enters or exits the state.
	Entry []string `json:",omitempty"`
	Exit  []string `json:",omitempty"`
}

// CompositeSpec describes a composite state: a state with children. It is
// active while the run is in one of its descendant leaves; a transition
// that targets it enters its initial child (followed down to a leaf).
type CompositeSpec struct {
	Name string
	// Parent names the composite this one is a child of; empty for a
	// top-level composite.
	Parent string `json:",omitempty"`
	// Initial names the child (a leaf or a composite) entered when a
	// transition targets the composite; empty for a parallel one.
	Initial string
	// Parallel marks a parallel state: its children are its regions,
	// composites that are all active at once, each from its own Initial
	// (see Definition.Regions and Definition.Configuration).
	Parallel bool `json:",omitempty"`
	// Timers fire events after the run has spent a duration anywhere
	// inside the composite, counted from when it entered the composite;
	// moves between its descendants do not restart them.
	Timers []Timer `json:",omitempty"`
	// History are the composite's history pseudostates.
	History []HistorySpec `json:",omitempty"`
	// Entry and Exit name the actions run, in order, when a transition
	// enters or exits the composite.
	Entry []string `json:",omitempty"`
	Exit  []string `json:",omitempty"`
}

// HistorySpec is a history pseudostate of a composite. When the composite
// is exited it records the child that was active (shallow) or the leaf
// (Deep); a transition to it enters what it recorded, or the composite's
// initial leaf when it recorded nothing.
type HistorySpec struct {
	Name string
	Deep bool `json:",omitempty"`
}

// Terminal reports whether the state is terminal.
func (s StateSpec) Terminal() bool { return s.Status.Terminal() }

// FirstTimer returns the shortest of the state's timers' durations, and
// whether it has any timer.
func (s StateSpec) FirstTimer() (time.Duration, bool) {
	if len(s.Timers) == 0 {
		return 0, false
	}
	next := s.Timers[0].After
	for _, t := range s.Timers[1:] {
		next = min(next, t.After)
	}
	return next, true
}

// EventSpec describes one event and its payload fields.
type EventSpec struct {
	Name   string
	Fields []FieldSpec
	// External marks an event that callers may send in every state, even
	// one the engine fires itself (a timer's or exhaustion event) or a
	// driven state's handler returns (see Definition.CallerRefusal).
	External bool
}

// FieldSpec is one payload field: its JSON name and its Go type as written
// in the generated code.
type FieldSpec struct {
	Name string
	Type string
}

// TransitionSpec is one row of the transition table.
type TransitionSpec struct {
	From, To, Event string
	// Guard names the guard that must admit the event, empty when the row is
	// unguarded; Negated inverts it.
	Guard   string
	Negated bool
	// Outcome is the business outcome the row declares for a terminal target.
	Outcome string
	// Exit names the states (leaves and composites) the transition exits,
	// innermost first, and Enter those it enters, outermost first, ending
	// at To. Both are empty in a flat machine's table, where a row exits
	// From and enters To.
	Exit  []string `json:",omitempty"`
	Enter []string `json:",omitempty"`
	// Internal marks a row written internal: it exits and enters nothing
	// above its target, so the source's timers keep running.
	Internal bool `json:",omitempty"`
	// History names the history pseudostate the row was written to. Such
	// a row is listed once per leaf it may reach, each with its own To,
	// Exit and Enter, so that every leaf-to-leaf move is in the table.
	History string `json:",omitempty"`
	// Done marks a completion row ("on done"): taken once the composite
	// it was written on has a final child active. Done rows, like every
	// eventless row, have an empty Event.
	Done bool `json:",omitempty"`
}

// Timer says that Event fires once a run has been in a state for After.
//
// When Field is set, the duration is taken from run data: Field names a
// time.Duration payload field as "Event.field", and the duration is the
// value of that field in the payload of the event that entered the state,
// clamped to [Min, Max]. After is then Min.
type Timer struct {
	After time.Duration
	Event string
	Field string        `json:",omitempty"`
	Min   time.Duration `json:",omitempty"`
	Max   time.Duration `json:",omitempty"`
}

// TimerDurations returns how long each of timers runs once its state is
// entered by an event named event with the JSON payload payload: its
// After, or for a timer that takes its duration from a field of that
// event, the field's value clamped to [Min, Max] (Min when the state was
// entered otherwise, or the field is absent).
func TimerDurations(timers []Timer, event string, payload []byte) []time.Duration {
	out := make([]time.Duration, len(timers))
	var fields map[string]json.RawMessage
	for i, t := range timers {
		out[i] = t.After
		if t.Field == "" {
			continue
		}
		out[i] = t.Min
		ev, field, _ := strings.Cut(t.Field, ".")
		if ev != event {
			continue
		}
		if fields == nil {
			fields = map[string]json.RawMessage{}
			_ = json.Unmarshal(payload, &fields) // an event without the field: Min
		}
		var d int64
		if raw, ok := fields[field]; ok && json.Unmarshal(raw, &d) == nil {
			out[i] = min(max(time.Duration(d), t.Min), t.Max)
		}
	}
	return out
}

// State returns the state named name.
func (d *Definition) State(name string) (StateSpec, bool) {
	if i, ok := d.names().stateAt(name); ok {
		return d.States[i], true
	}
	return StateSpec{}, false
}

// Nested reports whether d is a nested machine's definition: it has
// composite states, or a timer whose duration comes from an event. The
// store keeps the timer anchors, history and exited and entered states of
// the runs of such a machine (see Run.TimerAnchors and Run.History).
func (d *Definition) Nested() bool {
	if len(d.Composites) > 0 {
		return true
	}
	for _, s := range d.States {
		for _, t := range s.Timers {
			if t.Field != "" {
				return true
			}
		}
	}
	return false
}

// Composite returns the composite state named name.
func (d *Definition) Composite(name string) (CompositeSpec, bool) {
	if i, ok := d.names().compositeAt(name); ok {
		return d.Composites[i], true
	}
	return CompositeSpec{}, false
}

// Ancestors returns the composites that contain the state (leaf or
// composite) named name, innermost first: its parent, its parent's parent,
// and so on. It is empty for a top-level state and in a flat machine.
func (d *Definition) Ancestors(name string) []string {
	if len(d.Composites) == 0 {
		return nil
	}
	n := d.names()
	parent := ""
	if i, ok := n.stateAt(name); ok {
		parent = d.States[i].Parent
	} else if i, ok := n.compositeAt(name); ok {
		parent = d.Composites[i].Parent
	}
	var out []string
	for parent != "" && len(out) <= len(d.Composites) {
		out = append(out, parent)
		i, ok := n.compositeAt(parent)
		if !ok {
			break
		}
		parent = d.Composites[i].Parent
	}
	return out
}

// StartActions returns the entry actions of the states a run starts in,
// in the order they run: those of the outermost composite above the
// initial leaf first, the leaf's last. A run that starts or restarts runs
// them in the write that creates it (see Starter); none in a flat machine.
//
// A run that starts in a parallel state (Initial is a configuration)
// enters the composites above it, outermost first, then each region down
// to its leaf, region by region.
func (d *Definition) StartActions() []string {
	var out []string
	entered := map[string]bool{}
	for _, leaf := range d.Configuration(d.Initial) {
		for _, name := range slices.Backward(d.Ancestors(leaf)) {
			if !entered[name] {
				entered[name] = true
				c, _ := d.Composite(name)
				out = append(out, c.Entry...)
			}
		}
		s, _ := d.State(leaf)
		out = append(out, s.Entry...)
	}
	return out
}

// Validate checks the definition's internal consistency: one initial state,
// every transition naming declared states and events, no row leaving a
// terminal state; in a nested machine, every parent, initial child, history
// and exited or entered state declared, no composite its own ancestor, and
// timers that take their duration from an event name a time.Duration field
// of it with bounds; with parallel states, each with two or more regions
// and no initial child, none inside another, no history in, of or above
// one, no state name holding ConfigurationSeparator, rows from a leaf or a
// parallel state to a leaf or a whole configuration, and no row from
// outside a region to a leaf of it. Generated definitions always pass; it
// guards hand-built ones.
func (d *Definition) Validate() error {
	if d.Type == "" {
		return fmt.Errorf("definition of %q: empty type name", d.Machine)
	}
	if d.Version < 1 {
		return fmt.Errorf("definition %s: version %d, want >= 1", d.Type, d.Version)
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("definition %s v%d: "+format, append([]any{d.Type, d.Version}, args...)...)
	}
	states := make(map[string]StateSpec, len(d.States))
	initial := 0
	for _, s := range d.States {
		if _, dup := states[s.Name]; dup {
			return fail("duplicate state %s", s.Name)
		}
		states[s.Name] = s
		if s.Initial {
			initial++
		}
	}
	if initial != 1 || !states[d.Configuration(d.Initial)[0]].Initial {
		return fail("want exactly one initial state named by Initial, have %d", initial)
	}
	events := make(map[string]EventSpec, len(d.Events))
	for _, e := range d.Events {
		events[e.Name] = e
	}
	if _, ok := events[d.Cancel]; d.Cancel != "" && !ok {
		return fail("unknown cancel event %s", d.Cancel)
	}
	if err := d.validateNesting(states, events); err != nil {
		return fail("%w", err)
	}
	composites := make(map[string]bool, len(d.Composites))
	for _, c := range d.Composites {
		composites[c.Name] = true
	}
	histories := make(map[string]bool)
	for _, c := range d.Composites {
		for _, h := range c.History {
			histories[h.Name] = true
		}
	}
	parallel := d.parallelIndex()
	for _, t := range d.Transitions {
		if len(parallel) > 0 || strings.Contains(t.To, ConfigurationSeparator) {
			if err := d.validateParallelRow(t, parallel); err != nil {
				return fail("%w", err)
			}
		}
		from, ok := states[t.From]
		if !ok && parallel[t.From] != nil {
			from, ok = StateSpec{Name: t.From, Status: StatusRunning}, true
		}
		if !ok {
			if composites[t.From] {
				return fail("transition from composite state %s: rows are listed from each leaf", t.From)
			}
			return fail("transition from unknown state %s", t.From)
		}
		if _, ok := states[t.To]; !ok && !strings.Contains(t.To, ConfigurationSeparator) {
			if composites[t.To] {
				return fail("transition to composite state %s: rows are listed to the leaf entered", t.To)
			}
			return fail("transition to unknown state %s", t.To)
		}
		if _, ok := events[t.Event]; t.Event != "" && !ok {
			return fail("transition on unknown event %s", t.Event)
		}
		if t.Done && t.Event != "" {
			return fail("completion row %s -> %s has event %s, want none", t.From, t.To, t.Event)
		}
		if from.Terminal() {
			return fail("transition out of terminal state %s", t.From)
		}
		if t.History != "" && !histories[t.History] {
			return fail("transition %s -> %s to unknown history %s", t.From, t.To, t.History)
		}
		for _, names := range [][]string{t.Exit, t.Enter} {
			for _, n := range names {
				if _, ok := states[n]; !ok && !composites[n] {
					return fail("transition %s -> %s exits or enters unknown state %s", t.From, t.To, n)
				}
			}
		}
		if last := d.Configuration(t.To); len(t.Enter) > 0 && t.Enter[len(t.Enter)-1] != last[len(last)-1] {
			return fail("transition %s -> %s enters %s last, want %s", t.From, t.To, t.Enter[len(t.Enter)-1], last[len(last)-1])
		}
	}
	return nil
}

// validateNesting checks the composites, the parents of states, the
// histories, the actions and the timers.
func (d *Definition) validateNesting(states map[string]StateSpec, events map[string]EventSpec) error {
	comps := make(map[string]CompositeSpec, len(d.Composites))
	names := make(map[string]bool)
	for _, s := range d.States {
		if strings.Contains(s.Name, ConfigurationSeparator) {
			return fmt.Errorf("state %q: a name holds no %s, which joins the leaves of a configuration", s.Name, ConfigurationSeparator)
		}
	}
	for _, c := range d.Composites {
		for _, n := range append([]string{c.Name}, historyNames(c)...) {
			if strings.Contains(n, ConfigurationSeparator) {
				return fmt.Errorf("state %q: a name holds no %s, which joins the leaves of a configuration", n, ConfigurationSeparator)
			}
		}
		if _, dup := states[c.Name]; dup {
			return fmt.Errorf("composite %s is also a leaf state", c.Name)
		}
		if _, dup := comps[c.Name]; dup {
			return fmt.Errorf("duplicate composite state %s", c.Name)
		}
		comps[c.Name] = c
		for _, h := range c.History {
			if _, dup := states[h.Name]; dup || names[h.Name] {
				return fmt.Errorf("history %s of %s: the name is taken", h.Name, c.Name)
			}
			names[h.Name] = true
		}
	}
	for _, c := range d.Composites {
		if names[c.Name] {
			return fmt.Errorf("history %s: the name is taken", c.Name)
		}
	}
	parentOf := func(name string) string {
		if s, ok := states[name]; ok {
			return s.Parent
		}
		return comps[name].Parent
	}
	children := make(map[string]int)
	for _, s := range d.States {
		if s.Parent == "" {
			continue
		}
		if _, ok := comps[s.Parent]; !ok {
			return fmt.Errorf("state %s: unknown parent %s", s.Name, s.Parent)
		}
		children[s.Parent]++
	}
	for _, c := range d.Composites {
		if c.Parent != "" {
			if _, ok := comps[c.Parent]; !ok {
				return fmt.Errorf("composite %s: unknown parent %s", c.Name, c.Parent)
			}
			children[c.Parent]++
		}
		// No composite is its own ancestor: the chain of parents ends
		// within as many steps as there are composites.
		p, n := c.Parent, 0
		for ; p != "" && n <= len(comps); n++ {
			if p == c.Name {
				break
			}
			p = comps[p].Parent
		}
		if p != "" {
			return fmt.Errorf("composite %s is its own ancestor", c.Name)
		}
		if children[c.Name] == 0 && !hasChild(d, c.Name) {
			return fmt.Errorf("composite %s has no children", c.Name)
		}
		if c.Parallel {
			continue // its regions are checked by validateParallel
		}
		if _, isLeaf := states[c.Initial]; !isLeaf {
			if _, isComp := comps[c.Initial]; !isComp {
				return fmt.Errorf("composite %s: unknown initial child %s", c.Name, c.Initial)
			}
		}
		if parentOf(c.Initial) != c.Name {
			return fmt.Errorf("composite %s: initial %s is not its child", c.Name, c.Initial)
		}
	}
	if err := d.validateParallel(comps); err != nil {
		return err
	}
	if strings.Contains(d.Initial, ConfigurationSeparator) {
		if _, err := d.configurationOf(d.Initial, d.parallelIndex()); err != nil {
			return fmt.Errorf("initial state: %w", err)
		}
	}
	for _, leaf := range d.Configuration(d.Initial) {
		// An initial leaf is the initial child of each of its ancestors,
		// but of a parallel state, whose regions are all entered.
		for child, p := leaf, states[leaf].Parent; p != ""; child, p = p, comps[p].Parent {
			if !comps[p].Parallel && comps[p].Initial != child {
				return fmt.Errorf("initial state %s is not the initial leaf of %s", leaf, p)
			}
		}
	}
	actions := make(map[string]bool, len(d.Actions))
	for _, a := range d.Actions {
		actions[a] = true
	}
	checkActions := func(state string, lists ...[]string) error {
		for _, l := range lists {
			for _, a := range l {
				if !actions[a] {
					return fmt.Errorf("state %s: unknown action %s", state, a)
				}
			}
		}
		return nil
	}
	checkTimers := func(state string, ts []Timer) error {
		for _, t := range ts {
			if _, ok := events[t.Event]; !ok && (t.Field != "" || len(d.Composites) > 0) {
				return fmt.Errorf("state %s: timer fires unknown event %s", state, t.Event)
			}
			if t.Field == "" {
				continue
			}
			ev, field, ok := strings.Cut(t.Field, ".")
			if !ok {
				return fmt.Errorf("state %s: timer field %q, want Event.field", state, t.Field)
			}
			spec, ok := events[ev]
			if !ok {
				return fmt.Errorf("state %s: timer field %s of unknown event %s", state, t.Field, ev)
			}
			if !slices.ContainsFunc(spec.Fields, func(f FieldSpec) bool { return f.Name == field && f.Type == "time.Duration" }) {
				return fmt.Errorf("state %s: timer field %s: event %s has no time.Duration field %s", state, t.Field, ev, field)
			}
			if t.Min <= 0 || t.Max < t.Min {
				return fmt.Errorf("state %s: timer field %s: bounds [%s, %s], want 0 < min <= max", state, t.Field, t.Min, t.Max)
			}
		}
		return nil
	}
	for _, s := range d.States {
		if err := checkActions(s.Name, s.Entry, s.Exit); err != nil {
			return err
		}
		if err := checkTimers(s.Name, s.Timers); err != nil {
			return err
		}
	}
	for _, c := range d.Composites {
		if err := checkActions(c.Name, c.Entry, c.Exit); err != nil {
			return err
		}
		if err := checkTimers(c.Name, c.Timers); err != nil {
			return err
		}
	}
	return nil
}

func hasChild(d *Definition, name string) bool {
	for _, c := range d.Composites {
		if c.Parent == name {
			return true
		}
	}
	return false
}
