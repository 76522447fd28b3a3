package gen

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/fsmgen/fsmgen/dsl"
)

const fsmtestPath = "github.com/fsmgen/fsmgen/runtime/fsmtest"

// testCode writes the machine's generated tests, fsm_test.go. They
// describe the machine to runtime/fsmtest, which checks the generated code
// against the machine's definition: every (state, event) pair under every
// guard outcome, record-before-apply, final states, paths to every state
// and through every row, payload decoding and the driver. The names and
// the views, which are the package's own API, are checked here.
func testCode(source string, m *dsl.Machine) ([]byte, error) {
	t := &testGen{f: newGoFile(source, m.Package), m: m, g: &goGen{m: m}}
	if parallel(m) {
		return t.parallelTests()
	}
	t.adapters()
	t.machine()
	t.names()
	t.views()
	t.senders()
	t.nested()
	return t.f.source()
}

// testGen writes the tests of one machine into f.
type testGen struct {
	f *goFile
	m *dsl.Machine
	g *goGen
}

// testFunc opens the test function name, after its doc comment lines,
// with t.Parallel() as its first statement.
func (t *testGen) testFunc(name string, doc ...string) {
	for _, l := range doc {
		t.f.line(0, "// ", l)
	}
	t.f.line(0, "func ", name, "(t *", t.f.use("testing"), ".T) {")
	t.f.line(1, "t.Parallel()")
}

// newMachine is the call that builds a machine with guards g, the
// package's actions and options opts.
func (t *testGen) newMachine(g string, opts ...string) string {
	var args []string
	if len(t.m.Guards) > 0 {
		args = append(args, g)
	}
	if len(t.m.Actions) > 0 {
		args = append(args, "&fsmgenActions{}")
	}
	return "New(" + strings.Join(append(args, opts...), ", ") + ")"
}

// adapters writes the guards, actions, handlers and instance the checks
// use.
func (t *testGen) adapters() {
	t.guardsAndActions()
	t.instance()
}

// guardsAndActions writes fsmgenGuards and fsmgenActions, the guards and
// actions the checks use, for a machine that has them.
func (t *testGen) guardsAndActions() {
	f := t.f
	if len(t.m.Guards) > 0 {
		f.line(0, "// fsmgenGuards admits the events of the guards it maps to true.")
		f.line(0, "type fsmgenGuards map[string]bool")
	}
	for _, gd := range t.m.Guards {
		f.linef(0, "func (g fsmgenGuards) %s(%s.Context, %s) bool {", gd.GoName, f.use("context"), guardParam(t.m, gd))
		f.linef(1, "return g[%q]", gd.Name)
		f.line(0, "}")
	}
	if len(t.m.Actions) > 0 {
		f.line(0, "// fsmgenActions notes the actions run, in order, and fails the one named fail.")
		f.line(0, "type fsmgenActions struct {")
		f.line(1, "ran []string")
		f.line(1, "fail string")
		f.line(0, "}")
		f.line(0, "func (a *fsmgenActions) run(name string) error {")
		f.line(1, "if name == a.fail {")
		f.line(2, "return ", f.use("errors"), `.New("action " + name + " failed")`)
		f.line(1, "}")
		f.line(1, "a.ran = append(a.ran, name)")
		f.line(1, "return nil")
		f.line(0, "}")
	}
	for _, a := range t.m.Actions {
		f.linef(0, "func (a *fsmgenActions) %s(%s.Context) error {", a.GoName, f.use("context"))
		f.linef(1, "return a.run(%q)", a.Name)
		f.line(0, "}")
	}
}

// instance writes the handlers and fsmgenInstance, the machine as fsmtest
// sees it.
func (t *testGen) instance() {
	f := t.f
	t.handlers()
	rtm, ctx := f.use(runtimePath), f.use("context")
	f.line(0, "// fsmgenInstance is a Machine as fsmtest sees it.")
	f.line(0, "type fsmgenInstance struct {")
	f.line(1, "m *Machine")
	f.line(0, "}")
	f.linef(0, "func (i fsmgenInstance) Fire(ctx %s.Context, e %s.Event) error {", ctx, rtm)
	f.line(1, "ev, _ := e.(Event)")
	f.line(1, "return i.m.Fire(ctx, ev)")
	f.line(0, "}")
	f.line(0, "func (i fsmgenInstance) State() string {")
	f.line(1, "return i.m.State().String()")
	f.line(0, "}")
	if n := t.g.nest(); n != nil && n.anyEventless() {
		f.linef(0, "func (i fsmgenInstance) Settle(ctx %s.Context) error {", ctx)
		f.line(1, "return i.m.Settle(ctx)")
		f.line(0, "}")
	}
}

