package dsl

import (
	"errors"
	"fmt"
	"go/token"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/participle/v2/lexer"
	"golang.org/x/mod/module"
)

// Load parses and checks one .fsm source: the usual entry point. The
// returned diagnostics hold every error and warning found, sorted by
// position; the Spec is nil when there is any error.
func Load(filename string, src []byte) (*Spec, Diagnostics) {
	f, err := Parse(filename, src)
	if err != nil {
		if l, ok := err.(ErrorList); ok {
			return nil, Diagnostics(l)
		}
		return nil, Diagnostics{{Pos: lexer.Position{Filename: filename, Line: 1, Column: 1}, Message: err.Error()}}
	}
	return Check(f)
}

// Check verifies a parsed file and builds its Spec. It reports every
// problem it finds, not just the first; the Spec is nil when any of them is
// an error.
func Check(f *File) (*Spec, Diagnostics) {
	c := &checker{}
	spec := &Spec{Filename: f.Pos.Filename}
	if len(f.Machines) == 0 {
		pos := f.Pos
		pos.Offset, pos.Line, pos.Column = 0, 1, 1
		c.errorf(pos, "no machine declared; a file holds one or more \"machine Name { ... }\" blocks")
	}
	machineNames := map[string]lexer.Position{}
	packages := map[string]lexer.Position{}
	types := map[typeVersion]lexer.Position{}
	checkers := map[*Machine]*machineChecker{}
	for _, md := range f.Machines {
		m, mc := c.machine(md)
		checkers[m] = mc
		spec.Machines = append(spec.Machines, m)
		if prev, dup := machineNames[m.Name]; dup {
			// The package and type names collide too; one error is enough.
			c.errorf(md.Pos, "machine %s declared twice (first at %s)", m.Name, short(prev))
			continue
		}
		machineNames[m.Name] = md.Pos
		if prev, dup := packages[m.Package]; dup {
			c.errorf(md.Pos, "machine %s would generate package %s, as does the machine at %s; give one of them another \"package NAME\"", m.Name, m.Package, short(prev))
		} else {
			packages[m.Package] = md.Pos
		}
		if prev, dup := types[typeVersion{m.Type, m.Version}]; dup {
			c.errorf(md.Pos, "machine %s has type name %q and version %d, as does the machine at %s; give one of them another \"type\", or the newer one another \"version\"", m.Name, m.Type, m.Version, short(prev))
		} else {
			types[typeVersion{m.Type, m.Version}] = md.Pos
		}
	}
	c.upgrades(f, spec.Machines, checkers)
	c.diags.sort()
	if c.diags.HasErrors() {
		return nil, c.diags
	}
	return spec, c.diags
}

// maxStates is the most states a machine may have: a generated State is a
// uint16, and its largest value is kept for "no state".
const maxStates = 65535

type checker struct {
	diags Diagnostics
}

func (c *checker) errorf(pos lexer.Position, format string, args ...any) {
	c.diags = append(c.diags, Diagnostic{Pos: pos, Severity: Error, Message: fmt.Sprintf(format, args...)})
}

func (c *checker) warnf(pos lexer.Position, format string, args ...any) {
	c.diags = append(c.diags, Diagnostic{Pos: pos, Severity: Warning, Message: fmt.Sprintf(format, args...)})
}

// short renders a position as line:col, for messages about the same file.
func short(p lexer.Position) string { return fmt.Sprintf("%d:%d", p.Line, p.Column) }

// machineChecker holds the symbol tables of one machine.
type machineChecker struct {
	*checker
	m      *Machine
	states map[string]*State
	events map[string]*Event
	guards map[string]*Guard
	// histories and actions are the history pseudostates and actions by
	// name; topInitial is the top-level initial state, a leaf or a
	// composite.
	histories  map[string]*History
	actions    map[string]*Action
	topInitial *State
	used       struct{ events, guards, actions map[string]bool }
	// handled holds the (state, event) pairs with a row, built by handles.
	handled map[stateEvent]bool
	// tooMany records that the machine's rows expand to more than
	// MaxTransitions transitions: the rest are not added.
	tooMany bool
	// timerEvent is the position of each timer's event name.
	timerEvent map[*Timer]lexer.Position
	// rowEvents holds the events named by a transition row, including rows
	// dropped for another error.
	rowEvents map[*Event]bool
	// skipGraph records an error that leaves the graph of states
	// incomplete or ambiguous (a row naming an unknown state, event or
	// guard, a row out of a final state, a second initial state): its
	// reachability verdicts would only echo that error.
	skipGraph bool
	// unsure holds the (state, event) pairs of rows dropped for an unknown
	// name, a nil state standing for every state (a row from an unknown
	// one) and a nil event for every event (a row on an unknown one):
	// whether such a state has a row on such an event is not known, and a
	// check that it has one would only echo the error (see mayHandle).
	unsure map[stateEvent]bool
	// unknownRefs records the kinds ("event", "guard") of which a name
	// that is not declared is referred to: the declaration it was meant to
	// refer to is then not reported as never used.
	unknownRefs map[string]bool
	// unknownRowEvent records a row on an unknown event: which events
	// have rows is not known.
	unknownRowEvent bool
	// lostTimer holds the states of which a timer is dropped for its
	// unknown event: checks about their timers would only echo the error.
	lostTimer map[*State]bool
}

// leafKey is a leaf (or parallel state) and an event, or completion.
type leafKey struct {
	s    *State
	e    *Event
	done bool
}

// stateEvent is a pair of a state and an event.
type stateEvent struct {
	s *State
	e *Event
}

func (c *checker) machine(md *MachineDecl) (*Machine, *machineChecker) {
	m := &Machine{Pos: md.Pos, Name: md.Name, Doc: md.Doc, Version: 1}
	mc := &machineChecker{checker: c, m: m,
		states: map[string]*State{}, events: map[string]*Event{}, guards: map[string]*Guard{},
		histories: map[string]*History{}, actions: map[string]*Action{},
		timerEvent: map[*Timer]lexer.Position{}, rowEvents: map[*Event]bool{},
		unsure: map[stateEvent]bool{}, unknownRefs: map[string]bool{}, lostTimer: map[*State]bool{}}
	mc.used.events, mc.used.guards, mc.used.actions = map[string]bool{}, map[string]bool{}, map[string]bool{}
	if !token.IsExported(md.Name) {
		c.errorf(md.Pos, "machine name %s must start with an upper-case letter", md.Name)
	}
	mc.header(md)
	// Declarations first, so that transitions may refer to names declared
	// below them.
	var stateDecls []*StateDecl
	for _, it := range md.Items {
		switch {
		case it.State != nil:
			mc.declareState(it.State, it.Doc, nil)
			stateDecls = append(stateDecls, it.State)
		case it.History != nil:
			mc.declareHistory(it.History, it.Doc, nil)
		case it.Event != nil:
			mc.declareEvent(it.Event, it.Doc)
		case it.Guard != nil:
			mc.declareGuard(it.Guard, it.Doc)
		case it.Action != nil:
			mc.declareAction(it.Action, it.Doc)
		}
	}
	if n := len(m.States) + len(m.Composites); n > maxStates {
		c.errorf(md.Pos, "machine %s has %d states; a machine has at most %d", m.Name, n, maxStates)
	}
	if mc.topInitial != nil {
		m.Initial = mc.topInitial.InitialLeaf()
		m.InitialConfig = mc.topInitial.InitialConfig()
	}
	mc.parallelHistory()
	if m.Initial == nil {
		c.errorf(md.Pos, "machine %s has no initial state; declare one with \"initial NAME\"", m.Name)
	}
	for _, sd := range stateDecls {
		mc.stateOptions(sd)
	}
	rows := 0
	for _, it := range md.Items {
		if it.Transition != nil {
			mc.transition(it.Transition, it.Doc)
			rows++
		}
	}
	// Innermost first: for a leaf, its own rows come before its parent's,
	// and rows of one source stay in the order written.
	slices.SortStableFunc(m.Transitions, func(a, b *Transition) int { return b.Source.Depth - a.Source.Depth })
	if rows == 0 && m.Initial != nil {
		// Reachability would only echo this: every other state is
		// unreachable.
		c.errorf(md.Pos, "machine %s has no transitions: a run could never leave its initial state %s; add one, such as \"%s -> DONE on EVENT\"", m.Name, m.Initial.Name, m.Initial.Name)
		mc.skipGraph = true
	}
	mc.groups()
	mc.nested()
	mc.timers()
	mc.cancel(md)
	mc.graph()
	mc.senders()
	mc.unused()
	mc.goNames()
	return m, mc
}

