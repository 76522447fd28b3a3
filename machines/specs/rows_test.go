package specs_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsmgen/fsmgen/dsl"
)

var update = flag.Bool("update", false, "rewrite the table of rows in README.md")

// load checks one .fsm file and returns its only machine.
func load(t *testing.T, path string) *dsl.Machine {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	spec, ds := dsl.Load(path, src)
	if spec == nil || ds.HasErrors() {
		t.Fatalf("%s does not check:\n%v", path, ds.Err())
	}
	if len(spec.Machines) != 1 {
		t.Fatalf("%s has %d machines, want 1", path, len(spec.Machines))
	}
	return spec.Machines[0]
}

// rows returns the written rows of m (one per row of the file, a FROM
// list or several events counting once) and the expanded ones (one per
// leaf and event).
func rows(m *dsl.Machine) (written, expanded int) {
	seen := map[string]bool{}
	for _, t := range m.Transitions {
		seen[t.Pos.String()] = true
	}
	return len(seen), len(m.Transitions)
}

// xstateTransitions counts the transition objects of an XState config:
// each entry of on, after, always and onDone, an array counting its
// elements.
func xstateTransitions(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var root map[string]any
	if err := json.Unmarshal(data, &root); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var count func(node map[string]any) int
	count = func(node map[string]any) int {
		n := 0
		for _, k := range []string{"on", "after"} {
			group, _ := node[k].(map[string]any)
			for _, v := range group {
				if list, ok := v.([]any); ok {
					n += len(list)
				} else {
					n++
				}
			}
		}
		for _, k := range []string{"always", "onDone"} {
			switch a := node[k].(type) {
			case []any:
				n += len(a)
			case map[string]any, string:
				n++
			}
		}
		states, _ := node["states"].(map[string]any)
		for _, s := range states {
			if child, ok := s.(map[string]any); ok {
				n += count(child)
			}
		}
		return n
	}
	return count(root)
}

// TestRows counts each machine's rows, flat and nested, and its XState
// transitions, and checks the table of README.md.
func TestRows(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("| machine | flat .fsm: written (expanded) | nested .fsm: written (expanded) | XState transitions | leaves flat / nested | composites |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	for _, name := range machines {
		flat := load(t, filepath.Join(name, name+"_flat.fsm"))
		nested := load(t, filepath.Join(name, name+".fsm"))
		fw, fe := rows(flat)
		nw, ne := rows(nested)
		xs := xstateTransitions(t, filepath.Join(name, "xstate.json"))
		fmt.Fprintf(&b, "| %s | %d (%d) | %d (%d) | %d | %d / %d | %d |\n", name, fw, fe, nw, ne, xs, len(flat.States), len(nested.States), len(nested.Composites))
	}
	// A machine with parallel states has no flat form: its runs are in
	// combinations of its regions' leaves.
	for _, name := range parallelMachines {
		nested := load(t, filepath.Join(name, name+".fsm"))
		nw, ne := rows(nested)
		xs := xstateTransitions(t, filepath.Join(name, "xstate.json"))
		fmt.Fprintf(&b, "| %s | - | %d (%d) | %d | - / %d | %d |\n", name, nw, ne, xs, len(nested.States), len(nested.Composites))
	}
	table := b.String()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	const open, end = "<!-- rows -->\n", "<!-- /rows -->\n"
	before, rest, ok1 := strings.Cut(string(readme), open)
	_, after, ok2 := strings.Cut(rest, end)
	if !ok1 || !ok2 {
		t.Fatalf("README.md has no %q ... %q", open, end)
	}
	want := before + open + table + end + after
	if *update {
		if err := os.WriteFile("README.md", []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if string(readme) != want {
		t.Errorf("README.md's table of rows is stale (go test ./machines/specs -run TestRows -update rewrites it); want:\n%s", table)
	}
}
