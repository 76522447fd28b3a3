package gen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fsmgen/fsmgen/dsl"
)

// ImportXState reads an XState v5 machine config in JSON (as [XState]
// writes and as XState users write without fsmgen's metadata) and returns
// it as .fsm source, formatted and checked; filename names the result in
// its diagnostics. What meta.fsmgen holds (see [XState]) is read back, so
// that a machine exported and imported again is the same machine: its
// type, version, package, cancel event, events and payload fields, guards,
// actions, statuses, outcomes, retry policies and timers, its docs, and
// its table in the order and the grouping it was written in (FROM lists,
// * and several events).
//
// Nested states import as composite states (initial names the initial
// child), history nodes as history pseudostates (history: "deep" or
// "shallow"), final children as final children that complete their parent
// (onDone is the parent's "on done" row), entry and exit action names as
// entry and exit actions, always as eventless rows, and a transition
// without reenter (XState's default, reenter: false) to its own state or
// into it as an internal row; a transition with no target is an internal
// row to its own state. A config that XState wrote without fsmgen's
// metadata is read as well: top-level final states are succeeded, events,
// guards and actions are declared in order of first use, each transition
// is a row of its own, in the order of the states and their events (rows
// of one state alike but for their events are one row on several events),
// and a delayed transition after.MS that names no event fires a new event,
// AfterD (After20s), from a timer of its state. What a .fsm file cannot
// say is an error that names it: invocations, named delays and event
// names that are not .fsm names. A node of type "parallel" imports as a
// parallel state, its children as its regions, and XState's stateIn
// guard as In(S). Transition actions,
// context and tags, which belong in Go, are dropped; the returned notes
// say so.
func ImportXState(filename string, data []byte) (src []byte, notes []string, err error) {
	root, err := parseOrdered(data)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", filename, err)
	}
	im := &importer{}
	if err := im.machine(root); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", filename, err)
	}
	text := im.render()
	out, err := dsl.FormatSource(filename, text)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: import of %s gives source that does not parse: %v\n%s", ErrInternal, filename, err, text)
	}
	if _, ds := dsl.Load(filename, out); ds.HasErrors() {
		return nil, nil, fmt.Errorf("%s: the imported machine does not check:\n%v", filename, ds.Err())
	}
	return out, im.notes, nil
}

// importer collects a machine from its XState config.
type importer struct {
	name, typ, pkg, cancel string
	version                int64
	doc                    string
	initial                string
	states                 []*imState
	events                 []*imEvent
	guards                 []*imGuard
	actions                []*imGuard
	rows                   []*imRow
	notes                  []string
	// ids are the state nodes' own ids (a node's id property), by id.
	ids map[string]string
	// namedDelay is the name of the delay whose transitions are being
	// read, "" for one in milliseconds.
	namedDelay string
	// fields are the payload fields that named delays declare, by event.
	fields map[string][]string
}

type imState struct {
	name, doc, status, outcome string
	final, wait                bool
	// parallel marks a node of type "parallel": its children are its
	// regions.
	parallel bool
	retry    string
	timers   []string
	// A nested state's parent; a composite's initial child, children and
	// history pseudostates; a history's depth.
	parent      *imState
	initial     string
	children    []*imState
	history     bool
	deep        bool
	entry, exit []string
	// delays are the state's named delays, which resolve turns into
	// timers that take their duration from the entering event.
	delays []string
}

type imEvent struct {
	name, doc string
	external  bool
	fields    []string
}

type imGuard struct{ name, doc string }

type imRow struct {
	index int // the row's place in the table; -1 when the config does not say
	order int
	// node is the state whose node the transition is on; from the row's
	// FROM as written.
	node string
	from []string
	// to is the target as the config writes it until resolve, then the
	// state's name.
	to string
	// events are the row's events, none for an eventless row; done marks
	// a completion row.
	events   []string
	done     bool
	internal bool
	// reenter is the transition's reenter, which resolve reads.
	reenter bool
	guard   string
	// written are the events of the row as the table writes them, in
	// order, when it names several (meta.fsmgen.events).
	written []string
	// in is the state a stateIn guard tests, as the config writes it
	// until resolve, then the state's name; "" for another guard.
	in      string
	negated bool
	outcome string
	doc     string
}

func (im *importer) note(format string, args ...any) {
	n := fmt.Sprintf(format, args...)
	if !slices.Contains(im.notes, n) {
		im.notes = append(im.notes, n)
	}
}

