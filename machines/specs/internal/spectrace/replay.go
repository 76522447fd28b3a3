package spectrace

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fsmgen/fsmgen/dsl"
	"github.com/fsmgen/fsmgen/runtime"
)

// Subject is an implementation of a machine that a trace is replayed on.
type Subject interface {
	// Start starts the run, which settles in its first leaf.
	Start(ctx context.Context) error
	// Fire sends an event with its payload in the generated code's JSON
	// (see GoPayload). A refused event returns an error matching
	// runtime.ErrIllegalTransition, runtime.ErrGuardRejected or
	// runtime.ErrRunFinished.
	Fire(ctx context.Context, event string, payload []byte) error
	// Leaf returns the leaf the run is in.
	Leaf(ctx context.Context) (string, error)
	// Actions returns the entry and exit actions run since the last call,
	// in order.
	Actions() []string
}

// Clock is a Subject that runs its own timers: Advance moves its clock
// by d (zero included) and returns once every timer due by then has
// fired. The replay moves it to each time the model has a timer due. The timers of
// a Subject that is not a Clock are fired by the replay, through Fire, as
// the model schedules them.
type Clock interface {
	Advance(ctx context.Context, d time.Duration) error
}

// Replay replays tr on s and returns what differs from the trace, in the
// subject and in the model of m (the .fsm file's semantics); a machine
// with parallel states, which the model does not run, is replayed on s
// alone. guards is the map the subject's guards read: Replay sets it
// before each step.
func Replay(ctx context.Context, m *dsl.Machine, tr Trace, s Subject, guards map[string]bool) []error {
	var model *Model
	if len(m.Parallels) == 0 {
		model = NewModel(m)
	}
	var errs []error
	for _, step := range tr.Steps {
		clear(guards)
		for k, v := range step.Guards {
			guards[k] = v
		}
		if model != nil {
			model.SetGuards(step.Guards)
		}
		at := fmt.Sprintf("trace %s, line %d (%s)", tr.Name, step.Line, step.Trigger())
		refused, err := replayStep(ctx, m, model, s, step)
		if err != nil {
			return append(errs, fmt.Errorf("%s: %w", at, err))
		}
		leaf, err := s.Leaf(ctx)
		if err != nil {
			return append(errs, fmt.Errorf("%s: %w", at, err))
		}
		acts := s.Actions()
		if model != nil {
			errs = append(errs, checkModel(at, model, step)...)
		}
		if !step.Checked {
			continue
		}
		want := step.Do
		if refused != step.Refused {
			errs = append(errs, fmt.Errorf("%s: refused %v, want %v", at, refused, step.Refused))
		}
		if leaf != step.Leaf {
			errs = append(errs, fmt.Errorf("%s: in %s, want %s", at, leaf, step.Leaf))
		}
		if got := ancestors(m, leaf); !slices.Equal(got, step.In) {
			errs = append(errs, fmt.Errorf("%s: %s is in [%s], want [%s]", at, leaf, strings.Join(got, " "), strings.Join(step.In, " ")))
		}
		if !slices.Equal(acts, want) {
			errs = append(errs, fmt.Errorf("%s: actions [%s], want [%s]", at, strings.Join(acts, " "), strings.Join(want, " ")))
		}
		if len(errs) > 0 {
			return errs
		}
	}
	return errs
}

// checkModel returns what differs between model, after step, and the
// trace: its leaf and its actions, which it returns once.
func checkModel(at string, model *Model, step Step) []error {
	acts := model.Actions()
	if !step.Checked {
		return nil
	}
	var errs []error
	if got := model.Leaf(); got != step.Leaf {
		errs = append(errs, fmt.Errorf("%s: the model is in %s, want %s", at, got, step.Leaf))
	}
	if !slices.Equal(acts, step.Do) {
		errs = append(errs, fmt.Errorf("%s: the model's actions [%s], want [%s]", at, strings.Join(acts, " "), strings.Join(step.Do, " ")))
	}
	return errs
}

// replayStep replays step on s, and on model unless it is nil.
func replayStep(ctx context.Context, m *dsl.Machine, model *Model, s Subject, step Step) (refused bool, err error) {
	if model == nil {
		return replayAlone(ctx, m, s, step)
	}
	switch {
	case step.Start:
		if err := model.Start(); err != nil {
			return false, fmt.Errorf("model: %w", err)
		}
		return false, s.Start(ctx)
	case step.Event == "":
		if c, ok := s.(Clock); ok {
			// The subject's clock moves to each timer the model has due,
			// so that the subject fires it then, and the timers it
			// starts count from then.
			start, moved := model.now, time.Duration(0)
			if err := model.Advance(step.After, func(ev string) error {
				if err := c.Advance(ctx, model.now-start-moved); err != nil {
					return err
				}
				moved = model.now - start
				_, err := model.Fire(ev, nil)
				return err
			}); err != nil {
				return false, err
			}
			return false, c.Advance(ctx, step.After-moved)
		}
		return false, model.Advance(step.After, func(ev string) error {
			if _, err := model.Fire(ev, nil); err != nil {
				return fmt.Errorf("model: %w", err)
			}
			if err := s.Fire(ctx, ev, []byte("{}")); err != nil {
				return fmt.Errorf("timer event %s: %w", ev, err)
			}
			return nil
		})
	}
	payload, err := GoPayload(m, step.Event, step.Payload)
	if err != nil {
		return false, err
	}
	taken, err := model.Fire(step.Event, step.Payload)
	if err != nil {
		return false, fmt.Errorf("model: %w", err)
	}
	if step.Checked && taken == step.Refused {
		return false, fmt.Errorf("the model took the event: %v, want %v", taken, !step.Refused)
	}
	return refusal(s.Fire(ctx, step.Event, payload))
}

// replayAlone replays step on s without a model: a step of the clock
// needs a subject that runs its timers, a Clock.
func replayAlone(ctx context.Context, m *dsl.Machine, s Subject, step Step) (refused bool, err error) {
	switch {
	case step.Start:
		return false, s.Start(ctx)
	case step.Event == "":
		c, ok := s.(Clock)
		if !ok {
			return false, fmt.Errorf("%s: the subject runs no timers, and there is no model to", step.Trigger())
		}
		return false, c.Advance(ctx, step.After)
	}
	payload, err := GoPayload(m, step.Event, step.Payload)
	if err != nil {
		return false, err
	}
	return refusal(s.Fire(ctx, step.Event, payload))
}

// refusal sorts the error of a subject's Fire: a refused event, or
// another error.
func refusal(err error) (refused bool, _ error) {
	// The engine refuses any event to a run in a terminal state as
	// finished.
	if errors.Is(err, runtime.ErrIllegalTransition) || errors.Is(err, runtime.ErrGuardRejected) || errors.Is(err, runtime.ErrRunFinished) {
		return true, nil
	}
	return false, err
}

// ancestors returns the names of the composites that contain the leaf
// named leaf, innermost first; for a configuration, those that contain
// every one of its leaves.
func ancestors(m *dsl.Machine, leaf string) []string {
	var out []string
	for i, name := range strings.Split(leaf, "|") {
		var of []string
		for _, s := range m.States {
			if s.Name == name {
				for _, a := range s.Ancestors() {
					of = append(of, a.Name)
				}
			}
		}
		if i == 0 {
			out = of
			continue
		}
		out = slices.DeleteFunc(out, func(a string) bool { return !slices.Contains(of, a) })
	}
	return out
}
