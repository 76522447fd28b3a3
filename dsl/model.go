package dsl

import (
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/alecthomas/participle/v2/lexer"
)

// Spec is a checked .fsm file: its machines, every name resolved and every
// rule of the language verified. The generator works from a Spec only.
type Spec struct {
	// Filename is the file's path as given to Parse.
	Filename string
	Machines []*Machine
}

// Machine is a checked machine.
type Machine struct {
	Pos lexer.Position
	// Name is the machine's name as written, a Go identifier.
	Name string
	Doc  []string
	// Type is the persisted type name and Version the definition version.
	Type    string
	Version int
	// Package is the generated Go package's name.
	Package string

	// States are the leaf states, the ones a run can be in (its persisted
	// state is always one of them), in declaration order. In a flat
	// machine they are all its states.
	States []*State
	// Initial is the leaf a run starts in: the initial state declared at
	// the top level, followed down through initial children when it is a
	// composite. When that leads into a parallel state, the run starts in
	// a configuration (InitialConfig) and Initial is its first region's
	// leaf.
	Initial *State
	// InitialConfig are the leaves a run starts in: Initial alone, or, when
	// it starts in a parallel state, the initial leaf of each region, in
	// region order.
	InitialConfig []*State
	// Composites are the composite states, those with children, in
	// declaration order. A run is never in a composite alone: it is in
	// one of its leaves, and so in each of the leaf's ancestors.
	Composites []*State
	// Roots are the top-level states, leaves and composites, in
	// declaration order: the tree the diagrams draw.
	Roots []*State
	// Parallels are the parallel states, in declaration order (they are
	// among Composites too).
	Parallels []*State
	// Histories are the history pseudostates, in declaration order.
	Histories []*History
	Events    []*Event
	Guards    []*Guard
	// Actions are the entry and exit actions, in declaration order.
	Actions     []*Action
	Transitions []*Transition

	// Cancel is the event a run's owner fires to cancel a run, nil when the
	// machine declares none (its runs cannot be cancelled by the runtime).
	Cancel *Event

	// Upgrades say how the runs of older versions of the machine, declared
	// in the same file, move to this one: one per upgrade declaration.
	Upgrades []*Upgrade
}

// State is a checked state.
type State struct {
	Pos  lexer.Position
	Name string
	Doc  []string
	// GoName is the CamelCase form of Name used in generated identifiers.
	GoName  string
	Initial bool
	// Status is "" for a non-terminal state, else succeeded, failed or cancelled.
	Status  string
	Outcome string
	Wait    bool
	Retry   *Retry
	Timers  []*Timer
	// Index is a leaf's position in Machine.States, a composite's in
	// Machine.Composites.
	Index int

	// Parent is the composite that contains the state, nil at the top
	// level; Depth counts its ancestors.
	Parent *State
	Depth  int
	// Children are a composite's substates in declaration order (history
	// pseudostates apart); nil for a leaf.
	Children []*State
	// InitialChild is the child that a transition to the composite
	// enters; nil for a leaf.
	InitialChild *State
	// History are the history pseudostates the composite declares.
	History []*History
	// Entry and Exit are the actions run when the state is entered and
	// exited, in the order written.
	Entry, Exit []*Action
	// Done marks a final state inside a composite: it has no status (the
	// run goes on), and entering it completes its parent, which enables
	// the parent's "on done" rows.
	Done bool
	// Parallel marks a parallel state: a composite whose children are its
	// regions, composites that are all active at once, each in one of its
	// own leaves. A parallel state has no InitialChild: entering it enters
	// every region. It is complete once every region has a final child
	// (Done) active.
	Parallel bool
}

// Composite reports whether the state has children.
func (s *State) Composite() bool { return len(s.Children) > 0 }

// Ancestors returns the composites that contain s, innermost first.
func (s *State) Ancestors() []*State {
	var out []*State
	for p := s.Parent; p != nil; p = p.Parent {
		out = append(out, p)
	}
	return out
}

// In reports whether s is a or a descendant of a.
func (s *State) In(a *State) bool {
	for x := s; x != nil; x = x.Parent {
		if x == a {
			return true
		}
	}
	return false
}

// InitialLeaf returns the leaf a transition to s enters: s itself for a
// leaf, else the initial leaf of its initial child; for a parallel state,
// of its first region (InitialConfig has the leaf of every region).
func (s *State) InitialLeaf() *State {
	for s.Composite() {
		if s.Parallel {
			s = s.Children[0]
			continue
		}
		s = s.InitialChild
	}
	return s
}