// handlers writes fsmgenHandlers, the handlers of the driven states, when
// the machine has any.
func (t *testGen) handlers() {
	f := t.f
	if !t.g.driven() {
		return
	}
	f.line(0, "// fsmgenHandlers returns, in every driven state, the first event the state accepts.")
	f.line(0, "type fsmgenHandlers struct{}")
	for _, s := range t.m.States {
		if !s.Driven() {
			continue
		}
		f.linef(0, "func (fsmgenHandlers) %s(%s.Context, *%s.Run) (%s, error) {", s.GoName, f.use("context"), f.use(runtimePath), eventSet(s))
		// A state without a row out accepts no event: its handler
		// returns none, which the machine refuses as it would in a real
		// run.
		if es := t.g.eventsOf(s); len(es) > 0 {
			f.line(1, "return ", es[0].GoName, "{}, nil")
		} else {
			f.line(1, "return nil, nil")
		}
		f.line(0, "}")
	}
}

// machine writes fsmgenMachine, the description fsmtest checks, and
// TestFSM.
func (t *testGen) machine() {
	f := t.f
	rtm, ft := f.use(runtimePath), f.use(fsmtestPath)
	f.line(0, "// fsmgenMachine describes the machine to fsmtest.")
	f.line(0, "func fsmgenMachine() ", ft, ".Machine {")
	f.line(1, "return ", ft, ".Machine{")
	f.line(2, "Definition: Definition(),")
	evs := make([]string, len(t.m.Events))
	for i, e := range t.m.Events {
		evs[i] = e.GoName + "{}"
	}
	f.list(2, "Events: []"+rtm+".Event", evs, ",")
	f.linef(2, "New: func(state string, admit map[string]bool, rec %s.Recorder) (%s.Instance, error) {", rtm, ft)
	f.line(3, "s, err := ParseState(state)")
	f.line(3, "if err != nil {")
	f.line(4, "return nil, err")
	f.line(3, "}")
	f.line(3, "opts := []Option{WithState(s)}")
	f.line(3, "if rec != nil {")
	f.line(4, "opts = append(opts, WithRecorder(rec))")
	f.line(3, "}")
	f.line(3, "return fsmgenInstance{", t.newMachine("fsmgenGuards(admit)", "opts..."), "}, nil")
	f.line(2, "},")
	f.linef(2, "Decode: func(name string, payload []byte) (%s.Event, error) {", rtm)
	f.line(3, "e, err := DecodeEvent(name, payload)")
	f.line(3, "if err != nil {")
	f.line(4, "return nil, err")
	f.line(3, "}")
	f.line(3, "return e, nil")
	f.line(2, "},")
	f.linef(2, "Driver: func(admit map[string]bool) %s.Driver {", rtm)
	f.line(3, "return NewDriver(", t.driverArgs(), ")")
	f.line(2, "},")
	f.line(1, "}")
	f.line(0, "}")
	t.testFunc("TestFSM", "TestFSM checks the machine's code against its definition; see runtime/fsmtest.")
	f.line(1, ft, ".Run(t, fsmgenMachine())")
	f.line(0, "}")
}

// driverArgs are the arguments of the NewDriver call fsmgenMachine's
// Driver makes: the handlers, guards admitting admit and actions the
// machine has.
func (t *testGen) driverArgs() string {
	var args []string
	if t.g.driven() {
		args = append(args, "fsmgenHandlers{}")
	}
	rtm := t.f.use(runtimePath)
	if len(t.m.Guards) > 0 {
		args = append(args, "func(*"+rtm+".Run) Guards {\nreturn fsmgenGuards(admit)\n}")
	}
	if len(t.m.Actions) > 0 {
		args = append(args, "func(*"+rtm+".Run) Actions {\nreturn &fsmgenActions{}\n}")
	}
	return strings.Join(args, ", ")
}

