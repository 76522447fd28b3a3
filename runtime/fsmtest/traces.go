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
	// TimerMS is set when the event is fired by the source state's timer
	// (its earliest), as the runtime does after that many milliseconds in
	// the state; otherwise a caller fires it.
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
		if tm := earliestTimer(d, s.Name); tm != nil {
			ms := tm.After.Milliseconds()
			if err := probe(fmt.Sprintf("after %dms (%s)", ms, tm.Event), tm.Event, ms); err != nil {
				return TraceFile{}, err
			}
		}
	}
	return out, nil
}

// earliestTimer returns the state's timer that fires first (the first
// declared among equals), or nil.
func earliestTimer(d runtime.Definition, state string) *runtime.Timer {
	st, _ := d.State(state)
	var first *runtime.Timer
	for i, t := range st.Timers {
		if first == nil || t.After < first.After {
			first = &st.Timers[i]
		}
	}
	return first
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
			clear(admit)
			for g, v := range admitRow(d, i) {
				admit[g] = v
			}
			if err := take(m, inst, r); err != nil {
				return Trace{}, err
			}
			continue
		}
		var timer int64
		// A row on the state's earliest timer is taken by the timer,
		// unless it stays in the state (whose timer then does not start
		// again in every interpreter alike).
		if tm := earliestTimer(d, r.From); tm != nil && tm.Event == r.Event && r.To != r.From {
			timer = tm.After.Milliseconds()
		}
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
