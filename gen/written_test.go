package gen

import (
	"bytes"
	"fmt"
	"go/format"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dave/jennifer/jen"
	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/dsl"
)

// The parts of fsm.go written as text (definitionTable, viewTypes,
// eventMethods) are held to what jennifer and go/format made of them
// before: the reference below builds them as they were built then, and
// formats them.

func refDurationCode(d int64) *jen.Statement {
	for _, u := range durationUnits {
		if d%u.n == 0 {
			if d == u.n {
				return jen.Qual("time", u.name)
			}
			return jen.Lit(int(d/u.n)).Op("*").Qual("time", u.name)
		}
	}
	return jen.Qual("time", "Duration").Parens(jen.Lit(int(d)))
}

func refRetryCode(r *dsl.Retry) jen.Code {
	if r.Preset != "" {
		return rt(presetVar(r.Preset)).Dot("Clone").Call()
	}
	d := []jen.Code{
		kv("MaxAttempts", jen.Lit(r.MaxAttempts)),
		kv("InitialInterval", refDurationCode(int64(r.Initial))),
		kv("Coefficient", jen.Lit(r.Factor)),
	}
	if r.Max > 0 {
		d = append(d, kv("MaxInterval", refDurationCode(int64(r.Max))))
	}
	if r.Jitter > 0 {
		d = append(d, kv("Jitter", jen.Lit(r.Jitter)))
	}
	if len(r.NonRetryable) > 0 {
		codes := make([]jen.Code, len(r.NonRetryable))
		for i, c := range r.NonRetryable {
			codes[i] = jen.Lit(c)
		}
		d = append(d, kv("NonRetryable", jen.Index().String().Values(codes...)))
	}
	if r.FromPolicy {
		d = append(d, kv("FromPolicy", jen.True()))
	}
	return jen.Op("&").Add(rt("RetryPolicy")).Values(d...)
}

func refUpgradesCode(m *dsl.Machine) jen.Code {
	var out []jen.Code
	for _, mg := range m.Upgrades {
		d := []jen.Code{
			kv("Type", jen.Id("Type")),
			kv("From", jen.Lit(mg.From.Version)),
			kv("To", jen.Id("Version")),
		}
		if mg.Drain {
			d = append(d, kv("Drain", jen.True()))
		}
		var rules []jen.Code
		for _, r := range mg.Rules {
			rd := []jen.Code{kv("From", jen.Lit(r.From.Name))}
			if r.Drain {
				rd = append(rd, kv("Drain", jen.True()))
			} else {
				rd = append(rd, kv("To", jen.Lit(r.To.Name)))
			}
			if r.When != nil {
				rd = append(rd, kv("When", jen.Lit(r.When.Name)))
				if r.Unless {
					rd = append(rd, kv("Unless", jen.True()))
				}
			}
			if r.Timers != "" {
				rd = append(rd, kv("Timers", rt(map[string]string{"keep": "TimersKeep", "restart": "TimersRestart"}[r.Timers])))
			}
			rules = append(rules, jen.Values(rd...))
		}
		if len(rules) > 0 {
			d = append(d, kv("Rules", jen.Index().Add(rt("UpgradeRule")).Values(lines(rules)...)))
		}
		var defaults []jen.Code
		for _, fd := range mg.Defaults {
			defaults = append(defaults, jen.Values(
				kv("Event", jen.Lit(fd.Event.Name)),
				kv("Field", jen.Lit(fd.Field.Name)),
				kv("Value", jen.Qual("encoding/json", "RawMessage").Call(jen.Lit(string(fd.Value)))),
			))
		}
		if len(defaults) > 0 {
			d = append(d, kv("Defaults", jen.Index().Add(rt("FieldDefault")).Values(lines(defaults)...)))
		}
		out = append(out, jen.Values(lines(d)...))
	}
	return jen.Index().Add(rt("Upgrade")).Values(lines(out)...)
}