func (im *importer) machine(root *node) error {
	if root.kind != '{' {
		return errors.New("want a JSON object, an XState machine config")
	}
	id, err := root.str("id")
	if err != nil {
		return err
	}
	if id == "" {
		id = "Machine"
		im.note("the config has no id; the machine is named Machine")
	}
	if !isName(id) {
		return fmt.Errorf("machine id %q is not a .fsm name (a letter or _, then letters, digits and _)", id)
	}
	im.name = im.upper("machine", id)
	if im.doc, err = root.str("description"); err != nil {
		return err
	}
	if im.initial, err = root.str("initial"); err != nil {
		return err
	}
	for _, k := range []string{"type", "parallel"} {
		if v := root.get(k); v != nil && v.s != "" && v.s != "compound" {
			return fmt.Errorf("machine %s is of type %q; only a flat machine of states imports", id, v.s)
		}
	}
	for _, k := range []string{"context", "entry", "exit", "invoke", "always", "on", "after"} {
		if root.get(k) != nil {
			switch k {
			case "context", "entry", "exit":
				im.note("machine %s: %s dropped: a .fsm machine has no %s", id, k, k)
			default:
				return fmt.Errorf("machine %s: %s at the root is not supported; put transitions under the states", id, k)
			}
		}
	}
	im.version = 1
	fm := root.path("meta", "fsmgen")
	if fm != nil {
		if im.typ, err = fm.str("type"); err != nil {
			return err
		}
		if v := fm.get("version"); v != nil {
			if im.version, err = strconv.ParseInt(v.s, 10, 64); err != nil || v.kind != 'n' {
				return fmt.Errorf("meta.fsmgen.version %s: want a whole number", v.s)
			}
		}
		if im.pkg, err = fm.str("package"); err != nil {
			return err
		}
		if im.cancel, err = fm.str("cancel"); err != nil {
			return err
		}
		for _, e := range fm.get("events").items() {
			ev := &imEvent{}
			if ev.name, err = e.str("name"); err != nil {
				return err
			}
			if ev.doc, err = e.str("description"); err != nil {
				return err
			}
			ev.external = e.get("external").truth()
			for _, f := range e.get("fields").items() {
				n, err := f.str("name")
				if err != nil {
					return err
				}
				t, err := f.str("type")
				if err != nil {
					return err
				}
				ev.fields = append(ev.fields, n+" "+t)
			}
			im.events = append(im.events, ev)
		}
		for _, g := range fm.get("guards").items() {
			gd := &imGuard{}
			if gd.name, err = g.str("name"); err != nil {
				return err
			}
			if gd.doc, err = g.str("description"); err != nil {
				return err
			}
			im.guards = append(im.guards, gd)
		}
		for _, a := range fm.get("actions").items() {
			ad := &imGuard{}
			if ad.name, err = a.str("name"); err != nil {
				return err
			}
			if ad.doc, err = a.str("description"); err != nil {
				return err
			}
			im.actions = append(im.actions, ad)
		}
	}
	states := root.get("states")
	if states == nil || states.kind != '{' || len(states.keys) == 0 {
		return fmt.Errorf("machine %s has no states", id)
	}
	if im.initial == "" {
		im.initial = states.keys[0]
		im.note("machine %s names no initial state; the first, %s, is", id, im.initial)
	}
	im.ids = map[string]string{}
	for i, name := range states.keys {
		if err := im.state(name, states.vals[i], nil); err != nil {
			return fmt.Errorf("state %s: %w", name, err)
		}
	}
	if !slices.ContainsFunc(im.states, func(s *imState) bool { return s.name == im.initial && s.parent == nil }) {
		return fmt.Errorf("initial state %q is not one of the states", im.initial)
	}
	if err := im.resolve(id); err != nil {
		return err
	}
	return im.table()
}