func (mc *machineChecker) header(md *MachineDecl) {
	var typ, ver, pkg *Item
	for _, it := range md.Items {
		switch {
		case it.Type != nil:
			if typ != nil {
				mc.errorf(it.Pos, "type declared twice (first at %s)", short(typ.Pos))
				continue
			}
			typ = it
			v, err := unquote(it.Type.Name)
			if err != nil {
				mc.errorf(it.Type.Pos, "%v", err)
				continue
			}
			if !validTypeName(v) {
				mc.errorf(it.Type.Pos, "invalid type name %q: want letters, digits, '_', '-' and '.', starting with a letter", v)
			}
			mc.m.Type = v
		case it.Version != nil:
			if ver != nil {
				mc.errorf(it.Pos, "version declared twice (first at %s)", short(ver.Pos))
				continue
			}
			ver = it
			n, err := parseCount(it.Version.Number)
			if errors.Is(err, errTooLarge) {
				mc.errorf(it.Version.Pos, "version %v", err)
				continue
			}
			if err != nil || n < 1 {
				mc.errorf(it.Version.Pos, "version %s: want a whole number >= 1", it.Version.Number)
				continue
			}
			mc.m.Version = n
		case it.Package != nil:
			if pkg != nil {
				mc.errorf(it.Pos, "package declared twice (first at %s)", short(pkg.Pos))
				continue
			}
			pkg = it
			name := it.Package.Name
			if name != strings.ToLower(name) || token.IsKeyword(name) || name == "_" || name == "main" {
				mc.errorf(it.Package.Pos, "invalid package name %s: want a lower-case Go identifier other than a keyword, _ or main", name)
			}
			mc.m.Package = name
		}
	}
	if mc.m.Type == "" {
		mc.m.Type = snakeCase(md.Name)
	}
	if mc.m.Package == "" {
		mc.m.Package = strings.ToLower(md.Name)
		switch {
		case token.IsKeyword(mc.m.Package):
			mc.errorf(md.Pos, "machine %s would generate package %s, a Go keyword; add \"package NAME\"", md.Name, mc.m.Package)
		case mc.m.Package == "main":
			mc.errorf(md.Pos, "machine %s would generate package main, which is a command, not a library; add \"package NAME\"", md.Name)
		}
	}
}

func validTypeName(s string) bool {
	if s == "" || !isLetter(rune(s[0])) {
		return false
	}
	for _, r := range s {
		if !isLetter(r) && !(r >= '0' && r <= '9') && r != '_' && r != '-' && r != '.' {
			return false
		}
	}
	return true
}

