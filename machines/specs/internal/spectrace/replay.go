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
// subject and in the model of m (the .fsm file's semantics). guards is
// the map the subject's guards read: Replay sets it before each step.
func Replay(ctx context.Context, m *dsl.Machine, tr Trace, s Subject, guards map[string]bool) []error {
	model := NewModel(m)
	var errs []error
	for _, step := range tr.Steps {
		clear(guards)
		for k, v := range step.Guards {
			guards[k] = v
		}
		model.SetGuards(step.Guards)
		at := fmt.Sprintf("trace %s, line %d (%s)", tr.Name, step.Line, step.Trigger())
		refused, err := replayStep(ctx, m, model, s, step)
		if err != nil {
			return append(errs, fmt.Errorf("%s: %w", at, err))
		}
		leaf, err := s.Leaf(ctx)
		if err != nil {
			return append(errs, fmt.Errorf("%s: %w", at, err))
		}
		acts, modelActs := s.Actions(), model.Actions()
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
		if got := model.Leaf(); got != step.Leaf {
			errs = append(errs, fmt.Errorf("%s: the model is in %s, want %s", at, got, step.Leaf))
		}
		if got := ancestors(m, leaf); !slices.Equal(got, step.In) {
			errs = append(errs, fmt.Errorf("%s: %s is in [%s], want [%s]", at, leaf, strings.Join(got, " "), strings.Join(step.In, " ")))
		}
		if !slices.Equal(acts, want) {
			errs = append(errs, fmt.Errorf("%s: actions [%s], want [%s]", at, strings.Join(acts, " "), strings.Join(want, " ")))
		}
		if !slices.Equal(modelActs, step.Do) {
			errs = append(errs, fmt.Errorf("%s: the model's actions [%s], want [%s]", at, strings.Join(modelActs, " "), strings.Join(step.Do, " ")))
		}
		if len(errs) > 0 {
			return errs
		}
	}
	return errs
}

func replayStep(ctx context.Context, m *dsl.Machine, model *Model, s Subject, step Step) (refused bool, err error) {
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
	err = s.Fire(ctx, step.Event, payload)
	// The engine refuses any event to a run in a terminal state as
	// finished.
	if errors.Is(err, runtime.ErrIllegalTransition) || errors.Is(err, runtime.ErrGuardRejected) || errors.Is(err, runtime.ErrRunFinished) {
		return true, nil
	}
	return false, err
}

// ancestors returns the names of the composites that contain the leaf
// named leaf, innermost first.
func ancestors(m *dsl.Machine, leaf string) []string {
	var out []string
	for _, s := range m.States {
		if s.Name == leaf {
			for _, a := range s.Ancestors() {
				out = append(out, a.Name)
			}
		}
	}
	return out
}
