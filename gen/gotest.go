package gen

import (
	"fmt"

	"github.com/dave/jennifer/jen"

	"github.com/fsmgen/fsmgen/dsl"
)

const cmpPath = "github.com/google/go-cmp/cmp"

// testCode emits the machine's generated tests. They hold the declared
// table as data and check the generated switch code against it: every
// (state, event) pair under every guard outcome, record-before-apply,
// shortest paths to every state, paths covering every row, names, payload
// decoding, views, handler dispatch and the definition.
func testCode(source string, m *dsl.Machine) *jen.File {
	f := jen.NewFile(m.Package)
	f.HeaderComment(header(source))
	f.ImportName(runtimePath, "runtime")
	f.ImportName(cmpPath, "cmp")
	t := &testGen{f: f, m: m, g: &goGen{f: f, m: m}}
	t.table()
	t.helpers()
	t.everyPair()
	t.recordFirst()
	t.terminal()
	t.paths()
	t.names()
	t.decode()
	t.views()
	t.dispatch()
	t.driver()
	t.definition()
	return f
}

type testGen struct {
	f *jen.File
	m *dsl.Machine
	g *goGen
}

func ctxBg() *jen.Statement { return jen.Qual("context", "Background").Call() }

func tParam() jen.Code { return jen.Id("t").Op("*").Qual("testing", "T") }

func (t *testGen) rowIndex(r *dsl.Transition) int {
	for i, x := range t.m.Transitions {
		if x == r {
			return i
		}
	}
	return -1
}

func (t *testGen) table() {
	f := t.f
	f.Comment("fsmgenRow is a row of the declared transition table.")
	f.Type().Id("fsmgenRow").Struct(
		jen.Id("from").Id("State"),
		jen.Id("event").String(),
		jen.Id("guard").String(),
		jen.Id("negated").Bool(),
		jen.Id("to").Id("State"),
		jen.Id("outcome").String(),
	)
	rows := make([]jen.Code, len(t.m.Transitions))
	for i, r := range t.m.Transitions {
		guard := ""
		if r.Guard != nil {
			guard = r.Guard.Name
		}
		rows[i] = jen.Values(jen.Id(stateConst(r.From)), jen.Lit(r.Event.Name), jen.Lit(guard), jen.Lit(r.Negated), jen.Id(stateConst(r.To)), jen.Lit(r.Outcome))
	}
	f.Comment(fmt.Sprintf("fsmgenTable is the table of %s as declared, in the order rows are tried.", t.m.Name))
	f.Var().Id("fsmgenTable").Op("=").Index().Id("fsmgenRow").Values(lines(rows)...)

	evs := make([]jen.Code, len(t.m.Events))
	for i, e := range t.m.Events {
		evs[i] = jen.Id(e.GoName).Values()
	}
	f.Comment("fsmgenEvents returns a value of every event.")
	f.Func().Id("fsmgenEvents").Params().Index().Id("Event").Block(jen.Return(jen.Index().Id("Event").Values(lines(evs)...)))

	f.Comment("fsmgenGuards admits the events of the guards it maps to true.")
	f.Type().Id("fsmgenGuards").Map(jen.String()).Bool()
	for _, gd := range t.m.Guards {
		f.Func().Params(jen.Id("g").Id("fsmgenGuards")).Id(gd.GoName).Params(jen.Qual("context", "Context"), guardParam(gd)).Bool().Block(
			jen.Return(jen.Id("g").Index(jen.Lit(gd.Name))),
		)
	}
}

// newMachine is the code that builds a machine with guards g and options.
func (t *testGen) newMachine(g jen.Code, opts ...jen.Code) *jen.Statement {
	if len(t.m.Guards) == 0 {
		return jen.Id("New").Call(opts...)
	}
	return jen.Id("New").Call(append([]jen.Code{g}, opts...)...)
}

