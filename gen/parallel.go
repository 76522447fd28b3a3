package gen

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/fsmgen/fsmgen/dsl"
)

// The code of a machine with parallel states. A run of it is in a
// configuration, the generated Config: one leaf, or the active leaf of
// each region of the active parallel state. Its steps are taken by an
// fsmimpl.Chart over the definition's table, which the generated code
// gives its guards, its In(S) tests and its actions by row and by state.

// parallel reports whether m has parallel states: its code is written as
// parallelCode writes it.
func parallel(m *dsl.Machine) bool { return len(m.Parallels) > 0 }

// parallelCode writes the declarations of a machine with parallel states
// that differ from a statechart's: Config, Machine, its event methods,
// its views, NewDriver and the steps.
func (g *goGen) parallelCode() {
	g.config()
	g.parallelMachine()
	g.parallelEvents()
	g.parallelViews()
	g.viewTypes()
	g.handlers()
	g.parallelDriver()
	g.definition()
	n := g.nest()
	n.hierarchy(g.f)
	g.steps()
}

// regionCount is the largest number of regions of a parallel state of m:
// the number of leaves a Config holds.
func regionCount(m *dsl.Machine) int {
	n := 0
	for _, p := range m.Parallels {
		n = max(n, len(p.Children))
	}
	return n
}

// configLit is the literal of the Config of leaves.
func configLit(leaves []*dsl.State, size int) string {
	return fmt.Sprintf("Config{n: %d, leaves: [%d]State{%s}}", len(leaves), size, stateIDs(leaves))
}

// config writes Config and its methods.
func (g *goGen) config() {
	f, m := g.f, g.m
	size := regionCount(m)
	f.line(0)
	f.comment(0, fmt.Sprintf("Config is where a run of %s is, its configuration: a leaf outside the parallel states, or the active leaf of each region of the active parallel state, in region order. Its persisted form, String, joins the leaves' names with %q. It is comparable, and copied without allocation.", m.Name, "|"))
	f.line(0, "type Config struct {")
	f.line(1, "n      uint8")
	f.linef(1, "leaves [%d]State", size)
	f.line(0, "}")
	f.text(`
// ParseConfig reads a configuration from its persisted form: an error
// matched by errors.Is(err, runtime.ErrUnknownState) says which leaf is
// unknown, in the wrong region, or how many leaves were wanted.
func ParseConfig(text string) (Config, error) {
	var c Config
	n, err := fsmimpl.ParseConfig(index, text, c.leaves[:])
	if err != nil {
		return Config{}, err
	}
	c.n = uint8(n)
	return c, nil
}

// configOf returns the configuration of leaves.
func configOf(leaves []State) Config {
	var c Config
	c.n = uint8(copy(c.leaves[:], leaves))
	return c
}

// all returns the configuration's leaves.
func (c *Config) all() []State { return c.leaves[:c.n] }

// String returns the configuration's persisted form: its leaves' names
// joined with "|".
func (c Config) String() string { return fsmimpl.ConfigName(&definition, c.all()) }

// Len returns the number of the configuration's leaves: 1 outside the
// parallel states, else the number of regions of the active one.
func (c Config) Len() int { return int(c.n) }

// Leaf returns the configuration's leaf i, in region order; it panics
// unless 0 <= i < c.Len().
func (c Config) Leaf(i int) State { return c.all()[i] }

// Leaves yields the configuration's leaves, in region order.
func (c Config) Leaves() iter.Seq[State] {
	return func(yield func(State) bool) {
		for _, s := range c.all() {
			if !yield(s) {
				return
			}
		}
	}
}

// In reports whether state s, a leaf or a composite, is active: one of the
// configuration's leaves is s or inside it.
func (c Config) In(s State) bool {
	for _, l := range c.all() {
		if l.In(s) {
			return true
		}
	}
	return false
}

// Status returns the generic status of the configuration: its leaf's for
// one leaf, else runtime.StatusRunning.
func (c Config) Status() runtime.Status {
	if c.n == 1 {
		return c.leaves[0].Status()
	}
	return runtime.StatusRunning
}

// Terminal reports whether the configuration is a final state, one that
// no event leaves.
func (c Config) Terminal() bool { return c.Status().Terminal() }

// MarshalText implements encoding.TextMarshaler: a configuration encodes as
// its persisted form.
func (c Config) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler, reading a
// configuration's persisted form.
func (c *Config) UnmarshalText(text []byte) error {
	v, err := ParseConfig(string(text))
	if err != nil {
		return err
	}
	*c = v
	return nil
}
`)
	f.line(0)
	f.linef(0, "// initialConfig is where a run starts: %s.", configName(m.InitialConfig))
	f.line(0, "var initialConfig = ", configLit(m.InitialConfig, size))
}

