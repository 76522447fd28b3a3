package gen

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/fsmgen/fsmgen/dsl"
)

// maxProduct is the most configurations of one parallel state that the
// generated tests start from: past it, each region's leaves are taken
// with the other regions in their initial leaves.
const maxProduct = 4096

// parallelTests writes the generated tests of a machine with parallel
// states: its configurations read back from their persisted form and
// have their views; every event fired in each of them, with every guard
// admitting and with none, moves the machine with a recorder and the one
// without alike, runs the same actions, records one transition per step
// from where it was to where it is, and leaves the machine where it was
// when the recorder fails; the definition is valid.
func (t *testGen) parallelTests() ([]byte, error) {
	t.guardsAndActions()
	t.parallelConfigs()
	t.parallelConfigTest()
	t.parallelStepTest()
	t.parallelDefinitionTest()
	return t.f.source()
}

// configsOf returns the configurations the tests start from, in the
// persisted form, and whether every parallel state's product of leaves
// is among them.
func configsOf(m *dsl.Machine) (configs []string, product bool) {
	product = true
	for _, l := range m.States {
		if p, _ := l.Region(); p == nil {
			configs = append(configs, l.Name)
		}
	}
	for _, p := range m.Parallels {
		n := 1
		for _, r := range p.Children {
			n *= len(r.Leaves())
		}
		if n <= maxProduct {
			configs = append(configs, productOf(p.Children)...)
			continue
		}
		product = false
		initial := p.InitialConfig()
		for i, r := range p.Children {
			for _, l := range r.Leaves() {
				c := append([]*dsl.State(nil), initial...)
				c[i] = l
				if l != initial[i] || i == 0 {
					configs = append(configs, configName(c))
				}
			}
		}
	}
	return configs, product
}

// productOf returns every configuration of regions, the first region's
// leaf varying slowest.
func productOf(regions []*dsl.State) []string {
	out := []string{""}
	for i, r := range regions {
		var next []string
		for _, prefix := range out {
			for _, l := range r.Leaves() {
				if i == 0 {
					next = append(next, l.Name)
				} else {
					next = append(next, prefix+"|"+l.Name)
				}
			}
		}
		out = next
	}
	return out
}

// parallelConfigs writes fsmgenConfigs and fsmgenEvents.
func (t *testGen) parallelConfigs() {
	f, m := t.f, t.m
	configs, product := configsOf(m)
	lit := make([]string, len(configs))
	for i, c := range configs {
		lit[i] = strconv.Quote(c)
	}
	f.line(0)
	if product {
		f.line(0, "// fsmgenConfigs are the configurations the tests start from: every leaf")
		f.line(0, "// outside the parallel states, and every combination of the leaves of the")
		f.line(0, "// regions of each parallel state.")
	} else {
		f.linef(0, "// fsmgenConfigs are the configurations the tests start from: every leaf")
		f.linef(0, "// outside the parallel states, and, for a parallel state whose regions")
		f.linef(0, "// have more than %d combinations of leaves, each region's leaves with", maxProduct)
		f.line(0, "// the other regions in their initial leaves (every combination for the")
		f.line(0, "// others).")
	}
	f.list(0, "var fsmgenConfigs = []string", lit, "")
	events := make([]string, len(m.Events))
	for i, e := range m.Events {
		events[i] = e.GoName + "{}"
	}
	f.line(0)
	f.line(0, "// fsmgenEvents are the machine's events, each with a zero payload.")
	f.list(0, "var fsmgenEvents = []Event", events, "")
}

// newParallel is the call that builds a machine with guards admitting
// admit (a Go expression of a bool), the actions a, and options opts.
func (t *testGen) newParallel(admit, a string, opts ...string) string {
	var args []string
	if len(t.m.Guards) > 0 {
		args = append(args, "fsmgenAdmit("+admit+")")
	}
	if len(t.m.Actions) > 0 {
		args = append(args, a)
	}
	return "New(" + strings.Join(append(args, opts...), ", ") + ")"
}