// names writes TestFSMStateNames.
func (t *testGen) names() {
	f := t.f
	t.testFunc("TestFSMStateNames", "TestFSMStateNames checks String, ParseState and the text encoding.")
	f.line(1, "for _, s := range States() {")
	f.line(2, "got, err := ParseState(s.String())")
	f.line(2, "if err != nil || got != s {")
	f.line(3, `t.Errorf("ParseState(%q) = %v, %v", s.String(), got, err)`)
	f.line(2, "}")
	f.line(2, "text, err := s.MarshalText()")
	f.line(2, "var back State")
	f.line(2, "if err != nil {")
	f.line(3, "t.Fatal(err)")
	f.line(2, "}")
	f.line(2, "if err := back.UnmarshalText(text); err != nil || back != s {")
	f.line(3, `t.Errorf("text round trip of %s: %v, %v", s, back, err)`)
	f.line(2, "}")
	f.line(1, "}")
	f.linef(1, `if _, err := ParseState("NO_SUCH_STATE"); !%s.Is(err, %s.ErrUnknownState) {`, f.use("errors"), f.use(runtimePath))
	f.line(2, `t.Errorf("ParseState of an unknown name: %v, want ErrUnknownState", err)`)
	f.line(1, "}")
	f.line(1, `if got := State(65535).String(); got != "State(65535)" {`)
	f.line(2, `t.Errorf("String of an invalid state = %q", got)`)
	f.line(1, "}")
	f.line(0, "}")
}

// views writes TestFSMViews.
func (t *testGen) views() {
	f := t.f
	want := "v == s"
	doc := []string{"TestFSMViews checks that View and the InX accessors agree with the state."}
	if len(t.m.Composites) > 0 {
		// A composite's accessor: in one of its leaves but the final ones.
		want = "s.In(v) && (v.Leaf() || !s.Terminal())"
		doc = []string{
			"TestFSMViews checks that View and the InX accessors agree with the state:",
			"the accessor of a composite with its leaves but the final ones.",
		}
	}
	t.testFunc("TestFSMViews", doc...)
	f.line(1, "in := map[State]func(*Machine) bool{")
	for _, s := range slices.Concat(t.m.States, t.m.Composites) {
		f.line(2, stateConst(s), ": func(m *Machine) bool {")
		f.line(3, "_, ok := m.", viewType(s), "()")
		f.line(3, "return ok")
		f.line(2, "},")
	}
	f.line(1, "}")
	f.line(1, "for _, s := range States() {")
	f.line(2, "m := ", t.newMachine("fsmgenGuards{}", "WithState(s)"))
	f.line(2, "if got := m.View().State(); got != s {")
	f.line(3, `t.Errorf("View in %s stands for %s", s, got)`)
	f.line(2, "}")
	f.line(2, "for v, check := range in {")
	f.line(3, "if check(m) != (", want, ") {")
	f.line(4, `t.Errorf("in state %s, the accessor of %s says %v", s, v, check(m))`)
	f.line(3, "}")
	f.line(2, "}")
	f.line(1, "}")
	f.line(0, "}")
}

// senders writes TestFSMSenders: for every (state, event) of the table,
// whether callers may send the event there, as the .fsm says (dsl's
// Machine.Sender) against what the runtime enforces
// (runtime.Definition.CallerRefusal); and that the typed handle has a
// method for exactly the events callers may send somewhere.
func (t *testGen) senders() {
	f := t.f
	type pair struct{ s, e string }
	var seen []pair
	var rows []string
	for _, tr := range t.m.Transitions {
		if tr.Event == nil {
			continue
		}
		p := pair{tr.From.Name, tr.Event.Name}
		if slices.Contains(seen, p) {
			continue
		}
		seen = append(seen, p)
		rows = append(rows, fmt.Sprintf("{%q, %q, %t}", p.s, p.e, t.m.Sender(tr.From, tr.Event) == ""))
	}
	var methods []string
	for _, e := range t.m.Events {
		if e == t.m.Cancel || slices.Contains(handleMethods, e.GoName) {
			continue
		}
		methods = append(methods, fmt.Sprintf("{%q, %t}", e.GoName, t.m.CallerEvent(e)))
	}
	t.testFunc("TestFSMSenders",
		"TestFSMSenders checks who may send each event of the table: callers (Signal,",
		"the handle, fsmctl runs signal) the events of the states that wait, the",
		"cancel event and the external events; a driven state's handler the events",
		"of its rows; the runtime its timers' and retry policies' events. The",
		"handle has a method for the events callers may send only.",
	)
	if len(rows) > 0 {
		f.line(1, "d := Definition()")
		f.line(1, "for _, c := range []struct {")
		f.line(2, "state, event string")
		f.line(2, "caller bool")
		f.list(1, "}", rows, " {")
		f.line(2, "why := d.CallerRefusal(c.state, c.event)")
		f.line(2, `if (why == "") != c.caller {`)
		f.line(3, `t.Errorf("%s in state %s: callers may send it: %t (%q), want %t", c.event, c.state, why == "", why, c.caller)`)
		f.line(2, "}")
		f.line(1, "}")
	}
	if len(methods) > 0 {
		f.line(1, "h := ", f.use("reflect"), ".TypeFor[Handle[struct{}]]()")
		f.line(1, "for _, c := range []struct {")
		f.line(2, "method string")
		f.line(2, "caller bool")
		f.list(1, "}", methods, " {")
		f.line(2, "if _, ok := h.MethodByName(c.method); ok != c.caller {")
		f.line(3, `t.Errorf("Handle has a method %s: %t, want %t", c.method, ok, c.caller)`)
		f.line(2, "}")
		f.line(1, "}")
	}
	f.line(0, "}")
}