func isLetter(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' }

// declared returns the position of the state or history pseudostate
// named name, and whether there is one: the two share one name space.
func (mc *machineChecker) declared(name string) (lexer.Position, bool) {
	if s := mc.states[name]; s != nil {
		return s.Pos, true
	}
	if h := mc.histories[name]; h != nil {
		return h.Pos, true
	}
	return lexer.Position{}, false
}

// declareState declares a state and, for a composite, its children;
// parent is the composite it is written in, nil at the top level.
func (mc *machineChecker) declareState(sd *StateDecl, doc []string, parent *State) {
	name := sd.Name.Value
	if prev, dup := mc.declared(name); dup {
		mc.errorf(sd.Name.Pos, "state %s declared twice (first at %s)", name, short(prev))
		return
	}
	s := &State{Pos: sd.Name.Pos, Name: name, Doc: doc, GoName: goName(name), Parent: parent}
	if parent != nil {
		s.Depth = parent.Depth + 1
	}
	mc.states[name] = s
	composite := sd.Block
	if composite && sd.Kind == "final" {
		mc.errorf(sd.Name.Pos, "final state %s cannot have children; only a state or an initial state is a composite", name)
		composite = false
	}
	if composite && !slices.ContainsFunc(sd.Children, func(c *Child) bool { return c.State != nil }) {
		mc.errorf(sd.Name.Pos, "state %s has a block without states; declare its children inside the braces, or remove them", name)
		composite = false
		mc.skipGraph = true
	}
	if composite {
		s.Index = len(mc.m.Composites)
		mc.m.Composites = append(mc.m.Composites, s)
		s.Parallel = slices.ContainsFunc(sd.Options, func(o *StateOption) bool { return o.Parallel })
		if s.Parallel {
			mc.m.Parallels = append(mc.m.Parallels, s)
		}
	} else {
		s.Index = len(mc.m.States)
		mc.m.States = append(mc.m.States, s)
	}
	if parent == nil {
		mc.m.Roots = append(mc.m.Roots, s)
	} else {
		parent.Children = append(parent.Children, s)
	}
	switch sd.Kind {
	case "initial":
		s.Initial = true
		switch {
		case parent != nil && parent.InitialChild != nil:
			mc.errorf(sd.Name.Pos, "second initial state %s of %s (its initial state is %s, at %s)", name, parent.Name, parent.InitialChild.Name, short(parent.InitialChild.Pos))
			mc.skipGraph = true
		case parent != nil:
			parent.InitialChild = s
		case mc.topInitial != nil:
			mc.errorf(sd.Name.Pos, "second initial state %s (the initial state is %s, at %s)", name, mc.topInitial.Name, short(mc.topInitial.Pos))
			mc.skipGraph = true
		default:
			mc.topInitial = s
		}
	case "final":
		switch {
		case sd.Status != nil:
			s.Status = sd.Status.Value
		case parent != nil:
			// A final child without status completes its parent; the
			// run waits there for a completion row or an ancestor's row.
			s.Done, s.Wait = true, true
		default:
			mc.errorf(sd.Name.Pos, "final state %s needs a status: succeeded, failed or cancelled", name)
			s.Status = "failed" // keep checking as if terminal
		}
	}
	if sd.Status != nil && sd.Kind != "final" {
		what := "state"
		if sd.Kind == "initial" {
			what = "initial state"
		}
		mc.errorf(sd.Status.Pos, "%s %s cannot have a status; only final states do", what, name)
	}
	if sd.Outcome != nil {
		s.Outcome = mc.outcome(sd.Outcome)
	}
	if !composite {
		return
	}
	for _, c := range sd.Children {
		switch {
		case c.State != nil:
			mc.declareState(c.State, c.Doc, s)
		case c.History != nil:
			mc.declareHistory(c.History, c.Doc, s)
		}
	}
	if s.Parallel {
		mc.regions(s)
		return
	}
	if s.InitialChild == nil {
		if len(s.Children) > 0 {
			mc.errorf(sd.Name.Pos, "composite state %s has no initial state; mark one of its children \"initial\"", name)
			s.InitialChild = s.Children[0] // keep checking
		}
		mc.skipGraph = true
	}
}

// regions checks the children of parallel state p, once declared: two or
// more regions, each a composite that is not marked initial, and p inside
// no region of another parallel state.
func (mc *machineChecker) regions(p *State) {
	if outer, r := p.Region(); outer != nil {
		mc.errorf(p.Pos, "parallel state %s is inside region %s of parallel state %s; parallel states do not nest", p.Name, r.Name, outer.Name)
		mc.skipGraph = true
	}
	n := 0
	for _, c := range p.Children {
		switch {
		case !c.Composite():
			mc.errorf(c.Pos, "state %s is a leaf, but the children of parallel state %s are its regions: composite states, each with an initial child", c.Name, p.Name)
			mc.skipGraph = true
		case c.Initial:
			mc.errorf(c.Pos, "region %s of parallel state %s is marked initial; every region of a parallel state is entered, so none is initial", c.Name, p.Name)
			mc.skipGraph = true
			n++
		default:
			n++
		}
	}
	p.InitialChild = nil // a child marked initial is reported above
	switch n {
	case 0:
		mc.errorf(p.Pos, "parallel state %s has no region; a parallel state has two or more, each a composite state with an initial child", p.Name)
		mc.skipGraph = true
	case 1:
		mc.errorf(p.Pos, "parallel state %s has one region; a parallel state has two or more, each a composite state with an initial child", p.Name)
		mc.skipGraph = true
	}
}

// parallelHistory reports the history pseudostates of, in or above a
// parallel state, which the language does not support.
func (mc *machineChecker) parallelHistory() {
	for _, h := range mc.m.Histories {
		for _, p := range mc.m.Parallels {
			if h.Parent.In(p) || p.In(h.Parent) {
				mc.errorf(h.Pos, "history %s of %s: history in, of or above parallel state %s is not supported", h.Name, h.Parent.Name, p.Name)
				mc.skipGraph = true
				break
			}
		}
	}
}

// declareHistory declares a history pseudostate of parent, nil when it
// is written at the top level, which is an error.
func (mc *machineChecker) declareHistory(hd *HistoryDecl, doc []string, parent *State) {
	name := hd.Name.Value
	if parent == nil {
		mc.errorf(hd.Pos, "history %s is not inside a composite state; declare it in the block of the state whose history it is", name)
		mc.skipGraph = true
		return
	}
	if prev, dup := mc.declared(name); dup {
		mc.errorf(hd.Name.Pos, "state %s declared twice (first at %s)", name, short(prev))
		return
	}
	h := &History{Pos: hd.Name.Pos, Name: name, Doc: doc, Deep: hd.Deep, Parent: parent}
	mc.histories[name] = h
	mc.m.Histories = append(mc.m.Histories, h)
	parent.History = append(parent.History, h)
}

func (mc *machineChecker) declareAction(ad *ActionDecl, doc []string) {
	name := ad.Name.Value
	if prev, dup := mc.actions[name]; dup {
		mc.errorf(ad.Name.Pos, "action %s declared twice (first at %s)", name, short(prev.Pos))
		return
	}
	if !token.IsExported(name) {
		mc.errorf(ad.Name.Pos, "action name %s must start with an upper-case letter", name)
	}
	a := &Action{Pos: ad.Name.Pos, Name: name, Doc: doc, GoName: goName(name)}
	mc.actions[name] = a
	mc.m.Actions = append(mc.m.Actions, a)
}

func (mc *machineChecker) lookupAction(n *Name) *Action {
	mc.used.actions[n.Value] = true
	if a := mc.actions[n.Value]; a != nil {
		return a
	}
	mc.errorf(n.Pos, "unknown action %s%s", n.Value, didYouMean(n.Value, keys(mc.actions)))
	mc.unknownRefs["action"] = true
	return nil
}

// outcome returns the value of an outcome literal, reporting an invalid or
// empty one.
func (mc *machineChecker) outcome(lit *StringLit) string {
	v, err := unquote(lit.Value)
	if err != nil {
		mc.errorf(lit.Pos, "%v", err)
		return ""
	}
	if v == "" {
		mc.errorf(lit.Pos, "empty outcome; leave the outcome out instead")
	}
	return v
}

func (mc *machineChecker) stateOptions(sd *StateDecl) {
	s := mc.states[sd.Name.Value]
	if s == nil || s.Pos != sd.Name.Pos {
		return // a duplicate, already reported
	}
	if s.Composite() {
		for _, c := range sd.Children {
			if c.State != nil {
				mc.stateOptions(c.State)
			}
		}
	}
	var waitPos, retryPos lexer.Position
	parallel := false
	for _, o := range sd.Options {
		if s.Terminal() {
			mc.errorf(o.Pos, "final state %s cannot take options; it is never left", s.Name)
			continue
		}
		switch {
		case o.Parallel && parallel:
			mc.errorf(o.Pos, "parallel given twice for state %s", s.Name)
		case o.Parallel && !s.Composite():
			mc.errorf(o.Pos, "state %s is parallel but has no regions; declare two or more inside its braces, each a composite state with an initial child", s.Name)
			mc.skipGraph = true
		case o.Parallel:
			parallel = true
		case s.Composite() && (o.Wait || o.Retry != nil):
			mc.errorf(o.Pos, "composite state %s cannot take %s; only a leaf state waits or runs a handler", s.Name, optionWord(o))
			continue
		case s.Done && (o.Wait || o.Retry != nil):
			mc.errorf(o.Pos, "final state %s cannot take %s; the run waits there until a row moves it", s.Name, optionWord(o))
			continue
		case o.Entry != nil:
			if a := mc.lookupAction(o.Entry); a != nil {
				s.Entry = append(s.Entry, a)
			}
		case o.Exit != nil:
			if a := mc.lookupAction(o.Exit); a != nil {
				s.Exit = append(s.Exit, a)
			}
		case o.Wait:
			if s.Wait {
				mc.errorf(o.Pos, "wait given twice for state %s", s.Name)
				continue
			}
			s.Wait, waitPos = true, o.Pos
		case o.Retry != nil:
			if s.Retry != nil {
				mc.errorf(o.Pos, "state %s has two retry policies (the other at %s)", s.Name, short(retryPos))
				continue
			}
			s.Retry, retryPos = mc.retry(o.Retry), o.Pos
		case o.Timer != nil:
			var (
				d        time.Duration
				text     string
				fieldOf  *Event
				field    *PayloadField
				min, max time.Duration
			)
			if o.Timer.After != nil {
				var err error
				text = o.Timer.After.Value
				d, err = ParseDuration(o.Timer.After.Value)
				if err != nil {
					mc.errorf(o.Timer.After.Pos, "%v", err)
				} else if d <= 0 {
					mc.errorf(o.Timer.After.Pos, "timer duration %s must be positive", o.Timer.After.Value)
				}
			} else {
				fieldOf, field, min, max = mc.timerField(o.Timer)
				d = min
				text = o.Timer.FieldOf.Value + "." + o.Timer.Field.Value + " min " + o.Timer.Min.Value + " max " + o.Timer.Max.Value
			}
			ev := mc.lookupEvent(o.Timer.Event)
			if ev == nil {
				mc.lostTimer[s] = true
				continue
			}
			for _, t := range s.Timers {
				if t.Event == ev {
					mc.errorf(o.Timer.Event.Pos, "state %s has two timers firing %s (the other at %s)", s.Name, ev.Name, short(t.Pos))
				}
			}
			if len(ev.Fields) > 0 {
				mc.errorf(o.Timer.Event.Pos, "timer event %s has payload fields; a timer fires its event without a payload", ev.Name)
			}
			tm := &Timer{Pos: o.Timer.Pos, After: d, Text: text, Event: ev, FieldOf: fieldOf, Field: field, Min: min, Max: max}
			mc.timerEvent[tm] = o.Timer.Event.Pos
			s.Timers = append(s.Timers, tm)
		}
	}
	if s.Wait && s.Retry != nil {
		// Point at whichever of the two came second.
		pos := retryPos
		if waitPos.Offset > retryPos.Offset {
			pos = waitPos
		}
		mc.errorf(pos, "state %s both waits and has a retry policy; only a driven state, whose handler runs, is retried", s.Name)
	}
}

// optionWord names a state option in a message.
func optionWord(o *StateOption) string {
	if o.Wait {
		return "wait"
	}
	return "a retry policy"
}

// timerField resolves a timer whose duration is an event's field: the
// field must be a time.Duration, and min and max positive durations with
// min below max.
func (mc *machineChecker) timerField(t *TimerOpt) (*Event, *PayloadField, time.Duration, time.Duration) {
	min, errMin := ParseDuration(t.Min.Value)
	if errMin != nil {
		mc.errorf(t.Min.Pos, "%v", errMin)
	} else if min <= 0 {
		mc.errorf(t.Min.Pos, "timer minimum %s must be positive", t.Min.Value)
	}
	max, errMax := ParseDuration(t.Max.Value)
	if errMax != nil {
		mc.errorf(t.Max.Pos, "%v", errMax)
	} else if errMin == nil && max <= min {
		mc.errorf(t.Max.Pos, "timer maximum %s must be longer than its minimum %s", t.Max.Value, t.Min.Value)
	}
	ev := mc.lookupEvent(t.FieldOf)
	if ev == nil {
		return nil, nil, min, max
	}
	var field *PayloadField
	var names []string
	for _, f := range ev.Fields {
		names = append(names, f.Name)
		if f.Name == t.Field.Value {
			field = f
		}
	}
	switch {
	case field == nil:
		mc.errorf(t.Field.Pos, "event %s has no field %s%s", ev.Name, t.Field.Value, didYouMean(t.Field.Value, names))
	case field.Type != (Type{Path: "time", Name: "Duration"}):
		mc.errorf(t.Field.Pos, "field %s of event %s is %s; a timer's duration is a time.Duration", field.Name, ev.Name, field.Type)
		field = nil
	}
	return ev, field, min, max
}

func (mc *machineChecker) retry(r *RetryOpt) *Retry {
	var exhausted *Event
	if r.Else != nil {
		exhausted = mc.lookupEvent(r.Else)
	}
	out := mc.retryPolicy(r)
	out.Exhausted = exhausted
	if r.Else != nil {
		out.ExhaustedPos = r.Else.Pos
	}
	return out
}

func (mc *machineChecker) retryPolicy(r *RetryOpt) *Retry {
	if r.Preset != nil {
		if !slices.Contains(RetryPresets, r.Preset.Value) {
			if hint := didYouMean(r.Preset.Value, RetryPresets); hint != "" {
				mc.errorf(r.Preset.Pos, "unknown retry policy %s%s", r.Preset.Value, hint)
			} else {
				mc.errorf(r.Preset.Pos, "unknown retry policy %s; want a number of attempts or one of %s",
					r.Preset.Value, strings.Join(RetryPresets, ", "))
			}
		}
		return &Retry{Preset: r.Preset.Value}
	}
	out := &Retry{Factor: 2, Initial: time.Second}
	backoff := "the default backoff 1s"
	n, err := parseCount(r.Attempts.Value)
	if errors.Is(err, errTooLarge) {
		mc.errorf(r.Attempts.Pos, "retry %v", err)
	} else if err != nil || n < 1 {
		mc.errorf(r.Attempts.Pos, "retry %s: want a whole number of attempts >= 1", r.Attempts.Value)
	}
	out.MaxAttempts, out.FromPolicy = n, r.UpTo
	if r.Backoff != nil {
		d, err := ParseDuration(r.Backoff.Value)
		if err != nil {
			mc.errorf(r.Backoff.Pos, "%v", err)
		} else if d <= 0 {
			mc.errorf(r.Backoff.Pos, "backoff %s must be positive", r.Backoff.Value)
		}
		out.Initial = d
		backoff = "backoff " + r.Backoff.Value
	}
	if r.Factor != nil {
		f, err := strconv.ParseFloat(r.Factor.Value, 64)
		if err != nil || f < 1 {
			mc.errorf(r.Factor.Pos, "factor %s: want a number >= 1", r.Factor.Value)
		}
		out.Factor = f
	}
	if r.Max != nil {
		d, err := ParseDuration(r.Max.Value)
		if err != nil {
			mc.errorf(r.Max.Pos, "%v", err)
		} else if d < out.Initial {
			mc.errorf(r.Max.Pos, "max %s is shorter than %s", r.Max.Value, backoff)
		}
		out.Max = d
	}
	if r.Jitter != nil {
		j, err := strconv.ParseFloat(r.Jitter.Value, 64)
		if err != nil || j > 1 {
			mc.errorf(r.Jitter.Pos, "jitter %s: want a fraction between 0 and 1", r.Jitter.Value)
		}
		out.Jitter = j
	}
	seen := map[string]bool{}
	for _, s := range r.NonRetryable {
		v, err := unquote(s.Value)
		if err != nil {
			mc.errorf(s.Pos, "%v", err)
			continue
		}
		if v == "" {
			mc.errorf(s.Pos, "empty non-retryable code")
			continue
		}
		if seen[v] {
			mc.errorf(s.Pos, "non-retryable code %q listed twice", v)
			continue
		}
		seen[v] = true
		out.NonRetryable = append(out.NonRetryable, v)
	}
	return out
}

var scalarTypes = []string{"bool", "byte", "float32", "float64", "int", "int16", "int32", "int64", "int8", "rune", "string", "uint", "uint16", "uint32", "uint64", "uint8"}

func (mc *machineChecker) declareEvent(ed *EventDecl, doc []string) {
	name := ed.Name.Value
	if prev, dup := mc.events[name]; dup {
		mc.errorf(ed.Name.Pos, "event %s declared twice (first at %s)", name, short(prev.Pos))
		return
	}
	e := &Event{Pos: ed.Name.Pos, Name: name, Doc: doc, GoName: goName(name), External: ed.External}
	if name == "done" {
		mc.used.events[name] = true // the error is the declaration
		mc.errorf(ed.Name.Pos, "done is a reserved word, not an event: a row \"on done\" is taken when its composite completes; name the event otherwise")
	} else if !token.IsExported(name) {
		mc.errorf(ed.Name.Pos, "event name %s must start with an upper-case letter", name)
	}
	mc.events[name] = e
	mc.m.Events = append(mc.m.Events, e)
	fields := map[string]*PayloadField{}
	goNames := map[string]*PayloadField{}
	for _, fd := range ed.Fields {
		f := &PayloadField{Pos: fd.Name.Pos, Name: fd.Name.Value, GoName: goName(fd.Name.Value)}
		if prev, dup := fields[f.Name]; dup {
			mc.errorf(fd.Name.Pos, "field %s of event %s declared twice (first at %s)", f.Name, name, short(prev.Pos))
			continue
		}
		if prev, dup := goNames[f.GoName]; dup {
			mc.errorf(fd.Name.Pos, "fields %s and %s of event %s both become Go field %s", prev.Name, f.Name, name, f.GoName)
			continue
		}
		if f.GoName == "EventName" {
			mc.errorf(fd.Name.Pos, "field %s of event %s would be named EventName in Go, which is taken by the method every event has", f.Name, name)
			continue
		}
		fields[f.Name], goNames[f.GoName] = f, f
		if t, ok := mc.fieldType(fd.Type); ok {
			f.Type = t
		}
		e.Fields = append(e.Fields, f)
	}
}

func (mc *machineChecker) fieldType(te *TypeExpr) (Type, bool) {
	t := Type{Slice: te.Slice}
	switch {
	case te.Path != nil:
		p, err := unquote(te.Path.Value)
		if err == nil {
			// The rules of the go command: a path it would refuse to
			// import must not reach the generated code.
			err = module.CheckImportPath(p)
		}
		if err != nil {
			mc.errorf(te.Path.Pos, "invalid import path %s", te.Path.Value)
			return t, false
		}
		if te.Sel != "" {
			mc.errorf(te.Pos, "type %s.%s.%s: write a quoted import path, a dot and one type name", te.Path.Value, te.Name, te.Sel)
			return t, false
		}
		if !token.IsExported(te.Name) {
			mc.errorf(te.Pos, "type %s.%s is not exported", te.Path.Value, te.Name)
			return t, false
		}
		t.Path, t.Name = p, te.Name
	case te.Sel != "":
		if te.Name != "time" || (te.Sel != "Time" && te.Sel != "Duration") {
			if c := closest(te.Name+"."+te.Sel, []string{"time.Duration", "time.Time"}); c != "" {
				mc.errorf(te.Pos, "unknown type %s.%s; did you mean %s?", te.Name, te.Sel, c)
				return t, false
			}
			mc.errorf(te.Pos, "unknown type %s.%s; only time.Time and time.Duration are known by name, write other types as \"import/path\".%s", te.Name, te.Sel, te.Sel)
			return t, false
		}
		t.Path, t.Name = "time", te.Sel
	default:
		if !slices.Contains(scalarTypes, te.Name) {
			hint := didYouMean(te.Name, scalarTypes)
			if hint == "" {
				hint = fmt.Sprintf("; want a Go scalar type, time.Time, time.Duration or \"import/path\".%s", te.Name)
			}
			mc.errorf(te.Pos, "unknown type %s%s", te.Name, hint)
			return t, false
		}
		t.Name = te.Name
	}
	return t, true
}

func (mc *machineChecker) declareGuard(gd *GuardDecl, doc []string) {
	name := gd.Name.Value
	if prev, dup := mc.guards[name]; dup {
		mc.errorf(gd.Name.Pos, "guard %s declared twice (first at %s)", name, short(prev.Pos))
		return
	}
	if !token.IsExported(name) {
		mc.errorf(gd.Name.Pos, "guard name %s must start with an upper-case letter", name)
	}
	g := &Guard{Pos: gd.Name.Pos, Name: name, Doc: doc, GoName: goName(name)}
	mc.guards[name] = g
	mc.m.Guards = append(mc.m.Guards, g)
}

func (mc *machineChecker) lookupState(n string, pos lexer.Position) *State {
	if s := mc.states[n]; s != nil {
		return s
	}
	mc.errorf(pos, "unknown state %s%s", n, didYouMean(n, keys(mc.states)))
	return nil
}

func (mc *machineChecker) lookupEvent(n *Name) *Event {
	if e := mc.events[n.Value]; e != nil {
		mc.used.events[n.Value] = true
		return e
	}
	mc.errorf(n.Pos, "unknown event %s%s", n.Value, didYouMean(n.Value, keys(mc.events)))
	mc.unknownRefs["event"] = true
	return nil
}

// transition checks a row and adds the transitions it stands for: one per
// event (one for an eventless row), per source state, per leaf of the
// source that the row applies to.
func (mc *machineChecker) transition(td *TransitionDecl, doc []string) {
	var to *State
	var hist *History
	if h := mc.histories[td.To.Value]; h != nil {
		hist = h
	} else if to = mc.states[td.To.Value]; to == nil {
		names := keys(mc.states)
		names = append(names, keys(mc.histories)...)
		mc.errorf(td.To.Pos, "unknown state %s%s", td.To.Value, didYouMean(td.To.Value, names))
	}
	resolved := to != nil || hist != nil
	done := false
	var evs []*Event
	evOK := true
	for _, n := range td.Events() {
		if n.Value == "done" {
			if len(td.More) > 0 {
				mc.errorf(n.Pos, "\"on done\" cannot be listed with other events; write the completion row on its own")
				evOK = false
				continue
			}
			done = true
			continue
		}
		ev := mc.lookupEvent(n)
		if ev == nil {
			mc.unknownRowEvent = true
			evOK = false
			continue
		}
		mc.rowEvents[ev] = true
		if slices.Contains(evs, ev) {
			mc.errorf(n.Pos, "event %s listed twice", ev.Name)
			continue
		}
		evs = append(evs, ev)
	}
	eventless := td.Event == nil || done
	var g *Guard
	var in *State
	guardOK := true
	switch {
	case td.Guard == nil:
	case td.Guard.In != nil:
		if td.Guard.Unless && td.Guard.Not {
			mc.errorf(td.Guard.Pos, "\"unless !In(%s)\" is a double negation; write \"when In(%s)\"", td.Guard.In.Value, td.Guard.In.Value)
		}
		if in = mc.lookupState(td.Guard.In.Value, td.Guard.In.Pos); in == nil {
			guardOK = false
		}
	default:
		mc.used.guards[td.Guard.Name.Value] = true
		if td.Guard.Unless && td.Guard.Not {
			mc.errorf(td.Guard.Pos, "\"unless !%s\" is a double negation; write \"when %s\"", td.Guard.Name.Value, td.Guard.Name.Value)
		}
		if g = mc.guards[td.Guard.Name.Value]; g == nil {
			guardOK = false
			mc.errorf(td.Guard.Name.Pos, "unknown guard %s%s", td.Guard.Name.Value, didYouMean(td.Guard.Name.Value, keys(mc.guards)))
			mc.unknownRefs["guard"] = true
		} else {
			for _, ev := range evs {
				if !slices.Contains(g.Events, ev) {
					g.Events = append(g.Events, ev)
				}
			}
			if eventless {
				g.Eventless = true
			}
		}
	}
	outcome := ""
	if td.Outcome != nil {
		v := mc.outcome(td.Outcome)
		outcome = v
		switch {
		case hist != nil:
			mc.errorf(td.Outcome.Pos, "outcome on a transition to %s, which is not final", hist.Name)
		case to != nil && !to.Terminal():
			mc.errorf(td.Outcome.Pos, "outcome on a transition to %s, which is not final", to.Name)
		case to != nil && v != "" && to.Outcome != "" && to.Outcome != v:
			mc.errorf(td.Outcome.Pos, "outcome %q contradicts the outcome %q of state %s", v, to.Outcome, to.Name)
		}
	}
	if to != nil && outcome == "" {
		outcome = to.Outcome
	}
	var froms []*State
	var star *StateRef
	for _, ref := range td.From {
		if ref.Star {
			if star != nil {
				mc.errorf(ref.Pos, "* listed twice")
				continue
			}
			star = ref
		}
	}
	seen := map[*State]bool{}
	for _, ref := range td.From {
		if ref.Star {
			if ref != star {
				continue
			}
			for _, s := range mc.m.Roots {
				if !s.Terminal() && !seen[s] {
					seen[s] = true
					froms = append(froms, s)
				}
			}
			continue
		}
		if h := mc.histories[ref.Name]; h != nil {
			mc.errorf(ref.Pos, "transition out of history %s; a history is only ever a row's target", h.Name)
			mc.skipGraph = true
			continue
		}
		s := mc.lookupState(ref.Name, ref.Pos)
		switch {
		case s == nil:
			mc.skipGraph = true
			for _, ev := range evs {
				mc.unsure[stateEvent{nil, ev}] = true
			}
			if !evOK {
				mc.unsure[stateEvent{nil, nil}] = true
			}
		case s.Terminal():
			mc.errorf(ref.Pos, "transition out of final state %s; a final state is never left", s.Name)
			mc.skipGraph = true
		case star != nil:
			mc.errorf(ref.Pos, "state %s listed next to *, which already includes it", s.Name)
		case seen[s]:
			mc.errorf(ref.Pos, "state %s listed twice", s.Name)
		default:
			seen[s] = true
			froms = append(froms, s)
		}
	}
	if done {
		kept := froms[:0]
		for _, s := range froms {
			if s.Parallel {
				if r := incompleteRegion(s); r != nil {
					mc.errorf(td.Event.Pos, "\"on done\" on parallel state %s, whose region %s has no final state without a status; a parallel state completes once every region reaches such a final child", s.Name, r.Name)
					mc.skipGraph = true
					continue
				}
				kept = append(kept, s)
				continue
			}
			if !slices.ContainsFunc(s.Children, func(c *State) bool { return c.Done }) {
				mc.errorf(td.Event.Pos, "\"on done\" on state %s, which has no final state without a status; a completion row leaves a composite once its run reaches such a final child", s.Name)
				mc.skipGraph = true
				continue
			}
			kept = append(kept, s)
		}
		froms = kept
	}
	froms = mc.regionRows(td, froms, to, hist)
	if td.Internal {
		kept := froms[:0]
		for _, s := range froms {
			target := to
			if hist != nil {
				target = hist.Parent
			}
			if s.Parallel {
				mc.errorf(td.To.Pos, "internal transition from parallel state %s: an internal row on a parallel state is not supported; write it on a region or a state inside one", s.Name)
				mc.skipGraph = true
				continue
			}
			if target != nil && !target.In(s) {
				mc.errorf(td.To.Pos, "internal transition from %s to %s: an internal row stays in its source, so its target is %s or a state inside it", s.Name, td.To.Value, s.Name)
				mc.skipGraph = true
				continue
			}
			kept = append(kept, s)
		}
		froms = kept
	}
	if in != nil {
		for _, s := range froms {
			mc.inGuard(td.Guard, in, s)
		}
	}
	if !resolved || !evOK || !guardOK {
		mc.skipGraph = true
		for _, s := range froms {
			if s.Composite() {
				s = nil // any state: one entry, not one per leaf
			}
			for _, ev := range evs {
				mc.unsure[stateEvent{s, ev}] = true
			}
			if !evOK {
				mc.unsure[stateEvent{s, nil}] = true
			}
		}
		return
	}
	neg := td.Guard != nil && td.Guard.Negated()
	base := Transition{Pos: td.Pos, Doc: doc, Guard: g, In: in, Negated: neg, Outcome: outcome, Star: star != nil,
		Target: to, History: hist, Done: done, Internal: td.Internal}
	if eventless {
		evs = []*Event{nil}
	}
	for _, ev := range evs {
		for _, s := range froms {
			if mc.tooMany {
				return
			}
			t := base
			t.Event, t.Source = ev, s
			mc.m.Transitions = append(mc.m.Transitions, flatten(&t)...)
			if len(mc.m.Transitions) > MaxTransitions {
				mc.errorf(td.Pos, "machine %s has more than %d transitions once the rows of composite states are applied to each of their leaves; a machine has at most %d", mc.m.Name, MaxTransitions, MaxTransitions)
				mc.tooMany, mc.skipGraph = true, true
			}
		}
	}
}

// incompleteRegion returns the first region of parallel state p without
// a final child without status, nil when every region has one: p can
// complete.
func incompleteRegion(p *State) *State {
	for _, r := range p.Children {
		if !slices.ContainsFunc(r.Children, func(c *State) bool { return c.Done }) {
			return r
		}
	}
	return nil
}

// regionRows drops, with an error, the sources of row td from which its
// target (to, or the composite of history hist) lies in another region
// of a parallel state: a row stays in its region or leaves the parallel
// state.
func (mc *machineChecker) regionRows(td *TransitionDecl, froms []*State, to *State, hist *History) []*State {
	target := to
	if hist != nil {
		target = hist.Parent
	}
	if target == nil {
		return froms
	}
	kept := froms[:0]
	for _, s := range froms {
		if !s.Concurrent(target) {
			kept = append(kept, s)
			continue
		}
		p, from := s.Region()
		for !target.In(p) {
			p, from = p.Region()
		}
		_, into := target.Region()
		for into.Parent != p {
			_, into = into.Parent.Region()
		}
		mc.errorf(td.To.Pos, "transition from %s to %s crosses from region %s to region %s of parallel state %s; a row stays in its region, or targets %s or a state outside it", s.Name, td.To.Value, from.Name, into.Name, p.Name, p.Name)
		mc.skipGraph = true
	}
	return kept
}

// inGuard warns about the guard In(in) on a row from s that always or
// never holds there: when in is s or holds s, it is active whenever the
// row can fire; when in is neither inside s nor in another region than
// s of a parallel state, it never is.
func (mc *machineChecker) inGuard(gr *GuardRef, in, s *State) {
	switch {
	case s.In(in):
		mc.warnf(gr.In.Pos, "guard In(%s) always holds on a row from %s, which is in %s; leave it out", in.Name, s.Name, in.Name)
	case in.In(s) || s.Concurrent(in):
	default:
		mc.warnf(gr.In.Pos, "guard In(%s) never holds on a row from %s: %s is not active while %s is", in.Name, s.Name, in.Name, s.Name)
	}
}

// MaxTransitions is the most transitions a machine may have once FROM
// lists, several events and the rows of composite states are expanded
// (the rows of [Machine.Transitions]).
const MaxTransitions = 250_000

// flatten returns the transitions of row t, whose Source, Target or
// History and flags are set: one per leaf of Source it applies to (for a
// completion row, per final child of Source without status), a parallel
// state standing for its leaves (one transition from it, for a completion
// row of a parallel state too), with From, To, Config, Exit and Enter
// filled.
func flatten(t *Transition) []*Transition {
	src := t.Source
	var leaves []*State
	switch {
	case t.Done && src.Parallel:
		leaves = []*State{src}
	case t.Done:
		for _, c := range src.Children {
			if c.Done {
				leaves = append(leaves, c)
			}
		}
	default:
		for _, l := range src.Units() {
			if !l.Terminal() {
				leaves = append(leaves, l)
			}
		}
	}
	// The state entered, and whether it lies strictly inside a composite
	// d: a history lies inside its composite.
	target := t.Target
	if t.History != nil {
		target = t.History.Parent
	}
	inside := func(d *State) bool {
		if t.History != nil {
			return target.In(d)
		}
		return target != d && target.In(d)
	}
	// The transition's domain: nothing outside it is exited or entered.
	var domain *State
	switch {
	case t.Internal:
		domain = src
	default:
		for _, a := range src.Ancestors() {
			if inside(a) {
				domain = a
				break
			}
		}
	}
	var enter, config []*State
	var to *State
	stay := t.Internal && t.Target == src // stays in whichever leaf it is in
	if !stay {
		var path []*State
		for x := target; x != domain && x != nil; x = x.Parent {
			path = append(path, x)
		}
		slices.Reverse(path)
		if len(path) == 0 {
			// A history of the domain itself: enter below it.
			enter, config = entries([]*State{target})
			enter = enter[1:]
		} else {
			enter, config = entries(path)
		}
		to = config[0]
		if i := slices.IndexFunc(config, func(l *State) bool { return l.In(target) }); i >= 0 {
			to = config[i]
		}
		if len(config) == 1 {
			config = nil
		}
	}
	out := make([]*Transition, 0, len(leaves))
	for _, l := range leaves {
		c := *t
		c.From = l
		if stay {
			c.To = l
		} else {
			c.To, c.Config = to, config
			for x := l; x != domain && x != nil; x = x.Parent {
				c.Exit = append(c.Exit, x)
			}
			c.Enter = enter
		}
		out = append(out, &c)
	}
	return out
}

// entries returns the states a transition enters along path, the states
// from the outermost one it enters down to its target (outermost first),
// and the leaves it ends in: below the target, initial children; in a
// parallel state, every region, in order, the one on path along it and
// the others at their initial children.
func entries(path []*State) (enter, leaves []*State) {
	var in func(x *State, rest []*State)
	in = func(x *State, rest []*State) {
		enter = append(enter, x)
		switch {
		case !x.Composite():
			leaves = append(leaves, x)
		case x.Parallel:
			for _, r := range x.Children {
				if len(rest) > 0 && rest[0] == r {
					in(r, rest[1:])
				} else {
					in(r, nil)
				}
			}
		case len(rest) > 0:
			in(rest[0], rest[1:])
		default:
			in(x.InitialChild, nil)
		}
	}
	in(path[0], path[1:])
	return enter, leaves
}

// guardName names the guard of a row in a message: the guard's name, or
// In(S).
func guardName(t *Transition) string {
	if t.In != nil {
		return "In(" + t.In.Name + ")"
	}
	return t.Guard.Name
}

// rowOn names the event of a row in a message: "on E", "on done" or
// "without an event".
func rowOn(t *Transition) string {
	switch {
	case t.Done:
		return "on done"
	case t.Event == nil:
		return "without an event"
	}
	return "on " + t.Event.Name
}

// groups checks each (state, event) pair's rows: at most one unguarded row,
// last; no row that an earlier one always shadows; and a warning when two
// or more guarded rows have no fallback. Rows of one source are checked
// together; a row of a composite that a row of one of its leaves shadows
// is dropped for that leaf (the event never bubbles up to it there), and
// reported only when it is shadowed for every leaf it applies to.
func (mc *machineChecker) groups() {
	type key struct {
		src, s *State
		e      *Event
		done   bool
	}
	var order []key
	rows := map[key][]*Transition{}
	for _, t := range mc.m.Transitions {
		k := key{t.Source, t.From, t.Event, t.Done}
		if _, ok := rows[k]; !ok {
			order = append(order, k)
		}
		rows[k] = append(rows[k], t)
	}
	reported := map[Diagnostic]bool{}
	report := func(warn bool, pos lexer.Position, format string, args ...any) {
		d := Diagnostic{Pos: pos, Severity: Error, Message: fmt.Sprintf(format, args...)}
		if warn {
			d.Severity = Warning
		}
		if !reported[d] {
			reported[d] = true
			mc.diags = append(mc.diags, d)
		}
	}
	type clause struct {
		g   *Guard
		in  *State
		neg bool
	}
	drop := map[*Transition]bool{}
	for _, k := range order {
		ts := rows[k]
		var unguarded, covered *Transition
		seenGuard := map[clause]*Transition{}
		for _, t := range ts {
			name, on := k.src.Name, rowOn(t)
			if covered != nil {
				report(false, t.Pos, "transition from %s %s can never fire: the transitions on %s and !%s before it admit every event", name, on, guardName(covered), guardName(covered))
				drop[t] = true
				continue
			}
			if unguarded != nil {
				if t.Guard == nil && t.In == nil {
					report(false, t.Pos, "two unguarded transitions from %s %s (the other at %s)", name, on, short(unguarded.Pos))
				} else {
					report(false, t.Pos, "transition from %s %s can never fire: the unguarded one at %s comes first", name, on, short(unguarded.Pos))
				}
				drop[t] = true
				continue
			}
			if t.Guard == nil && t.In == nil {
				unguarded = t
				continue
			}
			gk := clause{t.Guard, t.In, t.Negated}
			if prev, dup := seenGuard[gk]; dup {
				report(false, t.Pos, "transition from %s %s can never fire: the one at %s has the same guard and comes first", name, on, short(prev.Pos))
				drop[t] = true
				continue
			}
			seenGuard[gk] = t
			if _, ok := seenGuard[clause{t.Guard, t.In, !t.Negated}]; ok {
				covered = t
			}
		}
	}
	// Across levels, per leaf: the rows of its ancestors that a row
	// before them always takes the event from never fire for that leaf.
	var leafOrder []leafKey
	chains := map[leafKey][]*Transition{}
	for _, t := range mc.m.Transitions {
		if drop[t] {
			continue
		}
		k := leafKey{t.From, t.Event, t.Done}
		if _, ok := chains[k]; !ok {
			leafOrder = append(leafOrder, k)
		}
		chains[k] = append(chains[k], t)
	}
	shadowedBy := map[*Transition]*Transition{}
	always := map[leafKey]*Transition{} // the row that always takes the event
	for _, k := range leafOrder {
		ts := chains[k]
		var blocker *Transition
		seenGuard := map[clause]bool{}
		for _, t := range ts {
			if blocker != nil || ((t.Guard != nil || t.In != nil) && seenGuard[clause{t.Guard, t.In, t.Negated}]) {
				if blocker == nil {
					blocker = t
				}
				shadowedBy[t] = blocker
				continue
			}
			if t.Guard == nil && t.In == nil {
				blocker = t
				continue
			}
			seenGuard[clause{t.Guard, t.In, t.Negated}] = true
			if seenGuard[clause{t.Guard, t.In, !t.Negated}] {
				blocker = t
			}
		}
		if blocker != nil {
			always[k] = blocker
		}
		if blocker == nil && len(seenGuard) >= 2 && !mc.unsureOf(k.s, k.e) {
			last := ts[len(ts)-1]
			report(true, last.Pos, "every transition from %s %s is guarded: when no guard admits the event, it is rejected; add an unguarded one last if that is not intended", k.s.Name, rowOn(last))
		}
	}
	// A written row, on one source and event, that fires for no leaf.
	type rowKey struct {
		pos  lexer.Position
		src  *State
		e    *Event
		done bool
	}
	alive := map[rowKey]bool{}
	var rowOrder []rowKey
	firstOf := map[rowKey]*Transition{}
	for _, t := range mc.m.Transitions {
		if drop[t] {
			continue
		}
		k := rowKey{t.Pos, t.Source, t.Event, t.Done}
		if _, ok := firstOf[k]; !ok {
			firstOf[k] = t
			rowOrder = append(rowOrder, k)
		}
		if shadowedBy[t] == nil {
			alive[k] = true
		}
	}
	for _, k := range rowOrder {
		if alive[k] {
			continue
		}
		t := firstOf[k]
		by := shadowedBy[t]
		report(false, t.Pos, "transition from %s %s can never fire: every state in %s has a transition %s that is tried first (the one of %s at %s)", k.src.Name, rowOn(t), k.src.Name, rowOn(t), by.Source.Name, short(by.Pos))
	}
	mc.regionShadows(always, func(t, by *Transition, region *State) {
		report(false, t.Pos, "transition from %s %s can never fire: every state in its region %s has a transition %s that is tried first (the one of %s at %s)", t.From.Name, rowOn(t), region.Name, rowOn(t), by.Source.Name, short(by.Pos))
		shadowedBy[t] = by
	})
	for t := range shadowedBy {
		drop[t] = true
	}
	if len(drop) > 0 {
		mc.m.Transitions = slices.DeleteFunc(mc.m.Transitions, func(t *Transition) bool { return drop[t] })
	}
}

// regionShadows finds the rows written on a parallel state that never
// fire: on an event that one of its regions always takes, whatever leaf of
// it the run is in (always holds each leaf's row that always takes an
// event). It calls shadowed with each such row, the first of those rows
// and the region.
func (mc *machineChecker) regionShadows(always map[leafKey]*Transition, shadowed func(t, by *Transition, region *State)) {
	for _, t := range mc.m.Transitions {
		if t.Source != t.From || !t.From.Parallel || t.Event == nil {
			continue
		}
		for _, r := range t.From.Children {
			var by *Transition
			for _, l := range r.Leaves() {
				b := always[leafKey{l, t.Event, false}]
				if b == nil && !l.Terminal() {
					by = nil
					break
				}
				if by == nil {
					by = b
				}
			}
			if by != nil {
				shadowed(t, by, r)
				break
			}
		}
	}
}

func (mc *machineChecker) timers() {
	for _, s := range mc.m.States {
		if s.Retry != nil && s.Retry.Exhausted != nil && !mc.mayHandle(s, s.Retry.Exhausted) {
			mc.errorf(s.Retry.ExhaustedPos, "retries of state %s end with %s, but %s has no transition on %s", s.Name, s.Retry.Exhausted.Name, s.Name, s.Retry.Exhausted.Name)
		}
		for _, tm := range s.Timers {
			if !mc.mayHandle(s, tm.Event) {
				mc.errorf(mc.timerEvent[tm], "timer fires %s in state %s, which has no transition on %s", tm.Event.Name, s.Name, tm.Event.Name)
			}
		}
	}
	// A composite's timer fires in whichever of its leaves the run is in.
	for _, c := range mc.m.Composites {
		for _, tm := range c.Timers {
			for _, l := range c.Units() {
				if l.Parallel && slices.ContainsFunc(l.Leaves(), func(x *State) bool { return mc.mayHandle(x, tm.Event) }) {
					continue // a region takes it
				}
				if l.Parallel {
					mc.errorf(mc.timerEvent[tm], "timer of state %s fires %s in parallel state %s, where neither it nor a state of its regions has a transition on %s", c.Name, tm.Event.Name, l.Name, tm.Event.Name)
					break
				}
				if !l.Terminal() && !mc.mayHandle(l, tm.Event) {
					mc.errorf(mc.timerEvent[tm], "timer of state %s fires %s in state %s, which has no transition on %s", c.Name, tm.Event.Name, l.Name, tm.Event.Name)
					break
				}
			}
		}
	}
}

// cancel resolves the machine's cancel declaration: one at most, naming a
// declared event that has a transition, whose userID field, if it has one,
// is a string (the runtime fills it with the cancelling user's id). A
// machine without one whose table leads into a cancelled state on two or
// more events that callers fire draws a warning: which of them cancels a
// run cannot be told without guessing.
func (mc *machineChecker) cancel(md *MachineDecl) {
	var first *Item
	for _, it := range md.Items {
		if it.Cancel == nil {
			continue
		}
		if first != nil {
			mc.errorf(it.Pos, "cancel declared twice (first at %s)", short(first.Pos))
			continue
		}
		first = it
		ev := mc.lookupEvent(it.Cancel.Event)
		if ev == nil {
			continue
		}
		mc.m.Cancel = ev
		if !mc.rowEvents[ev] && !mc.unknownRowEvent {
			target := "CANCELLED"
			for _, s := range mc.m.States {
				if s.Status == "cancelled" {
					target = s.Name
					break
				}
			}
			mc.errorf(it.Cancel.Event.Pos, "cancel event %s has no transition; add one, such as \"* -> %s on %s\"", ev.Name, target, ev.Name)
		}
		for _, f := range ev.Fields {
			// A field of an unknown type is reported already.
			if f.Name == "userID" && f.Type.Name != "" && f.Type != (Type{Name: "string"}) {
				mc.errorf(f.Pos, "field userID of cancel event %s is %s; the runtime fills it with the cancelling user's id, a string", ev.Name, f.Type)
			}
		}
	}
	if first != nil || mc.skipGraph {
		return
	}
	fired := mc.m.RuntimeFired()
	var candidates []*Event
	for _, t := range mc.m.Transitions {
		if t.Event != nil && t.To.Status == "cancelled" && !fired[t.Event] && !slices.Contains(candidates, t.Event) {
			candidates = append(candidates, t.Event)
		}
	}
	if len(candidates) >= 2 {
		mc.warnf(md.Pos, "machine %s leads into a cancelled state on %s and declares no cancel event, so its runs cannot be cancelled by their owner; name the one that cancels with \"cancel EVENT\"", mc.m.Name, eventNames(candidates))
	}
}

// eventNames lists events as "A, B and C".
func eventNames(es []*Event) string {
	names := make([]string, len(es))
	for i, e := range es {
		names[i] = e.Name
	}
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// handles reports whether a row leaves s on e: a row from s, or from a
// parallel state that s is in (its rows apply in every configuration).
// It reads the transitions once, after groups has dropped those that
// never fire.
func (mc *machineChecker) handles(s *State, e *Event) bool {
	if mc.handled == nil {
		mc.handled = map[stateEvent]bool{}
		for _, t := range mc.m.Transitions {
			mc.handled[stateEvent{t.From, t.Event}] = true
		}
	}
	for x := s; x != nil; x, _ = x.Region() {
		if mc.handled[stateEvent{x, e}] {
			return true
		}
	}
	return false
}

// mayHandle reports whether a row leaves s on e or a row dropped for an
// unknown name may have: a check that s has a row on e reports neither.
func (mc *machineChecker) mayHandle(s *State, e *Event) bool {
	return mc.handles(s, e) || mc.unsureOf(s, e)
}

// unsureOf reports whether a row dropped for an unknown name may have
// left s on e.
func (mc *machineChecker) unsureOf(s *State, e *Event) bool {
	return mc.unsure[stateEvent{s, e}] || mc.unsure[stateEvent{nil, e}] ||
		mc.unsure[stateEvent{s, nil}] || mc.unsure[stateEvent{nil, nil}]
}

// graph checks that every state is reachable from the initial one, and
// warns about the dead ends among the reachable states, which may be
// intended (a run that reaches one waits there for good), so they are not
// errors. In a machine with final states, a dead end is a state from which
// no final state can be reached. A machine without final states never ends,
// which is legal: its runs live until they are cancelled (when it names a
// cancel event) or deleted, and cycling for good is what it is for; its dead
// ends are the states without a row out of them, where a run can never move
// again, and the states from which every path leads into one of those (no
// cycle can be reached from them).
//
// A parallel state is a node of its own, never the product of its
// regions: a row entering it leads to it and to the leaf it enters in
// each region, and each of its leaves leads to it, whose rows apply in
// every configuration. So a leaf in a region is reachable when it is
// within its region once the parallel state is, and a leaf is a dead end
// only when neither its region's rows nor the parallel state's lead on.
func (mc *machineChecker) graph() {
	m := mc.m
	if m.Initial == nil || mc.skipGraph {
		return
	}
	next := map[*State][]*State{}
	prev := map[*State][]*State{}
	edges := map[[2]*State]bool{}
	edge := func(from, to *State) {
		if k := [2]*State{from, to}; !edges[k] {
			edges[k] = true
			next[from] = append(next[from], to)
			prev[to] = append(prev[to], from)
		}
	}
	// Each leaf of a parallel state leads to it (its rows apply there):
	// up holds these edges backwards, which count for whether a final
	// state can be reached from a leaf, not for whether it is stuck,
	// which is judged region by region.
	up := map[*State][]*State{}
	for _, p := range m.Parallels {
		up[p] = p.Leaves()
	}
	// A history may lead to any leaf of its composite: rows to it lead
	// to a node of its own, which leads to each of those leaves.
	nodes := slices.Concat(m.States, m.Parallels)
	histNode := map[*History]*State{}
	for _, t := range m.Transitions {
		for _, l := range t.Config {
			edge(t.From, l)
		}
		if p, _ := t.To.Region(); p != nil && t.Config != nil {
			edge(t.From, p)
		}
		to := t.To
		if h := t.History; h != nil {
			if histNode[h] == nil {
				histNode[h] = &State{Name: h.Name, Pos: h.Pos}
				nodes = append(nodes, histNode[h])
				for _, l := range h.Parent.Leaves() {
					edge(histNode[h], l)
				}
			}
			to = histNode[h]
		}
		edge(t.From, to)
	}
	start := m.InitialConfig
	if p, _ := m.Initial.Region(); p != nil {
		start = append(slices.Clone(start), p)
	}
	reach := walk(start, next)
	var finals []*State
	for _, s := range m.States {
		if s.Terminal() {
			finals = append(finals, s)
		}
	}
	coreach := walk(finals, prev, up)
	var stuck map[*State]*deadEnd
	if len(finals) == 0 {
		stuck = stuckStates(nodes, next, prev)
		unstuckRegions(m.Parallels, stuck)
	}
	for _, s := range m.States {
		switch {
		case !reach[s]:
			mc.errorf(s.Pos, "state %s is unreachable from the initial state %s", s.Name, m.Initial.Name)
		case len(finals) > 0 && !coreach[s]:
			mc.warnf(s.Pos, "no final state can be reached from state %s; a run that gets there never ends", s.Name)
		case stuck[s] == nil:
		case len(next[s]) == 0:
			mc.warnf(s.Pos, "state %s has no transition out, and machine %s has no final state: a run that gets there is stuck for good; declare %s final if runs end there", s.Name, m.Name, s.Name)
		default:
			mc.warnf(s.Pos, "every path from state %s ends in %s: a run that gets there is stuck for good", s.Name, stuck[s])
		}
	}
}

// deadEnd is where every path from a state ends: the first sinks (states
// without an edge out) in declaration order, at most maxSinks of them, and
// whether there are more.
type deadEnd struct {
	sinks []*State
	more  bool
}

const maxSinks = 3

// String lists the sinks: "A, B or C, which have no transition out".
func (d *deadEnd) String() string {
	names := make([]string, len(d.sinks))
	for i, s := range d.sinks {
		names[i] = s.Name
	}
	switch {
	case d.more:
		return strings.Join(names, ", ") + " or other states without a transition out"
	case len(names) == 1:
		return names[0] + ", which has no transition out"
	default:
		return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1] + ", which have no transition out"
	}
}

// stuckStates returns the states from which every path ends in a sink, a
// state without an edge out: the sinks, and each other state once every
// edge out of it leads to one found before, with where its paths end. A
// state from which a cycle can be reached is not among them.
func stuckStates(states []*State, next, prev map[*State][]*State) map[*State]*deadEnd {
	out := map[*State]int{}
	var queue []*State
	stuck := map[*State]*deadEnd{}
	for _, s := range states {
		out[s] = len(next[s])
		if out[s] == 0 {
			queue = append(queue, s)
			stuck[s] = &deadEnd{sinks: []*State{s}}
		}
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		for _, p := range prev[s] {
			if out[p]--; out[p] > 0 {
				continue
			}
			// Every successor of p is found, so p's sinks are the
			// first of theirs.
			d := &deadEnd{}
			for _, n := range next[p] {
				dn := stuck[n]
				d.more = d.more || dn.more
				for _, k := range dn.sinks {
					if !slices.Contains(d.sinks, k) {
						d.sinks = append(d.sinks, k)
					}
				}
			}
			slices.SortFunc(d.sinks, func(a, b *State) int { return a.Index - b.Index })
			if len(d.sinks) > maxSinks {
				d.sinks, d.more = d.sinks[:maxSinks], true
			}
			stuck[p] = d
			queue = append(queue, p)
		}
	}
	return stuck
}

// senders warns about a wait state that nothing can move: it has no
// timer, and callers may send none of the events of its rows (Sender says
// that each is another state's timer's or retry policy's, or a handler's).
func (mc *machineChecker) senders() {
	if mc.skipGraph {
		return
	}
	for _, s := range mc.m.States {
		p, _ := s.Region()
		if !s.Wait || s.Terminal() || hasTimer(s) || mc.lostTimer[s] || p != nil && sends(p) {
			continue
		}
		var whys []string
		var seen []*Event
		for _, t := range mc.m.Transitions {
			if t.From != s && (p == nil || t.From != p) || slices.Contains(seen, t.Event) {
				continue
			}
			if t.Event == nil {
				// An eventless or completion row moves the run by itself.
				whys = nil
				break
			}
			seen = append(seen, t.Event)
			why := mc.m.Sender(s, t.Event)
			if why == "" {
				whys = nil
				break
			}
			whys = append(whys, t.Event.Name+" is sent by "+why)
		}
		if len(whys) > 0 {
			mc.warnf(s.Pos, "state %s waits, but has no timer and callers may not send its events (%s): a run there waits for ever; declare one of them external", s.Name, strings.Join(whys, ", "))
		}
	}
}

// sends reports whether a state in parallel state p (p included) has a
// timer, a retry policy or a handler: its events reach every region, so
// a leaf of another region that waits for them does not wait for ever.
func sends(p *State) bool {
	var in func(s *State) bool
	in = func(s *State) bool {
		if len(s.Timers) > 0 || s.Retry != nil || !s.Composite() && s.Driven() {
			return true
		}
		return slices.ContainsFunc(s.Children, in)
	}
	return in(p)
}

// hasTimer reports whether s or one of its ancestors has a timer.
func hasTimer(s *State) bool {
	for x := s; x != nil; x = x.Parent {
		if len(x.Timers) > 0 {
			return true
		}
	}
	return false
}

// walk returns the states reached from start along edges, each map of
// edges giving the states a state leads to.
func walk(start []*State, edges ...map[*State][]*State) map[*State]bool {
	seen := map[*State]bool{}
	stack := append([]*State(nil), start...)
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[s] {
			continue
		}
		seen[s] = true
		for _, e := range edges {
			stack = append(stack, e[s]...)
		}
	}
	return seen
}