// configName is the persisted form of the configuration leaves.
func configName(leaves []*dsl.State) string {
	names := make([]string, len(leaves))
	for i, s := range leaves {
		names[i] = s.Name
	}
	return strings.Join(names, "|")
}

// parallelMachine writes Machine, its options, New and Config.
func (g *goGen) parallelMachine() {
	f, m := g.f, g.m
	f.line(0)
	f.linef(0, "// Machine is a %s machine: its configuration, guards, actions and", m.Name)
	f.line(0, "// recorder. It is not safe for concurrent use; the database, through the")
	f.line(0, "// recorder, arbitrates.")
	f.line(0, "type Machine struct {")
	f.line(1, "config Config")
	f.line(1, "rec runtime.Recorder")
	if g.hasGuards() {
		f.line(1, "guards Guards")
	}
	if g.hasActions() {
		f.line(1, "actions Actions")
	}
	f.line(0, "}")
	f.text(`
// Option configures a Machine built by New.
type Option func(*Machine)

// WithRecorder records every transition with r before applying it.
func WithRecorder(r runtime.Recorder) Option {
	return func(m *Machine) { m.rec = r }
}

// WithConfig starts the machine in configuration c, as when a run is
// loaded.
func WithConfig(c Config) Option {
	return func(m *Machine) { m.config = c }
}
`)
	type param struct{ name, typ string }
	var params []param
	if g.hasGuards() {
		params = append(params, param{"guards", "Guards"})
	}
	if g.hasActions() {
		params = append(params, param{"actions", "Actions"})
	}
	decls, init, names := []string{}, []string{"config: initialConfig"}, []string{}
	for _, p := range params {
		decls = append(decls, p.name+" "+p.typ)
		init = append(init, p.name+": "+p.name)
		names = append(names, p.name)
	}
	lead := fmt.Sprintf("New returns a machine in %s", configName(m.InitialConfig))
	if len(names) > 0 {
		lead += fmt.Sprintf("; it panics if %s is nil", strings.Join(names, " or "))
	}
	lead += ". It takes no transition: Settle takes the eventless rows enabled there."
	f.line(0)
	f.comment(0, lead)
	f.line(0, "func New(", strings.Join(append(decls, "opts ...Option"), ", "), ") *Machine {")
	for _, p := range params {
		f.line(1, "if ", p.name, " == nil {")
		f.line(2, "panic(", strconv.Quote(m.Package+".New: nil "+p.typ), ")")
		f.line(1, "}")
	}
	f.line(1, "m := &Machine{", strings.Join(init, ", "), "}")
	f.line(1, "for _, o := range opts {")
	f.line(2, "o(m)")
	f.line(1, "}")
	f.line(1, "return m")
	f.line(0, "}")
	f.text(`
// Config returns the machine's configuration: the leaf it is in, or the
// active leaf of each region. A machine with parallel states has no State
// method, so that code reading one state cannot misread a configuration.
func (m *Machine) Config() Config { return m.config }

//go:noinline
func (m *Machine) refuse(e Event) error { return chart.Refuse(m.config.all(), e) }
`)
}

