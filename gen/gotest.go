package gen

import (
	"fmt"
	"slices"

	"github.com/dave/jennifer/jen"

	"github.com/fsmgen/fsmgen/dsl"
)

const fsmtestPath = "github.com/fsmgen/fsmgen/runtime/fsmtest"

// testCode emits the machine's generated tests. They describe the machine
// to runtime/fsmtest, which checks the generated code against the
// machine's definition: every (state, event) pair under every guard
// outcome, record-before-apply, final states, paths to every state and
// through every row, payload decoding and the driver. The names and the
// views, which are the package's own API, are checked here.
func testCode(source string, m *dsl.Machine) *jen.File {
	f := jen.NewFile(m.Package)
	headerComments(f, source)
	f.ImportName(runtimePath, "runtime")
	f.ImportName(fsmtestPath, "fsmtest")
	t := &testGen{f: f, m: m, g: &goGen{f: f, m: m}}
	t.adapters()
	t.machine()
	t.names()
	t.views()
	t.senders()
	t.nested()
	return f
}

type testGen struct {
	f *jen.File
	m *dsl.Machine
	g *goGen
}

func tParam() jen.Code { return jen.Id("t").Op("*").Qual("testing", "T") }

// newMachine is the code that builds a machine with guards g and options.
func (t *testGen) newMachine(g jen.Code, opts ...jen.Code) *jen.Statement {
	var args []jen.Code
	if len(t.m.Guards) > 0 {
		args = append(args, g)
	}
	if len(t.m.Actions) > 0 {
		args = append(args, jen.Op("&").Id("fsmgenActions").Values())
	}
	return jen.Id("New").Call(append(args, opts...)...)
}

// adapters emits the guards, handlers and instance the checks use.
func (t *testGen) adapters() {
	f := t.f
	if len(t.m.Guards) > 0 {
		f.Comment("fsmgenGuards admits the events of the guards it maps to true.")
		f.Type().Id("fsmgenGuards").Map(jen.String()).Bool()
	}
	for _, gd := range t.m.Guards {
		f.Func().Params(jen.Id("g").Id("fsmgenGuards")).Id(gd.GoName).Params(jen.Qual("context", "Context"), guardParam(t.m, gd)).Bool().Block(
			jen.Return(jen.Id("g").Index(jen.Lit(gd.Name))),
		)
	}
	if len(t.m.Actions) > 0 {
		f.Comment("fsmgenActions notes the actions run, in order, and fails the one named fail.")
		f.Type().Id("fsmgenActions").Struct(
			jen.Id("ran").Index().String(),
			jen.Id("fail").String(),
		)
		f.Func().Params(jen.Id("a").Op("*").Id("fsmgenActions")).Id("run").Params(jen.Id("name").String()).Error().Block(
			jen.If(jen.Id("name").Op("==").Id("a").Dot("fail")).Block(
				jen.Return(jen.Qual("errors", "New").Call(jen.Lit("action ").Op("+").Id("name").Op("+").Lit(" failed"))),
			),
			jen.Id("a").Dot("ran").Op("=").Append(jen.Id("a").Dot("ran"), jen.Id("name")),
			jen.Return(jen.Nil()),
		)
	}
	for _, a := range t.m.Actions {
		f.Func().Params(jen.Id("a").Op("*").Id("fsmgenActions")).Id(a.GoName).Params(jen.Qual("context", "Context")).Error().Block(
			jen.Return(jen.Id("a").Dot("run").Call(jen.Lit(a.Name))),
		)
	}
	if t.g.driven() {
		f.Comment("fsmgenHandlers returns, in every driven state, the first event the state accepts.")
		f.Type().Id("fsmgenHandlers").Struct()
	}
	for _, s := range t.m.States {
		if !s.Driven() {
			continue
		}
		// A state without a row out accepts no event: its handler returns
		// none, which the machine refuses as it would in a real run.
		ret := jen.Return(jen.Nil(), jen.Nil())
		if es := t.g.eventsOf(s); len(es) > 0 {
			ret = jen.Return(jen.Id(es[0].GoName).Values(), jen.Nil())
		}
		f.Func().Params(jen.Id("fsmgenHandlers")).Id(s.GoName).Params(jen.Qual("context", "Context"), jen.Op("*").Qual(runtimePath, "Run")).Params(jen.Id(eventSet(s)), jen.Error()).Block(ret)
	}
	f.Comment("fsmgenInstance is a Machine as fsmtest sees it.")
	f.Type().Id("fsmgenInstance").Struct(jen.Id("m").Op("*").Id("Machine"))
	f.Func().Params(jen.Id("i").Id("fsmgenInstance")).Id("Fire").Params(jen.Id("ctx").Qual("context", "Context"), jen.Id("e").Qual(runtimePath, "Event")).Error().Block(
		jen.List(jen.Id("ev"), jen.Id("_")).Op(":=").Id("e").Assert(jen.Id("Event")),
		jen.Return(jen.Id("i").Dot("m").Dot("Fire").Call(jen.Id("ctx"), jen.Id("ev"))),
	)
	f.Func().Params(jen.Id("i").Id("fsmgenInstance")).Id("State").Params().String().Block(
		jen.Return(jen.Id("i").Dot("m").Dot("State").Call().Dot("String").Call()),
	)
	if n := t.g.nest(); n != nil && n.anyEventless() {
		f.Func().Params(jen.Id("i").Id("fsmgenInstance")).Id("Settle").Params(jen.Id("ctx").Qual("context", "Context")).Error().Block(
			jen.Return(jen.Id("i").Dot("m").Dot("Settle").Call(jen.Id("ctx"))),
		)
	}
}