// unstuckRegions drops from stuck, the states found stuck region by
// region, the leaves of a parallel state whose configurations are not
// all stuck: a leaf is stuck for good only when the parallel state's own
// rows lead nowhere but to stuck states and every region of it can get
// stuck too; else another region or the parallel state moves the run on.
func unstuckRegions(parallels []*State, stuck map[*State]*deadEnd) {
	for _, p := range parallels {
		all := stuck[p] != nil
		for _, r := range p.Children {
			all = all && slices.ContainsFunc(r.Leaves(), func(l *State) bool { return stuck[l] != nil })
		}
		if all {
			continue
		}
		for _, l := range p.Leaves() {
			delete(stuck, l)
		}
	}
}

// unused reports the events and guards nothing refers to, unless a name of
// the same kind is unknown: the declaration may be what it was meant to
// be, and the unknown name is the error.
func (mc *machineChecker) unused() {
	for _, e := range mc.m.Events {
		if !mc.used.events[e.Name] && !mc.unknownRefs["event"] {
			mc.errorf(e.Pos, "event %s is never used", e.Name)
		}
	}
	for _, g := range mc.m.Guards {
		if !mc.used.guards[g.Name] && !mc.unknownRefs["guard"] {
			mc.errorf(g.Pos, "guard %s is never used", g.Name)
		}
	}
	for _, a := range mc.m.Actions {
		if !mc.used.actions[a.Name] && !mc.unknownRefs["action"] {
			mc.warnf(a.Pos, "action %s is never used; name it in an entry or exit option, or remove it", a.Name)
		}
	}
}

