package runtime_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime"
)

// padded returns d with n more wait states, each with a row to itself on
// an event of its own, after its own: large enough for its lookups by name
// to go through its index, with every answer about d's own states and
// events unchanged.
func padded(d runtime.Definition, n int) runtime.Definition {
	p := d.Clone()
	for i := range n {
		name := fmt.Sprintf("PAD%04d", i)
		p.States = append(p.States, runtime.StateSpec{Name: name, Status: runtime.StatusRunning, Wait: true})
		p.Events = append(p.Events, runtime.EventSpec{Name: "Pad" + name})
		p.Transitions = append(p.Transitions, runtime.TransitionSpec{From: name, To: name, Event: "Pad" + name})
	}
	return p
}

// answers is what d says about every persisted state, event and target
// of own (states from its rows, configurations included), a definition
// whose states and events d has too.
func answers(d, own *runtime.Definition) []string {
	var states, events []string
	for _, s := range own.States {
		states = append(states, s.Name)
	}
	for _, c := range own.Composites {
		states = append(states, c.Name)
	}
	for _, t := range own.Transitions {
		states = append(states, t.From, t.To)
	}
	states = append(states, "NOWHERE", own.Initial)
	for _, e := range own.Events {
		events = append(events, e.Name)
	}
	events = append(events, "", "Nothing")
	slices.Sort(states)
	states = slices.Compact(states)
	var out []string
	say := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	first := func(from string, rows []runtime.TransitionSpec) (runtime.TransitionSpec, bool, error) {
		return rows[0], true, nil
	}
	for _, s := range states {
		st, ok := d.StateOf(s)
		c, cok := d.Composite(s)
		say("%s: %+v %v; %+v %v; regions %v; ancestors %v; sources %v", s, st, ok, c, cok, d.Regions(s), d.Ancestors(s), d.Sources(s))
		p, r := d.RegionOf(s)
		say("%s: region %s %s; driven %+v", s, p, r, d.Driven(st))
		for _, e := range events {
			tr, ok, err := d.Step(s, e, first)
			say("%s on %q: accepts %v; caller %q; step %+v %v %v", s, e, d.Accepts(s, e), d.CallerRefusal(s, e), tr, ok, err)
			for _, to := range states {
				if why := d.Refusal(s, e, to); why == "" || to == "NOWHERE" {
					say("%s -> %s on %q: %q", s, to, e, why)
				}
			}
		}
	}
	return out
}

func TestIndexedLookupsAnswerAsScans(t *testing.T) {
	t.Parallel()
	for name, d := range map[string]runtime.Definition{"player": playerDef(), "review": reviewDef(), "start in open": startInOpen()} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			big := padded(d, 40)
			if diff := cmp.Diff(answers(&d, &d), answers(&big, &d)); diff != "" {
				t.Errorf("indexed answers differ from scanned ones (-scan +indexed):\n%s", diff)
			}
		})
	}
}

// TestIndexFollowsReplacedSlices changes a large definition's slices
// after its first lookups, as a definition being built does: the answers
// are those of the new slices.
func TestIndexFollowsReplacedSlices(t *testing.T) {
	t.Parallel()
	d := padded(reviewDef(), 40)
	if _, ok := d.State("LATE"); ok {
		t.Fatal("State(LATE) found before LATE was declared")
	}
	d.States = append(slices.Clip(d.States), runtime.StateSpec{Name: "LATE", Status: runtime.StatusRunning})
	d.Transitions = append(slices.Clip(d.Transitions), runtime.TransitionSpec{From: "LATE", To: "Merged", Event: "Merge"})
	if _, ok := d.State("LATE"); !ok {
		t.Error("State(LATE) not found once LATE was declared")
	}
	if !d.Accepts("LATE", "Merge") || !d.Allows("LATE", "Merge", "Merged") {
		t.Error("the row LATE -> Merged on Merge, added after the first lookups, is not found")
	}
	copied := d
	copied.Transitions = slices.Clone(d.Transitions[:len(d.Transitions)-1])
	if copied.Accepts("LATE", "Merge") {
		t.Error("a copy without the row LATE -> Merged accepts Merge in LATE")
	}
	if !d.Accepts("LATE", "Merge") {
		t.Error("the definition the copy was made of no longer accepts Merge in LATE")
	}
}

// TestIndexConcurrentFirstLookups has goroutines look up a large
// definition none has looked up before (run with -race).
func TestIndexConcurrentFirstLookups(t *testing.T) {
	t.Parallel()
	d := padded(reviewDef(), 200)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			name := fmt.Sprintf("PAD%04d", 199-i)
			if st, ok := d.StateOf(name); !ok || st.Name != name {
				t.Errorf("StateOf(%s) = %+v, %v", name, st, ok)
			}
			if !d.Allows(name, "Pad"+name, name) {
				t.Errorf("no row %s -> %s", name, name)
			}
		})
	}
	wg.Wait()
}
