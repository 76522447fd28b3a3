package machines_test

// Large: what a recorded transition costs against the size of the machine.
// The machine is a ring of 2,000 states on one event (S0000 -Next-> S0001
// ... S1999 -Next-> S0000, every state -Stop-> DONE), as a definition with
// 4,000 rows; its transitions are taken through the helpers of
// runtime/fsmimpl that generated code calls, with the recorder that does
// nothing of BenchmarkCycleRecorder:
//
//   - follow: fsmimpl.Follow on an Index, what a generated per-event method
//     calls when it has a recorder;
//   - driver: runtime.Driver.Fire of fsmimpl.NewDriver, the engine's path,
//     which reads the run's state from its name before following the row.
//
// first fires Next in S0000, last in S1999, whose rows come last in the
// table: the two cost the same when a transition's cost does not grow with
// the machine.

import (
	"context"
	"fmt"
	"testing"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/fsmimpl"
)

const ringStates = 2000

type ringState uint16

type ringNext struct{}

func (ringNext) EventName() string { return "Next" }

// ringDefinition returns the definition of the ring of n states.
func ringDefinition(n int) runtime.Definition {
	d := runtime.Definition{Machine: "Ring", Type: "ring", Version: 1, Initial: ringName(0),
		Events: []runtime.EventSpec{{Name: "Next"}, {Name: "Stop"}}}
	for i := range n {
		d.States = append(d.States, runtime.StateSpec{Name: ringName(i), Initial: i == 0, Status: runtime.StatusRunning})
		d.Transitions = append(d.Transitions, runtime.TransitionSpec{From: ringName(i), To: ringName((i + 1) % n), Event: "Next"})
	}
	d.States = append(d.States, runtime.StateSpec{Name: "DONE", Status: runtime.StatusSucceeded})
	for i := range n {
		d.Transitions = append(d.Transitions, runtime.TransitionSpec{From: ringName(i), To: "DONE", Event: "Stop"})
	}
	return d
}

func ringName(i int) string { return fmt.Sprintf("S%04d", i) }

var (
	ringDef   = ringDefinition(ringStates)
	ringIndex = fsmimpl.NewIndex[ringState](&ringDef)
)

func BenchmarkLargeRecorder(b *testing.B) {
	if err := ringDef.Validate(); err != nil {
		b.Fatal(err)
	}
	for _, at := range []struct {
		name string
		from ringState
	}{{"first", 0}, {"last", ringStates - 1}} {
		b.Run("follow-"+at.name, func(b *testing.B) { benchRingFollow(b, at.from) })
		b.Run("driver-"+at.name, func(b *testing.B) { benchRingDriver(b, at.from) })
	}
}

func benchRingFollow(b *testing.B, from ringState) {
	ctx := context.Background()
	want := (from + 1) % ringStates
	defer countAllocs(b)()
	for i := 0; i < b.N; i++ {
		s := from
		if err := fsmimpl.Follow(ctx, ringIndex, nopRecorder, &s, ringNext{}); err != nil || s != want {
			b.Fatalf("Follow from %s: %v, in %s", ringName(int(from)), err, ringName(int(s)))
		}
	}
}

func benchRingDriver(b *testing.B, from ringState) {
	ctx := context.Background()
	d := fsmimpl.NewDriver(ringIndex, nil,
		func(string, []byte) (ringNext, error) { return ringNext{}, nil },
		func(ctx context.Context, _ *runtime.Run, s ringState, e ringNext, rec runtime.Recorder) error {
			return fsmimpl.Follow(ctx, ringIndex, rec, &s, e)
		})
	run := &runtime.Run{ID: "r", Type: "ring", Version: 1, State: ringName(int(from)), Status: runtime.StatusRunning}
	var got runtime.Transition
	keep := runtime.RecorderFunc(func(_ context.Context, t runtime.Transition) error { got = t; return nil })
	if err := d.Fire(ctx, run, run.State, ringNext{}, keep); err != nil || got.From != run.State || got.To != ringName((int(from)+1)%ringStates) {
		b.Fatalf("Fire in %s: %v, recorded %s -> %s", run.State, err, got.From, got.To)
	}
	defer countAllocs(b)()
	for i := 0; i < b.N; i++ {
		if err := d.Fire(ctx, run, run.State, ringNext{}, nopRecorder); err != nil {
			b.Fatal(err)
		}
	}
}