func (t *testGen) helpers() {
	f := t.f
	row := jen.Id("r")
	f.Comment("fsmgenExpect computes from the declared table alone what firing event in")
	f.Comment("state s does when exactly the guards in admit admit it: the state after,")
	f.Comment("the outcome, and the sentinel error of a refusal.")
	f.Func().Id("fsmgenExpect").Params(jen.Id("s").Id("State"), jen.Id("event").String(), jen.Id("admit").Id("fsmgenGuards")).Params(jen.Id("State"), jen.String(), jen.Error()).Block(
		jen.Id("matched").Op(":=").False(),
		jen.For(jen.List(jen.Id("_"), row).Op(":=").Range().Id("fsmgenTable")).Block(
			jen.If(jen.Id("r").Dot("from").Op("!=").Id("s").Op("||").Id("r").Dot("event").Op("!=").Id("event")).Block(jen.Continue()),
			jen.Id("matched").Op("=").True(),
			jen.If(jen.Id("r").Dot("guard").Op("==").Lit("").Op("||").Id("admit").Index(jen.Id("r").Dot("guard")).Op("!=").Id("r").Dot("negated")).Block(
				jen.Return(jen.Id("r").Dot("to"), jen.Id("r").Dot("outcome"), jen.Nil()),
			),
		),
		jen.If(jen.Id("matched")).Block(jen.Return(jen.Id("s"), jen.Lit(""), jen.Qual(runtimePath, "ErrGuardRejected"))),
		jen.Return(jen.Id("s"), jen.Lit(""), jen.Qual(runtimePath, "ErrIllegalTransition")),
	)
	f.Comment("fsmgenGuardsOf returns the distinct guards of the rows from s on event.")
	f.Func().Id("fsmgenGuardsOf").Params(jen.Id("s").Id("State"), jen.Id("event").String()).Index().String().Block(
		jen.Var().Id("out").Index().String(),
		jen.Id("seen").Op(":=").Map(jen.String()).Bool().Values(),
		jen.For(jen.List(jen.Id("_"), row).Op(":=").Range().Id("fsmgenTable")).Block(
			jen.If(jen.Id("r").Dot("from").Op("==").Id("s").Op("&&").Id("r").Dot("event").Op("==").Id("event").Op("&&").Id("r").Dot("guard").Op("!=").Lit("").Op("&&").Op("!").Id("seen").Index(jen.Id("r").Dot("guard"))).Block(
				jen.Id("seen").Index(jen.Id("r").Dot("guard")).Op("=").True(),
				jen.Id("out").Op("=").Append(jen.Id("out"), jen.Id("r").Dot("guard")),
			),
		),
		jen.Return(jen.Id("out")),
	)
	f.Comment("fsmgenAdmitRow returns guard outcomes under which row i is the row that")
	f.Comment("fires: every earlier guarded row of its (state, event) refuses, row i admits.")
	f.Func().Id("fsmgenAdmitRow").Params(jen.Id("i").Int()).Id("fsmgenGuards").Block(
		jen.Id("r").Op(":=").Id("fsmgenTable").Index(jen.Id("i")),
		jen.Id("admit").Op(":=").Id("fsmgenGuards").Values(),
		jen.For(jen.List(jen.Id("_"), jen.Id("p")).Op(":=").Range().Id("fsmgenTable").Index(jen.Empty(), jen.Id("i"))).Block(
			jen.If(jen.Id("p").Dot("from").Op("==").Id("r").Dot("from").Op("&&").Id("p").Dot("event").Op("==").Id("r").Dot("event").Op("&&").Id("p").Dot("guard").Op("!=").Lit("")).Block(
				jen.Id("admit").Index(jen.Id("p").Dot("guard")).Op("=").Id("p").Dot("negated"),
			),
		),
		jen.If(jen.Id("r").Dot("guard").Op("!=").Lit("")).Block(
			jen.Id("admit").Index(jen.Id("r").Dot("guard")).Op("=").Op("!").Id("r").Dot("negated"),
		),
		jen.Return(jen.Id("admit")),
	)
	f.Comment("fsmgenEvent returns the value of the event named name.")
	f.Func().Id("fsmgenEvent").Params(tParam(), jen.Id("name").String()).Id("Event").Block(
		jen.Id("t").Dot("Helper").Call(),
		jen.For(jen.List(jen.Id("_"), jen.Id("e")).Op(":=").Range().Id("fsmgenEvents").Call()).Block(
			jen.If(jen.Id("e").Dot("EventName").Call().Op("==").Id("name")).Block(jen.Return(jen.Id("e"))),
		),
		jen.Id("t").Dot("Fatalf").Call(jen.Lit("no event %s"), jen.Id("name")),
		jen.Return(jen.Nil()),
	)
	f.Comment("fsmgenLog records transitions in memory.")
	f.Type().Id("fsmgenLog").Struct(jen.Id("got").Index().Qual(runtimePath, "Transition"))
	f.Func().Params(jen.Id("l").Op("*").Id("fsmgenLog")).Id("Record").Params(jen.Id("_").Qual("context", "Context"), jen.Id("tr").Qual(runtimePath, "Transition")).Error().Block(
		jen.Id("l").Dot("got").Op("=").Append(jen.Id("l").Dot("got"), jen.Id("tr")),
		jen.Return(jen.Nil()),
	)
	f.Comment("fsmgenCmp compares payloads whatever the visibility of their fields.")
	f.Var().Id("fsmgenCmp").Op("=").Qual(cmpPath, "Exporter").Call(jen.Func().Params(jen.Qual("reflect", "Type")).Bool().Block(jen.Return(jen.True())))
}