func (im *importer) state(name string, sn *node, parent *imState) error {
	if !isName(name) {
		return fmt.Errorf("%q is not a .fsm name (a letter or _, then letters, digits and _)", name)
	}
	if sn.kind != '{' {
		return errors.New("want an object")
	}
	if prev := im.find(name); prev != nil {
		return fmt.Errorf("a second state named %s: .fsm names are unique across the machine", name)
	}
	s := &imState{name: name, parent: parent}
	var err error
	if s.doc, err = sn.str("description"); err != nil {
		return err
	}
	if id, err := sn.str("id"); err != nil {
		return err
	} else if id != "" {
		im.ids[id] = name
	}
	typ, err := sn.str("type")
	if err != nil {
		return err
	}
	switch typ {
	case "", "atomic", "compound":
	case "parallel":
		if sn.get("states") == nil {
			return errors.New(`a state of type "parallel" without states does not import`)
		}
		s.parallel = true
	case "final":
		s.final = true
		if parent == nil {
			s.status = "succeeded"
		}
	case "history":
		if parent == nil {
			return errors.New("a history node at the top level does not import; put it in a compound state")
		}
		h, err := sn.str("history")
		if err != nil {
			return err
		}
		switch h {
		case "", "shallow":
		case "deep":
			s.deep = true
		default:
			return fmt.Errorf("history %q: want shallow or deep", h)
		}
		if sn.get("target") != nil {
			im.note("history %s: its default target dropped: a .fsm history with no record enters its composite's initial state", name)
		}
		s.history = true
		parent.children = append(parent.children, s)
		im.states = append(im.states, s)
		return nil
	default:
		return fmt.Errorf("a state of type %q does not import", typ)
	}
	if sn.get("invoke") != nil {
		return errors.New("invoke does not import: a .fsm state has no invoked actor")
	}
	if sn.get("tags") != nil {
		im.note("state %s: tags dropped: they belong in Go", name)
	}
	for _, k := range []string{"entry", "exit"} {
		names, err := im.actionNames(name, k, sn.get(k))
		if err != nil {
			return err
		}
		if k == "entry" {
			s.entry = names
		} else {
			s.exit = names
		}
	}
	if fm := sn.path("meta", "fsmgen"); fm != nil {
		if st, err := fm.str("status"); err != nil {
			return err
		} else if st != "" {
			s.status, s.final = st, true
		}
		if s.outcome, err = fm.str("outcome"); err != nil {
			return err
		}
		s.wait = fm.get("wait").truth()
		if r := fm.get("retry"); r != nil {
			if s.retry, err = importRetry(r); err != nil {
				return fmt.Errorf("meta.fsmgen.retry: %w", err)
			}
		}
	}
	if parent != nil {
		parent.children = append(parent.children, s)
	}
	im.states = append(im.states, s)
	if on := sn.get("on"); on != nil {
		if on.kind != '{' {
			return errors.New("on: want an object")
		}
		for i, ev := range on.keys {
			if ev == "*" || strings.ContainsAny(ev, ".*") && !isName(ev) {
				return fmt.Errorf("on %q: wildcard and dotted event descriptors do not import; name each event", ev)
			}
			if !isName(ev) {
				return fmt.Errorf("on %q: the event is not a .fsm name (a letter or _, then letters, digits and _)", ev)
			}
			if ev == "done" {
				return errors.New(`on "done": done is a reserved word of .fsm, the completion of a composite state; rename the event`)
			}
			if s.final && isForbidden(on.vals[i]) {
				// fsmgen's export refuses in a final child with a status
				// the events its ancestors take; a final state has no row.
				continue
			}
			if err := im.transitions(s, ev, on.vals[i], nil, false); err != nil {
				return fmt.Errorf("on %s: %w", ev, err)
			}
		}
	}
	if always := sn.get("always"); always != nil {
		if err := im.transitions(s, "", always, nil, false); err != nil {
			return fmt.Errorf("always: %w", err)
		}
	}
	if onDone := sn.get("onDone"); onDone != nil {
		if sn.get("states") == nil {
			return errors.New("onDone on a state without children does not import: only a compound state completes")
		}
		if err := im.transitions(s, "", onDone, nil, true); err != nil {
			return fmt.Errorf("onDone: %w", err)
		}
	}
	if after := sn.get("after"); after != nil {
		if after.kind != '{' {
			return errors.New("after: want an object")
		}
		for i, delay := range after.keys {
			ms, err := strconv.ParseInt(delay, 10, 64)
			if err != nil || ms <= 0 {
				// A named delay imports only as fsmgen's own timer, whose
				// duration its meta gives.
				ms = -1
			}
			im.namedDelay = ""
			if ms < 0 {
				im.namedDelay = delay
			}
			if err := im.transitions(s, "", after.vals[i], &ms, false); err != nil {
				return fmt.Errorf("after %s: %w", delay, err)
			}
		}
	}
	if children := sn.get("states"); children != nil {
		if children.kind != '{' || len(children.keys) == 0 {
			return errors.New("states: want an object of child states")
		}
		if s.initial, err = sn.str("initial"); err != nil {
			return err
		}
		if s.parallel && s.initial != "" {
			return errors.New("a parallel state has no initial state: it enters every region")
		}
		for i, c := range children.keys {
			if err := im.state(c, children.vals[i], s); err != nil {
				return fmt.Errorf("state %s: %w", c, err)
			}
		}
		if s.parallel {
			return nil
		}
		if s.initial == "" {
			for _, c := range s.children {
				if !c.history {
					s.initial = c.name
					break
				}
			}
			im.note("state %s names no initial state; the first, %s, is", name, s.initial)
		}
		if !slices.ContainsFunc(s.children, func(c *imState) bool { return c.name == s.initial && !c.history }) {
			return fmt.Errorf("initial state %q is not one of the children", s.initial)
		}
		if s.final {
			return errors.New("a final state with children does not import")
		}
	}
	return nil
}

// isForbidden reports whether a transition is XState's forbidden one: no
// target, no actions.
func isForbidden(t *node) bool {
	return t.kind == '{' && t.get("target") == nil && t.get("actions") == nil
}