// goNames reports declarations whose generated top-level Go identifiers
// collide with each other or with the fixed ones.
func (mc *machineChecker) goNames() {
	type owner struct {
		what string
		pos  lexer.Position
	}
	taken := map[string]owner{}
	for _, r := range reservedNames {
		taken[r] = owner{}
	}
	// claim reports whether ident was free, reporting the collision when
	// not.
	claim := func(ident, what string, pos lexer.Position) bool {
		prev, ok := taken[ident]
		if !ok {
			taken[ident] = owner{what: what, pos: pos}
			return true
		}
		if prev.what == "" {
			mc.errorf(pos, "%s would be named %s in Go, a name the generated package declares itself", what, ident)
		} else {
			mc.errorf(pos, "%s would be named %s in Go, which is taken by %s at %s", what, ident, prev.what, short(prev.pos))
		}
		return false
	}
	for _, s := range slices.Concat(mc.m.States, mc.m.Composites) {
		// One collision per state is enough: its other names derive from
		// the same Go name.
		whats := []string{"state " + s.Name, "the view of state " + s.Name, "the event set of state " + s.Name}
		for i, ident := range StateGoNames(s) {
			if !claim(ident, whats[i], s.Pos) {
				break
			}
		}
	}
	for _, e := range mc.m.Events {
		claim(e.GoName, "event "+e.Name, e.Pos)
	}
	// Guards are methods of the Guards interface: they only collide with
	// each other.
	methods := map[string]*Guard{}
	for _, g := range mc.m.Guards {
		if prev, ok := methods[g.GoName]; ok {
			mc.errorf(g.Pos, "guard %s would be named %s in Go, which is taken by guard %s at %s", g.Name, g.GoName, prev.Name, short(prev.Pos))
			continue
		}
		methods[g.GoName] = g
	}
	// Actions are methods of the Actions interface, likewise.
	actions := map[string]*Action{}
	for _, a := range mc.m.Actions {
		if prev, ok := actions[a.GoName]; ok {
			mc.errorf(a.Pos, "action %s would be named %s in Go, which is taken by action %s at %s", a.Name, a.GoName, prev.Name, short(prev.Pos))
			continue
		}
		actions[a.GoName] = a
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// didYouMean returns "; did you mean X?" for the candidate closest to name,
// or "" when none is close enough.
func didYouMean(name string, candidates []string) string {
	if c := closest(name, candidates); c != "" {
		return "; did you mean " + c + "?"
	}
	return ""
}

// closest returns the candidate closest to name, ignoring case, or "" when
// none is close enough to be a likely typo.
func closest(name string, candidates []string) string {
	best, bestD := "", 1<<30
	for _, c := range candidates {
		d := distance(strings.ToLower(name), strings.ToLower(c))
		if d < bestD || (d == bestD && c < best) {
			best, bestD = c, d
		}
	}
	limit := max(1, len(name)/3)
	if best == "" || bestD > limit {
		return ""
	}
	return best
}

// distance is the edit distance between a and b counting an insertion, a
// deletion, a substitution or a swap of two neighbours as one edit (the
// optimal string alignment distance): DNOE is one edit from DONE.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1) // row i-2
	prev := make([]int, len(rb)+1)  // row i-1
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}

// rowText names a written row in a message: "A -> B on E", "A -> B on
// done" or "A -> B" for an eventless row.
func rowText(t *Transition) string {
	to := t.To.Name
	switch {
	case t.History != nil:
		to = t.History.Name
	case t.Target != nil:
		to = t.Target.Name
	}
	s := t.Source.Name + " -> " + to
	if t.Event != nil || t.Done {
		s += " " + rowOn(t)
	}
	return s
}

// timerText is a timer as written: after 32s Timeout.
func timerText(tm *Timer) string { return "after " + tm.Text + " " + tm.Event.Name }

// nested checks what nesting, eventless rows and timers from run data
// add: a row that exits and re-enters a state with a timer restarts it
// (a warning); a timer whose duration is an event's field is entered on
// that event only; and unguarded eventless rows do not loop.
func (mc *machineChecker) nested() {
	m := mc.m
	type restart struct {
		pos lexer.Position
		s   *State
		on  string
	}
	warned := map[restart]bool{}
	for _, t := range m.Transitions {
		for _, s := range t.Exit {
			if len(s.Timers) == 0 || !slices.Contains(t.Enter, s) {
				continue
			}
			k := restart{t.Pos, s, rowOn(t)}
			if warned[k] {
				continue
			}
			warned[k] = true
			timers := make([]string, len(s.Timers))
			for i, tm := range s.Timers {
				timers[i] = `"` + timerText(tm) + `"`
			}
			what := "its timer " + timers[0]
			if len(timers) > 1 {
				what = "its timers " + strings.Join(timers[:len(timers)-1], ", ") + " and " + timers[len(timers)-1]
			}
			mc.warnf(t.Pos, "state %s: the row %s re-enters %s and restarts %s; add \"internal\" to keep it running", s.Name, rowText(t), s.Name, what)
		}
	}
	fieldTimer := func(s *State) *Timer {
		for _, tm := range s.Timers {
			if tm.FieldOf != nil && tm.Field != nil {
				return tm
			}
		}
		return nil
	}
	reported := map[*State]bool{}
	for _, s := range slices.Concat(m.States, m.Composites) {
		if tm := fieldTimer(s); tm != nil && m.Initial != nil && m.Initial.In(s) {
			mc.errorf(tm.Pos, "timer of state %s takes its duration from %s.%s, but a run starts in %s, where no event has set it; enter %s on %s only", s.Name, tm.FieldOf.Name, tm.Field.Name, s.Name, s.Name, tm.FieldOf.Name)
			reported[s] = true
		}
	}
	for _, t := range m.Transitions {
		for _, s := range t.Enter {
			tm := fieldTimer(s)
			if tm == nil || reported[s] || t.Event == tm.FieldOf {
				continue
			}
			reported[s] = true
			mc.errorf(t.Pos, "the row %s enters state %s, whose timer takes its duration from %s.%s; every row that enters %s must be on %s", rowText(t), s.Name, tm.FieldOf.Name, tm.Field.Name, s.Name, tm.FieldOf.Name)
		}
	}
	// A composite with an unguarded eventless row never stays to complete.
	unguarded := map[*State]*Transition{}
	for _, t := range m.Transitions {
		if t.Event == nil && !t.Done && t.Guard == nil && t.In == nil && unguarded[t.Source] == nil {
			unguarded[t.Source] = t
		}
	}
	seen := map[lexer.Position]bool{}
	for _, t := range m.Transitions {
		if u := unguarded[t.Source]; t.Done && u != nil && !seen[t.Pos] {
			seen[t.Pos] = true
			mc.errorf(t.Pos, "transition from %s on done can never fire: the unguarded one without an event at %s leaves %s first", t.Source.Name, short(u.Pos), t.Source.Name)
		}
	}
	mc.eventlessLoops()
}

// eventlessLoops reports a cycle of unguarded eventless and completion
// rows: once a run enters it, it would move for ever without an event.
func (mc *machineChecker) eventlessLoops() {
	next := map[*State]*Transition{} // the unguarded eventless row a leaf takes first
	for _, t := range mc.m.Transitions {
		if t.Event == nil && t.Guard == nil && t.In == nil && t.History == nil && next[t.From] == nil {
			next[t.From] = t
		}
	}
	// step is the row a leaf takes: its own, or its parallel state's,
	// taken when no region takes one (its completion row waits for every
	// region, not for this leaf's).
	step := func(s *State) *Transition {
		if t := next[s]; t != nil {
			return t
		}
		if p, _ := s.Region(); p != nil && next[p] != nil && !next[p].Done {
			return next[p]
		}
		return nil
	}
	done := map[*State]bool{}
	for _, start := range mc.m.States {
		var path []*State
		onPath := map[*State]int{}
		for s := start; s != nil && !done[s]; {
			if i, ok := onPath[s]; ok {
				loop := path[i:]
				names := make([]string, 0, len(loop)+1)
				for _, x := range loop {
					names = append(names, x.Name)
				}
				names = append(names, s.Name)
				mc.errorf(step(loop[0]).Pos, "unguarded rows without an event loop for ever: %s; guard one of them, or give it an event", strings.Join(names, " -> "))
				break
			}
			onPath[s] = len(path)
			path = append(path, s)
			t := step(s)
			if t == nil {
				break
			}
			s = t.To
		}
		for _, s := range path {
			done[s] = true
		}
	}
}