func (t *testGen) everyPair() {
	f := t.f
	f.Comment("TestFSMEveryStateEventAndGuardOutcome fires every event in every state under")
	f.Comment("every combination of its guards' outcomes and checks the machine against")
	f.Comment("the declared table: state after, error, and the transition recorded.")
	f.Func().Id("TestFSMEveryStateEventAndGuardOutcome").Params(tParam()).Block(
		jen.Id("t").Dot("Parallel").Call(),
		jen.For(jen.List(jen.Id("_"), jen.Id("s")).Op(":=").Range().Id("States").Call()).Block(
			jen.For(jen.List(jen.Id("_"), jen.Id("e")).Op(":=").Range().Id("fsmgenEvents").Call()).Block(
				jen.Id("guards").Op(":=").Id("fsmgenGuardsOf").Call(jen.Id("s"), jen.Id("e").Dot("EventName").Call()),
				jen.For(jen.Id("mask").Op(":=").Lit(0), jen.Id("mask").Op("<").Lit(1).Op("<<").Len(jen.Id("guards")), jen.Id("mask").Op("++")).Block(
					jen.Id("admit").Op(":=").Id("fsmgenGuards").Values(),
					jen.For(jen.List(jen.Id("i"), jen.Id("g")).Op(":=").Range().Id("guards")).Block(
						jen.Id("admit").Index(jen.Id("g")).Op("=").Id("mask").Op("&").Parens(jen.Lit(1).Op("<<").Id("i")).Op("!=").Lit(0),
					),
					jen.List(jen.Id("wantState"), jen.Id("wantOutcome"), jen.Id("wantErr")).Op(":=").Id("fsmgenExpect").Call(jen.Id("s"), jen.Id("e").Dot("EventName").Call(), jen.Id("admit")),
					jen.Id("log").Op(":=").Op("&").Id("fsmgenLog").Values(),
					jen.Id("m").Op(":=").Add(t.newMachine(jen.Id("admit"), jen.Id("WithState").Call(jen.Id("s")), jen.Id("WithRecorder").Call(jen.Id("log")))),
					jen.Id("err").Op(":=").Id("m").Dot("Fire").Call(ctxBg(), jen.Id("e")),
					jen.Id("name").Op(":=").Qual("fmt", "Sprintf").Call(jen.Lit("%s on %s with guards %v"), jen.Id("s"), jen.Id("e").Dot("EventName").Call(), jen.Id("admit")),
					jen.If(jen.Id("m").Dot("State").Call().Op("!=").Id("wantState")).Block(
						jen.Id("t").Dot("Errorf").Call(jen.Lit("%s: state %s, want %s"), jen.Id("name"), jen.Id("m").Dot("State").Call(), jen.Id("wantState")),
					),
					jen.If(jen.Id("wantErr").Op("!=").Nil()).Block(
						jen.Var().Id("te").Op("*").Qual(runtimePath, "TransitionError"),
						jen.If(jen.Op("!").Qual("errors", "Is").Call(jen.Id("err"), jen.Id("wantErr")).Op("||").Op("!").Qual("errors", "As").Call(jen.Id("err"), jen.Op("&").Id("te"))).Block(
							jen.Id("t").Dot("Errorf").Call(jen.Lit("%s: error %v, want a *runtime.TransitionError matching %v"), jen.Id("name"), jen.Id("err"), jen.Id("wantErr")),
						).Else().If(jen.Id("te").Dot("State").Op("!=").Id("s").Dot("String").Call().Op("||").Id("te").Dot("Event").Op("!=").Id("e").Dot("EventName").Call().Op("||").Id("te").Dot("Machine").Op("!=").Id("Type")).Block(
							jen.Id("t").Dot("Errorf").Call(jen.Lit("%s: error names %s/%s/%s"), jen.Id("name"), jen.Id("te").Dot("Machine"), jen.Id("te").Dot("State"), jen.Id("te").Dot("Event")),
						),
						jen.If(jen.Len(jen.Id("log").Dot("got")).Op("!=").Lit(0)).Block(
							jen.Id("t").Dot("Errorf").Call(jen.Lit("%s: refused event recorded %v"), jen.Id("name"), jen.Id("log").Dot("got")),
						),
						jen.Continue(),
					),
					jen.If(jen.Id("err").Op("!=").Nil()).Block(
						jen.Id("t").Dot("Errorf").Call(jen.Lit("%s: %v"), jen.Id("name"), jen.Id("err")),
						jen.Continue(),
					),
					jen.Id("want").Op(":=").Index().Qual(runtimePath, "Transition").Values(jen.Values(jen.Dict{
						jen.Id("Machine"): jen.Id("Type"),
						jen.Id("Version"): jen.Id("Version"),
						jen.Id("From"):    jen.Id("s").Dot("String").Call(),
						jen.Id("To"):      jen.Id("wantState").Dot("String").Call(),
						jen.Id("Event"):   jen.Id("e").Dot("EventName").Call(),
						jen.Id("Payload"): jen.Id("e"),
						jen.Id("Status"):  jen.Id("wantState").Dot("Status").Call(),
						jen.Id("Outcome"): jen.Id("wantOutcome"),
					})),
					jen.If(jen.Id("diff").Op(":=").Qual(cmpPath, "Diff").Call(jen.Id("want"), jen.Id("log").Dot("got"), jen.Id("fsmgenCmp")), jen.Id("diff").Op("!=").Lit("")).Block(
						jen.Id("t").Dot("Errorf").Call(jen.Lit("%s: recorded (-want +got):\n%s"), jen.Id("name"), jen.Id("diff")),
					),
				),
			),
		),
	)
}