// parallelConfigTest writes TestFSMConfigs.
func (t *testGen) parallelConfigTest() {
	f, m := t.f, t.m
	if len(m.Guards) > 0 {
		names := make([]string, len(m.Guards))
		for i, gd := range m.Guards {
			names[i] = strconv.Quote(gd.Name) + ": admit"
		}
		f.line(0)
		f.line(0, "// fsmgenAdmit returns guards that all admit, or all refuse.")
		f.line(0, "func fsmgenAdmit(admit bool) fsmgenGuards {")
		f.line(1, "return fsmgenGuards{", strings.Join(names, ", "), "}")
		f.line(0, "}")
	}
	p := m.Parallels[0]
	initial := p.InitialConfig()
	bad := [][2]string{
		{"Nope", fmt.Sprintf("%s: unknown state %q", m.Type, "Nope")},
		{initial[0].Name, fmt.Sprintf("%s: unknown state %q: want %d leaves, one per region of %s, got 1", m.Type, initial[0].Name, len(initial), p.Name)},
	}
	swapped := append([]*dsl.State{initial[1], initial[0]}, initial[2:]...)
	bad = append(bad, [2]string{configName(swapped), fmt.Sprintf("%s: unknown state %q: leaf 1, %s, is not in region %s of %s", m.Type, configName(swapped), initial[1].Name, p.Children[0].Name, p.Name)})
	cases := make([]string, len(bad))
	for i, b := range bad {
		cases[i] = strconv.Quote(b[0]) + ": " + strconv.Quote(b[1])
	}
	f.line(0)
	t.testFunc("TestFSMConfigs",
		"TestFSMConfigs: each configuration reads back from its persisted form,",
		"is in its leaves and the composites above them, and has one view per",
		"leaf; a text that is no configuration says why.")
	f.line(1, "for _, text := range fsmgenConfigs {")
	f.line(2, "c, err := ParseConfig(text)")
	f.line(2, "if err != nil {")
	f.line(3, "t.Fatalf(\"ParseConfig(%s): %v\", text, err)")
	f.line(2, "}")
	f.line(2, "var u Config")
	f.line(2, "if err := u.UnmarshalText([]byte(text)); err != nil || u != c || c.String() != text {")
	f.line(3, "t.Errorf(\"%s reads back as %v (%v), String %s\", text, u, err, c)")
	f.line(2, "}")
	f.line(2, "views := ", t.newParallel("true", "&fsmgenActions{}", "WithConfig(c)"), ".Views()")
	f.line(2, "if len(views) != c.Len() {")
	f.line(3, "t.Errorf(\"%s: %d views for %d leaves\", text, len(views), c.Len())")
	f.line(2, "}")
	f.line(2, "for i, v := range views {")
	f.line(3, "if l := c.Leaf(i); v.State() != l || !c.In(l) {")
	f.line(4, "t.Errorf(\"%s: view %d is of %s, want %s, active\", text, i, v.State(), l)")
	f.line(3, "}")
	f.line(3, "for a := range v.State().Ancestors() {")
	f.line(4, "if !c.In(a) {")
	f.line(5, "t.Errorf(\"%s: not in %s, above its leaf %s\", text, a, v.State())")
	f.line(4, "}")
	f.line(3, "}")
	f.line(2, "}")
	f.line(1, "}")
	f.list(1, "for text, want := range map[string]string", cases, " {")
	f.line(2, "if _, err := ParseConfig(text); !", f.use("errors"), ".Is(err, ", f.use(runtimePath), ".ErrUnknownState) || err.Error() != want {")
	f.line(3, "t.Errorf(\"ParseConfig(%s) = %v, want %q\", text, err, want)")
	f.line(2, "}")
	f.line(1, "}")
	f.line(0, "}")
}

