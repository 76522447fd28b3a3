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
	used   struct{ events, guards map[string]bool }
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

// stateEvent is a pair of a state and an event.
type stateEvent struct {
	s *State
	e *Event
}

func (c *checker) machine(md *MachineDecl) (*Machine, *machineChecker) {
	m := &Machine{Pos: md.Pos, Name: md.Name, Doc: md.Doc, Version: 1}
	mc := &machineChecker{checker: c, m: m,
		states: map[string]*State{}, events: map[string]*Event{}, guards: map[string]*Guard{},
		timerEvent: map[*Timer]lexer.Position{}, rowEvents: map[*Event]bool{},
		unsure: map[stateEvent]bool{}, unknownRefs: map[string]bool{}, lostTimer: map[*State]bool{}}
	mc.used.events, mc.used.guards = map[string]bool{}, map[string]bool{}
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
			mc.declareState(it.State, it.Doc)
			stateDecls = append(stateDecls, it.State)
		case it.Event != nil:
			mc.declareEvent(it.Event, it.Doc)
		case it.Guard != nil:
			mc.declareGuard(it.Guard, it.Doc)
		}
	}
	if len(m.States) > maxStates {
		c.errorf(md.Pos, "machine %s has %d states; a machine has at most %d", m.Name, len(m.States), maxStates)
	}
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
	if rows == 0 && m.Initial != nil {
		// Reachability would only echo this: every other state is
		// unreachable.
		c.errorf(md.Pos, "machine %s has no transitions: a run could never leave its initial state %s; add one, such as \"%s -> DONE on EVENT\"", m.Name, m.Initial.Name, m.Initial.Name)
		mc.skipGraph = true
	}
	mc.groups()
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