// errNamedDelay is the error of a delayed transition under a named delay
// without fsmgen's metadata.
var errNamedDelay = errors.New("named delay")

// Bounds of a timer imported from a named delay, whose implementation is
// not in the config.
const namedDelayMin, namedDelayMax = "1ms", "7d"

// actionNames reads the action names of a state's entry or exit: a name,
// {"type": NAME}, or a list of them.
func (im *importer) actionNames(state, key string, n *node) ([]string, error) {
	if n == nil {
		return nil, nil
	}
	items := []*node{n}
	if n.kind == '[' {
		items = n.vals
	}
	var out []string
	for _, a := range items {
		name := a.s
		if a.kind == '{' {
			t, err := a.str("type")
			if err != nil {
				return nil, err
			}
			if a.get("params") != nil {
				im.note("state %s: %s %s: parameters dropped: a .fsm action takes none", state, key, t)
			}
			name = t
		} else if a.kind != '"' {
			return nil, fmt.Errorf("%s: want action names", key)
		}
		if !isName(name) {
			im.note("state %s: %s %q dropped: not a .fsm name", state, key, name)
			continue
		}
		name = im.upper("action", name)
		out = append(out, name)
		if !slices.ContainsFunc(im.actions, func(g *imGuard) bool { return g.name == name }) {
			im.actions = append(im.actions, &imGuard{name: name})
		}
	}
	return out, nil
}

// find returns the state or history named name, nil when none is.
func (im *importer) find(name string) *imState {
	for _, s := range im.states {
		if s.name == name {
			return s
		}
	}
	return nil
}

// resolve turns each row's target, as the config writes it, into the
// name of a state or history, and decides whether it is internal: a
// transition without reenter to its own state or into it is.
func (im *importer) resolve(machineID string) error {
	for _, r := range im.rows {
		src := im.find(r.node)
		target := r.to
		if target == "" {
			// A targetless transition stays in its state.
			r.to, r.internal = src.name, true
			continue
		}
		if r.in != "" {
			in, err := im.ref(machineID, r.in)
			if err != nil {
				return fmt.Errorf("state %s: stateIn %q: %w", src.name, r.in, err)
			}
			r.in = in.name
		}
		t, err := im.ref(machineID, target)
		if err != nil {
			return fmt.Errorf("state %s: target %q: %w", src.name, r.to, err)
		}
		r.to = t.name
		into := false
		for x := t; x != nil; x = x.parent {
			if x == src {
				into = true
			}
		}
		r.internal = into && !r.reenter && !t.history
	}
	for _, s := range im.states {
		for _, d := range s.delays {
			ev, err := im.enteringEvent(s)
			if err != nil {
				return fmt.Errorf("state %s: after %q: a named delay imports as the duration field %s of the event that enters the state: %w", s.name, d, d, err)
			}
			s.timers = append(s.timers, fmt.Sprintf("after %s.%s min %s max %s After%s", ev, d, namedDelayMin, namedDelayMax, strings.ToUpper(d[:1])+d[1:]))
			if im.fields == nil {
				im.fields = map[string][]string{}
			}
			if f := d + " time.Duration"; !slices.Contains(im.fields[ev], f) {
				im.fields[ev] = append(im.fields[ev], f)
			}
			im.note("state %s: the named delay %s is the field %s of event %s, bounded to [%s, %s]", s.name, d, d, ev, namedDelayMin, namedDelayMax)
		}
	}
	return nil
}

// ref returns the state a reference names as the config writes it: a
// name, .CHILD, #ID or #ID.PATH.
func (im *importer) ref(machineID, ref string) (*imState, error) {
	name := ref
	if strings.HasPrefix(name, "#") {
		id, rest, _ := strings.Cut(name[1:], ".")
		switch {
		case im.ids[id] != "" && rest == "":
			name = im.ids[id]
		case im.ids[id] != "" || id == machineID:
			name = rest
		default:
			return nil, fmt.Errorf("no state has id %s", id)
		}
	}
	name = strings.TrimPrefix(name, ".")
	if i := strings.LastIndex(name, "."); i >= 0 {
		name = name[i+1:]
	}
	s := im.find(name)
	if s == nil {
		return nil, errors.New("want a state of this machine")
	}
	return s, nil
}