func refDefinition(g *goGen) {
	m := g.m
	var states, events, guards, rows []jen.Code
	for _, s := range m.States {
		d := []jen.Code{kv("Name", jen.Lit(s.Name))}
		if s.Initial {
			d = append(d, kv("Initial", jen.True()))
		}
		d = append(d, kv("Status", rt(statusConst(s.Status))))
		if s.Outcome != "" {
			d = append(d, kv("Outcome", jen.Lit(s.Outcome)))
		}
		if s.Wait {
			d = append(d, kv("Wait", jen.True()))
		}
		if s.Retry != nil {
			d = append(d, kv("Retry", refRetryCode(s.Retry)))
			if s.Retry.Exhausted != nil {
				d = append(d, kv("OnExhausted", jen.Lit(s.Retry.Exhausted.Name)))
			}
		}
		if len(s.Timers) > 0 {
			ts := make([]jen.Code, len(s.Timers))
			for i, t := range s.Timers {
				ts[i] = jen.Values(kv("After", refDurationCode(int64(t.After))), kv("Event", jen.Lit(t.Event.Name)))
			}
			d = append(d, kv("Timers", jen.Index().Add(rt("Timer")).Values(ts...)))
		}
		states = append(states, jen.Values(d...))
	}
	for _, e := range m.Events {
		d := []jen.Code{kv("Name", jen.Lit(e.Name))}
		if len(e.Fields) > 0 {
			fs := make([]jen.Code, len(e.Fields))
			for i, f := range e.Fields {
				fs[i] = jen.Values(kv("Name", jen.Lit(f.Name)), kv("Type", jen.Lit(f.Type.String())))
			}
			d = append(d, kv("Fields", jen.Index().Add(rt("FieldSpec")).Values(fs...)))
		}
		if e.External {
			d = append(d, kv("External", jen.True()))
		}
		events = append(events, jen.Values(d...))
	}
	for _, gd := range m.Guards {
		guards = append(guards, jen.Lit(gd.Name))
	}
	for _, t := range m.Transitions {
		d := []jen.Code{kv("From", jen.Lit(t.From.Name)), kv("To", jen.Lit(t.To.Name)), kv("Event", jen.Lit(t.Event.Name))}
		if t.Guard != nil {
			d = append(d, kv("Guard", jen.Lit(t.Guard.Name)))
		}
		if t.Negated {
			d = append(d, kv("Negated", jen.True()))
		}
		if t.Outcome != "" {
			d = append(d, kv("Outcome", jen.Lit(t.Outcome)))
		}
		rows = append(rows, jen.Values(d...))
	}
	def := []jen.Code{kv("Machine", jen.Lit(m.Name))}
	if len(m.Doc) > 0 {
		def = append(def, kv("Doc", jen.Lit(strings.Join(m.Doc, "\n"))))
	}
	def = append(def,
		kv("Type", jen.Id("Type")),
		kv("Version", jen.Id("Version")),
		kv("Initial", jen.Lit(m.Initial.Name)),
		kv("States", jen.Index().Add(rt("StateSpec")).Values(lines(states)...)),
		kv("Events", jen.Index().Add(rt("EventSpec")).Values(lines(events)...)),
	)
	if len(guards) > 0 {
		def = append(def, kv("Guards", jen.Index().String().Values(guards...)))
	}
	def = append(def, kv("Transitions", jen.Index().Add(rt("TransitionSpec")).Values(lines(rows)...)))
	if m.Cancel != nil {
		def = append(def, kv("Cancel", jen.Lit(m.Cancel.Name)))
	}
	if len(m.Upgrades) > 0 {
		def = append(def, kv("Upgrades", refUpgradesCode(m)))
	}
	g.f.Comment("Definition returns the machine's table, retry policies and timers as data:")
	g.f.Comment("a new copy per call.")
	g.f.Func().Id("Definition").Params().Add(rt("Definition")).Add(oneLine(jen.Return(jen.Id("definition").Dot("Clone").Call())))
	g.f.Var().Id("definition").Op("=").Add(rt("Definition")).Values(lines(def)...)
}

