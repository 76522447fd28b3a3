package fsmimpl_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/fsmimpl"
)

// par is a machine with one parallel state, Work, of two regions; Build
// nests the composite Ship:
//
//	initial QUEUED
//	state Work parallel {
//	    state Build { initial Compile; state Ship { initial Pack; final Built } }
//	    state Checks { initial Lint; final Checked }
//	}
//	final Shipped succeeded
//	final Aborted failed
var par = runtime.Definition{
	Machine: "Build", Type: "build", Version: 1, Initial: "QUEUED",
	States: []runtime.StateSpec{
		{Name: "QUEUED", Initial: true, Status: runtime.StatusRunning, Wait: true},
		{Name: "Compile", Status: runtime.StatusRunning, Wait: true, Parent: "Build"},
		{Name: "Pack", Status: runtime.StatusRunning, Wait: true, Parent: "Ship"},
		{Name: "Built", Status: runtime.StatusRunning, Wait: true, Parent: "Ship"},
		{Name: "Lint", Status: runtime.StatusRunning, Wait: true, Parent: "Checks"},
		{Name: "Checked", Status: runtime.StatusRunning, Wait: true, Parent: "Checks"},
		{Name: "Shipped", Status: runtime.StatusSucceeded},
		{Name: "Aborted", Status: runtime.StatusFailed},
	},
	Composites: []runtime.CompositeSpec{
		{Name: "Work", Parallel: true},
		{Name: "Build", Parent: "Work", Initial: "Compile"},
		{Name: "Ship", Parent: "Build", Initial: "Pack"},
		{Name: "Checks", Parent: "Work", Initial: "Lint"},
	},
	Events: []runtime.EventSpec{{Name: "Start"}, {Name: "Go"}, {Name: "Compiled"}, {Name: "Abort"}, {Name: "Fail"}},
	Transitions: []runtime.TransitionSpec{
		{From: "QUEUED", To: "Compile|Lint", Event: "Start", Exit: []string{"QUEUED"}, Enter: []string{"Work", "Build", "Compile", "Checks", "Lint"}},
		{From: "Compile", To: "Pack", Event: "Go", Exit: []string{"Compile"}, Enter: []string{"Ship", "Pack"}},
		{From: "Lint", To: "Checked", Event: "Go", Outcome: "clean", Exit: []string{"Lint"}, Enter: []string{"Checked"}},
		{From: "Work", To: "Aborted", Event: "Abort", Exit: []string{"Work"}, Enter: []string{"Aborted"}},
		{From: "Pack", To: "Aborted", Event: "Fail", Exit: []string{"Pack", "Ship", "Build", "Work"}, Enter: []string{"Aborted"}},
		{From: "Work", To: "Shipped", Done: true, Outcome: "done", Exit: []string{"Work"}, Enter: []string{"Shipped"}},
	},
}

var parIndex = fsmimpl.NewIndex[state](&par)