// machine emits fsmgenMachine, the description fsmtest checks, and TestFSM.
func (t *testGen) machine() {
	f := t.f
	evs := make([]jen.Code, len(t.m.Events))
	for i, e := range t.m.Events {
		evs[i] = jen.Id(e.GoName).Values()
	}
	guardsArg := jen.Id("fsmgenGuards").Call(jen.Id("admit"))
	var driverArgs []jen.Code
	if t.g.driven() {
		driverArgs = append(driverArgs, jen.Id("fsmgenHandlers").Values())
	}
	if len(t.m.Guards) > 0 {
		driverArgs = append(driverArgs, jen.Func().Params(jen.Op("*").Qual(runtimePath, "Run")).Id("Guards").Block(jen.Return(guardsArg)))
	}
	if len(t.m.Actions) > 0 {
		driverArgs = append(driverArgs, jen.Func().Params(jen.Op("*").Qual(runtimePath, "Run")).Id("Actions").Block(jen.Return(jen.Op("&").Id("fsmgenActions").Values())))
	}
	f.Comment("fsmgenMachine describes the machine to fsmtest.")
	f.Func().Id("fsmgenMachine").Params().Qual(fsmtestPath, "Machine").Block(
		jen.Return(jen.Qual(fsmtestPath, "Machine").Values(lines([]jen.Code{
			kv("Definition", jen.Id("Definition").Call()),
			kv("Events", jen.Index().Qual(runtimePath, "Event").Values(lines(evs)...)),
			kv("New", jen.Func().Params(jen.Id("state").String(), jen.Id("admit").Map(jen.String()).Bool(), jen.Id("rec").Qual(runtimePath, "Recorder")).Params(jen.Qual(fsmtestPath, "Instance"), jen.Error()).Block(
				jen.List(jen.Id("s"), jen.Err()).Op(":=").Id("ParseState").Call(jen.Id("state")),
				jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())),
				jen.Id("opts").Op(":=").Index().Id("Option").Values(jen.Id("WithState").Call(jen.Id("s"))),
				jen.If(jen.Id("rec").Op("!=").Nil()).Block(jen.Id("opts").Op("=").Append(jen.Id("opts"), jen.Id("WithRecorder").Call(jen.Id("rec")))),
				jen.Return(jen.Id("fsmgenInstance").Values(t.newMachine(guardsArg, jen.Id("opts").Op("..."))), jen.Nil()),
			)),
			kv("Decode", jen.Func().Params(jen.Id("name").String(), jen.Id("payload").Index().Byte()).Params(jen.Qual(runtimePath, "Event"), jen.Error()).Block(
				jen.List(jen.Id("e"), jen.Err()).Op(":=").Id("DecodeEvent").Call(jen.Id("name"), jen.Id("payload")),
				jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())),
				jen.Return(jen.Id("e"), jen.Nil()),
			)),
			kv("Driver", jen.Func().Params(jen.Id("admit").Map(jen.String()).Bool()).Qual(runtimePath, "Driver").Block(
				jen.Return(jen.Id("NewDriver").Call(driverArgs...)),
			)),
		})...)),
	)
	f.Comment("TestFSM checks the machine's code against its definition; see runtime/fsmtest.")
	f.Func().Id("TestFSM").Params(tParam()).Block(
		jen.Id("t").Dot("Parallel").Call(),
		jen.Qual(fsmtestPath, "Run").Call(jen.Id("t"), jen.Id("fsmgenMachine").Call()),
	)
}