// refViewTypes emits the views' types and methods as views did before
// viewTypes wrote them as text.
func refViewTypes(g *goGen) {
	for _, s := range g.m.States {
		v := viewType(s)
		evs := g.eventsOf(s)
		lead := fmt.Sprintf("%s is the machine in final state %s.", v, s.Name)
		if !s.Terminal() {
			lead = fmt.Sprintf("%s is the machine in state %s.", v, s.Name)
		}
		for _, l := range wrap(lead, 76) {
			g.f.Comment(l)
		}
		g.f.Type().Id(v).Id("struct{ m *Machine }")
		g.f.Comment(fmt.Sprintf("%s returns the machine as %s and whether it is in that state.", v, v))
		g.f.Func().Params(jen.Id("m").Op("*").Id("Machine")).Id(v).Params().Params(jen.Id(v), jen.Bool()).Add(oneLine(
			jen.Return(jen.Id(v).Values(jen.Id("m")), mState().Op("==").Id(stateConst(s))),
		))
		g.f.Func().Params(jen.Id(v)).Id("State").Params().Id("State").Add(oneLine(jen.Return(jen.Id(stateConst(s)))))
		g.f.Func().Params(jen.Id(v)).Id("isView").Params().Block()
		for _, e := range evs {
			g.f.Func().Params(jen.Id("v").Id(v)).Id(e.GoName).Params(
				jen.Id("ctx").Qual("context", "Context"), jen.Id("e").Id(e.GoName),
			).Error().Add(oneLine(jen.Return(jen.Id("v").Dot("m").Dot(e.GoName).Call(jen.Id("ctx"), jen.Id("e")))))
		}
	}
}

// refMoveCode is the code that records and applies row t.
func refMoveCode(t *dsl.Transition) jen.Code {
	return jen.Return(jen.Id("move").Call(jen.Id("ctx"), jen.Id("m"), jen.Id(stateConst(t.To)), jen.Op("&").Id("e"), jen.Lit(t.Outcome)))
}

func refGuardCall(t *dsl.Transition) *jen.Statement {
	call := jen.Id("m").Dot("guards").Dot(t.Guard.GoName).Call(jen.Id("ctx"), jen.Id("e"))
	if t.Negated {
		return jen.Op("!").Add(call)
	}
	return call
}

// refParensIf wraps c in parentheses when p holds.
func refParensIf(p bool, c *jen.Statement) *jen.Statement {
	if p {
		return jen.Parens(c)
	}
	return c
}

// refInState is the condition that the machine is in one of states.
func refInState(states []*dsl.State) *jen.Statement {
	c := jen.Null()
	for i, s := range states {
		if i > 0 {
			c.Op("||")
		}
		c.Add(mState()).Op("==").Id(stateConst(s))
	}
	return c
}

func refStateIDs(states []*dsl.State) []jen.Code {
	out := make([]jen.Code, len(states))
	for i, s := range states {
		out[i] = jen.Id(stateConst(s))
	}
	return out
}