// strs is the Go expression of the string slice ss: nil when it is empty.
func strs(ss []string) string {
	if len(ss) == 0 {
		return "nil"
	}
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return "[]string{" + strings.Join(q, ", ") + "}"
}

// stateStrs is the Go expression of the names of ss, as strs writes them.
func stateStrs(ss []*dsl.State) string {
	names := make([]string, len(ss))
	for i, s := range ss {
		names[i] = s.Name
	}
	return strs(names)
}

// mapLit is the map literal of type typ with the elements elems, each a
// "key: value" of a quoted string key: on one line when there is one
// element, an element per line, sorted by key, when there are more.
func mapLit(typ string, elems []string) string {
	switch len(elems) {
	case 0:
		return typ + "{}"
	case 1:
		return typ + "{" + elems[0] + "}"
	}
	slices.Sort(elems)
	return typ + "{\n" + strings.Join(elems, ",\n") + ",\n}"
}

// histLit is the Go expression of the history records h: nil when there
// are none.
func (t *testGen) histLit(h map[*dsl.History]*dsl.State) string {
	if len(h) == 0 {
		return "nil"
	}
	var elems []string
	for _, hs := range t.m.Histories {
		if s, ok := h[hs]; ok {
			elems = append(elems, strconv.Quote(hs.Name)+": "+strconv.Quote(s.Name))
		}
	}
	return mapLit("map[string]string", elems)
}

// nestedCase is the literal of the case of TestFSMNested for row r of n,
// and whether r has one: a row no guard outcome admits, or that loops, has
// none.
func (t *testGen) nestedCase(n *nest, r *specRow) (string, bool) {
	m := t.m
	admit, ok := n.admitFor(r.t)
	if !ok {
		return "", false
	}
	hist := map[*dsl.History]*dsl.State{}
	if r.record != nil {
		hist[r.t.History] = r.record
	}
	o := n.simulate(r, hist, admit)
	if o.loop {
		return "", false
	}
	name := r.t.From.Name + ": " + rowText(r.t)
	if r.record != nil {
		name += fmt.Sprintf(" (%s recorded %s)", r.t.History.Name, r.record.Name)
	}
	ev := "nil"
	if r.t.Event != nil {
		ev = r.t.Event.GoName + "{}"
	}
	moves := make([]string, len(o.moves))
	for i, mv := range o.moves {
		e := ""
		if i == 0 && r.t.Event != nil {
			e = r.t.Event.Name
		}
		moves[i] = fmt.Sprintf("{%q, %q, %q, %s, %s},", mv.t.From.Name, mv.to.Name, e, stateStrs(mv.t.Exit), stateStrs(mv.enter))
	}
	var acts []string
	for _, a := range o.actions {
		acts = append(acts, a.Name)
	}
	fail := ""
	if first := stepActions(r); len(first) > 0 {
		fail = first[0].Name
	}
	var admits []string
	for _, g := range m.Guards {
		if v, ok := admit[g.Name]; ok {
			admits = append(admits, fmt.Sprintf("%q: %t", g.Name, v))
		}
	}
	fields := []string{"name: " + strconv.Quote(name), "from: " + strconv.Quote(r.t.From.Name)}
	if len(m.Histories) > 0 {
		fields = append(fields, "history: "+t.histLit(hist))
	}
	if len(m.Guards) > 0 {
		fields = append(fields, "admit: "+mapLit("map[string]bool", admits))
	}
	fields = append(fields, "event: "+ev)
	if len(moves) > 0 {
		fields = append(fields, "moves: []fsmgenMove{\n"+strings.Join(moves, "\n")+"\n}")
	} else {
		fields = append(fields, "moves: []fsmgenMove{}")
	}
	if len(m.Actions) > 0 {
		fields = append(fields, "actions: "+strs(acts), "fail: "+strconv.Quote(fail))
	}
	fields = append(fields, "state: "+strconv.Quote(o.state.Name))
	if len(m.Histories) > 0 {
		fields = append(fields, "after: "+t.histLit(o.hist))
	}
	return "{\n" + strings.Join(fields, ",\n") + ",\n}", true
}