func (mc *machineChecker) declareState(sd *StateDecl, doc []string) {
	name := sd.Name.Value
	if prev, dup := mc.states[name]; dup {
		mc.errorf(sd.Name.Pos, "state %s declared twice (first at %s)", name, short(prev.Pos))
		return
	}
	s := &State{Pos: sd.Name.Pos, Name: name, Doc: doc, GoName: goName(name), Index: len(mc.m.States)}
	mc.states[name] = s
	mc.m.States = append(mc.m.States, s)
	switch sd.Kind {
	case "initial":
		s.Initial = true
		if mc.m.Initial != nil {
			mc.errorf(sd.Name.Pos, "second initial state %s (the initial state is %s, at %s)", name, mc.m.Initial.Name, short(mc.m.Initial.Pos))
			mc.skipGraph = true
		} else {
			mc.m.Initial = s
		}
	case "final":
		if sd.Status == nil {
			mc.errorf(sd.Name.Pos, "final state %s needs a status: succeeded, failed or cancelled", name)
			s.Status = "failed" // keep checking as if terminal
		} else {
			s.Status = sd.Status.Value
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
	var waitPos, retryPos lexer.Position
	for _, o := range sd.Options {
		if s.Terminal() {
			mc.errorf(o.Pos, "final state %s cannot take options; it is never left", s.Name)
			continue
		}
		switch {
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
			d, err := ParseDuration(o.Timer.After.Value)
			if err != nil {
				mc.errorf(o.Timer.After.Pos, "%v", err)
			} else if d <= 0 {
				mc.errorf(o.Timer.After.Pos, "timer duration %s must be positive", o.Timer.After.Value)
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
			tm := &Timer{Pos: o.Timer.Pos, After: d, Text: o.Timer.After.Value, Event: ev}
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
	if !token.IsExported(name) {
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

func (mc *machineChecker) transition(td *TransitionDecl, doc []string) {
	to := mc.lookupState(td.To.Value, td.To.Pos)
	ev := mc.lookupEvent(td.Event)
	if ev != nil {
		mc.rowEvents[ev] = true
	} else {
		mc.unknownRowEvent = true
	}
	var g *Guard
	if td.Guard != nil {
		mc.used.guards[td.Guard.Name.Value] = true
		if td.Guard.Unless && td.Guard.Not {
			mc.errorf(td.Guard.Pos, "\"unless !%s\" is a double negation; write \"when %s\"", td.Guard.Name.Value, td.Guard.Name.Value)
		}
		if g = mc.guards[td.Guard.Name.Value]; g == nil {
			mc.errorf(td.Guard.Name.Pos, "unknown guard %s%s", td.Guard.Name.Value, didYouMean(td.Guard.Name.Value, keys(mc.guards)))
			mc.unknownRefs["guard"] = true
		} else if ev != nil && !slices.Contains(g.Events, ev) {
			g.Events = append(g.Events, ev)
		}
	}
	outcome := ""
	if td.Outcome != nil {
		v := mc.outcome(td.Outcome)
		outcome = v
		if to != nil && !to.Terminal() {
			mc.errorf(td.Outcome.Pos, "outcome on a transition to %s, which is not final", to.Name)
		} else if to != nil && v != "" && to.Outcome != "" && to.Outcome != v {
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
			for _, s := range mc.m.States {
				if !s.Terminal() && !seen[s] {
					seen[s] = true
					froms = append(froms, s)
				}
			}
			continue
		}
		s := mc.lookupState(ref.Name, ref.Pos)
		switch {
		case s == nil:
			mc.skipGraph = true
			mc.unsure[stateEvent{nil, ev}] = true
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
	if to == nil || ev == nil || (td.Guard != nil && g == nil) {
		mc.skipGraph = true
		for _, s := range froms {
			mc.unsure[stateEvent{s, ev}] = true
		}
		return
	}
	neg := td.Guard != nil && td.Guard.Negated()
	for _, s := range froms {
		mc.m.Transitions = append(mc.m.Transitions, &Transition{Pos: td.Pos, Doc: doc, From: s, To: to, Event: ev, Guard: g, Negated: neg, Outcome: outcome, Star: star != nil})
	}
}

// groups checks each (state, event) pair's rows: at most one unguarded row,
// last; no row that an earlier one always shadows; and a warning when two
// or more guarded rows have no fallback.
func (mc *machineChecker) groups() {
	type key struct {
		s *State
		e *Event
	}
	var order []key
	rows := map[key][]*Transition{}
	for _, t := range mc.m.Transitions {
		k := key{t.From, t.Event}
		if _, ok := rows[k]; !ok {
			order = append(order, k)
		}
		rows[k] = append(rows[k], t)
	}
	var drop []*Transition
	for _, k := range order {
		ts := rows[k]
		type clause struct {
			g   *Guard
			neg bool
		}
		var unguarded, covered *Transition
		seenGuard := map[clause]*Transition{}
		for _, t := range ts {
			if covered != nil {
				mc.errorf(t.Pos, "transition from %s on %s can never fire: the transitions on %s and !%s before it admit every event", k.s.Name, k.e.Name, covered.Guard.Name, covered.Guard.Name)
				drop = append(drop, t)
				continue
			}
			if unguarded != nil {
				if t.Guard == nil {
					mc.errorf(t.Pos, "two unguarded transitions from %s on %s (the other at %s)", k.s.Name, k.e.Name, short(unguarded.Pos))
				} else {
					mc.errorf(t.Pos, "transition from %s on %s can never fire: the unguarded one at %s comes first", k.s.Name, k.e.Name, short(unguarded.Pos))
				}
				drop = append(drop, t)
				continue
			}
			if t.Guard == nil {
				unguarded = t
				continue
			}
			gk := clause{t.Guard, t.Negated}
			if prev, dup := seenGuard[gk]; dup {
				mc.errorf(t.Pos, "transition from %s on %s can never fire: the one at %s has the same guard and comes first", k.s.Name, k.e.Name, short(prev.Pos))
				drop = append(drop, t)
				continue
			}
			seenGuard[gk] = t
			if _, ok := seenGuard[clause{t.Guard, !t.Negated}]; ok {
				covered = t
			}
		}
		// Only the rows that can fire count: a guarded row next to one that
		// was just reported is not an alternative.
		if unguarded == nil && covered == nil && len(seenGuard) >= 2 && !mc.unsureOf(k.s, k.e) {
			last := ts[len(ts)-1]
			mc.warnf(last.Pos, "every transition from %s on %s is guarded: when no guard admits the event, it is rejected; add an unguarded one last if that is not intended", k.s.Name, k.e.Name)
		}
	}
	if len(drop) > 0 {
		mc.m.Transitions = slices.DeleteFunc(mc.m.Transitions, func(t *Transition) bool { return slices.Contains(drop, t) })
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
		if t.To.Status == "cancelled" && !fired[t.Event] && !slices.Contains(candidates, t.Event) {
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

// handles reports whether a row leaves s on e.
func (mc *machineChecker) handles(s *State, e *Event) bool {
	for _, t := range mc.m.Transitions {
		if t.From == s && t.Event == e {
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
func (mc *machineChecker) graph() {
	m := mc.m
	if m.Initial == nil || mc.skipGraph {
		return
	}
	next := map[*State][]*State{}
	prev := map[*State][]*State{}
	for _, t := range m.Transitions {
		next[t.From] = append(next[t.From], t.To)
		prev[t.To] = append(prev[t.To], t.From)
	}
	reach := walk([]*State{m.Initial}, next)
	var finals []*State
	for _, s := range m.States {
		if s.Terminal() {
			finals = append(finals, s)
		}
	}
	coreach := walk(finals, prev)
	var stuck map[*State]*deadEnd
	if len(finals) == 0 {
		stuck = stuckStates(m.States, next, prev)
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
		if !s.Wait || s.Terminal() || len(s.Timers) > 0 || mc.lostTimer[s] {
			continue
		}
		var whys []string
		var seen []*Event
		for _, t := range mc.m.Transitions {
			if t.From != s || slices.Contains(seen, t.Event) {
				continue
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

func walk(start []*State, edges map[*State][]*State) map[*State]bool {
	seen := map[*State]bool{}
	stack := append([]*State(nil), start...)
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[s] {
			continue
		}
		seen[s] = true
		stack = append(stack, edges[s]...)
	}
	return seen
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
	for _, s := range mc.m.States {
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
