package gen

import (
	"fmt"
	"slices"

	"github.com/fsmgen/fsmgen/dsl"
)

// handleMethods are the methods every typed handle has; an event named like
// one of them has no method of its own and is fired with Signal.
var handleMethods = []string{"Start", "Signal", "Cancel", "Get", "Wait"}

// handleCode writes the machine's typed handle on durable runs, runs.go:
// Runs[In](r) over a runtime.Runner, with Start taking the input type In,
// Signal taking the machine's Event, one method per event callers may send
// in some state (dsl.Machine.CallerEvent), Cancel when the machine names a
// cancel event, and Get and Wait returning a Snapshot whose State is typed.
func handleCode(source string, m *dsl.Machine) ([]byte, error) {
	f := newGoFile(source, m.Package)
	rtm := f.use(runtimePath)
	handleTypes(f, m)
	f.line(0, "// snapshot types the run a Runner returned, keeping err. A run of another")
	f.line(0, "// machine is an error matched by errors.Is(err, runtime.ErrOtherMachine).")
	f.linef(0, "func snapshot(run %s.Run, err error) (Snapshot, error) {", rtm)
	f.line(1, "s := Snapshot{Run: run}")
	f.line(1, `if run.ID == "" {`)
	f.line(2, "return s, err")
	f.line(1, "}")
	f.line(1, "if run.Type != Type {")
	f.line(2, "if err == nil {")
	f.linef(3, `err = %s.Errorf("%%s: run %%s is a run of %%s: %%w", Type, run.ID, run.Type, %s.ErrOtherMachine)`, f.use("fmt"), rtm)
	f.line(2, "}")
	f.line(2, "return s, err")
	f.line(1, "}")
	if parallel(m) {
		f.line(1, "c, perr := ParseConfig(run.State)")
	} else {
		f.line(1, "st, perr := ParseState(run.State)")
	}
	f.line(1, "if err == nil {")
	f.line(2, "err = perr")
	f.line(1, "}")
	if parallel(m) {
		f.line(1, "s.Config = c")
	} else {
		f.line(1, "s.State = st")
	}
	f.line(1, "return s, err")
	f.line(0, "}")
	f.line(0, "// started types the start a Runner returned, keeping err.")
	f.linef(0, "func started(res %s.Started, err error) (Started, error) {", rtm)
	f.line(1, "s, err := snapshot(res.Run, err)")
	f.list(1, "return Started", []string{"ETA: res.ETA", "Outcome: res.Outcome", "Snapshot: s"}, ", err")
	f.line(0, "}")
	handleMethodsCode(f, m)
	return f.source()
}

// handleTypes writes Handle, Runs, Snapshot and Started.
func handleTypes(f *goFile, m *dsl.Machine) {
	rtm := f.use(runtimePath)
	f.comment(0, fmt.Sprintf("Handle is the typed handle on durable runs of %s, through an engine (a runtime.Runner such as *engine.Engine): it starts runs with an input of type In, fires the machine's events on them and reads them with their state typed. Its methods take this package's events only, so an event of another machine does not compile. A Handle is a value; copy it freely.", m.Name))
	f.line(0, "type Handle[In any] struct {")
	f.line(1, "r ", rtm, ".Runner")
	f.line(0, "}")
	f.comment(0, fmt.Sprintf("Runs returns the handle on runs of %s (type Type, version Version) through r, starting runs with inputs of type In.", m.Name))
	f.linef(0, "func Runs[In any](r %s.Runner) Handle[In] {", rtm)
	f.line(1, "return Handle[In]{r: r}")
	f.line(0, "}")
	f.comment(0, fmt.Sprintf("Snapshot is a run of %s as its handle reads it: the run, with its state typed. The embedded Run.State holds the state's name.", m.Name))
	f.line(0, "type Snapshot struct {")
	f.line(1, rtm, ".Run")
	if parallel(m) {
		f.line(1, "// Config is the run's current configuration.")
		f.line(1, "Config Config")
	} else {
		f.line(1, "// State is the run's current state.")
		f.line(1, "State State")
	}
	f.line(0, "}")
	f.comment(0, fmt.Sprintf("Started is what Start did and the run of %s it did it to (see runtime.Started).", m.Name))
	f.line(0, "type Started struct {")
	f.line(1, "Snapshot")
	f.line(1, "// Outcome says which branch the start took.")
	f.line(1, "Outcome ", rtm, ".StartOutcome")
	f.line(1, "// ETA, for runtime.StartRunning, is when the run is expected to end; zero when unknown.")
	f.line(1, "ETA ", f.use("time"), ".Time")
	f.line(0, "}")
}