// parallelStepTest writes TestFSMSteps.
func (t *testGen) parallelStepTest() {
	f, m := t.f, t.m
	ctx, rtm, errs := f.use("context"), f.use(runtimePath), f.use("errors")
	actions := len(m.Actions) > 0
	f.line(0)
	t.testFunc("TestFSMSteps",
		"TestFSMSteps fires every event in every configuration of fsmgenConfigs,",
		"with every guard admitting and with none: the machine with a recorder and",
		"the one without end in the same configuration with the same error and",
		"the same actions run; a refused event records nothing and moves nothing;",
		"a step is recorded as one transition, from the configuration, then the",
		"eventless steps after it, each from where the last one ended, the last",
		"to where the machine is; a recorder that fails leaves it where it was.")
	f.linef(1, "ctx := %s.Background()", ctx)
	f.linef(1, "boom := %s.New(\"boom\")", errs)
	f.line(1, "for _, text := range fsmgenConfigs {")
	f.line(2, "c, err := ParseConfig(text)")
	f.line(2, "if err != nil {")
	f.line(3, "t.Fatal(err)")
	f.line(2, "}")
	f.line(2, "for _, admit := range []bool{true, false} {")
	f.line(3, "for _, e := range fsmgenEvents {")
	f.linef(4, "var got []%s.Transition", rtm)
	f.linef(4, "rec := %s.RecorderFunc(func(ctx %s.Context, tr %[1]s.Transition) error {", rtm, ctx)
	f.line(5, "if tr.Actions != nil {")
	f.line(6, "if err := tr.Actions(ctx); err != nil {")
	f.line(7, "return err")
	f.line(6, "}")
	f.line(5, "}")
	f.line(5, "got = append(got, tr)")
	f.line(5, "return nil")
	f.line(4, "})")
	if actions {
		f.line(4, "aWith, aWithout := &fsmgenActions{}, &fsmgenActions{}")
	}
	f.line(4, "with := ", t.newParallel("admit", "aWith", "WithConfig(c)", "WithRecorder(rec)"))
	f.line(4, "without := ", t.newParallel("admit", "aWithout", "WithConfig(c)"))
	f.line(4, "errWith, errWithout := with.Fire(ctx, e), without.Fire(ctx, e)")
	f.line(4, "at := text + \" on \" + e.EventName()")
	f.line(4, "if fmt.Sprint(errWith) != fmt.Sprint(errWithout) || with.Config() != without.Config() {")
	f.line(5, "t.Errorf(\"%s: with a recorder %s (%v), without %s (%v)\", at, with.Config(), errWith, without.Config(), errWithout)")
	f.line(4, "}")
	f.use("fmt")
	if actions {
		f.line(4, "if fmt.Sprint(aWith.ran) != fmt.Sprint(aWithout.ran) {")
		f.line(5, "t.Errorf(\"%s: actions %v with a recorder, %v without\", at, aWith.ran, aWithout.ran)")
		f.line(4, "}")
	}
	f.line(4, "if errWith != nil {")
	f.linef(5, "var te *%s.TransitionError", rtm)
	f.linef(5, "if !%s.As(errWith, &te) || len(got) > 0 || with.Config() != c {", errs)
	f.line(6, "t.Errorf(\"%s: refused with %v, %d recorded, in %s\", at, errWith, len(got), with.Config())")
	f.line(5, "}")
	f.line(5, "continue")
	f.line(4, "}")
	f.line(4, "if len(got) == 0 || got[0].From != text || got[0].Event != e.EventName() || got[len(got)-1].To != with.Config().String() {")
	f.line(5, "t.Fatalf(\"%s: recorded %+v, in %s\", at, got, with.Config())")
	f.line(4, "}")
	f.line(4, "for i := 1; i < len(got); i++ {")
	f.line(5, "if got[i].From != got[i-1].To || got[i].Event != \"\" {")
	f.line(6, "t.Errorf(\"%s: step %d, %s on %q, does not follow %s\", at, i, got[i].From, got[i].Event, got[i-1].To)")
	f.line(5, "}")
	f.line(4, "}")
	f.linef(4, "failing := %s", t.newParallel("admit", "&fsmgenActions{}", "WithConfig(c)",
		fmt.Sprintf("WithRecorder(%s.RecorderFunc(func(%s.Context, %[1]s.Transition) error { return boom }))", rtm, ctx)))
	f.linef(4, "if err := failing.Fire(ctx, e); !%s.Is(err, boom) || failing.Config() != c {", errs)
	f.line(5, "t.Errorf(\"%s: with a failing recorder: %v, in %s\", at, err, failing.Config())")
	f.line(4, "}")
	f.line(3, "}")
	f.line(2, "}")
	f.line(1, "}")
	f.line(0, "}")
}

// parallelDefinitionTest writes TestFSMDefinition.
func (t *testGen) parallelDefinitionTest() {
	f := t.f
	f.line(0)
	t.testFunc("TestFSMDefinition",
		"TestFSMDefinition: the definition is valid, and the driver's is it.")
	f.line(1, "def := Definition()")
	f.line(1, "if err := def.Validate(); err != nil {")
	f.line(2, "t.Fatal(err)")
	f.line(1, "}")
	var args []string
	if t.g.driven() {
		args = append(args, "nil")
	}
	if len(t.m.Guards) > 0 {
		args = append(args, "nil")
	}
	if len(t.m.Actions) > 0 {
		args = append(args, "nil")
	}
	f.line(1, "if got := NewDriver(", strings.Join(args, ", "), ").Definition(); got.Type != def.Type || len(got.Transitions) != len(def.Transitions) {")
	f.line(2, "t.Errorf(\"the driver's definition is of %s, %d rows; want %s, %d\", got.Type, len(got.Transitions), def.Type, len(def.Transitions))")
	f.line(1, "}")
	f.line(0, "}")
}