// refPerEvent emits the events' methods as perEvent did before
// eventMethods wrote them as text.
func refPerEvent(g *goGen, events []*dsl.Event) {
	for _, e := range events {
		arms, summary, guarded := g.summary(e)
		if len(summary) == 1 {
			for _, l := range wrap(fmt.Sprintf("%s moves %s.", e.GoName, summary[0]), 76) {
				g.f.Comment(l)
			}
		} else {
			for _, l := range wrap(fmt.Sprintf("%s tries in order: %s.", e.GoName, strings.Join(summary, "; ")), 76) {
				g.f.Comment(l)
			}
		}
		sig := jen.Func().Params(jen.Id("m").Op("*").Id("Machine")).Id(e.GoName).Params(jen.Id("ctx").Qual("context", "Context"), jen.Id("e").Id(e.GoName)).Error()
		refuse := jen.Return(jen.Id("m").Dot("refuse").Call(jen.Id("e")))
		follow := jen.Return(jen.Id("m").Dot("follow").Call(jen.Id("ctx"), jen.Id("e")))
		var body []jen.Code
		switch {
		case !guarded && len(arms) == 1:
			// The fast path is small enough for the compiler to inline the
			// method into its caller.
			body = []jen.Code{
				jen.If(jen.Id("m").Dot("rec").Op("==").Nil().Op("&&").Add(refParensIf(len(arms[0].from) > 1, refInState(arms[0].from)))).Block(
					mState().Op("=").Id(stateConst(arms[0].rows[0].To)),
					jen.Return(jen.Nil()),
				),
				follow,
			}
		case !guarded:
			cases := make([]jen.Code, len(arms))
			for i, a := range arms {
				cases[i] = jen.Case(refStateIDs(a.from)...).Block(mState().Op("=").Id(stateConst(a.rows[0].To)), jen.Return(jen.Nil()))
			}
			body = []jen.Code{
				jen.If(jen.Id("m").Dot("rec").Op("==").Nil()).Block(jen.Switch(mState()).Block(cases...)),
				follow,
			}
		case len(arms) == 1 && len(arms[0].rows) == 1:
			// One guarded row, from one state or several alike.
			// The condition reads "in the state and admitted", the move
			// inside the if: written as "not in the state or refused",
			// the compiler materializes the condition as a boolean.
			a := arms[0]
			t := a.rows[0]
			body = []jen.Code{
				jen.If(refParensIf(len(a.from) > 1, refInState(a.from)).Op("&&").Add(refGuardCall(t))).Block(refMoveCode(t)),
				refuse,
			}
		default:
			armCode := func(a *arm) []jen.Code {
				var code []jen.Code
				for _, t := range a.rows {
					if t.Guard == nil {
						return append(code, refMoveCode(t))
					}
					code = append(code, jen.If(refGuardCall(t)).Block(refMoveCode(t)))
				}
				return code
			}
			if len(arms) == 1 {
				body = append(body, jen.If(refInState(arms[0].from)).Block(armCode(arms[0])...))
			} else {
				cases := make([]jen.Code, len(arms))
				for i, a := range arms {
					cases[i] = jen.Case(refStateIDs(a.from)...).Block(armCode(a)...)
				}
				body = append(body, jen.Switch(mState()).Block(cases...))
			}
			body = append(body, refuse)
		}
		g.f.Add(sig.Block(body...))
	}
}