// nested writes TestFSMNested, for a statechart: every leaf move of the
// machine's definition taken from its source leaf, with the history
// record that leads to it and guards admitting it, then the eventless
// rows enabled after it, as the model says (nest.simulate): the moves
// recorded with the states they exit and enter, the actions run in
// order, the state and history records after, with a recorder and
// without; and, when the move runs actions, that a failing action leaves
// the machine where it was and records nothing.
func (t *testGen) nested() {
	n := t.g.nest()
	if n == nil {
		return
	}
	var cases []string
	for _, r := range n.rows {
		if c, ok := t.nestedCase(n, r); ok {
			cases = append(cases, c)
		}
	}
	if len(cases) == 0 {
		return
	}
	t.moves()
	f, m := t.f, t.m
	t.testFunc("TestFSMNested",
		"TestFSMNested takes every leaf move of the machine from its source leaf: a",
		"row on a composite from each of its leaves (bubbling), a row to a history",
		"with each record it may hold, eventless and completion rows with Settle.",
		"It checks the moves recorded with the states they exit and enter, the",
		"eventless moves that follow, the exit and entry actions in order, the",
		"state and history records after, with a recorder and without; and that a",
		"failing action leaves the machine where it was, recording nothing.",
	)
	f.line(1, "for _, c := range []struct {")
	f.line(2, "name, from string")
	if len(m.Histories) > 0 {
		f.line(2, "history map[string]string")
	}
	if len(m.Guards) > 0 {
		f.line(2, "admit map[string]bool")
	}
	f.line(2, "event Event")
	f.line(2, "moves []fsmgenMove")
	if len(m.Actions) > 0 {
		f.line(2, "actions []string")
		f.line(2, "fail string")
	}
	f.line(2, "state string")
	if len(m.Histories) > 0 {
		f.line(2, "after map[string]string")
	}
	f.list(1, "}", cases, " {")
	f.line(2, "t.Run(c.name, func(t *", f.use("testing"), ".T) {")
	f.line(3, "ctx := ", f.use("context"), ".Background()")
	f.line(3, "for _, recorded := range []bool{true, false} {")
	t.build(n, false)
	t.check()
	f.line(3, "}")
	if len(m.Actions) > 0 {
		f.line(3, `if c.fail != "" {`)
		t.build(n, true)
		t.failCheck()
		f.line(3, "}")
	}
	f.line(2, "})")
	f.line(1, "}")
	f.line(0, "}")
}

// moves writes fsmgenMove and fsmgenMoves, the recorder TestFSMNested
// checks the moves with.
func (t *testGen) moves() {
	f := t.f
	f.line(0, "// fsmgenMove is a leaf move as a recorder is given it.")
	f.line(0, "type fsmgenMove struct {")
	f.line(1, "From, To, Event string")
	f.line(1, "Exited, Entered []string")
	f.line(0, "}")
	f.line(0, "// fsmgenMoves records the moves it is given, after running their actions")
	f.line(0, "// as a recorder does in its write.")
	f.line(0, "type fsmgenMoves struct {")
	f.line(1, "got []fsmgenMove")
	f.line(0, "}")
	f.linef(0, "func (r *fsmgenMoves) Record(ctx %s.Context, t %s.Transition) error {", f.use("context"), f.use(runtimePath))
	f.line(1, "if t.Actions != nil {")
	f.line(2, "if err := t.Actions(ctx); err != nil {")
	f.line(3, "return err")
	f.line(2, "}")
	f.line(1, "}")
	f.line(1, "r.got = append(r.got, fsmgenMove{t.From, t.To, t.Event, t.Exited, t.Entered})")
	f.line(1, "return nil")
	f.line(0, "}")
}