func (t *testGen) names() {
	f := t.f
	f.Comment("TestFSMStateNames checks String, ParseState and the text encoding.")
	f.Func().Id("TestFSMStateNames").Params(tParam()).Block(
		jen.Id("t").Dot("Parallel").Call(),
		jen.For(jen.List(jen.Id("_"), jen.Id("s")).Op(":=").Range().Id("States").Call()).Block(
			jen.List(jen.Id("got"), jen.Id("err")).Op(":=").Id("ParseState").Call(jen.Id("s").Dot("String").Call()),
			jen.If(jen.Id("err").Op("!=").Nil().Op("||").Id("got").Op("!=").Id("s")).Block(
				jen.Id("t").Dot("Errorf").Call(jen.Lit("ParseState(%q) = %v, %v"), jen.Id("s").Dot("String").Call(), jen.Id("got"), jen.Id("err")),
			),
			jen.List(jen.Id("text"), jen.Id("err")).Op(":=").Id("s").Dot("MarshalText").Call(),
			jen.Var().Id("back").Id("State"),
			jen.If(jen.Id("err").Op("!=").Nil()).Block(
				jen.Id("t").Dot("Fatal").Call(jen.Id("err")),
			),
			jen.If(jen.Id("err").Op(":=").Id("back").Dot("UnmarshalText").Call(jen.Id("text")), jen.Id("err").Op("!=").Nil().Op("||").Id("back").Op("!=").Id("s")).Block(
				jen.Id("t").Dot("Errorf").Call(jen.Lit("text round trip of %s: %v, %v"), jen.Id("s"), jen.Id("back"), jen.Id("err")),
			),
		),
		jen.If(jen.List(jen.Id("_"), jen.Id("err")).Op(":=").Id("ParseState").Call(jen.Lit("NO_SUCH_STATE")), jen.Op("!").Qual("errors", "Is").Call(jen.Id("err"), jen.Qual(runtimePath, "ErrUnknownState"))).Block(
			jen.Id("t").Dot("Errorf").Call(jen.Lit("ParseState of an unknown name: %v, want ErrUnknownState"), jen.Id("err")),
		),
		jen.If(jen.Id("got").Op(":=").Id("State").Call(jen.Lit(65535)).Dot("String").Call(), jen.Id("got").Op("!=").Lit("State(65535)")).Block(
			jen.Id("t").Dot("Errorf").Call(jen.Lit("String of an invalid state = %q"), jen.Id("got")),
		),
	)
}