// refRender renders what emit adds to a file of m's package, formatted,
// after the package clause and imports.
func refRender(t *testing.T, m *dsl.Machine, emit func(*goGen)) string {
	t.Helper()
	f := jen.NewFile(m.Package)
	f.ImportName(runtimePath, "runtime")
	g := &goGen{f: f, m: m}
	emit(g)
	var buf bytes.Buffer
	if err := f.Render(&buf); err != nil {
		t.Fatal(err)
	}
	_, body, err := splitImports(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	out, err := format.Source(bytes.TrimSpace(body))
	if err != nil {
		t.Fatal(err)
	}
	return string(out) + "\n"
}

// longNames is a machine whose names are long enough for gofmt to break
// some of the views' methods over three lines, with every kind of table
// entry.
const longNames = `// LongNames has long names.
machine LongNames {
    initial AVeryLongStateNameThatGoesOnAndOnAndOn retry 3 backoff 1s factor 2 max 30s jitter 0.1
    state Short retry database
    state Waiting wait after 90m Tick after 1500ms Tock
    final DONE succeeded
    cancel Stop
    event Stop
    event Tick
    event Tock
    event AnEventWithAQuiteLongNameForTheViewMethods { id string; count int }
    event Go
    guard Ready
    AVeryLongStateNameThatGoesOnAndOnAndOn -> Short on AnEventWithAQuiteLongNameForTheViewMethods when Ready
    AVeryLongStateNameThatGoesOnAndOnAndOn -> Waiting on AnEventWithAQuiteLongNameForTheViewMethods
    AVeryLongStateNameThatGoesOnAndOnAndOn -> DONE on Go outcome "quick"
    Short -> Waiting on AnEventWithAQuiteLongNameForTheViewMethods
    Short -> DONE on Go
    Waiting -> DONE on Tick
    Waiting -> Short on Tock
    * -> DONE on Stop
}
`

// TestWrittenPartsMatchFormatted compares definitionTable, viewTypes and
// eventMethods with the reference, formatted by go/format, on every machine of
// testdata, the committed machines and longNames.
func TestWrittenPartsMatchFormatted(t *testing.T) {
	t.Parallel()
	paths, err := filepath.Glob(filepath.Join("testdata", "*.fsm"))
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob(filepath.Join("..", "machines", "*", "*.fsm"))
	paths = append(paths, more...)
	sources := map[string][]byte{"longnames.fsm": []byte(longNames)}
	for _, p := range paths {
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		sources[p] = src
	}
	checked := 0
	for name, src := range sources {
		spec, diags := dsl.Load(filepath.Base(name), src)
		if diags.HasErrors() {
			t.Fatalf("%s: %v", name, diags.Err())
		}
		for _, m := range spec.Machines {
			if statechart(m) {
				// A nested machine's fsm.go is formatted whole.
				continue
			}
			checked++
			table, _ := definitionTable(m)
			want := refRender(t, m, refDefinition)
			_, wantTable, _ := strings.Cut(want, "\n\nvar definition")
			if diff := cmp.Diff("var definition"+wantTable, string(table)); diff != "" {
				t.Errorf("%s: machine %s: definition table (-formatted +written):\n%s", name, m.Name, diff)
			}
			methods := (&goGen{m: m}).eventMethods(m.Events)
			want = refRender(t, m, func(g *goGen) { refPerEvent(g, m.Events) })
			if diff := cmp.Diff("\n"+want, string(methods)); diff != "" {
				t.Errorf("%s: machine %s: event methods (-formatted +written):\n%s", name, m.Name, diff)
			}
			views := (&goGen{m: m}).viewTypes()
			if m.Name == "LongNames" && !bytes.Contains(views, []byte(") error {\n\treturn v.m.")) {
				t.Errorf("no view method of LongNames over three lines:\n%s", views)
			}
			want = refRender(t, m, refViewTypes)
			if diff := cmp.Diff("\n"+want, string(views)); diff != "" {
				t.Errorf("%s: machine %s: view types (-formatted +written):\n%s", name, m.Name, diff)
			}
		}
	}
	if checked < 10 {
		t.Errorf("%d machines checked, want at least 10", checked)
	}
}

// lineLimitMachine returns a machine whose initial state's view has a
// method for its one event of exactly size as go/printer counts it
// (oneLineFits), with the method's header and body; the state's name is
// lengthened until the size is reached.
func lineLimitMachine(t *testing.T, size int) (src, header, body string) {
	t.Helper()
	const event = "ReachLimit"
	for n := 1; n <= 60; n++ {
		state := "W" + strings.Repeat("a", n-1)
		header = fmt.Sprintf("func (v In%s) %s(ctx context.Context, e %s) error", state, event, event)
		body = fmt.Sprintf("return v.m.%s(ctx, e)", event)
		if len(header)+1+len(body) == size {
			src = fmt.Sprintf("machine M {\n    initial %s\n    final DONE succeeded\n    event %s\n    %s -> DONE on %s\n}\n", state, event, state, event)
			return src, header, body
		}
	}
	t.Fatalf("no state name gives a view method of size %d", size)
	return "", "", ""
}

// TestViewMethodAtTheLineLimit generates view methods of one less than,
// exactly and one more than go/printer's limit for a function on one line
// (funcBody's maxSize, 100): the first two are written on one line, the
// third over three, and fsm.go is as gofmt leaves it.
func TestViewMethodAtTheLineLimit(t *testing.T) {
	t.Parallel()
	for _, size := range []int{99, 100, 101} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			t.Parallel()
			src, header, body := lineLimitMachine(t, size)
			spec, diags := dsl.Load("limit.fsm", []byte(src))
			if diags.HasErrors() {
				t.Fatal(diags.Err())
			}
			files, err := Generate(spec)
			if err != nil {
				t.Fatal(err)
			}
			var content []byte
			for _, f := range files {
				if filepath.Base(f.Path) == GoFile {
					content = f.Content
				}
			}
			want := header + " { " + body + " }\n"
			if size > 100 {
				want = header + " {\n\t" + body + "\n}\n"
			}
			if !bytes.Contains(content, []byte(want)) {
				t.Errorf("fsm.go does not have\n%s", want)
			}
			formatted, err := format.Source(content)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(formatted), string(content)); diff != "" {
				t.Errorf("fsm.go is not gofmt-clean (-gofmt +generated):\n%s", diff)
			}
		})
	}
}