// parallelEvents writes the method of each event and Fire.
func (g *goGen) parallelEvents() {
	f, m := g.f, g.m
	for _, e := range m.Events {
		f.line(0)
		f.comment(0, fmt.Sprintf("%s fires event %s: every region takes its row on it, in region order, as Fire does.", e.GoName, e.Name))
		f.linef(0, "func (m *Machine) %s(ctx context.Context, e %[1]s) error { return m.fire(ctx, e) }", e.GoName)
	}
	f.text(`
// Fire applies event e: it is offered to every region in region order,
// each taking its first row whose guard admits it, innermost first; a row
// that leaves the parallel state is taken alone, by the first region that
// has one when no earlier region took a row, and dropped otherwise; the
// rows of the parallel state and those above it apply only when no region
// took e. In(S) guards read the configuration from before the step. The
// rows taken are one transition, recorded once, whose exit actions run
// (innermost first, region by region) before its entry actions; then the
// eventless and completion rows enabled are taken, as Settle does. A nil
// e, or an e that no row takes, returns a *runtime.TransitionError.
func (m *Machine) Fire(ctx context.Context, e Event) error {
	if e == nil {
		return m.refuse(nil)
	}
	return m.fire(ctx, e)
}

// fire applies e, not nil.
func (m *Machine) fire(ctx context.Context, e Event) error {
	before := m.config
	st, ok := chart.Fire(before.all(), e.EventName(), func(row int) bool { return m.admits(ctx, row, e, &before) })
	if !ok {
		return m.refuse(e)
	}
	if err := m.apply(ctx, st, e); err != nil {
		return err
	}
	return m.settle(ctx)
}
`)
}

// parallelViews writes View and Views.
func (g *goGen) parallelViews() {
	f := g.f
	f.text(`
// View is the machine in one of its active leaves: InX for leaf X, whose
// methods are the transitions X allows and do what the Machine's methods
// do.
type View interface {
	// State returns the state the view stands for.
	State() State
	isView()
}

// Views returns the typed view of each active leaf, in region order.
func (m *Machine) Views() []View {
	out := make([]View, 0, m.config.n)
	for _, s := range m.config.all() {
		out = append(out, views[s](m))
	}
	return out
}
`)
	views := make([]string, len(g.m.States))
	for i, s := range g.m.States {
		views[i] = "func(m *Machine) View { return " + viewType(s) + "{m} }"
	}
	f.list(0, "var views = [...]func(*Machine) View", views, "")
}

// parallelDriver writes NewDriver.
func (g *goGen) parallelDriver() {
	f, m := g.f, g.m
	params, handle, newCall := g.driverParts("WithConfig(c)")
	doc := append(g.driverDoc(), "It reads a run's state as a configuration (ParseConfig), calls the handler", "of each active leaf it is asked for, and its Settle (runtime.Settler) takes", "the eventless and completion rows enabled, as the engine asks when it", "claims the run.")
	f.line(0)
	f.commentLines(0, doc)
	f.line(0, "func NewDriver(", strings.Join(params, ", "), ") runtime.Driver {")
	runParam := "_"
	if g.hasGuards() || g.hasActions() {
		runParam = "run"
	}
	f.line(1, "machine := func(", runParam, " *runtime.Run, c Config, rec runtime.Recorder) (*Machine, error) {")
	g.prepare(2, "nil, ")
	f.line(2, "return ", newCall, ", nil")
	f.line(1, "}")
	use := func(c, call string) {
		f.line(2, "m, err := machine(run, ", c, ", rec)")
		f.line(2, "if err != nil {")
		f.line(3, "return err")
		f.line(2, "}")
		f.line(2, "return m.", call)
	}
	f.line(1, "return fsmimpl.NewConfigDriver(index, ParseConfig, ", handle, ", DecodeEvent, func(ctx context.Context, run *runtime.Run, c Config, e Event, rec runtime.Recorder) error {")
	use("c", "Fire(ctx, e)")
	f.line(1, "}, fsmimpl.WithSettle(func(ctx context.Context, run *runtime.Run, c Config, rec runtime.Recorder) error {")
	use("c", "Settle(ctx)")
	if len(startActions(m)) > 0 {
		f.line(1, "}), fsmimpl.WithEnter[Config](func(ctx context.Context, run *runtime.Run) error {")
		f.line(2, "var rec runtime.Recorder")
		use("initialConfig", "Enter(ctx)")
	}
	f.line(1, "}))")
	f.line(0, "}")
}