// build writes the statements of a case of TestFSMNested that build m
// from c, with the recorder rec when recorded (always when failing) and
// the actions failing c.fail when failing, and fire c's event on it or
// settle it, setting err.
func (t *testGen) build(n *nest, failing bool) {
	f, m := t.f, t.m
	const in = 4
	f.line(in, "s, err := ParseState(c.from)")
	f.line(in, "if err != nil {")
	f.line(in+1, "t.Fatal(err)")
	f.line(in, "}")
	f.line(in, "rec := &fsmgenMoves{}")
	f.line(in, "opts := []Option{WithState(s)}")
	if failing {
		f.line(in, "opts = append(opts, WithRecorder(rec))")
	} else {
		f.line(in, "if recorded {")
		f.line(in+1, "opts = append(opts, WithRecorder(rec))")
		f.line(in, "}")
	}
	var args []string
	if len(m.Guards) > 0 {
		args = append(args, "fsmgenGuards(c.admit)")
	}
	if len(m.Actions) > 0 {
		args = append(args, "a")
		if failing {
			f.line(in, "a := &fsmgenActions{fail: c.fail}")
		} else {
			f.line(in, "a := &fsmgenActions{}")
		}
	}
	f.line(in, "m := New(", strings.Join(append(args, "opts..."), ", "), ")")
	if len(m.Histories) > 0 {
		f.line(in, "if err := m.SetHistory(c.history); err != nil {")
		f.line(in+1, "t.Fatal(err)")
		f.line(in, "}")
	}
	if !n.anyEventless() {
		f.line(in, "err = m.Fire(ctx, c.event)")
		return
	}
	f.line(in, "if c.event == nil {")
	f.line(in+1, "err = m.Settle(ctx)")
	f.line(in, "} else {")
	f.line(in+1, "err = m.Fire(ctx, c.event)")
	f.line(in, "}")
}

// check writes the checks of a case of TestFSMNested after build(n,
// false).
func (t *testGen) check() {
	f, m := t.f, t.m
	const in = 4
	f.line(in, "if err != nil {")
	f.line(in+1, `t.Fatalf("recorded %t: %v", recorded, err)`)
	f.line(in, "}")
	f.line(in, "if got := m.State().String(); got != c.state {")
	f.line(in+1, `t.Errorf("recorded %t: state %s, want %s", recorded, got, c.state)`)
	f.line(in, "}")
	if len(m.Actions) > 0 {
		f.line(in, "if !", f.use("slices"), ".Equal(a.ran, c.actions) {")
		f.line(in+1, `t.Errorf("recorded %t: actions %q, want %q", recorded, a.ran, c.actions)`)
		f.line(in, "}")
	}
	if len(m.Histories) > 0 {
		f.line(in, "if got := m.History(); !", f.use("maps"), ".Equal(got, c.after) {")
		f.line(in+1, `t.Errorf("recorded %t: history %v, want %v", recorded, got, c.after)`)
		f.line(in, "}")
	}
	f.line(in, "if recorded && !", f.use("reflect"), ".DeepEqual(rec.got, c.moves) {")
	f.line(in+1, `t.Errorf("recorded:\n%+v\nwant:\n%+v", rec.got, c.moves)`)
	f.line(in, "}")
}

// failCheck writes the checks of a case of TestFSMNested after build(n,
// true): the failing action's error, and the machine as it was.
func (t *testGen) failCheck() {
	f := t.f
	const in = 4
	f.linef(in, `if !%s.Contains(%s.Sprint(err), "action "+c.fail+" failed") {`, f.use("strings"), f.use("fmt"))
	f.line(in+1, `t.Errorf("with %s failing: error %v", c.fail, err)`)
	f.line(in, "}")
	f.line(in, "if m.State() != s || len(rec.got) != 0 {")
	f.line(in+1, `t.Errorf("with %s failing: state %s, recorded %v", c.fail, m.State(), rec.got)`)
	f.line(in, "}")
	if len(t.m.Histories) > 0 {
		f.line(in, "if got := m.History(); !", f.use("maps"), ".Equal(got, c.history) {")
		f.line(in+1, `t.Errorf("with %s failing: history %v, want %v", c.fail, got, c.history)`)
		f.line(in, "}")
	}
}