func (t *testGen) recordFirst() {
	f := t.f
	f.Comment("TestFSMRecordsBeforeApplying checks, for every row, that a transition whose")
	f.Comment("recording fails is not applied and that the recorder's error comes back.")
	f.Func().Id("TestFSMRecordsBeforeApplying").Params(tParam()).Block(
		jen.Id("t").Dot("Parallel").Call(),
		jen.Id("boom").Op(":=").Qual("errors", "New").Call(jen.Lit("storage unavailable")),
		jen.Id("failing").Op(":=").Qual(runtimePath, "RecorderFunc").Call(jen.Func().Params(jen.Qual("context", "Context"), jen.Qual(runtimePath, "Transition")).Error().Block(jen.Return(jen.Id("boom")))),
		jen.For(jen.List(jen.Id("i"), jen.Id("r")).Op(":=").Range().Id("fsmgenTable")).Block(
			jen.Id("m").Op(":=").Add(t.newMachine(jen.Id("fsmgenAdmitRow").Call(jen.Id("i")), jen.Id("WithState").Call(jen.Id("r").Dot("from")), jen.Id("WithRecorder").Call(jen.Id("failing")))),
			jen.If(jen.Id("err").Op(":=").Id("m").Dot("Fire").Call(ctxBg(), jen.Id("fsmgenEvent").Call(jen.Id("t"), jen.Id("r").Dot("event"))), jen.Op("!").Qual("errors", "Is").Call(jen.Id("err"), jen.Id("boom"))).Block(
				jen.Id("t").Dot("Errorf").Call(jen.Lit("row %d (%s on %s): error %v, want the recorder's"), jen.Id("i"), jen.Id("r").Dot("from"), jen.Id("r").Dot("event"), jen.Id("err")),
			),
			jen.If(jen.Id("m").Dot("State").Call().Op("!=").Id("r").Dot("from")).Block(
				jen.Id("t").Dot("Errorf").Call(jen.Lit("row %d: state moved to %s although recording failed"), jen.Id("i"), jen.Id("m").Dot("State").Call()),
			),
		),
	)
}

func (t *testGen) terminal() {
	f := t.f
	f.Comment("TestFSMTerminalStatesRejectEveryEvent checks that no event leaves a final state.")
	f.Func().Id("TestFSMTerminalStatesRejectEveryEvent").Params(tParam()).Block(
		jen.Id("t").Dot("Parallel").Call(),
		jen.Id("finals").Op(":=").Lit(0),
		jen.For(jen.List(jen.Id("_"), jen.Id("s")).Op(":=").Range().Id("States").Call()).Block(
			jen.If(jen.Op("!").Id("s").Dot("Terminal").Call()).Block(jen.Continue()),
			jen.Id("finals").Op("++"),
			jen.If(jen.Id("s").Dot("Status").Call().Op("==").Qual(runtimePath, "StatusRunning")).Block(
				jen.Id("t").Dot("Errorf").Call(jen.Lit("final state %s has status running"), jen.Id("s")),
			),
			jen.For(jen.List(jen.Id("_"), jen.Id("e")).Op(":=").Range().Id("fsmgenEvents").Call()).Block(
				jen.Id("m").Op(":=").Add(t.newMachine(jen.Id("fsmgenGuards").Values(), jen.Id("WithState").Call(jen.Id("s")))),
				jen.If(jen.Id("err").Op(":=").Id("m").Dot("Fire").Call(ctxBg(), jen.Id("e")), jen.Op("!").Qual("errors", "Is").Call(jen.Id("err"), jen.Qual(runtimePath, "ErrIllegalTransition"))).Block(
					jen.Id("t").Dot("Errorf").Call(jen.Lit("%s on %s: error %v, want ErrIllegalTransition"), jen.Id("s"), jen.Id("e").Dot("EventName").Call(), jen.Id("err")),
				),
				jen.If(jen.Id("m").Dot("State").Call().Op("!=").Id("s")).Block(
					jen.Id("t").Dot("Errorf").Call(jen.Lit("%s on %s: left the final state for %s"), jen.Id("s"), jen.Id("e").Dot("EventName").Call(), jen.Id("m").Dot("State").Call()),
				),
			),
		),
		jen.If(jen.Id("finals").Op("==").Lit(0)).Block(jen.Id("t").Dot("Error").Call(jen.Lit("no final state"))),
	)
}

// shortestPaths returns, for every state reachable from the initial one,
// the rows of a shortest path to it (breadth first, rows in table order).
func shortestPaths(m *dsl.Machine) map[*dsl.State][]*dsl.Transition {
	paths := map[*dsl.State][]*dsl.Transition{m.Initial: nil}
	queue := []*dsl.State{m.Initial}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		for _, r := range m.Transitions {
			if r.From != s {
				continue
			}
			if _, seen := paths[r.To]; seen {
				continue
			}
			p := append(append([]*dsl.Transition(nil), paths[s]...), r)
			paths[r.To] = p
			queue = append(queue, r.To)
		}
	}
	return paths
}

