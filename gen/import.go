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

// ImportXState reads a flat XState machine config in JSON (one level of
// states, as [XState] writes and as a hand-written XState machine without
// nested or parallel states is) and returns it as .fsm source, formatted
// and checked; filename names the result in its diagnostics. What
// meta.fsmgen holds (see [XState]) is read back, so that a machine exported
// and imported again is the same machine: its type, version, package,
// cancel event, events and payload fields, guards, statuses, outcomes,
// retry policies and timers, its docs, and its table in the order and the
// grouping it was written in (FROM lists and *).
//
// A config that XState wrote without fsmgen's metadata is read as well:
// final states are succeeded, events and guards are declared in order of
// first use, each transition is a row of its own, in the order of the
// states and their events, and a delayed transition after.MS that names no
// event fires a new event, AfterD (After20s), from a timer of its state.
// What a .fsm file cannot say is an error that names it: nested, parallel
// and history states, eventless (always) transitions, invocations,
// targetless transitions, named delays and event names that are not .fsm
// names. Actions, context and tags, which belong in Go, are dropped; the
// returned notes say so.
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
	rows                   []*imRow
	notes                  []string
}

type imState struct {
	name, doc, status, outcome string
	final, wait                bool
	retry                      string
	timers                     []string
}

type imEvent struct {
	name, doc string
	external  bool
	fields    []string
}

type imGuard struct{ name, doc string }

type imRow struct {
	index   int // the row's place in the table; -1 when the config does not say
	order   int
	from    []string
	to      string
	event   string
	guard   string
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
	}
	states := root.get("states")
	if states == nil || states.kind != '{' || len(states.keys) == 0 {
		return fmt.Errorf("machine %s has no states", id)
	}
	if im.initial == "" {
		im.initial = states.keys[0]
		im.note("machine %s names no initial state; the first, %s, is", id, im.initial)
	}
	for i, name := range states.keys {
		if err := im.state(name, states.vals[i]); err != nil {
			return fmt.Errorf("state %s: %w", name, err)
		}
	}
	if !slices.ContainsFunc(im.states, func(s *imState) bool { return s.name == im.initial }) {
		return fmt.Errorf("initial state %q is not one of the states", im.initial)
	}
	return im.table()
}

func (im *importer) state(name string, sn *node) error {
	if !isName(name) {
		return fmt.Errorf("%q is not a .fsm name (a letter or _, then letters, digits and _)", name)
	}
	if sn.kind != '{' {
		return errors.New("want an object")
	}
	s := &imState{name: name}
	var err error
	if s.doc, err = sn.str("description"); err != nil {
		return err
	}
	typ, err := sn.str("type")
	if err != nil {
		return err
	}
	switch typ {
	case "", "atomic":
	case "final":
		s.final = true
		s.status = "succeeded"
	default:
		return fmt.Errorf("a state of type %q does not import; only flat machines of atomic and final states do", typ)
	}
	if sn.get("states") != nil {
		return errors.New("nested states do not import; only flat machines do")
	}
	for _, k := range []string{"always", "invoke"} {
		if sn.get(k) != nil {
			return fmt.Errorf("%s does not import: a .fsm state has no %s", k, map[string]string{"always": "eventless transition", "invoke": "invoked actor"}[k])
		}
	}
	for _, k := range []string{"entry", "exit", "tags"} {
		if sn.get(k) != nil {
			im.note("state %s: %s dropped: they belong in Go", name, k)
		}
	}
	if fm := sn.path("meta", "fsmgen"); fm != nil {
		if st, err := fm.str("status"); err != nil {
			return err
		} else if st != "" {
			s.status = st
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
			if err := im.transitions(s, ev, on.vals[i], nil); err != nil {
				return fmt.Errorf("on %s: %w", ev, err)
			}
		}
	}
	if after := sn.get("after"); after != nil {
		if after.kind != '{' {
			return errors.New("after: want an object")
		}
		for i, delay := range after.keys {
			ms, err := strconv.ParseInt(delay, 10, 64)
			if err != nil || ms <= 0 {
				return fmt.Errorf("after %q: named or non-positive delays do not import; write the delay in milliseconds", delay)
			}
			if err := im.transitions(s, "", after.vals[i], &ms); err != nil {
				return fmt.Errorf("after %s: %w", delay, err)
			}
		}
	}
	return nil
}

