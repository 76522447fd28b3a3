package review

// Hand-written expectations about the parallel state of review.fsm:
// gen's TestGoldenPackages copies this file next to the golden package
// and runs it.

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime"
)

// step is a recorded transition as the expectations write it.
type step struct {
	From, To, Event string
	Exited, Entered []string
}

// fire builds a machine in config with the guards admitting admin, fires
// e, and returns the error, the configuration after, the steps recorded
// and the actions run.
func fire(t *testing.T, config string, admin bool, e Event) (error, string, []step, []string) {
	t.Helper()
	c, err := ParseConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	var got []step
	rec := runtime.RecorderFunc(func(ctx context.Context, tr runtime.Transition) error {
		if err := tr.Actions(ctx); err != nil {
			return err
		}
		got = append(got, step{tr.From, tr.To, tr.Event, tr.Exited, tr.Entered})
		return nil
	})
	a := &fsmgenActions{}
	m := New(fsmgenGuards{"Admin": admin}, a, WithConfig(c), WithRecorder(rec))
	err = m.Fire(context.Background(), e)
	return err, m.Config().String(), got, a.ran
}

// TestParallelSteps: entering the parallel state enters every region in
// order; an event two regions take is one step; an In(S) guard reads the
// other region; completion follows the step that finishes the last
// region; a region's row that leaves the parallel state exits every
// region; the parallel state's rows apply when no region takes the event.
func TestParallelSteps(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, from string
		e          Event
		to         string
		steps      []step
		actions    []string
	}{
		{"enter", "Draft", Submit{}, "Pending|Queued",
			[]step{{"Draft", "Pending|Queued", "Submit", []string{"Draft"}, []string{"Open", "Reviews", "Pending", "Checks", "Queued"}}},
			[]string{"Notify", "Enqueue"}},
		{"two regions", "Pending|Queued", Push{}, "Pending|Queued",
			[]step{{"Pending|Queued", "Pending|Queued", "Push", []string{"Pending", "Queued"}, []string{"Pending", "Queued"}}},
			[]string{"Dequeue", "Enqueue"}},
		{"one region", "Approved|Queued", Start{}, "Approved|Running",
			[]step{{"Approved|Queued", "Approved|Running", "Start", []string{"Queued"}, []string{"Running"}}},
			[]string{"Dequeue"}},
		{"In and completion", "Approved|Passed", Accept{}, "Ready",
			[]step{
				{"Approved|Passed", "Accepted|Passed", "Accept", []string{"Approved"}, []string{"Accepted"}},
				{"Accepted|Passed", "Ready", "", []string{"Accepted", "Reviews", "Passed", "Checks", "Open"}, []string{"Ready"}},
			},
			[]string{"Unlock"}},
		{"a region leaves", "Pending|Failed", Close{}, "Closed",
			[]step{{"Pending|Failed", "Closed", "Close", []string{"Pending", "Reviews", "Failed", "Checks", "Open"}, []string{"Closed"}}},
			[]string{"Unlock"}},
		{"the parallel state's row", "Pending|Queued", Close{}, "Closed",
			[]step{{"Pending|Queued", "Closed", "Close", []string{"Pending", "Reviews", "Queued", "Checks", "Open"}, []string{"Closed"}}},
			[]string{"Dequeue", "Unlock"}},
	} {
		err, to, steps, actions := fire(t, c.from, true, c.e)
		if err != nil || to != c.to {
			t.Errorf("%s: %v, in %s; want %s", c.name, err, to, c.to)
		}
		if diff := cmp.Diff(c.steps, steps); diff != "" {
			t.Errorf("%s: recorded (-want +got):\n%s", c.name, diff)
		}
		if diff := cmp.Diff(c.actions, actions); diff != "" {
			t.Errorf("%s: actions (-want +got):\n%s", c.name, diff)
		}
	}
}

// TestParallelRefusals: an In(S) guard that does not hold and a named
// guard that refuses leave the machine where it is, recording nothing.
func TestParallelRefusals(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		from string
		e    Event
		want string
	}{
		{"Approved|Running", Accept{}, "review: event Accept in state Approved|Running rejected by guards []"},
		{"Pending|Queued", Merge{}, "review: event Merge in state Pending|Queued rejected by guards [Admin]"},
		{"Pending|Queued", Pass{}, "review: illegal transition: state Pending|Queued has no transition on event Pass"},
	} {
		err, to, steps, _ := fire(t, c.from, false, c.e)
		var te *runtime.TransitionError
		if !errors.As(err, &te) || err.Error() != c.want || to != c.from || len(steps) > 0 {
			t.Errorf("%s in %s: %v, in %s, %d recorded; want %q", c.e.EventName(), c.from, err, to, len(steps), c.want)
		}
	}
}