// steps writes the chart, apply, admits, the actions of each state and
// Settle.
func (g *goGen) steps() {
	f, m := g.f, g.m
	var finals []string
	for _, p := range m.Parallels {
		for _, r := range p.Children {
			for _, c := range r.Children {
				if c.Done {
					finals = append(finals, stateConst(c))
				}
			}
		}
	}
	f.line(0)
	f.line(0, "// chart takes the steps of the machine over its table; it knows the final")
	f.line(0, "// children of the regions, which complete them.")
	f.line(0, "var chart = fsmimpl.NewChart(index", prefixEach(", ", finals), ")")
	act := "nil"
	if g.hasActions() {
		act = "func(ctx context.Context) error { return m.act(ctx, st) }"
	}
	f.text(`
// apply records step st on e (nil for an eventless step) and its actions
// when the machine has a recorder, runs the actions without one, and moves
// the machine to where st ends.
func (m *Machine) apply(ctx context.Context, st fsmimpl.Step[State], e Event) error {
	if m.rec != nil {
		var ev runtime.Event
		if e != nil {
			ev = e
		}
`)
	f.line(2, "if err := chart.Record(ctx, m.rec, st, ev, ", act, "); err != nil {")
	f.line(3, "return err")
	if g.hasActions() {
		f.line(2, "}")
		f.line(1, "} else if err := m.act(ctx, st); err != nil {")
		f.line(2, "return err")
	} else {
		f.line(2, "}")
	}
	f.line(1, "}")
	f.line(1, "m.config = configOf(st.To)")
	f.line(1, "return nil")
	f.line(0, "}")
	g.admits()
	if g.hasActions() {
		g.stateActions()
	}
	if len(startActions(m)) > 0 {
		f.line(0)
		f.comment(0, "Enter runs the entry actions of the states a machine starts in, outermost first, region by region, and stops at the first error. A run of the engine runs them in the transaction that creates it; call Enter once after New where the machine is used without the engine.")
		f.line(0, "func (m *Machine) Enter(ctx context.Context) error {")
		f.line(1, "for _, s := range [...]State{", stateIDs(startStates(m)), "} {")
		f.line(2, "if err := m.entry(ctx, s); err != nil {")
		f.line(3, "return err")
		f.line(2, "}")
		f.line(1, "}")
		f.line(1, "return nil")
		f.line(0, "}")
	}
	f.text(fmt.Sprintf(`
// Settle takes the eventless and completion rows enabled in the machine's
// configuration, a step at a time, each region's innermost first, as Fire
// does after each step: call it once after New for a run that starts where
// such a row may be enabled. A guard of an eventless row is given a nil
// event. At most %[1]d steps are taken: one more enabled is an error that
// names the configurations gone through.
func (m *Machine) Settle(ctx context.Context) error { return m.settle(ctx) }

func (m *Machine) settle(ctx context.Context) error {
	var path [][]State
	for {
		before := m.config
		st, ok := chart.Settle(before.all(), func(row int) bool { return m.admits(ctx, row, nil, &before) })
		if !ok {
			return nil
		}
		if path = append(path, st.From); len(path) > %[1]d {
			return chart.Loop(path)
		}
		if err := m.apply(ctx, st, nil); err != nil {
			return err
		}
	}
}
`, maxEventless))
}

// prefixEach returns the elements of xs, each after prefix, joined.
func prefixEach(prefix string, xs []string) string {
	var b strings.Builder
	for _, x := range xs {
		b.WriteString(prefix)
		b.WriteString(x)
	}
	return b.String()
}