// enteringEvent returns the one event of the rows that enter s: those
// whose target is s, inside s, or a state whose initial descent goes
// through s, and that exit the state they leave up to above s.
func (im *importer) enteringEvent(s *imState) (string, error) {
	within := func(x, a *imState) bool { // x is a or inside it
		for ; x != nil; x = x.parent {
			if x == a {
				return true
			}
		}
		return false
	}
	descends := func(t *imState) bool { // s is on t's initial descent
		for x := t; x != nil; x = im.find(x.initial) {
			if x == s {
				return true
			}
			if len(x.children) == 0 {
				break
			}
		}
		return false
	}
	for x := im.find(im.initial); x != nil; x = im.find(x.initial) {
		if x == s {
			return "", errors.New("the run starts there, entered by no event")
		}
		if len(x.children) == 0 {
			break
		}
	}
	var events []string
	for _, r := range im.rows {
		src, t := im.find(r.node), im.find(r.to)
		// The domain of the row: its source for an internal row, else the
		// innermost state that holds both its source and target strictly.
		var domain *imState
		if r.internal {
			domain = src
		} else {
			for a := src.parent; a != nil; a = a.parent {
				if t != a && within(t, a) {
					domain = a
					break
				}
			}
		}
		if domain == s || domain != nil && !within(s, domain) || !within(t, s) && !descends(t) {
			continue
		}
		if len(r.events) == 0 {
			return "", fmt.Errorf("%s enters it without an event", r.node)
		}
		for _, e := range r.events {
			if !slices.Contains(events, e) {
				events = append(events, e)
			}
		}
	}
	switch len(events) {
	case 0:
		return "", errors.New("no row enters it")
	case 1:
		return events[0], nil
	}
	return "", fmt.Errorf("the rows that enter it are on %s, not one event", strings.Join(events, ", "))
}

// transitions reads the transitions of state s on event ev, or, with
// delay, of its after.DELAY.
func (im *importer) transitions(s *imState, ev string, tn *node, delay *int64, done bool) error {
	ts := []*node{tn}
	if tn.kind == '[' {
		ts = tn.vals
	}
	for _, t := range ts {
		if t.kind == '"' {
			t = &node{kind: '{', keys: []string{"target"}, vals: []*node{t}}
		}
		if t.kind != '{' {
			return errors.New("want a transition object or a target")
		}
		fm := t.path("meta", "fsmgen")
		if delay != nil {
			timerEvent, err := fm.str("event")
			if err != nil {
				return err
			}
			text, err := fm.str("after")
			if err != nil {
				return err
			}
			if timerEvent != "" {
				// fsmgen's timer: its rows are under on as well.
				if text == "" && *delay > 0 {
					text = FormatDuration(time.Duration(*delay) * time.Millisecond)
				}
				if text == "" {
					return errNamedDelay
				}
				if mn, err := fm.str("min"); err != nil {
					return err
				} else if mn != "" && !strings.Contains(text, " min ") {
					mx, err := fm.str("max")
					if err != nil {
						return err
					}
					text += " min " + mn + " max " + mx
				}
				timer := "after " + text + " " + timerEvent
				if !slices.Contains(s.timers, timer) {
					s.timers = append(s.timers, timer)
				}
				continue
			}
			if *delay < 0 {
				// A named delay: the duration field of that name of the
				// event that enters the state, which resolve finds.
				d := im.namedDelay
				if !isName(d) {
					return fmt.Errorf("a named delay imports as the duration field of that name of the event that enters the state; %q is not a .fsm name", d)
				}
				ev = "After" + strings.ToUpper(d[:1]) + d[1:]
				if !slices.Contains(s.delays, d) {
					s.delays = append(s.delays, d)
				}
			} else {
				text = FormatDuration(time.Duration(*delay) * time.Millisecond)
				ev = "After" + text
				if timer := "after " + text + " " + ev; !slices.Contains(s.timers, timer) {
					s.timers = append(s.timers, timer)
				}
			}
		}
		what := "on " + ev
		switch {
		case done:
			what = "onDone"
		case ev == "":
			what = "always"
		}
		if t.get("actions") != nil {
			im.note("state %s %s: actions dropped: they belong in Go", s.name, what)
		}
		target, err := targetOf(t.get("target"))
		if err != nil {
			return err
		}
		r := &imRow{index: -1, order: len(im.rows), from: []string{s.name}, to: target, done: done,
			reenter: t.get("reenter").truth()}
		if ev != "" {
			r.events = []string{ev}
		}
		if r.doc, err = t.str("description"); err != nil {
			return err
		}
		if g := t.get("guard"); g != nil {
			if r.in, r.negated, err = stateInOf(g); err != nil {
				return err
			}
			if r.in == "" {
				if r.guard, r.negated, err = guardOf(g); err != nil {
					return err
				}
				r.guard = im.upper("guard", r.guard)
			}
		}
		if fm != nil {
			if v := fm.get("row"); v != nil {
				n, err := strconv.Atoi(v.s)
				if err != nil || v.kind != 'n' || n < 0 {
					return fmt.Errorf("meta.fsmgen.row %s: want a whole number", v.s)
				}
				r.index = n
			}
			if from := fm.get("from"); from != nil {
				r.from = nil
				for _, f := range from.items() {
					r.from = append(r.from, f.s)
				}
			}
			for _, e := range fm.get("events").items() {
				r.written = append(r.written, e.s)
			}
			if r.outcome, err = fm.str("outcome"); err != nil {
				return err
			}
		}
		r.node = s.name
		im.rows = append(im.rows, r)
	}
	return nil
}