func (t *testGen) paths() {
	f := t.f
	sp := shortestPaths(t.m)
	rowsLit := func(rows []*dsl.Transition) jen.Code {
		idx := make([]jen.Code, len(rows))
		for i, r := range rows {
			idx[i] = jen.Lit(t.rowIndex(r))
		}
		return jen.Index().Int().Values(idx...)
	}
	var shortest []jen.Code
	for _, s := range t.m.States {
		shortest = append(shortest, jen.Values(jen.Id(stateConst(s)), rowsLit(sp[s])))
	}
	// Paths covering every row: for each row not yet covered, a shortest path
	// to its source followed by the row itself.
	covered := map[*dsl.Transition]bool{}
	var cover []jen.Code
	for _, r := range t.m.Transitions {
		if covered[r] {
			continue
		}
		p := append(append([]*dsl.Transition(nil), sp[r.From]...), r)
		for _, x := range p {
			covered[x] = true
		}
		cover = append(cover, rowsLit(p))
	}
	f.Comment("fsmgenShortest holds a shortest path of rows from the initial state to every state.")
	f.Var().Id("fsmgenShortest").Op("=").Index().Struct(jen.Id("target").Id("State"), jen.Id("rows").Index().Int()).Values(lines(shortest)...)
	f.Comment("fsmgenCover holds paths of rows from the initial state that together take every row.")
	f.Var().Id("fsmgenCover").Op("=").Index().Index().Int().Values(lines(cover)...)

	f.Comment("fsmgenReplay fires the rows of a path from the initial state and checks")
	f.Comment("that each moves the machine where the table says.")
	f.Func().Id("fsmgenReplay").Params(tParam(), jen.Id("rows").Index().Int()).Id("State").Block(
		jen.Id("t").Dot("Helper").Call(),
		jen.Id("admit").Op(":=").Id("fsmgenGuards").Values(),
		jen.Id("m").Op(":=").Add(t.newMachine(jen.Id("admit"))),
		jen.For(jen.List(jen.Id("_"), jen.Id("i")).Op(":=").Range().Id("rows")).Block(
			jen.Id("r").Op(":=").Id("fsmgenTable").Index(jen.Id("i")),
			jen.Qual("maps", "Copy").Call(jen.Id("admit"), jen.Id("fsmgenAdmitRow").Call(jen.Id("i"))),
			jen.For(jen.Id("g").Op(":=").Range().Id("admit")).Block(
				jen.If(jen.List(jen.Id("_"), jen.Id("ok")).Op(":=").Id("fsmgenAdmitRow").Call(jen.Id("i")).Index(jen.Id("g")), jen.Op("!").Id("ok")).Block(
					jen.Id("admit").Index(jen.Id("g")).Op("=").False(),
				),
			),
			jen.If(jen.Id("m").Dot("State").Call().Op("!=").Id("r").Dot("from")).Block(
				jen.Id("t").Dot("Fatalf").Call(jen.Lit("row %d starts in %s but the machine is in %s"), jen.Id("i"), jen.Id("r").Dot("from"), jen.Id("m").Dot("State").Call()),
			),
			jen.If(jen.Id("err").Op(":=").Id("m").Dot("Fire").Call(ctxBg(), jen.Id("fsmgenEvent").Call(jen.Id("t"), jen.Id("r").Dot("event"))), jen.Id("err").Op("!=").Nil()).Block(
				jen.Id("t").Dot("Fatalf").Call(jen.Lit("row %d: %v"), jen.Id("i"), jen.Id("err")),
			),
			jen.If(jen.Id("m").Dot("State").Call().Op("!=").Id("r").Dot("to")).Block(
				jen.Id("t").Dot("Fatalf").Call(jen.Lit("row %d: state %s, want %s"), jen.Id("i"), jen.Id("m").Dot("State").Call(), jen.Id("r").Dot("to")),
			),
		),
		jen.Return(jen.Id("m").Dot("State").Call()),
	)
	f.Comment("TestFSMShortestPathToEveryState replays a shortest path to every state.")
	f.Func().Id("TestFSMShortestPathToEveryState").Params(tParam()).Block(
		jen.Id("t").Dot("Parallel").Call(),
		jen.If(jen.Len(jen.Id("fsmgenShortest")).Op("!=").Len(jen.Id("States").Call())).Block(
			jen.Id("t").Dot("Fatalf").Call(jen.Lit("%d paths for %d states"), jen.Len(jen.Id("fsmgenShortest")), jen.Len(jen.Id("States").Call())),
		),
		jen.For(jen.List(jen.Id("_"), jen.Id("p")).Op(":=").Range().Id("fsmgenShortest")).Block(
			jen.If(jen.Id("got").Op(":=").Id("fsmgenReplay").Call(jen.Id("t"), jen.Id("p").Dot("rows")), jen.Id("got").Op("!=").Id("p").Dot("target")).Block(
				jen.Id("t").Dot("Errorf").Call(jen.Lit("path to %s ends in %s"), jen.Id("p").Dot("target"), jen.Id("got")),
			),
		),
	)
	f.Comment("TestFSMPathsCoverEveryTransition replays paths that take every row.")
	f.Func().Id("TestFSMPathsCoverEveryTransition").Params(tParam()).Block(
		jen.Id("t").Dot("Parallel").Call(),
		jen.Id("taken").Op(":=").Make(jen.Index().Bool(), jen.Len(jen.Id("fsmgenTable"))),
		jen.For(jen.List(jen.Id("_"), jen.Id("p")).Op(":=").Range().Id("fsmgenCover")).Block(
			jen.Id("fsmgenReplay").Call(jen.Id("t"), jen.Id("p")),
			jen.For(jen.List(jen.Id("_"), jen.Id("i")).Op(":=").Range().Id("p")).Block(jen.Id("taken").Index(jen.Id("i")).Op("=").True()),
		),
		jen.For(jen.List(jen.Id("i"), jen.Id("ok")).Op(":=").Range().Id("taken")).Block(
			jen.If(jen.Op("!").Id("ok")).Block(jen.Id("t").Dot("Errorf").Call(jen.Lit("row %d (%v) is on no path"), jen.Id("i"), jen.Id("fsmgenTable").Index(jen.Id("i")))),
		),
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
		jen.If(jen.Id("got").Op(":=").Id("State").Call(jen.Lit(255)).Dot("String").Call(), jen.Id("got").Op("!=").Lit("State(255)")).Block(
			jen.Id("t").Dot("Errorf").Call(jen.Lit("String of an invalid state = %q"), jen.Id("got")),
		),
	)
}