func (t *testGen) views() {
	f := t.f
	checks := make([]jen.Code, 0, len(t.m.States))
	for _, s := range slices.Concat(t.m.States, t.m.Composites) {
		checks = append(checks, jen.Id(stateConst(s)).Op(":").Func().Params(jen.Id("m").Op("*").Id("Machine")).Bool().Block(
			jen.List(jen.Id("_"), jen.Id("ok")).Op(":=").Id("m").Dot(viewType(s)).Call(),
			jen.Return(jen.Id("ok")),
		))
	}
	want := jen.Id("v").Op("==").Id("s")
	if len(t.m.Composites) > 0 {
		// A composite's accessor: in one of its leaves but the final ones.
		want = jen.Id("s").Dot("In").Call(jen.Id("v")).Op("&&").Parens(jen.Id("v").Dot("Leaf").Call().Op("||").Op("!").Id("s").Dot("Terminal").Call())
		f.Comment("TestFSMViews checks that View and the InX accessors agree with the state:")
		f.Comment("the accessor of a composite with its leaves but the final ones.")
	} else {
		f.Comment("TestFSMViews checks that View and the InX accessors agree with the state.")
	}
	f.Func().Id("TestFSMViews").Params(tParam()).Block(
		jen.Id("t").Dot("Parallel").Call(),
		jen.Id("in").Op(":=").Map(jen.Id("State")).Func().Params(jen.Op("*").Id("Machine")).Bool().Values(lines(checks)...),
		jen.For(jen.List(jen.Id("_"), jen.Id("s")).Op(":=").Range().Id("States").Call()).Block(
			jen.Id("m").Op(":=").Add(t.newMachine(jen.Id("fsmgenGuards").Values(), jen.Id("WithState").Call(jen.Id("s")))),
			jen.If(jen.Id("got").Op(":=").Id("m").Dot("View").Call().Dot("State").Call(), jen.Id("got").Op("!=").Id("s")).Block(
				jen.Id("t").Dot("Errorf").Call(jen.Lit("View in %s stands for %s"), jen.Id("s"), jen.Id("got")),
			),
			jen.For(jen.List(jen.Id("v"), jen.Id("check")).Op(":=").Range().Id("in")).Block(
				jen.If(jen.Id("check").Call(jen.Id("m")).Op("!=").Parens(want)).Block(
					jen.Id("t").Dot("Errorf").Call(jen.Lit("in state %s, the accessor of %s says %v"), jen.Id("s"), jen.Id("v"), jen.Id("check").Call(jen.Id("m"))),
				),
			),
		),
	)
}