// InitialConfig returns the leaves a transition to s enters: its
// InitialLeaf alone, or, through a parallel state, the initial leaf of
// each of its regions, in region order.
func (s *State) InitialConfig() []*State {
	switch {
	case !s.Composite():
		return []*State{s}
	case s.Parallel:
		var out []*State
		for _, r := range s.Children {
			out = append(out, r.InitialConfig()...)
		}
		return out
	}
	return s.InitialChild.InitialConfig()
}

// Region returns the parallel state that s is inside, the nearest one,
// and the region of it that holds s (s itself when s is a region); both
// are nil when s is in no parallel state. A parallel state is not inside
// itself.
func (s *State) Region() (parallel, region *State) {
	for c := s; c.Parent != nil; c = c.Parent {
		if c.Parent.Parallel {
			return c.Parent, c
		}
	}
	return nil, nil
}

// Concurrent reports whether s and o are in different regions of one
// parallel state: both can be active at once, one in each.
func (s *State) Concurrent(o *State) bool {
	p, r := s.Region()
	for p != nil {
		if o.In(p) && o != p && !o.In(r) {
			return true
		}
		p, r = p.Region()
	}
	return false
}

// Units returns the states in s that a row written on s applies to one
// by one, in declaration order: its leaves, except that a parallel state
// stands for all of its leaves (s itself when s is a leaf or parallel).
func (s *State) Units() []*State {
	if !s.Composite() || s.Parallel {
		return []*State{s}
	}
	var out []*State
	for _, c := range s.Children {
		out = append(out, c.Units()...)
	}
	return out
}

// Leaves returns the leaves in s (s itself for a leaf), in declaration
// order.
func (s *State) Leaves() []*State {
	if !s.Composite() {
		return []*State{s}
	}
	var out []*State
	for _, c := range s.Children {
		out = append(out, c.Leaves()...)
	}
	return out
}

// History is a history pseudostate of a composite: a transition to it
// enters the composite where the run last left it. A shallow history
// remembers the child the run was last in (and enters that child's
// initial leaf when the child is a composite); a deep history remembers
// the leaf. A composite the run has never left enters its initial leaf.
type History struct {
	Pos  lexer.Position
	Name string
	Doc  []string
	Deep bool
	// Parent is the composite whose history this is.
	Parent *State
}

// Action is an entry or exit action, implemented in Go.
type Action struct {
	Pos    lexer.Position
	Name   string
	Doc    []string
	GoName string
}

// RuntimeFired returns the events the runtime fires itself rather than a
// caller: the events of the states' timers and of their retry policies'
// else clauses.
func (m *Machine) RuntimeFired() map[*Event]bool {
	out := map[*Event]bool{}
	for _, s := range slices.Concat(m.States, m.Composites) {
		for _, tm := range s.Timers {
			out[tm.Event] = true
		}
		if s.Retry != nil && s.Retry.Exhausted != nil {
			out[s.Retry.Exhausted] = true
		}
	}
	return out
}

// Sender says who may send event e to a run in state s (nil for any
// state): "" when callers may (Signal, the typed handle, fsmctl runs
// signal), else who sends it: "the handler of S", "the timer of S" or "the
// retry policy of S". It is the rule of runtime.Definition.CallerRefusal:
// the cancel event and
// events declared external are callers' in every state; timers' and retry
// policies' else events are the runtime's; a driven state's rows' events
// are its handler's; a wait state's rows' events are callers', and an
// event that no wait state has a row on is a handler's in every state.
func (m *Machine) Sender(s *State, e *Event) string {
	if e == m.Cancel || e.External {
		return ""
	}
	for _, states := range [2][]*State{m.States, m.Composites} {
		for _, st := range states {
			for _, tm := range st.Timers {
				if tm.Event == e {
					return "the timer of " + st.Name
				}
			}
			if st.Retry != nil && st.Retry.Exhausted == e {
				return "the retry policy of " + st.Name
			}
		}
	}
	waits := false
	var handler *State
	for _, t := range m.Transitions {
		if t.Event != e {
			continue
		}
		switch {
		case t.From.Wait || t.From.Parallel:
			// A row on a parallel state is a wait state's: no handler
			// of its own returns its event.
			waits = true
		case t.From == s:
			return "the handler of " + s.Name
		case handler == nil:
			handler = t.From
		}
	}
	if waits || handler == nil {
		return ""
	}
	return "the handler of " + handler.Name
}