func (t *testGen) decode() {
	f := t.f
	f.Comment("TestFSMDecodeEvent checks that every event survives a JSON round trip and")
	f.Comment("that bad payloads and names are errors.")
	f.Func().Id("TestFSMDecodeEvent").Params(tParam()).Block(
		jen.Id("t").Dot("Parallel").Call(),
		jen.For(jen.List(jen.Id("_"), jen.Id("e")).Op(":=").Range().Id("fsmgenEvents").Call()).Block(
			jen.List(jen.Id("payload"), jen.Id("err")).Op(":=").Qual("encoding/json", "Marshal").Call(jen.Id("e")),
			jen.If(jen.Id("err").Op("!=").Nil()).Block(jen.Id("t").Dot("Fatal").Call(jen.Id("err"))),
			jen.List(jen.Id("got"), jen.Id("err")).Op(":=").Id("DecodeEvent").Call(jen.Id("e").Dot("EventName").Call(), jen.Id("payload")),
			jen.If(jen.Id("err").Op("!=").Nil()).Block(jen.Id("t").Dot("Fatalf").Call(jen.Lit("DecodeEvent(%s): %v"), jen.Id("e").Dot("EventName").Call(), jen.Id("err"))),
			jen.If(jen.Qual("reflect", "TypeOf").Call(jen.Id("got")).Op("!=").Qual("reflect", "TypeOf").Call(jen.Id("e"))).Block(
				jen.Id("t").Dot("Fatalf").Call(jen.Lit("DecodeEvent(%s) gave a %T"), jen.Id("e").Dot("EventName").Call(), jen.Id("got")),
			),
			jen.List(jen.Id("again"), jen.Id("err")).Op(":=").Qual("encoding/json", "Marshal").Call(jen.Id("got")),
			jen.If(jen.Id("err").Op("!=").Nil()).Block(jen.Id("t").Dot("Fatal").Call(jen.Id("err"))),
			jen.If(jen.Id("diff").Op(":=").Qual(cmpPath, "Diff").Call(jen.String().Parens(jen.Id("payload")), jen.String().Parens(jen.Id("again"))), jen.Id("diff").Op("!=").Lit("")).Block(
				jen.Id("t").Dot("Errorf").Call(jen.Lit("DecodeEvent(%s) does not give back the payload (-want +got):\n%s"), jen.Id("e").Dot("EventName").Call(), jen.Id("diff")),
			),
			jen.If(jen.List(jen.Id("_"), jen.Id("err")).Op(":=").Id("DecodeEvent").Call(jen.Id("e").Dot("EventName").Call(), jen.Index().Byte().Parens(jen.Lit(`{"fsmgenNoSuchField":1}`))), jen.Id("err").Op("==").Nil()).Block(
				jen.Id("t").Dot("Errorf").Call(jen.Lit("DecodeEvent(%s) accepted an unknown field"), jen.Id("e").Dot("EventName").Call()),
			),
		),
		jen.If(jen.List(jen.Id("_"), jen.Id("err")).Op(":=").Id("DecodeEvent").Call(jen.Lit("NoSuchEvent"), jen.Nil()), jen.Op("!").Qual("errors", "Is").Call(jen.Id("err"), jen.Qual(runtimePath, "ErrUnknownEvent"))).Block(
			jen.Id("t").Dot("Errorf").Call(jen.Lit("DecodeEvent of an unknown name: %v, want ErrUnknownEvent"), jen.Id("err")),
		),
	)
}

func (t *testGen) views() {
	f := t.f
	checks := make([]jen.Code, 0, len(t.m.States))
	for _, s := range t.m.States {
		checks = append(checks, jen.Id(stateConst(s)).Op(":").Func().Params(jen.Id("m").Op("*").Id("Machine")).Bool().Block(
			jen.List(jen.Id("_"), jen.Id("ok")).Op(":=").Id("m").Dot(viewType(s)).Call(),
			jen.Return(jen.Id("ok")),
		))
	}
	f.Comment("TestFSMViews checks that View and the InX accessors agree with the state.")
	f.Func().Id("TestFSMViews").Params(tParam()).Block(
		jen.Id("t").Dot("Parallel").Call(),
		jen.Id("in").Op(":=").Map(jen.Id("State")).Func().Params(jen.Op("*").Id("Machine")).Bool().Values(lines(checks)...),
		jen.For(jen.List(jen.Id("_"), jen.Id("s")).Op(":=").Range().Id("States").Call()).Block(
			jen.Id("m").Op(":=").Add(t.newMachine(jen.Id("fsmgenGuards").Values(), jen.Id("WithState").Call(jen.Id("s")))),
			jen.If(jen.Id("got").Op(":=").Id("m").Dot("View").Call().Dot("State").Call(), jen.Id("got").Op("!=").Id("s")).Block(
				jen.Id("t").Dot("Errorf").Call(jen.Lit("View in %s stands for %s"), jen.Id("s"), jen.Id("got")),
			),
			jen.For(jen.List(jen.Id("v"), jen.Id("check")).Op(":=").Range().Id("in")).Block(
				jen.If(jen.Id("check").Call(jen.Id("m")).Op("!=").Parens(jen.Id("v").Op("==").Id("s"))).Block(
					jen.Id("t").Dot("Errorf").Call(jen.Lit("in state %s, the accessor of %s says %v"), jen.Id("s"), jen.Id("v"), jen.Id("check").Call(jen.Id("m"))),
				),
			),
		),
	)
}