// senders emits TestFSMSenders: for every (state, event) of the table,
// whether callers may send the event there, as the .fsm says (dsl's
// Machine.Sender) against what the runtime enforces
// (runtime.Definition.CallerRefusal); and that the typed handle has a
// method for exactly the events callers may send somewhere.
func (t *testGen) senders() {
	f := t.f
	type pair struct{ s, e string }
	var seen []pair
	var rows []jen.Code
	for _, tr := range t.m.Transitions {
		if tr.Event == nil {
			continue
		}
		p := pair{tr.From.Name, tr.Event.Name}
		if slices.Contains(seen, p) {
			continue
		}
		seen = append(seen, p)
		rows = append(rows, jen.Values(jen.Lit(p.s), jen.Lit(p.e), jen.Lit(t.m.Sender(tr.From, tr.Event) == "")))
	}
	var methods []jen.Code
	for _, e := range t.m.Events {
		if e == t.m.Cancel || slices.Contains(handleMethods, e.GoName) {
			continue
		}
		methods = append(methods, jen.Values(jen.Lit(e.GoName), jen.Lit(t.m.CallerEvent(e))))
	}
	body := []jen.Code{jen.Id("t").Dot("Parallel").Call()}
	if len(rows) > 0 {
		body = append(body,
			jen.Id("d").Op(":=").Id("Definition").Call(),
			jen.For(jen.List(jen.Id("_"), jen.Id("c")).Op(":=").Range().Index().Struct(
				jen.List(jen.Id("state"), jen.Id("event")).String(),
				jen.Id("caller").Bool(),
			).Values(lines(rows)...)).Block(
				jen.Id("why").Op(":=").Id("d").Dot("CallerRefusal").Call(jen.Id("c").Dot("state"), jen.Id("c").Dot("event")),
				jen.If(jen.Parens(jen.Id("why").Op("==").Lit("")).Op("!=").Id("c").Dot("caller")).Block(
					jen.Id("t").Dot("Errorf").Call(jen.Lit("%s in state %s: callers may send it: %t (%q), want %t"), jen.Id("c").Dot("event"), jen.Id("c").Dot("state"), jen.Id("why").Op("==").Lit(""), jen.Id("why"), jen.Id("c").Dot("caller")),
				),
			),
		)
	}
	if len(methods) > 0 {
		body = append(body,
			jen.Id("h").Op(":=").Qual("reflect", "TypeFor").Types(jen.Id("Handle").Types(jen.Struct())).Call(),
			jen.For(jen.List(jen.Id("_"), jen.Id("c")).Op(":=").Range().Index().Struct(
				jen.Id("method").String(),
				jen.Id("caller").Bool(),
			).Values(lines(methods)...)).Block(
				jen.If(jen.List(jen.Id("_"), jen.Id("ok")).Op(":=").Id("h").Dot("MethodByName").Call(jen.Id("c").Dot("method")), jen.Id("ok").Op("!=").Id("c").Dot("caller")).Block(
					jen.Id("t").Dot("Errorf").Call(jen.Lit("Handle has a method %s: %t, want %t"), jen.Id("c").Dot("method"), jen.Id("ok"), jen.Id("c").Dot("caller")),
				),
			),
		)
	}
	f.Comment("TestFSMSenders checks who may send each event of the table: callers (Signal,")
	f.Comment("the handle, fsmctl runs signal) the events of the states that wait, the")
	f.Comment("cancel event and the external events; a driven state's handler the events")
	f.Comment("of its rows; the runtime its timers' and retry policies' events. The")
	f.Comment("handle has a method for the events callers may send only.")
	f.Func().Id("TestFSMSenders").Params(tParam()).Block(body...)
}