// table merges the transitions of one written row (a FROM list, *, or
// several events), merges the rows of one state that differ only in their
// event when the config does not say how the table was written, declares
// the events and guards the table uses that the metadata does not, and
// orders the rows.
func (im *importer) table() error {
	var rows []*imRow
	byIndex := map[int]*imRow{}
	for _, r := range im.rows {
		if r.index < 0 {
			if n := len(rows); n > 0 && rows[n-1].index < 0 && sameButEvents(rows[n-1], r) {
				rows[n-1].events = append(rows[n-1].events, r.events...)
				continue
			}
			rows = append(rows, r)
			continue
		}
		if prev, ok := byIndex[r.index]; ok {
			if prev.to != r.to || prev.guard != r.guard || prev.in != r.in || prev.negated != r.negated || prev.done != r.done || prev.internal != r.internal || (len(prev.events) == 0) != (len(r.events) == 0) {
				return fmt.Errorf("the transitions of row %d (%s on %s, %s on %s) differ", r.index, prev.from, prev.events, r.from, r.events)
			}
			for _, e := range r.events {
				if !slices.Contains(prev.events, e) {
					prev.events = append(prev.events, e)
				}
			}
			continue
		}
		byIndex[r.index] = r
		rows = append(rows, r)
	}
	for _, r := range rows {
		if len(r.written) > 0 {
			r.events = r.written
		}
	}
	slices.SortStableFunc(rows, func(a, b *imRow) int {
		switch {
		case a.index >= 0 && b.index >= 0:
			return a.index - b.index
		case a.index >= 0:
			return -1
		case b.index >= 0:
			return 1
		}
		return a.order - b.order
	})
	im.rows = rows
	for _, r := range rows {
		for _, ev := range r.events {
			if !slices.ContainsFunc(im.events, func(e *imEvent) bool { return e.name == ev }) {
				im.events = append(im.events, &imEvent{name: ev, fields: im.fields[ev]})
			}
		}
		if r.guard != "" && !slices.ContainsFunc(im.guards, func(g *imGuard) bool { return g.name == r.guard }) {
			im.guards = append(im.guards, &imGuard{name: r.guard})
		}
	}
	return nil
}

// sameButEvents reports whether two rows without table metadata are one
// row on several events: the same state, target, guard and kind, both on
// events.
func sameButEvents(a, b *imRow) bool {
	return a.node == b.node && a.to == b.to && a.guard == b.guard && a.in == b.in && a.negated == b.negated &&
		a.internal == b.internal && !a.done && !b.done && len(a.events) > 0 && len(b.events) > 0 &&
		a.outcome == b.outcome && a.doc == "" && b.doc == "" && !slices.Contains(a.events, b.events[0])
}