func (t *testGen) dispatch() {
	f := t.f
	f.Comment("fsmgenHandlers returns, in every driven state, the first event the state accepts.")
	f.Type().Id("fsmgenHandlers").Struct()
	want := []jen.Code{}
	for _, s := range t.m.States {
		if !s.Driven() {
			continue
		}
		e := t.g.eventsOf(s)[0]
		f.Func().Params(jen.Id("fsmgenHandlers")).Id(s.GoName).Params(jen.Qual("context", "Context"), jen.Op("*").Qual(runtimePath, "Run")).Params(jen.Id(eventSet(s)), jen.Error()).Block(
			jen.Return(jen.Id(e.GoName).Values(), jen.Nil()),
		)
		want = append(want, jen.Id(stateConst(s)).Op(":").Lit(e.Name))
	}
	f.Comment("TestFSMDispatch checks that Dispatch calls the handler of each driven state")
	f.Comment("and refuses the others.")
	f.Func().Id("TestFSMDispatch").Params(tParam()).Block(
		jen.Id("t").Dot("Parallel").Call(),
		jen.Id("want").Op(":=").Map(jen.Id("State")).String().Values(lines(want)...),
		jen.For(jen.List(jen.Id("_"), jen.Id("s")).Op(":=").Range().Id("States").Call()).Block(
			jen.List(jen.Id("e"), jen.Id("err")).Op(":=").Id("Dispatch").Call(ctxBg(), jen.Id("fsmgenHandlers").Values(), jen.Id("s"), jen.Op("&").Qual(runtimePath, "Run").Values()),
			jen.List(jen.Id("name"), jen.Id("driven")).Op(":=").Id("want").Index(jen.Id("s")),
			jen.Switch().Block(
				jen.Case(jen.Id("driven").Op("&&").Parens(jen.Id("err").Op("!=").Nil().Op("||").Id("e").Op("==").Nil().Op("||").Id("e").Dot("EventName").Call().Op("!=").Id("name"))).Block(
					jen.Id("t").Dot("Errorf").Call(jen.Lit("Dispatch in %s = %v, %v; want %s"), jen.Id("s"), jen.Id("e"), jen.Id("err"), jen.Id("name")),
				),
				jen.Case(jen.Op("!").Id("driven").Op("&&").Op("!").Qual("errors", "Is").Call(jen.Id("err"), jen.Qual(runtimePath, "ErrNotDriven"))).Block(
					jen.Id("t").Dot("Errorf").Call(jen.Lit("Dispatch in %s: error %v, want ErrNotDriven"), jen.Id("s"), jen.Id("err")),
				),
			),
		),
	)
}

func (t *testGen) driver() {
	f := t.f
	args := []jen.Code{jen.Id("fsmgenHandlers").Values()}
	if len(t.m.Guards) > 0 {
		args = append(args, jen.Func().Params(jen.Op("*").Qual(runtimePath, "Run")).Id("Guards").Block(jen.Return(jen.Id("admit"))))
	}
	f.Comment("TestFSMDriver fires every row through the runtime.Driver, by state name and")
	f.Comment("decoded event, as the engine does.")
	f.Func().Id("TestFSMDriver").Params(tParam()).Block(
		jen.Id("t").Dot("Parallel").Call(),
		jen.For(jen.List(jen.Id("i"), jen.Id("r")).Op(":=").Range().Id("fsmgenTable")).Block(
			t.admitRow(),
			jen.Id("d").Op(":=").Id("NewDriver").Call(args...),
			jen.List(jen.Id("e"), jen.Id("err")).Op(":=").Id("d").Dot("Decode").Call(jen.Id("r").Dot("event"), jen.Nil()),
			jen.If(jen.Id("err").Op("!=").Nil()).Block(jen.Id("t").Dot("Fatal").Call(jen.Id("err"))),
			jen.Id("log").Op(":=").Op("&").Id("fsmgenLog").Values(),
			jen.If(jen.Id("err").Op(":=").Id("d").Dot("Fire").Call(ctxBg(), jen.Op("&").Qual(runtimePath, "Run").Values(), jen.Id("r").Dot("from").Dot("String").Call(), jen.Id("e"), jen.Id("log")), jen.Id("err").Op("!=").Nil()).Block(
				jen.Id("t").Dot("Fatalf").Call(jen.Lit("row %d: %v"), jen.Id("i"), jen.Id("err")),
			),
			jen.If(jen.Len(jen.Id("log").Dot("got")).Op("!=").Lit(1).Op("||").Id("log").Dot("got").Index(jen.Lit(0)).Dot("To").Op("!=").Id("r").Dot("to").Dot("String").Call()).Block(
				jen.Id("t").Dot("Errorf").Call(jen.Lit("row %d: recorded %+v, want a move to %s"), jen.Id("i"), jen.Id("log").Dot("got"), jen.Id("r").Dot("to")),
			),
		),
		jen.Id("d").Op(":=").Id("NewDriver").Call(t.driverArgs()...),
		jen.If(jen.Id("d").Dot("Definition").Call().Dot("Type").Op("!=").Id("Type")).Block(
			jen.Id("t").Dot("Errorf").Call(jen.Lit("driver's definition is of type %q"), jen.Id("d").Dot("Definition").Call().Dot("Type")),
		),
		jen.If(jen.List(jen.Id("_"), jen.Id("err")).Op(":=").Id("d").Dot("Handle").Call(ctxBg(), jen.Op("&").Qual(runtimePath, "Run").Values(), jen.Lit("NO_SUCH_STATE")), jen.Op("!").Qual("errors", "Is").Call(jen.Id("err"), jen.Qual(runtimePath, "ErrUnknownState"))).Block(
			jen.Id("t").Dot("Errorf").Call(jen.Lit("Handle in an unknown state: %v, want ErrUnknownState"), jen.Id("err")),
		),
		jen.For(jen.List(jen.Id("_"), jen.Id("s")).Op(":=").Range().Id("States").Call()).Block(
			jen.List(jen.Id("e"), jen.Id("err")).Op(":=").Id("d").Dot("Handle").Call(ctxBg(), jen.Op("&").Qual(runtimePath, "Run").Values(), jen.Id("s").Dot("String").Call()),
			jen.List(jen.Id("want"), jen.Id("werr")).Op(":=").Id("Dispatch").Call(ctxBg(), jen.Id("fsmgenHandlers").Values(), jen.Id("s"), jen.Op("&").Qual(runtimePath, "Run").Values()),
			jen.If(jen.Parens(jen.Id("e").Op("==").Nil()).Op("!=").Parens(jen.Id("want").Op("==").Nil()).Op("||").Parens(jen.Id("err").Op("==").Nil()).Op("!=").Parens(jen.Id("werr").Op("==").Nil())).Block(
				jen.Id("t").Dot("Errorf").Call(jen.Lit("Handle in %s = %v, %v; Dispatch = %v, %v"), jen.Id("s"), jen.Id("e"), jen.Id("err"), jen.Id("want"), jen.Id("werr")),
			),
		),
	)
}

