package machines_test

// Large: what a recorded transition costs against the size of the machine.
// The machine is a ring of n states (20, 200 and 2,000) on one event (S0000
// -Next-> S0001 ... -Next-> S0000, every state -Stop-> DONE), as a
// definition with 2n rows; its transitions are taken through the helpers of
// runtime/fsmimpl that generated code calls, with the recorder that does
// nothing of BenchmarkCycleRecorder:
//
//   - follow: fsmimpl.Follow on an Index, what a generated per-event method
//     calls when it has a recorder;
//   - driver: runtime.Driver.Fire of fsmimpl.NewDriver, the engine's path,
//     which reads the run's state from its name before following the row;
//   - definition: the lookups by name in the runtime.Definition that the
//     engine and the store make for a transition and a signal: the state
//     entered (StateOf), the row (Allows), whether callers may send the
//     event (CallerRefusal) and whether a row takes it (Accepts).
//
// first fires Next in S0000, last in the ring's last state, whose rows come
// last in the table: the two, and the three sizes, cost the same when a
// transition's cost does not grow with the machine.

import (
	"context"
	"fmt"
	"testing"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/fsmimpl"
)

// ringSizes are the sizes of the rings measured.
var ringSizes = []int{20, 200, 2000}

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

// ring is a ring's definition and its Index.
type ring struct {
	n   int
	def runtime.Definition
	ix  *fsmimpl.Index[ringState]
}

func newRing(n int) *ring {
	r := &ring{n: n, def: ringDefinition(n)}
	r.ix = fsmimpl.NewIndex[ringState](&r.def)
	return r
}

func BenchmarkLargeRecorder(b *testing.B) {
	for _, n := range ringSizes {
		r := newRing(n)
		if err := r.def.Validate(); err != nil {
			b.Fatal(err)
		}
		for _, at := range []struct {
			name string
			from ringState
		}{{"first", 0}, {"last", ringState(n - 1)}} {
			b.Run(fmt.Sprintf("follow-%d-%s", n, at.name), func(b *testing.B) { benchRingFollow(b, r, at.from) })
			b.Run(fmt.Sprintf("driver-%d-%s", n, at.name), func(b *testing.B) { benchRingDriver(b, r, at.from) })
			b.Run(fmt.Sprintf("definition-%d-%s", n, at.name), func(b *testing.B) { benchRingDefinition(b, r, at.from) })
		}
	}
}

func benchRingFollow(b *testing.B, r *ring, from ringState) {
	ctx := context.Background()
	want := (from + 1) % ringState(r.n)
	defer countAllocs(b)()
	for i := 0; i < b.N; i++ {
		s := from
		if err := fsmimpl.Follow(ctx, r.ix, nopRecorder, &s, ringNext{}); err != nil || s != want {
			b.Fatalf("Follow from %s: %v, in %s", ringName(int(from)), err, ringName(int(s)))
		}
	}
}

func benchRingDriver(b *testing.B, r *ring, from ringState) {
	ctx := context.Background()
	d := fsmimpl.NewDriver(r.ix, nil,
		func(string, []byte) (ringNext, error) { return ringNext{}, nil },
		func(ctx context.Context, _ *runtime.Run, s ringState, e ringNext, rec runtime.Recorder) error {
			return fsmimpl.Follow(ctx, r.ix, rec, &s, e)
		})
	run := &runtime.Run{ID: "r", Type: "ring", Version: 1, State: ringName(int(from)), Status: runtime.StatusRunning}
	var got runtime.Transition
	keep := runtime.RecorderFunc(func(_ context.Context, t runtime.Transition) error { got = t; return nil })
	if err := d.Fire(ctx, run, run.State, ringNext{}, keep); err != nil || got.From != run.State || got.To != ringName((int(from)+1)%r.n) {
		b.Fatalf("Fire in %s: %v, recorded %s -> %s", run.State, err, got.From, got.To)
	}
	defer countAllocs(b)()
	for i := 0; i < b.N; i++ {
		if err := d.Fire(ctx, run, run.State, ringNext{}, nopRecorder); err != nil {
			b.Fatal(err)
		}
	}
}

func benchRingDefinition(b *testing.B, r *ring, from ringState) {
	def := &r.def
	src, dst := ringName(int(from)), ringName((int(from)+1)%r.n)
	defer countAllocs(b)()
	for i := 0; i < b.N; i++ {
		to, ok := def.StateOf(dst)
		if !ok || to.Name != dst || !def.Allows(src, "Next", dst) || def.CallerRefusal(src, "Next") == "" || !def.Accepts(src, "Next") {
			b.Fatalf("%s -> %s on Next: state %+v %v", src, dst, to, ok)
		}
	}
}
