package fsmtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/fsmgen/fsmgen/runtime"
)

// TracesEnv is the environment variable that, when it names a directory,
// makes Run write the machine's traces there as TYPE.traces.json (see
// Traces). fsmgen's export tests set it to replay the generated machines'
// behaviour through XState and an SCXML interpreter.
const TracesEnv = "FSMGEN_TRACES"

// TraceFile is what a machine did on every trace: what Traces returns and
// Run writes when TracesEnv is set.
type TraceFile struct {
	Machine string `json:"machine"`
	Type    string `json:"type"`
	Version int    `json:"version"`
	// Final names the machine's final states.
	Final  []string `json:"final"`
	Traces []Trace  `json:"traces"`
}

// Trace is a sequence of events fired at one machine from its initial
// state.
type Trace struct {
	Name  string `json:"name"`
	Steps []Step `json:"steps"`
}

// Step is one event of a trace and what the machine did with it.
type Step struct {
	Event string `json:"event"`
	// TimerMS is set when the event is fired by a timer of the active
	// states (the one due first; among timers due at the same instant,
	// that of the state entered first, outermost first, and for one state
	// the first declared), as the runtime does that many milliseconds
	// after the previous step; otherwise a caller fires it.
	TimerMS int64 `json:"timerMs,omitempty"`
	// Guards are the outcomes of the guards the event's rows ask; a guard
	// not listed refuses.
	Guards map[string]bool `json:"guards"`
	// State is the machine's state after the event.
	State string `json:"state"`
	// Refused is "" when the event fired a transition, "illegal" when no
	// row of the state takes it, "guard" when its rows' guards all refused.
	Refused string `json:"refused,omitempty"`
}

// Traces fires event sequences at m's real machine, built with m.New and
// with guard outcomes changed between events through the map New was
// given, and records the state after each: for every state, every event
// and every combination of the outcomes of that event's guards there, a
// shortest path to the state followed by the event; and for every state
// with a timer, the same with its earliest timer firing. Every row of the
// table and every refusal is taken. What the machine did is recorded, not
// checked: Run's other checks compare it with the table.
func Traces(m Machine) (TraceFile, error) {
	d := m.Definition
	out := TraceFile{Machine: d.Machine, Type: d.Type, Version: d.Version, Final: []string{}}
	for _, s := range d.States {
		if s.Terminal() {
			out.Final = append(out.Final, s.Name)
		}
	}
	paths := shortestPaths(d)
	for _, s := range d.States {
		prefix, ok := paths[s.Name]
		if !ok {
			continue
		}
		tl := newTimeline(d)
		for _, i := range prefix {
			tl.take(i)
		}
		if tl.state != s.Name {
			// The initial state's eventless rows leave it at start: no
			// run is ever in it.
			continue
		}
		probe := func(name, ev string, timerMS int64) error {
			guards := guardsOf(d, s.Name, ev)
			for mask := 0; mask < 1<<len(guards); mask++ {
				admit := map[string]bool{}
				for i, g := range guards {
					admit[g] = mask&(1<<i) != 0
				}
				tr, err := trace(m, prefix, ev, timerMS, admit)
				if err != nil {
					return fmt.Errorf("%s: %w", name, err)
				}
				tr.Name = fmt.Sprintf("%s %s", s.Name, name)
				if len(guards) > 0 {
					tr.Name += fmt.Sprintf(" %v", admit)
				}
				out.Traces = append(out.Traces, tr)
			}
			return nil
		}
		for _, e := range m.Events {
			if err := probe("on "+e.EventName(), e.EventName(), 0); err != nil {
				return TraceFile{}, err
			}
		}
		if tm, ms, ok := tl.due(); ok {
			if err := probe(fmt.Sprintf("after %dms (%s)", ms, tm.Event), tm.Event, ms); err != nil {
				return TraceFile{}, err
			}
		}
	}
	return out, nil
}

// trace replays the rows of prefix, each under outcomes that make it the
// row that fires, then fires ev under admit.
func trace(m Machine, prefix []int, ev string, timerMS int64, last map[string]bool) (Trace, error) {
	d := m.Definition
	admit := map[string]bool{}
	inst, err := m.New(d.Initial, admit, nil)
	if err != nil {
		return Trace{}, err
	}
	if st, ok := inst.(Settler); ok {
		// An interpreter takes the initial state's eventless rows at
		// start, under no guard admitting.
		if err := st.Settle(context.Background()); err != nil {
			return Trace{}, fmt.Errorf("settle: %w", err)
		}
	}
	tl := newTimeline(d)
	var tr Trace
	fire := func(name string, timer int64, outcomes map[string]bool) error {
		clear(admit)
		for g, v := range outcomes {
			admit[g] = v
		}
		e, err := event(m, name)
		if err != nil {
			return err
		}
		step := Step{Event: name, TimerMS: timer, Guards: map[string]bool{}, State: ""}
		for g, v := range outcomes {
			step.Guards[g] = v
		}
		err = inst.Fire(context.Background(), e)
		switch {
		case err == nil:
		case errors.Is(err, runtime.ErrGuardRejected):
			step.Refused = "guard"
		case errors.Is(err, runtime.ErrIllegalTransition):
			step.Refused = "illegal"
		default:
			return fmt.Errorf("%s: %w", name, err)
		}
		step.State = inst.State()
		tr.Steps = append(tr.Steps, step)
		return nil
	}
	for _, i := range prefix {
		r := d.Transitions[i]
		if r.Event == "" {
			// An eventless row of the path: the machine settles, as an
			// interpreter does by itself; no event, no step.
			if inst.State() != r.From {
				// Taken when the machine settled at start.
				continue
			}
			tl.take(i)
			clear(admit)
			for g, v := range admitRow(d, i) {
				admit[g] = v
			}
			if err := take(m, inst, r); err != nil {
				return Trace{}, err
			}
			continue
		}
		timer := tl.take(i)
		if err := fire(r.Event, timer, admitRow(d, i)); err != nil {
			return Trace{}, err
		}
	}
	if err := fire(ev, timerMS, last); err != nil {
		return Trace{}, err
	}
	return tr, nil
}