// admitRow declares admit, the guard outcomes that make row i fire, when
// the machine has guards.
func (t *testGen) admitRow() jen.Code {
	if len(t.m.Guards) == 0 {
		return jen.Null()
	}
	return jen.Id("admit").Op(":=").Id("fsmgenAdmitRow").Call(jen.Id("i"))
}

// driverArgs are NewDriver's arguments in the tests: handlers, and guards
// that admit nothing when the machine has guards.
func (t *testGen) driverArgs() []jen.Code {
	args := []jen.Code{jen.Id("fsmgenHandlers").Values()}
	if len(t.m.Guards) > 0 {
		args = append(args, jen.Func().Params(jen.Op("*").Qual(runtimePath, "Run")).Id("Guards").Block(jen.Return(jen.Id("fsmgenGuards").Values())))
	}
	return args
}

func (t *testGen) definition() {
	f := t.f
	f.Comment("TestFSMDefinition checks the definition against the declared table.")
	f.Func().Id("TestFSMDefinition").Params(tParam()).Block(
		jen.Id("t").Dot("Parallel").Call(),
		jen.Id("def").Op(":=").Id("Definition").Call(),
		jen.If(jen.Id("err").Op(":=").Id("def").Dot("Validate").Call(), jen.Id("err").Op("!=").Nil()).Block(jen.Id("t").Dot("Fatal").Call(jen.Id("err"))),
		jen.Var().Id("want").Index().Qual(runtimePath, "TransitionSpec"),
		jen.For(jen.List(jen.Id("_"), jen.Id("r")).Op(":=").Range().Id("fsmgenTable")).Block(
			jen.Id("want").Op("=").Append(jen.Id("want"), jen.Qual(runtimePath, "TransitionSpec").Values(jen.Dict{
				jen.Id("From"):    jen.Id("r").Dot("from").Dot("String").Call(),
				jen.Id("To"):      jen.Id("r").Dot("to").Dot("String").Call(),
				jen.Id("Event"):   jen.Id("r").Dot("event"),
				jen.Id("Guard"):   jen.Id("r").Dot("guard"),
				jen.Id("Negated"): jen.Id("r").Dot("negated"),
				jen.Id("Outcome"): jen.Id("r").Dot("outcome"),
			})),
		),
		jen.If(jen.Id("diff").Op(":=").Qual(cmpPath, "Diff").Call(jen.Id("want"), jen.Id("def").Dot("Transitions")), jen.Id("diff").Op("!=").Lit("")).Block(
			jen.Id("t").Dot("Errorf").Call(jen.Lit("Definition().Transitions (-want +got):\n%s"), jen.Id("diff")),
		),
		jen.For(jen.List(jen.Id("_"), jen.Id("s")).Op(":=").Range().Id("States").Call()).Block(
			jen.List(jen.Id("spec"), jen.Id("ok")).Op(":=").Id("def").Dot("State").Call(jen.Id("s").Dot("String").Call()),
			jen.If(jen.Op("!").Id("ok").Op("||").Id("spec").Dot("Status").Op("!=").Id("s").Dot("Status").Call().Op("||").Id("spec").Dot("Outcome").Op("!=").Id("s").Dot("Outcome").Call()).Block(
				jen.Id("t").Dot("Errorf").Call(jen.Lit("state %s: definition %+v disagrees with the generated code"), jen.Id("s"), jen.Id("spec")),
			),
		),
	)
}