// nested emits TestFSMNested, for a statechart: every leaf move of the
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
	f := t.f
	m := t.m
	strs := func(ss []string) jen.Code {
		if len(ss) == 0 {
			return jen.Nil()
		}
		vs := make([]jen.Code, len(ss))
		for i, s := range ss {
			vs[i] = jen.Lit(s)
		}
		return jen.Index().String().Values(vs...)
	}
	names := func(ss []*dsl.State) jen.Code {
		out := make([]string, len(ss))
		for i, s := range ss {
			out[i] = s.Name
		}
		return strs(out)
	}
	histMap := func(h map[*dsl.History]*dsl.State) jen.Code {
		if len(h) == 0 {
			return jen.Nil()
		}
		d := jen.Dict{}
		for _, hs := range m.Histories {
			if s, ok := h[hs]; ok {
				d[jen.Lit(hs.Name)] = jen.Lit(s.Name)
			}
		}
		return jen.Map(jen.String()).String().Values(d)
	}
	var cases []jen.Code
	for _, r := range n.rows {
		admit, ok := n.admitFor(r.t)
		if !ok {
			continue
		}
		hist := map[*dsl.History]*dsl.State{}
		if r.record != nil {
			hist[r.t.History] = r.record
		}
		o := n.simulate(r, hist, admit)
		if o.loop {
			continue
		}
		name := r.t.From.Name + ": " + rowText(r.t)
		if r.record != nil {
			name += fmt.Sprintf(" (%s recorded %s)", r.t.History.Name, r.record.Name)
		}
		ev := jen.Nil()
		if r.t.Event != nil {
			ev = jen.Id(r.t.Event.GoName).Values()
		}
		var moves []jen.Code
		for i, mv := range o.moves {
			e := ""
			if i == 0 && r.t.Event != nil {
				e = r.t.Event.Name
			}
			moves = append(moves, jen.Values(jen.Lit(mv.t.From.Name), jen.Lit(mv.to.Name), jen.Lit(e), names(mv.t.Exit), names(mv.enter)))
		}
		var acts []string
		for _, a := range o.actions {
			acts = append(acts, a.Name)
		}
		fail := ""
		if first := stepActions(r); len(first) > 0 {
			fail = first[0].Name
		}
		admitD := jen.Dict{}
		for _, g := range m.Guards {
			if v, ok := admit[g.Name]; ok {
				admitD[jen.Lit(g.Name)] = jen.Lit(v)
			}
		}
		fields := []jen.Code{
			kv("name", jen.Lit(name)), kv("from", jen.Lit(r.t.From.Name)),
		}
		if len(m.Histories) > 0 {
			fields = append(fields, kv("history", histMap(hist)))
		}
		if len(m.Guards) > 0 {
			fields = append(fields, kv("admit", jen.Map(jen.String()).Bool().Values(admitD)))
		}
		fields = append(fields, kv("event", ev), kv("moves", jen.Index().Id("fsmgenMove").Values(lines(moves)...)))
		if len(m.Actions) > 0 {
			fields = append(fields, kv("actions", strs(acts)), kv("fail", jen.Lit(fail)))
		}
		fields = append(fields, kv("state", jen.Lit(o.state.Name)))
		if len(m.Histories) > 0 {
			fields = append(fields, kv("after", histMap(o.hist)))
		}
		cases = append(cases, jen.Values(lines(fields)...))
	}
	if len(cases) == 0 {
		return
	}

	f.Comment("fsmgenMove is a leaf move as a recorder is given it.")
	f.Type().Id("fsmgenMove").Struct(
		jen.List(jen.Id("From"), jen.Id("To"), jen.Id("Event")).String(),
		jen.List(jen.Id("Exited"), jen.Id("Entered")).Index().String(),
	)
	f.Comment("fsmgenMoves records the moves it is given, after running their actions")
	f.Comment("as a recorder does in its write.")
	f.Type().Id("fsmgenMoves").Struct(jen.Id("got").Index().Id("fsmgenMove"))
	f.Func().Params(jen.Id("r").Op("*").Id("fsmgenMoves")).Id("Record").Params(jen.Id("ctx").Qual("context", "Context"), jen.Id("t").Qual(runtimePath, "Transition")).Error().Block(
		jen.If(jen.Id("t").Dot("Actions").Op("!=").Nil()).Block(
			jen.If(jen.Err().Op(":=").Id("t").Dot("Actions").Call(jen.Id("ctx")), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
		),
		jen.Id("r").Dot("got").Op("=").Append(jen.Id("r").Dot("got"), jen.Id("fsmgenMove").Values(
			jen.Id("t").Dot("From"), jen.Id("t").Dot("To"), jen.Id("t").Dot("Event"), jen.Id("t").Dot("Exited"), jen.Id("t").Dot("Entered"),
		)),
		jen.Return(jen.Nil()),
	)

	caseFields := []jen.Code{jen.List(jen.Id("name"), jen.Id("from")).String()}
	if len(m.Histories) > 0 {
		caseFields = append(caseFields, jen.Id("history").Map(jen.String()).String())
	}
	if len(m.Guards) > 0 {
		caseFields = append(caseFields, jen.Id("admit").Map(jen.String()).Bool())
	}
	caseFields = append(caseFields, jen.Id("event").Id("Event"), jen.Id("moves").Index().Id("fsmgenMove"))
	if len(m.Actions) > 0 {
		caseFields = append(caseFields, jen.Id("actions").Index().String(), jen.Id("fail").String())
	}
	caseFields = append(caseFields, jen.Id("state").String())
	if len(m.Histories) > 0 {
		caseFields = append(caseFields, jen.Id("after").Map(jen.String()).String())
	}

	// build returns the statements that build m from c with recorder rec
	// (nil for none) and actions failing fail.
	var newArgs []jen.Code
	if len(m.Guards) > 0 {
		newArgs = append(newArgs, jen.Id("fsmgenGuards").Call(jen.Id("c").Dot("admit")))
	}
	if len(m.Actions) > 0 {
		newArgs = append(newArgs, jen.Id("a"))
	}
	newArgs = append(newArgs, jen.Id("opts").Op("..."))
	fire := func(ctxName string) []jen.Code {
		if !n.anyEventless() {
			return []jen.Code{jen.Err().Op("=").Id("m").Dot("Fire").Call(jen.Id(ctxName), jen.Id("c").Dot("event"))}
		}
		return []jen.Code{
			jen.If(jen.Id("c").Dot("event").Op("==").Nil()).Block(
				jen.Err().Op("=").Id("m").Dot("Settle").Call(jen.Id(ctxName)),
			).Else().Block(
				jen.Err().Op("=").Id("m").Dot("Fire").Call(jen.Id(ctxName), jen.Id("c").Dot("event")),
			),
		}
	}
	build := func(failing bool) []jen.Code {
		var out []jen.Code
		out = append(out,
			jen.List(jen.Id("s"), jen.Err()).Op(":=").Id("ParseState").Call(jen.Id("c").Dot("from")),
			jen.If(jen.Err().Op("!=").Nil()).Block(jen.Id("t").Dot("Fatal").Call(jen.Err())),
			jen.Id("rec").Op(":=").Op("&").Id("fsmgenMoves").Values(),
			jen.Id("opts").Op(":=").Index().Id("Option").Values(jen.Id("WithState").Call(jen.Id("s"))),
		)
		if !failing {
			out = append(out, jen.If(jen.Id("recorded")).Block(jen.Id("opts").Op("=").Append(jen.Id("opts"), jen.Id("WithRecorder").Call(jen.Id("rec")))))
		} else {
			out = append(out, jen.Id("opts").Op("=").Append(jen.Id("opts"), jen.Id("WithRecorder").Call(jen.Id("rec"))))
		}
		if len(m.Actions) > 0 {
			a := jen.Id("a").Op(":=").Op("&").Id("fsmgenActions").Values()
			if failing {
				a = jen.Id("a").Op(":=").Op("&").Id("fsmgenActions").Values(jen.Dict{jen.Id("fail"): jen.Id("c").Dot("fail")})
			}
			out = append(out, a)
		}
		out = append(out, jen.Id("m").Op(":=").Id("New").Call(newArgs...))
		if len(m.Histories) > 0 {
			out = append(out, jen.If(jen.Err().Op(":=").Id("m").Dot("SetHistory").Call(jen.Id("c").Dot("history")), jen.Err().Op("!=").Nil()).Block(jen.Id("t").Dot("Fatal").Call(jen.Err())))
		}
		return append(out, fire("ctx")...)
	}
	check := []jen.Code{
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Id("t").Dot("Fatalf").Call(jen.Lit("recorded %t: %v"), jen.Id("recorded"), jen.Err())),
		jen.If(jen.Id("got").Op(":=").Id("m").Dot("State").Call().Dot("String").Call(), jen.Id("got").Op("!=").Id("c").Dot("state")).Block(
			jen.Id("t").Dot("Errorf").Call(jen.Lit("recorded %t: state %s, want %s"), jen.Id("recorded"), jen.Id("got"), jen.Id("c").Dot("state")),
		),
	}
	if len(m.Actions) > 0 {
		check = append(check, jen.If(jen.Op("!").Qual("slices", "Equal").Call(jen.Id("a").Dot("ran"), jen.Id("c").Dot("actions"))).Block(
			jen.Id("t").Dot("Errorf").Call(jen.Lit("recorded %t: actions %q, want %q"), jen.Id("recorded"), jen.Id("a").Dot("ran"), jen.Id("c").Dot("actions")),
		))
	}
	if len(m.Histories) > 0 {
		check = append(check, jen.If(jen.Id("got").Op(":=").Id("m").Dot("History").Call(), jen.Op("!").Qual("maps", "Equal").Call(jen.Id("got"), jen.Id("c").Dot("after"))).Block(
			jen.Id("t").Dot("Errorf").Call(jen.Lit("recorded %t: history %v, want %v"), jen.Id("recorded"), jen.Id("got"), jen.Id("c").Dot("after")),
		))
	}
	check = append(check, jen.If(jen.Id("recorded").Op("&&").Op("!").Qual("reflect", "DeepEqual").Call(jen.Id("rec").Dot("got"), jen.Id("c").Dot("moves"))).Block(
		jen.Id("t").Dot("Errorf").Call(jen.Lit("recorded:\n%+v\nwant:\n%+v"), jen.Id("rec").Dot("got"), jen.Id("c").Dot("moves")),
	))
	body := []jen.Code{
		jen.Id("ctx").Op(":=").Qual("context", "Background").Call(),
		jen.For(jen.List(jen.Id("_"), jen.Id("recorded")).Op(":=").Range().Index().Bool().Values(jen.True(), jen.False())).Block(
			append(build(false), check...)...,
		),
	}
	if len(m.Actions) > 0 {
		failCheck := []jen.Code{
			jen.If(jen.Op("!").Qual("strings", "Contains").Call(jen.Qual("fmt", "Sprint").Call(jen.Err()), jen.Lit("action ").Op("+").Id("c").Dot("fail").Op("+").Lit(" failed"))).Block(
				jen.Id("t").Dot("Errorf").Call(jen.Lit("with %s failing: error %v"), jen.Id("c").Dot("fail"), jen.Err()),
			),
			jen.If(jen.Id("m").Dot("State").Call().Op("!=").Id("s").Op("||").Len(jen.Id("rec").Dot("got")).Op("!=").Lit(0)).Block(
				jen.Id("t").Dot("Errorf").Call(jen.Lit("with %s failing: state %s, recorded %v"), jen.Id("c").Dot("fail"), jen.Id("m").Dot("State").Call(), jen.Id("rec").Dot("got")),
			),
		}
		if len(m.Histories) > 0 {
			failCheck = append(failCheck, jen.If(jen.Id("got").Op(":=").Id("m").Dot("History").Call(), jen.Op("!").Qual("maps", "Equal").Call(jen.Id("got"), jen.Id("c").Dot("history"))).Block(
				jen.Id("t").Dot("Errorf").Call(jen.Lit("with %s failing: history %v, want %v"), jen.Id("c").Dot("fail"), jen.Id("got"), jen.Id("c").Dot("history")),
			))
		}
		body = append(body, jen.If(jen.Id("c").Dot("fail").Op("!=").Lit("")).Block(
			append(build(true), failCheck...)...,
		))
	}
	f.Comment("TestFSMNested takes every leaf move of the machine from its source leaf: a")
	f.Comment("row on a composite from each of its leaves (bubbling), a row to a history")
	f.Comment("with each record it may hold, eventless and completion rows with Settle.")
	f.Comment("It checks the moves recorded with the states they exit and enter, the")
	f.Comment("eventless moves that follow, the exit and entry actions in order, the")
	f.Comment("state and history records after, with a recorder and without; and that a")
	f.Comment("failing action leaves the machine where it was, recording nothing.")
	f.Func().Id("TestFSMNested").Params(tParam()).Block(
		jen.Id("t").Dot("Parallel").Call(),
		jen.For(jen.List(jen.Id("_"), jen.Id("c")).Op(":=").Range().Index().Struct(caseFields...).Values(lines(cases)...)).Block(
			jen.Id("t").Dot("Run").Call(jen.Id("c").Dot("name"), jen.Func().Params(tParam()).Block(body...)),
		),
	)
}
