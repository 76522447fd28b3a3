package spectrace

import (
	"context"
	"time"

	"github.com/fsmgen/fsmgen/runtime"
)

// Timers runs the timers of a machine's definition for a subject that
// has none of its own, the generated code of a machine with parallel
// states, which the model does not run: it learns which states are
// entered and exited from the transitions recorded through Recorder, and
// fires each timer of a state once, when the clock reaches it while the
// state is still active.
type Timers struct {
	def *runtime.Definition
	now time.Duration
	// entered holds when each active state with timers was entered, and
	// fired which of its timers fired since.
	entered map[string]time.Duration
	fired   map[string][]bool
}

// NewTimers returns the timers of def, at time zero, with the states a
// run starts in active: its initial leaf and the composites above it.
func NewTimers(def runtime.Definition) *Timers {
	t := &Timers{def: &def, entered: map[string]time.Duration{}, fired: map[string][]bool{}}
	t.enter(def.Initial)
	for _, a := range def.Ancestors(def.Initial) {
		t.enter(a)
	}
	return t
}

// Recorder returns the recorder that the subject's machine records with:
// it runs each transition's actions and notes the states it exits and
// enters.
func (t *Timers) Recorder() runtime.Recorder {
	return runtime.RecorderFunc(func(ctx context.Context, tr runtime.Transition) error {
		if tr.Actions != nil {
			if err := tr.Actions(ctx); err != nil {
				return err
			}
		}
		for _, s := range tr.Exited {
			delete(t.entered, s)
			delete(t.fired, s)
		}
		for _, s := range tr.Entered {
			t.enter(s)
		}
		return nil
	})
}

// enter notes that the state named name is entered now.
func (t *Timers) enter(name string) {
	if timers := t.timersOf(name); len(timers) > 0 {
		t.entered[name] = t.now
		t.fired[name] = make([]bool, len(timers))
	}
}

// timersOf returns the timers of the state named name.
func (t *Timers) timersOf(name string) []runtime.Timer {
	if s, ok := t.def.State(name); ok {
		return s.Timers
	}
	c, _ := t.def.Composite(name)
	return c.Timers
}

// Advance moves the clock by d, firing with fire each timer that falls
// due on the way, at its time, earliest first.
func (t *Timers) Advance(ctx context.Context, d time.Duration, fire func(ctx context.Context, event string) error) error {
	end := t.now + d
	for {
		state, i, at := t.next(end)
		if state == "" {
			t.now = end
			return nil
		}
		t.now = at
		t.fired[state][i] = true
		if err := fire(ctx, t.timersOf(state)[i].Event); err != nil {
			return err
		}
	}
}

// next returns the state and index of the earliest timer due by end that
// has not fired, and when it is due; "" when there is none.
func (t *Timers) next(end time.Duration) (state string, index int, at time.Duration) {
	for name, since := range t.entered {
		for i, tm := range t.timersOf(name) {
			due := since + tm.After
			if t.fired[name][i] || due > end || state != "" && (due > at || due == at && name > state) {
				continue
			}
			state, index, at = name, i, due
		}
	}
	return state, index, at
}

// Timed is a Subject of functions whose timers Timers runs: a Clock.
type Timed struct {
	Funcs
	Timers *Timers
}

// Advance implements Clock: the due timers' events are fired with an
// empty payload.
func (s *Timed) Advance(ctx context.Context, d time.Duration) error {
	return s.Timers.Advance(ctx, d, func(ctx context.Context, event string) error {
		return s.Fire(ctx, event, []byte("{}"))
	})
}