// render writes the machine as .fsm source, for dsl.FormatSource to lay out.
func (im *importer) render() []byte {
	var b bytes.Buffer
	doc := func(indent, text string) {
		if text == "" {
			return
		}
		for _, l := range strings.Split(text, "\n") {
			b.WriteString(strings.TrimRight(indent+"// "+l, " ") + "\n")
		}
	}
	doc("", im.doc)
	fmt.Fprintf(&b, "machine %s {\n", im.name)
	if im.typ != "" {
		fmt.Fprintf(&b, "    type %s\n", strconv.Quote(im.typ))
	}
	fmt.Fprintf(&b, "    version %d\n", im.version)
	if im.pkg != "" {
		fmt.Fprintf(&b, "    package %s\n", im.pkg)
	}
	if im.cancel != "" {
		fmt.Fprintf(&b, "    cancel %s\n", im.cancel)
	}
	b.WriteString("\n")
	var state func(indent string, s *imState)
	state = func(indent string, s *imState) {
		doc(indent, s.doc)
		initial := s.parent == nil && s.name == im.initial || s.parent != nil && s.parent.initial == s.name
		switch {
		case s.history && s.deep:
			fmt.Fprintf(&b, "%sdeep history %s\n", indent, s.name)
			return
		case s.history:
			fmt.Fprintf(&b, "%shistory %s\n", indent, s.name)
			return
		case s.final:
			fmt.Fprintf(&b, "%sfinal %s", indent, s.name)
			if s.status != "" {
				b.WriteString(" " + s.status)
			}
			if s.outcome != "" {
				fmt.Fprintf(&b, " outcome %s", strconv.Quote(s.outcome))
			}
		case initial:
			fmt.Fprintf(&b, "%sinitial %s", indent, s.name)
		default:
			fmt.Fprintf(&b, "%sstate %s", indent, s.name)
		}
		if s.parallel {
			b.WriteString(" parallel")
		}
		if s.wait {
			b.WriteString(" wait")
		}
		if s.retry != "" {
			b.WriteString(" " + s.retry)
		}
		for _, t := range s.timers {
			b.WriteString(" " + t)
		}
		for _, a := range s.entry {
			b.WriteString(" entry " + a)
		}
		for _, a := range s.exit {
			b.WriteString(" exit " + a)
		}
		if len(s.children) == 0 {
			b.WriteString("\n")
			return
		}
		b.WriteString(" {\n")
		for _, c := range s.children {
			if !c.history {
				state(indent+"    ", c)
			}
		}
		for _, c := range s.children {
			if c.history {
				state(indent+"    ", c)
			}
		}
		b.WriteString(indent + "}\n")
	}
	for _, s := range im.states {
		if s.parent == nil {
			state("    ", s)
		}
	}
	b.WriteString("\n")
	for _, e := range im.events {
		doc("    ", e.doc)
		fmt.Fprintf(&b, "    event %s", e.name)
		if e.external {
			b.WriteString(" external")
		}
		switch {
		case len(e.fields) > 2:
			fmt.Fprintf(&b, " {\n        %s\n    }", strings.Join(e.fields, "\n        "))
		case len(e.fields) > 0:
			fmt.Fprintf(&b, " { %s }", strings.Join(e.fields, "; "))
		}
		b.WriteString("\n")
	}
	if len(im.guards) > 0 {
		b.WriteString("\n")
	}
	for _, g := range im.guards {
		doc("    ", g.doc)
		fmt.Fprintf(&b, "    guard %s\n", g.name)
	}
	if len(im.actions) > 0 {
		b.WriteString("\n")
	}
	for _, a := range im.actions {
		doc("    ", a.doc)
		fmt.Fprintf(&b, "    action %s\n", a.name)
	}
	b.WriteString("\n")
	for _, r := range im.rows {
		doc("    ", r.doc)
		fmt.Fprintf(&b, "    %s -> %s", strings.Join(r.from, ", "), r.to)
		switch {
		case r.done:
			b.WriteString(" on done")
		case len(r.events) > 0:
			b.WriteString(" on " + strings.Join(r.events, ", "))
		}
		guard := r.guard
		if r.in != "" {
			guard = "In(" + r.in + ")"
		}
		switch {
		case guard != "" && r.negated:
			b.WriteString(" unless " + guard)
		case guard != "":
			b.WriteString(" when " + guard)
		}
		if r.outcome != "" {
			fmt.Fprintf(&b, " outcome %s", strconv.Quote(r.outcome))
		}
		if r.internal {
			b.WriteString(" internal")
		}
		b.WriteString("\n")
	}
	b.WriteString("}\n")
	return b.Bytes()
}

// importRetry is a retry policy from meta.fsmgen.retry, as .fsm writes it.
func importRetry(r *node) (string, error) {
	var parts []string
	if p, err := r.str("preset"); err != nil {
		return "", err
	} else if p != "" {
		parts = append(parts, "retry", p)
	} else {
		a := r.get("attempts")
		if a == nil || a.kind != 'n' {
			return "", errors.New("want attempts or a preset")
		}
		parts = append(parts, "retry")
		if r.get("upTo").truth() {
			parts = append(parts, "up", "to")
		}
		parts = append(parts, a.s)
		// The defaults (backoff 1s, factor 2) are left out.
		for _, k := range []string{"backoff", "factor", "max", "jitter"} {
			if v := r.get(k); v != nil && !(k == "backoff" && v.s == "1s" || k == "factor" && v.s == "2") {
				parts = append(parts, k, v.s)
			}
		}
		if codes := r.get("nonretryable").items(); len(codes) > 0 {
			var qs []string
			for _, c := range codes {
				qs = append(qs, strconv.Quote(c.s))
			}
			parts = append(parts, "nonretryable", strings.Join(qs, ", "))
		}
	}
	if e, err := r.str("else"); err != nil {
		return "", err
	} else if e != "" {
		parts = append(parts, "else", e)
	}
	return strings.Join(parts, " "), nil
}

// targetOf reads a transition's target as the config writes it (a
// sibling's name, .CHILD, #ID or #ID.PATH), "" for a transition without
// one; resolve finds the state it names.
func targetOf(t *node) (string, error) {
	if t == nil || t.kind == 0 {
		return "", nil
	}
	if t.kind == '[' {
		if len(t.vals) != 1 {
			return "", errors.New("a transition with several targets does not import")
		}
		t = t.vals[0]
	}
	if t.kind != '"' {
		return "", errors.New("target: want a state's name")
	}
	if t.s == "" {
		return "", nil
	}
	return t.s, nil
}

