// Package gen_test measures the generator on a large machine: 200 states and
// 2,000 transitions, built in memory by largeSource.
package gen_test

import (
	"fmt"
	"go/format"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/dsl"
	"github.com/fsmgen/fsmgen/gen"
)

const (
	running      = 197 // non-terminal states S000 (initial) to S196
	finals       = 3   // DONE, FAILED, CANCELLED
	states       = running + finals
	transitions  = 2000
	sideEvents   = 19 // E01 to E19, besides Next
	guardsCount  = 12 // G01 to G12
	maxGroupSize = 3  // rows sharing one (state, event) pair
)

var finalNames = [finals]string{"DONE", "FAILED", "CANCELLED"}

func stateName(i int) string {
	if i >= running {
		return finalNames[i-running]
	}
	return fmt.Sprintf("S%03d", i)
}

// largeSource returns a valid .fsm file of one machine with 200 states and
// 2,000 transitions, the same bytes on every call.
//
// The spine S000 -> S001 -> ... -> S196 -> DONE on Next makes every state
// reachable from the initial one and able to reach a final one. The other
// rows come in groups sharing a (state, event) pair, on events E01 to E19
// chosen at random (fixed seed): a group of one row is guarded or not; a
// larger group is guarded rows with distinct guards (when G, when !G or
// unless G) followed by one unguarded fallback, the only shape the checker
// accepts without a warning. Some events carry payloads, some states retry
// or wait, and rows into a final state sometimes declare an outcome.
func largeSource() []byte {
	r := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	b.WriteString("// Large is a generated machine for benchmarking the generator.\n")
	b.WriteString("machine Large {\n")
	for i := range running {
		switch {
		case i == 0:
			b.WriteString("    initial S000\n")
		case i%11 == 0:
			fmt.Fprintf(&b, "    state %s wait\n", stateName(i))
		case i%5 == 0:
			fmt.Fprintf(&b, "    state %s retry 3 backoff 1s factor 2 max 30s jitter 0.1\n", stateName(i))
		case i%7 == 0:
			fmt.Fprintf(&b, "    state %s retry database\n", stateName(i))
		default:
			fmt.Fprintf(&b, "    state %s\n", stateName(i))
		}
	}
	b.WriteString("    final DONE succeeded\n    final FAILED failed\n    final CANCELLED cancelled\n\n")

	b.WriteString("    cancel Next\n    event Next\n")
	for e := 1; e <= sideEvents; e++ {
		switch e % 4 {
		case 0:
			fmt.Fprintf(&b, "    event E%02d\n", e)
		case 1:
			fmt.Fprintf(&b, "    event E%02d { id string; count int }\n", e)
		case 2:
			fmt.Fprintf(&b, "    event E%02d { score float64; tags []string; at time.Time }\n", e)
		case 3:
			fmt.Fprintf(&b, "    event E%02d { reason string }\n", e)
		}
	}
	b.WriteString("\n")
	for g := 1; g <= guardsCount; g++ {
		fmt.Fprintf(&b, "    guard G%02d\n", g)
	}
	b.WriteString("\n")

	n := 0
	row := func(from, to int, event, guard string) {
		fmt.Fprintf(&b, "    %s -> %s on %s%s", stateName(from), stateName(to), event, guard)
		if to >= running && r.IntN(3) == 0 {
			fmt.Fprintf(&b, " outcome %q", fmt.Sprintf("o%d", r.IntN(4)))
		}
		b.WriteString("\n")
		n++
	}
	for i := range running {
		row(i, i+1, "Next", "") // S196 -> DONE: i+1 == running
	}

	// used[s][e] marks the (state, side event) pairs that already have a group.
	var used [running][sideEvents + 1]bool
	for s := 0; n < transitions; s = (s + 1) % running {
		e := 1 + r.IntN(sideEvents)
		if used[s][e] {
			continue
		}
		used[s][e] = true
		event := fmt.Sprintf("E%02d", e)
		size := min(1+r.IntN(maxGroupSize), transitions-n)
		guards := r.Perm(guardsCount)
		for k := range size {
			guard := ""
			if k < size-1 || (size == 1 && r.IntN(2) == 0) {
				switch name := fmt.Sprintf("G%02d", guards[k]+1); r.IntN(3) {
				case 0:
					guard = " when " + name
				case 1:
					guard = " when !" + name
				case 2:
					guard = " unless " + name
				}
			}
			row(s, r.IntN(states), event, guard)
		}
	}
	b.WriteString("}\n")
	return []byte(b.String())
}

// TestLargeSource checks that the benchmarked source is what it claims:
// valid, without warnings, 200 states and 2,000 transitions.
func TestLargeSource(t *testing.T) {
	src := largeSource()
	spec, diags := dsl.Load("large.fsm", src)
	if len(diags) > 0 {
		t.Fatalf("large.fsm: %d diagnostics, first: %v", len(diags), diags[0])
	}
	m := spec.Machines[0]
	if len(m.States) != states || len(m.Transitions) != transitions {
		t.Fatalf("%d states and %d transitions, want %d and %d", len(m.States), len(m.Transitions), states, transitions)
	}
	files, err := gen.Generate(spec)
	if err != nil {
		t.Fatal(err)
	}
	// fsm.go, fsm_test.go, runs.go, diagram.mmd, diagram.dot, README.md
	if len(files) != 6 {
		t.Fatalf("%d files, want 6", len(files))
	}
	// gofmt must leave every Go file as it is.
	for _, f := range files {
		if !strings.HasSuffix(f.Path, ".go") {
			continue
		}
		formatted, err := format.Source(f.Content)
		if err != nil {
			t.Fatalf("%s: %v", f.Path, err)
		}
		if diff := cmp.Diff(string(formatted), string(f.Content)); diff != "" {
			t.Errorf("%s is not gofmt-clean (-gofmt +generated):\n%s", f.Path, diff)
		}
	}
	if string(largeSource()) != string(src) {
		t.Fatal("largeSource is not deterministic")
	}
}

// BenchmarkGenerateLarge is what fsmgen does for one .fsm file, short of
// writing: parse, check and render every generated file.
func BenchmarkGenerateLarge(b *testing.B) {
	src := largeSource()
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		spec, diags := dsl.Load("large.fsm", src)
		if diags.HasErrors() {
			b.Fatal(diags.Err())
		}
		if _, err := gen.Generate(spec); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadLarge is parse and check alone.
func BenchmarkLoadLarge(b *testing.B) {
	src := largeSource()
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		if _, diags := dsl.Load("large.fsm", src); diags.HasErrors() {
			b.Fatal(diags.Err())
		}
	}
}