// handleMethodsCode writes the methods of Handle: Start, Signal, a method
// per event callers may send, Cancel, Get and Wait.
func handleMethodsCode(f *goFile, m *dsl.Machine) {
	rtm, ctx := f.use(runtimePath), f.use("context")
	f.comment(0, fmt.Sprintf("Start starts a run of %s idempotently: one run per key, whoever calls and however often, with input as its JSON input and owner as its tenant, user and correlation. Started.Outcome says which branch was taken (created, cached, running with an ETA, restarted after a failure, or cancelled).", m.Name))
	f.linef(0, "func (h Handle[In]) Start(ctx %s.Context, key string, input In, owner %s.Owner) (Started, error) {", ctx, rtm)
	f.linef(1, "return started(h.r.Start(ctx, %s.StartRequest{Type: Type, Version: Version, IdempotencyKey: key, Owner: owner, Input: input}))", rtm)
	f.line(0, "}")
	f.line(0, "// Signal fires e on the run, from any process: it is checked against the")
	f.line(0, "// run's state and guards and recorded, and the run's timers and due time are")
	f.line(0, "// those of the state it enters. A refused event is an error matched by")
	f.line(0, "// errors.Is(err, runtime.ErrIllegalTransition) or runtime.ErrGuardRejected;")
	f.line(0, "// an event that callers may not send to the run in its state (the event a")
	f.line(0, "// driven state's handler returns, a timer's) is refused with an error matched")
	f.line(0, "// by errors.Is(err, runtime.ErrNotCallerEvent).")
	handleMethod(f, "Signal", "runID string, e Event", "Signal(ctx, runID, e)")
	for _, e := range m.Events {
		if e == m.Cancel || !m.CallerEvent(e) || slices.Contains(handleMethods, e.GoName) {
			continue
		}
		states := stateNames(statesAccepting(m, e))
		f.comment(0, fmt.Sprintf("%s fires %s on the run, as Signal does; %s is accepted in %s.", e.GoName, e.Name, e.Name, states))
		handleMethod(f, e.GoName, "runID string, e "+e.GoName, "Signal(ctx, runID, e)")
	}
	if m.Cancel != nil {
		f.comment(0, fmt.Sprintf("Cancel cancels the run on behalf of userID, who must own it, by firing %s, the machine's cancel event, with its guards, from any state that has a transition on it (%s).", m.Cancel.Name, stateNames(statesAccepting(m, m.Cancel))))
		handleMethod(f, "Cancel", "runID string, userID string", "Cancel(ctx, runID, userID)")
	}
	f.line(0, "// Get reads the run.")
	handleMethod(f, "Get", "runID string", "Get(ctx, runID)")
	f.line(0, "// Wait waits until the run is terminal, or ctx is done, and returns it.")
	handleMethod(f, "Wait", "runID string", "Wait(ctx, runID)")
}

// handleMethod writes the method name of Handle, of parameters params
// after the context, that returns the Snapshot of what the call call of
// the Runner returns.
func handleMethod(f *goFile, name, params, call string) {
	f.linef(0, "func (h Handle[In]) %s(ctx %s.Context, %s) (Snapshot, error) {", name, f.use("context"), params)
	f.line(1, "return snapshot(h.r.", call, ")")
	f.line(0, "}")
}

// statesAccepting returns the states with a transition on e, in
// declaration order.
func statesAccepting(m *dsl.Machine, e *dsl.Event) []*dsl.State {
	has := map[*dsl.State]bool{}
	for _, t := range m.Transitions {
		if t.Event == e {
			// A row of a parallel state is accepted in each of its
			// leaves.
			for _, l := range t.From.Leaves() {
				has[l] = true
			}
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