// stateInOf reads XState's stateIn guard, {"type": "stateIn", "params":
// {"state": REF}}, negated inside {"type": "not", "params": {"guard":
// ...}}: it returns REF as the config writes it, "" for another guard.
func stateInOf(g *node) (ref string, negated bool, err error) {
	if g.kind != '{' {
		return "", false, nil
	}
	typ, err := g.str("type")
	if err != nil {
		return "", false, err
	}
	switch typ {
	case "not":
		inner := g.path("params", "guard")
		if inner == nil {
			return "", false, nil
		}
		ref, neg, err := stateInOf(inner)
		if err != nil || ref == "" {
			return "", false, err
		}
		if neg {
			return "", false, errors.New("guard: a double negation does not import")
		}
		return ref, true, nil
	case "stateIn":
		ref, err := g.path("params").str("state")
		if err != nil {
			return "", false, err
		}
		if ref == "" {
			return "", false, errors.New(`guard {"type": "stateIn"} without params.state`)
		}
		return ref, false, nil
	}
	return "", false, nil
}

// guardOf reads a guard: "NAME", {"type": "NAME"}, or fsmgen's negation
// {"type": "not", "params": {"guard": "NAME"}}.
func guardOf(g *node) (name string, negated bool, err error) {
	switch g.kind {
	case '"':
		name = g.s
	case '{':
		typ, err := g.str("type")
		if err != nil {
			return "", false, err
		}
		if typ == "not" {
			inner := g.path("params", "guard")
			if inner == nil {
				return "", false, errors.New(`guard {"type": "not"} without params.guard`)
			}
			n, neg, err := guardOf(inner)
			if err != nil || neg {
				return "", false, errors.New("guard: a double negation does not import")
			}
			return n, true, nil
		}
		if g.get("params") != nil {
			return "", false, fmt.Errorf("guard %s: parameters do not import; a .fsm guard takes the event only", typ)
		}
		name = typ
	default:
		return "", false, errors.New("guard: want a name or {\"type\": NAME}")
	}
	if !isName(name) {
		return "", false, fmt.Errorf("guard %q is not a .fsm name (a letter or _, then letters, digits and _)", name)
	}
	return name, false, nil
}

// upper returns name with its first letter raised, as .fsm wants the
// names of machines, events and guards, noting the change.
func (im *importer) upper(what, name string) string {
	up := strings.ToUpper(name[:1]) + name[1:]
	if up != name {
		im.note("%s %s is named %s: a .fsm %s name starts with an upper-case letter", what, name, up, what)
	}
	return up
}

func isName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// node is a JSON value whose objects keep their keys' order: kind is '{',
// '[', '"', 'n' (a number, s as written), 'b' (s is true or false) or 0
// (null).
type node struct {
	kind byte
	s    string
	keys []string
	vals []*node
}

func (n *node) get(k string) *node {
	if n == nil || n.kind != '{' {
		return nil
	}
	for i, key := range n.keys {
		if key == k {
			return n.vals[i]
		}
	}
	return nil
}

func (n *node) path(ks ...string) *node {
	for _, k := range ks {
		n = n.get(k)
	}
	return n
}

// str returns the string at key k, "" when absent, and an error when it is
// not a string.
func (n *node) str(k string) (string, error) {
	v := n.get(k)
	if v == nil || v.kind == 0 {
		return "", nil
	}
	if v.kind != '"' {
		return "", fmt.Errorf("%s: want a string", k)
	}
	return v.s, nil
}

func (n *node) items() []*node {
	if n == nil || n.kind != '[' {
		return nil
	}
	return n.vals
}

func (n *node) truth() bool { return n != nil && n.kind == 'b' && n.s == "true" }

// parseOrdered reads one JSON value.
func parseOrdered(data []byte) (*node, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	n, err := readNode(dec)
	if err != nil {
		return nil, fmt.Errorf("invalid JSON at byte %d: %w", dec.InputOffset(), err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("invalid JSON at byte %d: more after the machine config", dec.InputOffset())
	}
	return n, nil
}

func readNode(dec *json.Decoder) (*node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			n := &node{kind: '{'}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := readNode(dec)
				if err != nil {
					return nil, err
				}
				n.keys = append(n.keys, kt.(string))
				n.vals = append(n.vals, v)
			}
			_, err := dec.Token()
			return n, err
		case '[':
			n := &node{kind: '['}
			for dec.More() {
				v, err := readNode(dec)
				if err != nil {
					return nil, err
				}
				n.vals = append(n.vals, v)
			}
			_, err := dec.Token()
			return n, err
		}
	case string:
		return &node{kind: '"', s: t}, nil
	case json.Number:
		return &node{kind: 'n', s: t.String()}, nil
	case bool:
		return &node{kind: 'b', s: strconv.FormatBool(t)}, nil
	case nil:
		return &node{}, nil
	}
	return nil, fmt.Errorf("unexpected %v", tok)
}
