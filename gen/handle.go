package gen

import (
	"fmt"
	"slices"

	"github.com/dave/jennifer/jen"

	"github.com/fsmgen/fsmgen/dsl"
)

// handleMethods are the methods every typed handle has; an event named like
// one of them has no method of its own and is fired with Signal.
var handleMethods = []string{"Start", "Signal", "Cancel", "Get", "Wait"}

// handleCode emits the machine's typed handle on durable runs (runs.go):
// Runs[In](r) over a runtime.Runner, with Start taking the input type In,
// Signal taking the machine's Event, one method per event callers may
// send in some state (dsl.Machine.CallerEvent), Cancel when the machine names a cancel event, and Get and Wait
// returning a Snapshot whose State is typed.
func handleCode(source string, m *dsl.Machine) *jen.File {
	f := jen.NewFile(m.Package)
	headerComments(f, source)
	f.ImportName(runtimePath, "runtime")
	ctx := jen.Id("ctx").Qual("context", "Context")
	handle := jen.Id("Handle").Types(jen.Id("In"))
	recv := jen.Id("h").Add(handle)
	result := []jen.Code{jen.Id("Snapshot"), jen.Error()}

	comment(f, fmt.Sprintf("Handle is the typed handle on durable runs of %s, through an engine (a runtime.Runner such as *engine.Engine): it starts runs with an input of type In, fires the machine's events on them and reads them with their state typed. Its methods take this package's events only, so an event of another machine does not compile. A Handle is a value; copy it freely.", m.Name))
	f.Type().Id("Handle").Types(jen.Id("In").Any()).Struct(jen.Id("r").Add(rt("Runner")))

	comment(f, fmt.Sprintf("Runs returns the handle on runs of %s (type Type, version Version) through r, starting runs with inputs of type In.", m.Name))
	f.Func().Id("Runs").Types(jen.Id("In").Any()).Params(jen.Id("r").Add(rt("Runner"))).Add(handle.Clone()).Block(
		jen.Return(jen.Id("Handle").Types(jen.Id("In")).Values(jen.Dict{jen.Id("r"): jen.Id("r")})),
	)

	comment(f, fmt.Sprintf("Snapshot is a run of %s as its handle reads it: the run, with its state typed. The embedded Run.State holds the state's name.", m.Name))
	f.Type().Id("Snapshot").Struct(
		rt("Run"),
		jen.Comment("State is the run's current state."),
		jen.Id("State").Id("State"),
	)

	comment(f, fmt.Sprintf("Started is what Start did and the run of %s it did it to (see runtime.Started).", m.Name))
	f.Type().Id("Started").Struct(
		jen.Id("Snapshot"),
		jen.Comment("Outcome says which branch the start took."),
		jen.Id("Outcome").Add(rt("StartOutcome")),
		jen.Comment("ETA, for runtime.StartRunning, is when the run is expected to end; zero when unknown."),
		jen.Id("ETA").Qual("time", "Time"),
	)

	f.Comment("snapshot types the run a Runner returned, keeping err. A run of another")
	f.Comment("machine is an error matched by errors.Is(err, runtime.ErrOtherMachine).")
	f.Func().Id("snapshot").Params(jen.Id("run").Add(rt("Run")), jen.Err().Error()).Params(result...).Block(
		jen.Id("s").Op(":=").Id("Snapshot").Values(jen.Dict{jen.Id("Run"): jen.Id("run")}),
		jen.If(jen.Id("run").Dot("ID").Op("==").Lit("")).Block(jen.Return(jen.Id("s"), jen.Err())),
		jen.If(jen.Id("run").Dot("Type").Op("!=").Id("Type")).Block(
			jen.If(jen.Err().Op("==").Nil()).Block(
				jen.Err().Op("=").Qual("fmt", "Errorf").Call(jen.Lit("%s: run %s is a run of %s: %w"), jen.Id("Type"), jen.Id("run").Dot("ID"), jen.Id("run").Dot("Type"), rt("ErrOtherMachine")),
			),
			jen.Return(jen.Id("s"), jen.Err()),
		),
		jen.List(jen.Id("st"), jen.Id("perr")).Op(":=").Id("ParseState").Call(jen.Id("run").Dot("State")),
		jen.If(jen.Err().Op("==").Nil()).Block(jen.Err().Op("=").Id("perr")),
		jen.Id("s").Dot("State").Op("=").Id("st"),
		jen.Return(jen.Id("s"), jen.Err()),
	)

	f.Comment("started types the start a Runner returned, keeping err.")
	f.Func().Id("started").Params(jen.Id("res").Add(rt("Started")), jen.Err().Error()).Params(jen.Id("Started"), jen.Error()).Block(
		jen.List(jen.Id("s"), jen.Err()).Op(":=").Id("snapshot").Call(jen.Id("res").Dot("Run"), jen.Err()),
		jen.Return(jen.Id("Started").Values(jen.Dict{jen.Id("Snapshot"): jen.Id("s"), jen.Id("Outcome"): jen.Id("res").Dot("Outcome"), jen.Id("ETA"): jen.Id("res").Dot("ETA")}), jen.Err()),
	)

	comment(f, fmt.Sprintf("Start starts a run of %s idempotently: one run per key, whoever calls and however often, with input as its JSON input and owner as its tenant, user and correlation. Started.Outcome says which branch was taken (created, cached, running with an ETA, restarted after a failure, or cancelled).", m.Name))
	f.Func().Params(recv.Clone()).Id("Start").Params(ctx.Clone(), jen.Id("key").String(), jen.Id("input").Id("In"), jen.Id("owner").Add(rt("Owner"))).Params(jen.Id("Started"), jen.Error()).Block(
		jen.Return(jen.Id("started").Call(jen.Id("h").Dot("r").Dot("Start").Call(jen.Id("ctx"), rt("StartRequest").Values(
			kv("Type", jen.Id("Type")), kv("Version", jen.Id("Version")), kv("IdempotencyKey", jen.Id("key")),
			kv("Owner", jen.Id("owner")), kv("Input", jen.Id("input")),
		)))),
	)

	f.Comment("Signal fires e on the run, from any process: it is checked against the")
	f.Comment("run's state and guards and recorded, and the run's timers and due time are")
	f.Comment("those of the state it enters. A refused event is an error matched by")
	f.Comment("errors.Is(err, runtime.ErrIllegalTransition) or runtime.ErrGuardRejected;")
	f.Comment("an event that callers may not send to the run in its state (the event a")
	f.Comment("driven state's handler returns, a timer's) is refused with an error matched")
	f.Comment("by errors.Is(err, runtime.ErrNotCallerEvent).")
	f.Func().Params(recv.Clone()).Id("Signal").Params(ctx.Clone(), jen.Id("runID").String(), jen.Id("e").Id("Event")).Params(result...).Block(
		jen.Return(jen.Id("snapshot").Call(jen.Id("h").Dot("r").Dot("Signal").Call(jen.Id("ctx"), jen.Id("runID"), jen.Id("e")))),
	)

	for _, e := range m.Events {
		if e == m.Cancel || !m.CallerEvent(e) || slices.Contains(handleMethods, e.GoName) {
			continue
		}
		states := stateNames(statesAccepting(m, e))
		comment(f, fmt.Sprintf("%s fires %s on the run, as Signal does; %s is accepted in %s.", e.GoName, e.Name, e.Name, states))
		f.Func().Params(recv.Clone()).Id(e.GoName).Params(ctx.Clone(), jen.Id("runID").String(), jen.Id("e").Id(e.GoName)).Params(result...).Block(
			jen.Return(jen.Id("snapshot").Call(jen.Id("h").Dot("r").Dot("Signal").Call(jen.Id("ctx"), jen.Id("runID"), jen.Id("e")))),
		)
	}

	if m.Cancel != nil {
		comment(f, fmt.Sprintf("Cancel cancels the run on behalf of userID, who must own it, by firing %s, the machine's cancel event, with its guards, from any state that has a transition on it (%s).", m.Cancel.Name, stateNames(statesAccepting(m, m.Cancel))))
		f.Func().Params(recv.Clone()).Id("Cancel").Params(ctx.Clone(), jen.Id("runID").String(), jen.Id("userID").String()).Params(result...).Block(
			jen.Return(jen.Id("snapshot").Call(jen.Id("h").Dot("r").Dot("Cancel").Call(jen.Id("ctx"), jen.Id("runID"), jen.Id("userID")))),
		)
	}

	f.Comment("Get reads the run.")
	f.Func().Params(recv.Clone()).Id("Get").Params(ctx.Clone(), jen.Id("runID").String()).Params(result...).Block(
		jen.Return(jen.Id("snapshot").Call(jen.Id("h").Dot("r").Dot("Get").Call(jen.Id("ctx"), jen.Id("runID")))),
	)
	f.Comment("Wait waits until the run is terminal, or ctx is done, and returns it.")
	f.Func().Params(recv.Clone()).Id("Wait").Params(ctx.Clone(), jen.Id("runID").String()).Params(result...).Block(
		jen.Return(jen.Id("snapshot").Call(jen.Id("h").Dot("r").Dot("Wait").Call(jen.Id("ctx"), jen.Id("runID")))),
	)
	return f
}

// comment writes text as a doc comment wrapped at 76 columns.
func comment(f *jen.File, text string) {
	for _, l := range wrap(text, 76) {
		f.Comment(l)
	}
}

// statesAccepting returns the states with a transition on e, in
// declaration order.
func statesAccepting(m *dsl.Machine, e *dsl.Event) []*dsl.State {
	has := map[*dsl.State]bool{}
	for _, t := range m.Transitions {
		if t.Event == e {
			has[t.From] = true
		}
	}
	var out []*dsl.State
	for _, s := range m.States {
		if has[s] {
			out = append(out, s)
		}
	}
	return out
}