// writeTraces writes m's traces to TracesEnv's directory when it is set.
func writeTraces(t *testing.T, m Machine) {
	t.Helper()
	dir := os.Getenv(TracesEnv)
	if dir == "" {
		return
	}
	tf, err := Traces(m)
	if err != nil {
		t.Fatalf("traces: %v", err)
	}
	data, err := json.MarshalIndent(tf, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(dir, fmt.Sprintf("%s.v%d.traces.json", m.Definition.Type, m.Definition.Version))
	if err := os.WriteFile(name, append(data, '\n'), 0o644); err != nil {
		t.Fatalf("traces: %v", err)
	}
}

// timeline follows a path of rows through a definition as the machine and
// an interpreter do, with a clock that only timers move: the leaf the run
// is in, when each active state (leaf and composites) was entered, and the
// history records.
type timeline struct {
	d       runtime.Definition
	now     int64 // milliseconds
	state   string
	entered map[string]int64
	hist    map[string]string
}

// newTimeline is a run that has just started and settled, as an
// interpreter starts: the initial state's eventless rows are taken under
// no guard admitting.
func newTimeline(d runtime.Definition) *timeline {
	tl := &timeline{d: d, state: d.Initial, entered: map[string]int64{}, hist: map[string]string{}}
	tl.entered[d.Initial] = 0
	for _, c := range d.Ancestors(d.Initial) {
		tl.entered[c] = 0
	}
	for j, r := range d.Transitions {
		if r.From == d.Initial && r.Event == "" && (r.Guard == "" || r.Negated) {
			tl.move(j, map[string]bool{})
			break
		}
	}
	return tl
}

// take takes row i of a path, under outcomes that make it the row that
// fires, unless it is an eventless row taken already. A row on the event
// of the timer due first is taken by that timer, unless it stays in the
// state (whose timer then does not start again in every interpreter
// alike): take returns after how many milliseconds, 0 for a row taken
// otherwise.
func (tl *timeline) take(i int) int64 {
	r := tl.d.Transitions[i]
	if r.Event == "" && tl.state != r.From {
		return 0
	}
	var timer int64
	if tm, ms, ok := tl.due(); ok && tm.Event == r.Event && r.To != r.From {
		timer = ms
		tl.now += ms
	}
	tl.move(i, admitRow(tl.d, i))
	return timer
}

// move takes row i and the eventless rows that follow it under admit,
// restarting the timers of the states each enters.
func (tl *timeline) move(i int, admit map[string]bool) {
	moves, _ := follow(tl.d, i, tl.d.Transitions[i].Event, admit, tl.hist)
	for _, mv := range moves {
		r := tl.d.Transitions[mv.row]
		exit, enter := r.Exit, r.Enter
		if len(exit) == 0 && len(enter) == 0 && !r.Internal {
			exit, enter = []string{r.From}, []string{r.To}
		}
		for _, s := range exit {
			delete(tl.entered, s)
		}
		for _, s := range enter {
			tl.entered[s] = tl.now
		}
		tl.state = r.To
	}
}

// due returns the timer of the active states that falls due first and how
// many milliseconds from now it does, none once the run is in a terminal
// state. Timers due at the same instant fire
// in the order their states were entered: outermost first, and for one
// state in declaration order.
func (tl *timeline) due() (runtime.Timer, int64, bool) {
	if s, _ := tl.d.State(tl.state); s.Terminal() {
		// The run ended: no timer of an enclosing composite fires.
		return runtime.Timer{}, 0, false
	}
	chain := append([]string{tl.state}, tl.d.Ancestors(tl.state)...)
	var first runtime.Timer
	var at int64
	found := false
	for k := len(chain) - 1; k >= 0; k-- {
		name := chain[k]
		var timers []runtime.Timer
		if s, ok := tl.d.State(name); ok {
			timers = s.Timers
		} else if c, ok := tl.d.Composite(name); ok {
			timers = c.Timers
		}
		for _, t := range timers {
			if due := tl.entered[name] + t.After.Milliseconds(); !found || due < at {
				first, at, found = t, due, true
			}
		}
	}
	return first, at - tl.now, found
}