// CallerEvent reports whether callers may send e in some state of the
// machine (Sender with no state): the typed handle has a method for it.
func (m *Machine) CallerEvent(e *Event) bool { return m.Sender(nil, e) == "" }

// Terminal reports whether the state is final.
func (s *State) Terminal() bool { return s.Status != "" }

// Driven reports whether the runtime calls a handler in this state.
func (s *State) Driven() bool { return !s.Terminal() && !s.Wait }

// Retry is a state's retry policy: a preset, or the numbers written out.
type Retry struct {
	// Preset names one of the runtime's policies; the other fields are zero.
	Preset      string
	MaxAttempts int
	// FromPolicy makes MaxAttempts a bound (retry up to N): each run's
	// policy snapshot chooses its attempts within it.
	FromPolicy   bool
	Initial      time.Duration
	Factor       float64
	Max          time.Duration
	Jitter       float64
	NonRetryable []string
	// Exhausted is the event fired when the policy gives up, nil when the
	// state declares none.
	Exhausted    *Event
	ExhaustedPos lexer.Position
}

// RetryPresets are the runtime's named retry policies.
var RetryPresets = []string{"validation", "database", "externalService", "payment", "background"}

// Timer fires Event after the run has spent After in the state (for a
// composite, anywhere inside it, counted from when the run entered it).
type Timer struct {
	Pos   lexer.Position
	After time.Duration
	// Text is the duration as written.
	Text  string
	Event *Event
	// Field, when not nil, is the time.Duration payload field of the
	// event FieldOf that the duration is taken from at run time (after
	// Polled.interval min 1s max 10m Tick): the value of the event that
	// last entered the state, clamped to [Min, Max]. After is then Min.
	FieldOf  *Event
	Field    *PayloadField
	Min, Max time.Duration
}

// Event is a checked event.
type Event struct {
	Pos    lexer.Position
	Name   string
	Doc    []string
	GoName string
	Fields []*PayloadField
	// External marks an event that callers may send in every state,
	// although the runtime fires it (a timer's or a retry's else event) or
	// a driven state's handler returns it (see Machine.Sender).
	External bool
}

// PayloadField is a payload field of an event.
type PayloadField struct {
	Pos lexer.Position
	// Name is the field's name as written, also its JSON name; GoName the
	// exported Go field name.
	Name   string
	GoName string
	Type   Type
}

// Type is a field's Go type.
type Type struct {
	Slice bool
	// Path is the import path of a named type's package ("time" for
	// time.Time), empty for a builtin.
	Path string
	Name string
}

// String returns the type as Go source would name it from outside its
// package, using the last element of the import path: []byte, time.Time,
// money.Amount.
func (t Type) String() string {
	s := t.Name
	if t.Path != "" {
		s = t.Path[strings.LastIndex(t.Path, "/")+1:] + "." + t.Name
	}
	if t.Slice {
		s = "[]" + s
	}
	return s
}

// Guard is a checked guard.
type Guard struct {
	Pos    lexer.Position
	Name   string
	Doc    []string
	GoName string
	// Events are the distinct events the guard is used with, in order of
	// first use. With one event the generated method takes that event's
	// type; with several, the Event interface.
	Events []*Event
	// Eventless reports that the guard is used on an eventless or
	// completion ("on done") row, where no event is at hand: the
	// generated method then takes the machine's Event interface, whatever
	// Events holds, and an eventless row calls it with nil.
	Eventless bool
}