func TestParallelDefinitionValid(t *testing.T) {
	t.Parallel()
	if err := par.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestParseConfig(t *testing.T) {
	t.Parallel()
	var leaves [2]state
	n, err := fsmimpl.ParseConfig(parIndex, "Pack|Lint", leaves[:])
	if err != nil || n != 2 || leaves != [2]state{2, 4} {
		t.Errorf("ParseConfig(Pack|Lint) = %d, %v, %v; want 2, [2 4]", n, leaves, err)
	}
	if n, err := fsmimpl.ParseConfig(parIndex, "Shipped", leaves[:]); err != nil || n != 1 || leaves[0] != 6 {
		t.Errorf("ParseConfig(Shipped) = %d, %v, %v; want 1, 6", n, leaves[0], err)
	}
	for text, want := range map[string]string{
		"Nope|Lint":         `build: unknown state "Nope"`,
		"Lint|Pack":         `build: unknown state "Lint|Pack": leaf 1, Lint, is not in region Build of Work`,
		"Pack":              `build: unknown state "Pack": want 2 leaves, one per region of Work, got 1`,
		"Pack|Lint|Checked": `build: unknown state "Pack|Lint|Checked": want at most 2 leaves, one per region, got 3`,
		"Shipped|Aborted":   `build: unknown state "Shipped|Aborted": Shipped is in no parallel state, and only the leaves of a parallel state's regions are joined`,
		"Work":              `build: unknown state "Work": a composite state, and a run is always in one of its leaves`,
		"Pack|Built":        `build: unknown state "Pack|Built": leaf 2, Built, is not in region Checks of Work`,
	} {
		_, err := fsmimpl.ParseConfig(parIndex, text, leaves[:])
		if !errors.Is(err, runtime.ErrUnknownState) || err.Error() != want {
			t.Errorf("ParseConfig(%s) = %v, want %q", text, err, want)
		}
	}
}

func TestConfigName(t *testing.T) {
	t.Parallel()
	if got := fsmimpl.ConfigName(&par, []state{3, 5}); got != "Built|Checked" {
		t.Errorf("ConfigName([3 5]) = %q, want Built|Checked", got)
	}
	if got := fsmimpl.ConfigName(&par, []state{0}); got != "QUEUED" {
		t.Errorf("ConfigName([0]) = %q, want QUEUED", got)
	}
}

// TestChartFire: entering the parallel state, moves of two regions in
// one step, leaving it from the parallel state and from a region's leaf,
// and completion, each one step, recorded as one transition with every
// region's exits and entries.
func TestChartFire(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var got []runtime.Transition
	ran := 0
	rec := runtime.RecorderFunc(func(ctx context.Context, tr runtime.Transition) error {
		if err := tr.Actions(ctx); err != nil {
			return err
		}
		tr.Actions = nil
		got = append(got, tr)
		return nil
	})
	act := func(context.Context) error { ran++; return nil }
	chart := fsmimpl.NewChart(parIndex, 3, 5)
	all := func(int) bool { return true }
	steps := []struct {
		from  []state
		event string
		want  fsmimpl.Step[state]
	}{
		{[]state{0}, "Start", fsmimpl.Step[state]{From: []state{0}, To: []state{1, 4}, Rows: []int{0}, Exit: []state{0}, Enter: []state{8, 9, 1, 11, 4}}},
		{[]state{1, 4}, "Go", fsmimpl.Step[state]{From: []state{1, 4}, To: []state{2, 5}, Rows: []int{1, 2}, Exit: []state{1, 4}, Enter: []state{10, 2, 5}}},
		{[]state{2, 5}, "Abort", fsmimpl.Step[state]{From: []state{2, 5}, To: []state{7}, Rows: []int{3}, Exit: []state{2, 10, 9, 5, 11, 8}, Enter: []state{7}}},
		{[]state{2, 4}, "Fail", fsmimpl.Step[state]{From: []state{2, 4}, To: []state{7}, Rows: []int{4}, Exit: []state{2, 10, 9, 4, 11, 8}, Enter: []state{7}}},
		{[]state{3, 5}, "", fsmimpl.Step[state]{From: []state{3, 5}, To: []state{6}, Rows: []int{5}, Exit: []state{3, 10, 9, 5, 11, 8}, Enter: []state{6}}},
	}
	for _, s := range steps {
		st, ok := chart.Fire(s.from, s.event, all)
		var e runtime.Event = named(s.event)
		if s.event == "" {
			st, ok = chart.Settle(s.from, all)
			e = nil
		}
		if !ok {
			t.Fatalf("no step from %v on %q", s.from, s.event)
		}
		if diff := cmp.Diff(s.want, st); diff != "" {
			t.Errorf("step from %v on %q (-want +got):\n%s", s.from, s.event, diff)
		}
		if err := chart.Record(ctx, rec, st, e, act); err != nil {
			t.Fatal(err)
		}
	}
	tr := func(from, to, event string, status runtime.Status, outcome string, exited, entered []string) runtime.Transition {
		t := runtime.Transition{Machine: "build", Version: 1, From: from, To: to, Event: event, Status: status, Outcome: outcome, Exited: exited, Entered: entered}
		if event != "" {
			t.Payload = named(event)
		}
		return t
	}
	want := []runtime.Transition{
		tr("QUEUED", "Compile|Lint", "Start", runtime.StatusRunning, "", []string{"QUEUED"}, []string{"Work", "Build", "Compile", "Checks", "Lint"}),
		tr("Compile|Lint", "Pack|Checked", "Go", runtime.StatusRunning, "clean", []string{"Compile", "Lint"}, []string{"Ship", "Pack", "Checked"}),
		tr("Pack|Checked", "Aborted", "Abort", runtime.StatusFailed, "", []string{"Pack", "Ship", "Build", "Checked", "Checks", "Work"}, []string{"Aborted"}),
		tr("Pack|Lint", "Aborted", "Fail", runtime.StatusFailed, "", []string{"Pack", "Ship", "Build", "Lint", "Checks", "Work"}, []string{"Aborted"}),
		tr("Built|Checked", "Shipped", "", runtime.StatusSucceeded, "done", []string{"Built", "Ship", "Build", "Checked", "Checks", "Work"}, []string{"Shipped"}),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("recorded (-want +got):\n%s", diff)
	}
	if ran != len(steps) {
		t.Errorf("actions ran %d times, want %d", ran, len(steps))
	}
}

// TestChartConflicts: a region's row that leaves the parallel state is
// dropped once an earlier region took a row, and preempts the later
// regions otherwise; the parallel state's rows apply only when no region
// took the event; a guard refusing every row leaves no step; completion
// waits for every region.
func TestChartConflicts(t *testing.T) {
	t.Parallel()
	d := par.Clone()
	d.Events = append(d.Events, runtime.EventSpec{Name: "Both"})
	d.Transitions = append(d.Transitions,
		runtime.TransitionSpec{From: "Compile", To: "Pack", Event: "Both", Exit: []string{"Compile"}, Enter: []string{"Ship", "Pack"}},
		runtime.TransitionSpec{From: "Lint", To: "Aborted", Event: "Both", Exit: []string{"Lint", "Checks", "Work"}, Enter: []string{"Aborted"}},
		runtime.TransitionSpec{From: "Lint", To: "Aborted", Event: "Abort", Exit: []string{"Lint", "Checks", "Work"}, Enter: []string{"Aborted"}},
	)
	chart := fsmimpl.NewChart(fsmimpl.NewIndex[state](&d), 3, 5)
	all := func(int) bool { return true }
	st, ok := chart.Fire([]state{1, 4}, "Both", all)
	if want := []state{2, 4}; !ok || !cmp.Equal(st.To, want) || !cmp.Equal(st.Rows, []int{6}) {
		t.Errorf("Both in Compile|Lint: %v %v, want to %v by row 6 alone", st, ok, want)
	}
	st, ok = chart.Fire([]state{3, 4}, "Both", all)
	if want := []state{7}; !ok || !cmp.Equal(st.To, want) || !cmp.Equal(st.Rows, []int{7}) {
		t.Errorf("Both in Built|Lint: %v %v, want to %v by row 7", st, ok, want)
	}
	st, ok = chart.Fire([]state{1, 4}, "Abort", all)
	if !ok || !cmp.Equal(st.Rows, []int{8}) {
		t.Errorf("Abort in Compile|Lint: %v %v, want the region's row 8 before the parallel state's", st, ok)
	}
	st, ok = chart.Fire([]state{1, 5}, "Abort", all)
	if !ok || !cmp.Equal(st.Rows, []int{3}) {
		t.Errorf("Abort in Compile|Checked: %v %v, want the parallel state's row 3", st, ok)
	}
	if st, ok := chart.Fire([]state{1, 4}, "Both", func(int) bool { return false }); ok {
		t.Errorf("Both with every guard refusing: %v, want no step", st)
	}
	if st, ok := chart.Settle([]state{3, 4}, all); ok {
		t.Errorf("Settle in Built|Lint: %v, want no step before Checks is final", st)
	}
}

// named is an event of any name.
type named string

func (n named) EventName() string { return string(n) }

// config is a configuration of par, as a generated Config holds one.
type config struct {
	n      int
	leaves [2]state
}

func parseConfig(text string) (config, error) {
	var c config
	n, err := fsmimpl.ParseConfig(parIndex, text, c.leaves[:])
	c.n = n
	return c, err
}

func TestConfigDriver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var fired, settled []config
	var handled []state
	d := fsmimpl.NewConfigDriver(parIndex, parseConfig,
		func(_ context.Context, _ *runtime.Run, leaf state) (runtime.Event, error) {
			handled = append(handled, leaf)
			return named("Compiled"), nil
		},
		func(name string, _ []byte) (named, error) { return named(name), nil },
		func(_ context.Context, _ *runtime.Run, c config, _ named, _ runtime.Recorder) error {
			fired = append(fired, c)
			return nil
		},
		fsmimpl.WithSettle(func(_ context.Context, _ *runtime.Run, c config, _ runtime.Recorder) error {
			settled = append(settled, c)
			return nil
		}))
	if err := d.Fire(ctx, &runtime.Run{}, "Compile|Lint", named("Compiled"), nil); err != nil {
		t.Fatal(err)
	}
	if err := d.(runtime.Settler).Settle(ctx, &runtime.Run{}, "Built|Checked", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Handle(ctx, &runtime.Run{}, "Lint"); err != nil {
		t.Fatal(err)
	}
	want := []config{{2, [2]state{1, 4}}, {2, [2]state{3, 5}}}
	if diff := cmp.Diff(want, append(fired, settled...), cmp.AllowUnexported(config{})); diff != "" {
		t.Errorf("configurations given (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]state{4}, handled); diff != "" {
		t.Errorf("leaves handled (-want +got):\n%s", diff)
	}
	err := d.Fire(ctx, &runtime.Run{}, "Lint|Compile", named("Compiled"), nil)
	if want := `build: unknown state "Lint|Compile": leaf 1, Lint, is not in region Build of Work`; err == nil || err.Error() != want {
		t.Errorf("Fire in a configuration out of order: %v, want %q", err, want)
	}
	if _, err := d.Handle(ctx, &runtime.Run{}, "Compile|Lint"); !errors.Is(err, runtime.ErrUnknownState) {
		t.Errorf("Handle of a configuration, not a leaf: %v, want ErrUnknownState", err)
	}
}

func TestChartLoop(t *testing.T) {
	t.Parallel()
	chart := fsmimpl.NewChart(parIndex)
	err := chart.Loop([][]state{{1, 4}, {2, 4}, {1, 4}})
	if want := "build: eventless rows loop: Compile|Lint -> Pack|Lint -> Compile|Lint ...: more than 2 eventless moves in a row"; err == nil || err.Error() != want {
		t.Errorf("Loop = %v, want %q", err, want)
	}
}

func TestChartRefuse(t *testing.T) {
	t.Parallel()
	d := par.Clone()
	d.Guards = []string{"Ready"}
	d.Transitions[1].Guard = "Ready"
	chart := fsmimpl.NewChart(fsmimpl.NewIndex[state](&d))
	for _, c := range []struct {
		from []state
		e    runtime.Event
		want error
		text string
	}{
		{[]state{1, 4}, named("Go"), runtime.ErrGuardRejected, "build: event Go in state Compile|Lint rejected by guards [Ready]"},
		{[]state{1, 4}, named("Abort"), runtime.ErrGuardRejected, "build: event Abort in state Compile|Lint rejected by guards []"},
		{[]state{1, 4}, named("Start"), runtime.ErrIllegalTransition, "build: illegal transition: state Compile|Lint has no transition on event Start"},
		{[]state{0}, nil, runtime.ErrIllegalTransition, "build: illegal transition: nil event in state QUEUED"},
	} {
		err := chart.Refuse(c.from, c.e)
		if !errors.Is(err, c.want) || err.Error() != c.text {
			t.Errorf("Refuse(%v, %v) = %v, want %q", c.from, c.e, err, c.text)
		}
	}
}

// TestChartAbove: rows written on a composite above the parallel state,
// listed from it: one that leaves exits every region, the parallel state
// and the composite; one written internal stays in the configuration and
// exits nothing.
func TestChartAbove(t *testing.T) {
	t.Parallel()
	d := par.Clone()
	d.Composites[0].Parent = "Job"
	d.Composites = append(d.Composites, runtime.CompositeSpec{Name: "Job", Initial: "Work"})
	d.Events = append(d.Events, runtime.EventSpec{Name: "Ping"}, runtime.EventSpec{Name: "Drop"})
	d.Transitions = append(d.Transitions,
		runtime.TransitionSpec{From: "Work", To: "Work", Event: "Ping", Internal: true},
		runtime.TransitionSpec{From: "Work", To: "Aborted", Event: "Drop", Exit: []string{"Work", "Job"}, Enter: []string{"Aborted"}})
	chart := fsmimpl.NewChart(fsmimpl.NewIndex[state](&d))
	all := func(int) bool { return true }
	for _, c := range []struct {
		event string
		want  fsmimpl.Step[state]
	}{
		{"Ping", fsmimpl.Step[state]{From: []state{2, 4}, To: []state{2, 4}, Rows: []int{6}}},
		{"Drop", fsmimpl.Step[state]{From: []state{2, 4}, To: []state{7}, Rows: []int{7}, Exit: []state{2, 10, 9, 4, 11, 8, 12}, Enter: []state{7}}},
	} {
		st, ok := chart.Fire([]state{2, 4}, c.event, all)
		if diff := cmp.Diff(c.want, st, cmpopts.EquateEmpty()); !ok || diff != "" {
			t.Errorf("%s in Pack|Lint: %t (-want +got):\n%s", c.event, ok, diff)
		}
	}
}