// admits writes admits, which tells whether the guard of a row of the
// definition admits e, an In(S) test reading the configuration before.
func (g *goGen) admits() {
	f := g.f
	type cond struct {
		rows []string
		expr string
	}
	var conds []*cond
	byExpr := map[string]*cond{}
	for _, r := range g.nest().rows {
		expr := g.rowCondition(r.t)
		if expr == "" {
			continue
		}
		c := byExpr[expr]
		if c == nil {
			c = &cond{expr: expr}
			byExpr[expr] = c
			conds = append(conds, c)
		}
		c.rows = append(c.rows, strconv.Itoa(r.index))
	}
	f.line(0)
	f.line(0, "// admits reports whether the guard of row of the definition admits e (nil")
	f.line(0, "// on an eventless row), reading In(S) tests from the configuration before.")
	// The parameters no condition uses are left unnamed.
	param := func(name, use string) string {
		for _, c := range conds {
			if strings.Contains(c.expr, use) {
				return name
			}
		}
		return "_"
	}
	f.linef(0, "func (m *Machine) admits(%s context.Context, row int, %s Event, %s *Config) bool {",
		param("ctx", "(ctx"), param("e", ", e"), param("before", "before."))
	if len(conds) > 0 {
		f.line(1, "switch row {")
		for _, c := range conds {
			f.line(1, "case ", strings.Join(c.rows, ", "), ":")
			f.line(2, "return ", c.expr)
		}
		f.line(1, "}")
	}
	f.line(1, "return true")
	f.line(0, "}")
}

// rowCondition is the condition of row t in admits, "" for none.
func (g *goGen) rowCondition(t *dsl.Transition) string {
	var expr string
	switch {
	case t.In != nil:
		expr = "before.In(" + stateConst(t.In) + ")"
	case t.Guard != nil:
		arg := "e"
		if p := guardParam(g.m, t.Guard); p != "Event" {
			arg = "e.(" + p + ")"
		}
		expr = "m.guards." + t.Guard.GoName + "(ctx, " + arg + ")"
	default:
		return ""
	}
	if t.Negated {
		return "!" + expr
	}
	return expr
}

// stateActions writes act, entry and exit: the actions of a step and those
// of entering and exiting each state.
func (g *goGen) stateActions() {
	f, m := g.f, g.m
	f.text(`
// act runs the actions of step st: the exit actions of the states it
// exits, then the entry actions of those it enters, stopping at the first
// error.
func (m *Machine) act(ctx context.Context, st fsmimpl.Step[State]) error {
	for _, s := range st.Exit {
		if err := m.exit(ctx, s); err != nil {
			return err
		}
	}
	for _, s := range st.Enter {
		if err := m.entry(ctx, s); err != nil {
			return err
		}
	}
	return nil
}
`)
	all := slices.Concat(m.States, m.Composites)
	for _, which := range []struct {
		name string
		of   func(*dsl.State) []*dsl.Action
	}{{"entry", func(s *dsl.State) []*dsl.Action { return s.Entry }}, {"exit", func(s *dsl.State) []*dsl.Action { return s.Exit }}} {
		f.line(0)
		f.linef(0, "// %s runs the %[1]s actions of state s, in the order written.", which.name)
		ctx := "_"
		for _, s := range all {
			if len(which.of(s)) > 0 {
				ctx = "ctx"
			}
		}
		f.linef(0, "func (m *Machine) %s(%s context.Context, s State) error {", which.name, ctx)
		if ctx == "ctx" {
			f.line(1, "switch s {")
			for _, s := range all {
				if acts := which.of(s); len(acts) > 0 {
					f.line(1, "case ", stateConst(s), ":")
					for _, a := range acts[:len(acts)-1] {
						f.line(2, "if err := m.actions.", a.GoName, "(ctx); err != nil {")
						f.line(3, "return err")
						f.line(2, "}")
					}
					f.line(2, "return m.actions.", acts[len(acts)-1].GoName, "(ctx)")
				}
			}
			f.line(1, "}")
		}
		f.line(1, "return nil")
		f.line(0, "}")
	}
}