// transitions reads the transitions of state s on event ev, or, with
// delay, of its after.DELAY.
func (im *importer) transitions(s *imState, ev string, tn *node, delay *int64) error {
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
				if text == "" {
					text = FormatDuration(time.Duration(*delay) * time.Millisecond)
				}
				timer := "after " + text + " " + timerEvent
				if !slices.Contains(s.timers, timer) {
					s.timers = append(s.timers, timer)
				}
				continue
			}
			text = FormatDuration(time.Duration(*delay) * time.Millisecond)
			ev = "After" + text
			if timer := "after " + text + " " + ev; !slices.Contains(s.timers, timer) {
				s.timers = append(s.timers, timer)
			}
		}
		for _, k := range []string{"actions"} {
			if t.get(k) != nil {
				im.note("state %s on %s: actions dropped: they belong in Go", s.name, ev)
			}
		}
		target, err := targetOf(t.get("target"))
		if err != nil {
			return err
		}
		r := &imRow{index: -1, order: len(im.rows), from: []string{s.name}, to: target, event: ev}
		if r.doc, err = t.str("description"); err != nil {
			return err
		}
		if g := t.get("guard"); g != nil {
			if r.guard, r.negated, err = guardOf(g); err != nil {
				return err
			}
			r.guard = im.upper("guard", r.guard)
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
			if r.outcome, err = fm.str("outcome"); err != nil {
				return err
			}
		}
		im.rows = append(im.rows, r)
	}
	return nil
}

// table merges the transitions of one written row, declares the events
// and guards the table uses that the metadata does not, and orders the
// rows.
func (im *importer) table() error {
	var rows []*imRow
	byIndex := map[int]*imRow{}
	for _, r := range im.rows {
		if r.index < 0 {
			rows = append(rows, r)
			continue
		}
		if prev, ok := byIndex[r.index]; ok {
			if prev.to != r.to || prev.event != r.event || prev.guard != r.guard || prev.negated != r.negated {
				return fmt.Errorf("the transitions of row %d (%s on %s, %s on %s) differ", r.index, prev.from, prev.event, r.from, r.event)
			}
			continue
		}
		byIndex[r.index] = r
		rows = append(rows, r)
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
		if !slices.ContainsFunc(im.events, func(e *imEvent) bool { return e.name == r.event }) {
			im.events = append(im.events, &imEvent{name: r.event})
		}
		if r.guard != "" && !slices.ContainsFunc(im.guards, func(g *imGuard) bool { return g.name == r.guard }) {
			im.guards = append(im.guards, &imGuard{name: r.guard})
		}
	}
	return nil
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
	for _, s := range im.states {
		doc("    ", s.doc)
		switch {
		case s.final:
			fmt.Fprintf(&b, "    final %s %s", s.name, s.status)
			if s.outcome != "" {
				fmt.Fprintf(&b, " outcome %s", strconv.Quote(s.outcome))
			}
		case s.name == im.initial:
			fmt.Fprintf(&b, "    initial %s", s.name)
		default:
			fmt.Fprintf(&b, "    state %s", s.name)
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
		b.WriteString("\n")
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
	b.WriteString("\n")
	for _, r := range im.rows {
		doc("    ", r.doc)
		fmt.Fprintf(&b, "    %s -> %s on %s", strings.Join(r.from, ", "), r.to, r.event)
		switch {
		case r.guard != "" && r.negated:
			b.WriteString(" unless " + r.guard)
		case r.guard != "":
			b.WriteString(" when " + r.guard)
		}
		if r.outcome != "" {
			fmt.Fprintf(&b, " outcome %s", strconv.Quote(r.outcome))
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

// targetOf reads a transition's target: a sibling state, written as its
// name, .NAME or #MACHINE.NAME.
func targetOf(t *node) (string, error) {
	if t == nil {
		return "", errors.New("a transition without a target does not import: a .fsm row always names its target")
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
	s := t.s
	if strings.HasPrefix(s, "#") {
		if _, rest, ok := strings.Cut(s, "."); ok {
			s = rest
		}
	}
	s = strings.TrimPrefix(s, ".")
	if !isName(s) {
		return "", fmt.Errorf("target %q: want a state of this machine", t.s)
	}
	return s, nil
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