// Transition is one row of the transition table, after FROM lists and *
// have been expanded: one Transition per source state, in the order the
// machine tries them.
type Transition struct {
	Pos lexer.Position
	Doc []string
	// From is the state the row leaves: a leaf, or a parallel state for a
	// row written on it or above it (one row for every configuration of
	// it, never one per configuration). A row written inside a region
	// has a leaf of that region as From.
	From *State
	// To is the leaf the run ends in. For a row that enters a parallel
	// state from outside it, To is the leaf entered in the region that
	// holds Target (in the first region when Target is the parallel state
	// or above it), and Config lists the leaf entered in every region.
	To *State
	// Config is nil unless the row enters a parallel state from outside
	// it: then the leaves entered, one per region, in region order (the
	// run's persisted state joins their names with "|").
	Config []*State
	Event  *Event
	// Guard is nil for an unguarded row; Negated inverts it.
	Guard *Guard
	// In, when not nil, is the state a guard "when In(S)" tests instead
	// of a named guard: the row is taken only while In is active, read
	// from the configuration before the step (while it is not, when
	// Negated). Guard is then nil.
	In      *State
	Negated bool
	// Outcome is the business outcome of a terminal target: the row's own,
	// else the target state's.
	Outcome string
	// Star reports that the row was written with * as its FROM. The rows
	// that one written row expands to share its Pos.
	Star bool

	// Source is the state the row was written on: From itself, or the
	// composite ancestor of From whose row applies to it. Rows are tried
	// innermost first, so From's own rows come before its parent's.
	Source *State
	// Target is the state the row names: To itself, or a composite whose
	// initial leaf To is; nil when the row targets a history pseudostate.
	// An internal row whose Target is its Source stays in the leaf the run
	// is in: To is From, and Exit and Enter are empty.
	Target *State
	// History is the history pseudostate the row targets, nil otherwise;
	// To is then the leaf entered while the composite has no history.
	History *History
	// Event is nil for an eventless row, which is taken as soon as From
	// is active and its guard holds, after the transition that entered
	// it. Done marks a row "on done": eventless, and taken only once
	// Source, a composite, is complete (its active child is a final one).
	Done bool
	// Internal marks a row that does not exit Source: its entry and exit
	// actions do not run and its timers keep running. A row is external
	// (it exits and re-enters Source, restarting its timers) unless
	// written internal.
	Internal bool
	// Exit are the states the transition exits, innermost first, and
	// Enter those it enters, outermost first, ending at To (for a
	// history target, those of the default leaf To). A row that enters a
	// parallel state enters it, then each region in order, from the
	// region down to its leaf: Enter ends at the last region's leaf. A row
	// whose From is a parallel state, or a leaf of a region that leaves
	// its parallel state, also exits the active states of the (other)
	// regions, innermost first, region by region, before those listed:
	// which they are depends on the configuration, so Exit lists From and
	// its ancestors only.
	Exit, Enter []*State
}

// goName turns a .fsm name into an exported Go identifier: UPPER_SNAKE and
// lower_snake become CamelCase, lowerCamel gets its first letter raised,
// and common initialisms stay upper case (ID, URL, HTML...), also inside a
// lowerCamel name: workerId becomes WorkerID.
func goName(s string) string {
	parts := strings.FieldsFunc(s, func(r rune) bool { return r == '_' })
	var b strings.Builder
	for _, p := range parts {
		if isUpper(p) {
			if initialisms[p] {
				b.WriteString(p)
				continue
			}
			p = strings.ToLower(p)
		}
		for _, w := range camelWords(p) {
			if up := strings.ToUpper(w); initialisms[up] {
				b.WriteString(up)
				continue
			}
			b.WriteString(upperFirst(w))
		}
	}
	out := b.String()
	if out == "" || !unicode.IsLetter(rune(out[0])) {
		out = "X" + out
	}
	return out
}

// camelWords splits a lowerCamel or CamelCase name into its words, so
// that an initialism inside it is recognised: workerId -> worker Id,
// HTMLAvailable -> HTML Available, costUSD -> cost USD.
func camelWords(s string) []string {
	rs := []rune(s)
	var words []string
	start := 0
	for i := 1; i < len(rs); i++ {
		lowerToUpper := !unicode.IsUpper(rs[i-1]) && unicode.IsUpper(rs[i])
		acronymEnd := unicode.IsUpper(rs[i-1]) && unicode.IsUpper(rs[i]) && i+1 < len(rs) && unicode.IsLower(rs[i+1])
		if lowerToUpper || acronymEnd {
			words = append(words, string(rs[start:i]))
			start = i
		}
	}
	return append(words, string(rs[start:]))
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func isUpper(s string) bool {
	hasLetter := false
	for _, r := range s {
		if unicode.IsLower(r) {
			return false
		}
		if unicode.IsLetter(r) {
			hasLetter = true
		}
	}
	return hasLetter
}

var initialisms = map[string]bool{
	"API": true, "HTML": true, "HTTP": true, "ID": true, "JSON": true,
	"SQL": true, "URL": true, "UUID": true, "URI": true, "CSV": true,
}

// snakeCase turns a CamelCase name into snake_case: RetrieveOrGenerate ->
// retrieve_or_generate, FCHA -> fcha, HTTPServer -> http_server.
func snakeCase(s string) string {
	var b strings.Builder
	rs := []rune(s)
	for i, r := range rs {
		if unicode.IsUpper(r) {
			if i > 0 && (unicode.IsLower(rs[i-1]) || (i+1 < len(rs) && unicode.IsLower(rs[i+1]) && unicode.IsUpper(rs[i-1]))) {
				b.WriteByte('_')
			}
			b.WriteRune(unicode.ToLower(r))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
