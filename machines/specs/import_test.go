package specs_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/dsl"
	"github.com/fsmgen/fsmgen/gen"
)

// flatRows describes a machine's rows after flattening, one line per row,
// sorted by leaf and trigger, in the order the machine tries them within
// one leaf and trigger (the order of rows on different events or leaves
// means nothing): the leaf, what triggers the row
// (an event; "after D" for a timer of the leaf or of a composite holding
// it, "after FIELD" for a timer taken from an event field; "always" for
// an eventless row; "done" for a completion row), its guard, its target
// (the history pseudostate for a history target) and "internal" if it is
// one. Timer events are named by their timer because an XState config
// names no event for a delayed transition.
func flatRows(m *dsl.Machine) []string {
	timers := map[*dsl.State]map[*dsl.Event]string{}
	for _, s := range append(slices.Clone(m.States), m.Composites...) {
		for _, tm := range s.Timers {
			if timers[s] == nil {
				timers[s] = map[*dsl.Event]string{}
			}
			if tm.Field != nil {
				timers[s][tm.Event] = "after " + tm.Field.Name
			} else {
				timers[s][tm.Event] = "after " + tm.After.String()
			}
		}
	}
	var out []string
	for _, t := range m.Transitions {
		trigger := "always"
		switch {
		case t.Done:
			trigger = "done"
		case t.Event != nil:
			trigger = t.Event.Name
			if d, ok := timers[t.Source][t.Event]; ok {
				trigger = d
			}
		}
		guard := ""
		var name string
		switch {
		case t.In != nil:
			name = "In(" + t.In.Name + ")"
		case t.Guard != nil:
			name = t.Guard.Name
		}
		if name != "" {
			guard = " when " + name
			if t.Negated {
				guard = " unless " + name
			}
		}
		to := t.To.Name
		if t.History != nil {
			to = t.History.Name
		}
		internal := ""
		if t.Internal {
			internal = " internal"
		}
		out = append(out, fmt.Sprintf("%s: %s%s -> %s%s", t.From.Name, trigger, guard, to, internal))
	}
	slices.SortStableFunc(out, func(a, b string) int {
		ka, _, _ := strings.Cut(a, " when")
		kb, _, _ := strings.Cut(b, " when")
		ka, _, _ = strings.Cut(ka, " unless")
		kb, _, _ = strings.Cut(kb, " unless")
		ka, _, _ = strings.Cut(ka, " ->")
		kb, _, _ = strings.Cut(kb, " ->")
		return strings.Compare(ka, kb)
	})
	return out
}

// tree describes a machine's states: each leaf and composite with its
// parent, each history with its kind.
func tree(m *dsl.Machine) []string {
	var out []string
	name := func(s *dsl.State) string {
		if s == nil {
			return "-"
		}
		return s.Name
	}
	for _, s := range m.States {
		out = append(out, fmt.Sprintf("leaf %s in %s final %v/%v", s.Name, name(s.Parent), s.Terminal(), s.Done))
	}
	for _, c := range m.Composites {
		if c.Parallel {
			out = append(out, fmt.Sprintf("parallel %s in %s", c.Name, name(c.Parent)))
			continue
		}
		out = append(out, fmt.Sprintf("composite %s in %s initial %s", c.Name, name(c.Parent), c.InitialChild.Name))
	}
	for _, h := range m.Histories {
		out = append(out, fmt.Sprintf("history %s of %s deep %v", h.Name, h.Parent.Name, h.Deep))
	}
	for _, s := range append(slices.Clone(m.States), m.Composites...) {
		for _, a := range s.Entry {
			out = append(out, fmt.Sprintf("%s entry %s", s.Name, a.Name))
		}
		for _, a := range s.Exit {
			out = append(out, fmt.Sprintf("%s exit %s", s.Name, a.Name))
		}
	}
	slices.Sort(out)
	return out
}

// TestImportXState imports each machine's xstate.json as fsmgen import
// -format xstate does and checks that the result is the nested .fsm
// file's machine: the same states, composites, histories and actions, and
// the same rows after flattening.
func TestImportXState(t *testing.T) {
	t.Parallel()
	for _, name := range append(slices.Clone(machines), parallelMachines...) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			want := load(t, filepath.Join(name, name+".fsm"))
			data, err := os.ReadFile(filepath.Join(name, "xstate.json"))
			if err != nil {
				t.Fatal(err)
			}
			src, notes, err := gen.ImportXState(name+".fsm", data)
			if err != nil {
				t.Fatalf("import: %v", err)
			}
			t.Logf("notes: %s", strings.Join(notes, "; "))
			spec, ds := dsl.Load(name+".fsm", src)
			if spec == nil || ds.HasErrors() {
				t.Fatalf("the imported machine does not check:\n%v\n%s", ds.Err(), src)
			}
			got := spec.Machines[0]
			if diff := cmp.Diff(tree(want), tree(got)); diff != "" {
				t.Errorf("states (-%s.fsm +imported):\n%s", name, diff)
			}
			if diff := cmp.Diff(flatRows(want), flatRows(got)); diff != "" {
				t.Errorf("rows after flattening (-%s.fsm +imported):\n%s\nimported:\n%s", name, diff, src)
			}
		})
	}
}
