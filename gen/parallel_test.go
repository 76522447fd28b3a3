package gen_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/alecthomas/participle/v2/lexer"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/fsmgen/fsmgen/dsl"
	"github.com/fsmgen/fsmgen/gen"
)

// parallelInputs are the machines with parallel states of the language's
// test inputs, dsl/testdata/parallel.
func parallelInputs(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "dsl", "testdata", "parallel", "*.fsm"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no ../dsl/testdata/parallel/*.fsm: %v", err)
	}
	return files
}

// TestParallelExports draws and exports the machines with parallel
// states, each output a golden file of testdata/nested (PARALLEL.mmd,
// .dot, .md, .xstate.json, .scxml, .imported): Mermaid composites whose
// regions are separated by "--", DOT clusters with a dashed cluster per
// region, XState nodes of type "parallel" with stateIn guards, SCXML
// <parallel> elements with In() conditions. The XState export imports
// back to the same machine, and exporting that gives the same bytes.
func TestParallelExports(t *testing.T) {
	t.Parallel()
	for _, file := range parallelInputs(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			m := load(t, file).Machines[0]
			base := "parallel_" + strings.TrimSuffix(filepath.Base(file), ".fsm")
			golden(t, base+".mmd", gen.Mermaid(m))
			golden(t, base+".dot", gen.DOT(m))
			golden(t, base+".md", gen.Page(filepath.Base(file), m, gen.Mermaid(m)))
			exported, err := gen.XState(m)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, base+".xstate.json", exported)
			sc, err := gen.SCXML(m)
			if err != nil {
				t.Fatal(err)
			}
			wellFormedSCXML(t, sc)
			golden(t, base+".scxml", sc)

			src := importXState(t, file, exported)
			golden(t, base+".imported", src)
			spec, ds := dsl.Load(file, src)
			if spec == nil || ds.HasErrors() {
				t.Fatalf("the import does not check: %v\n%s", ds.Err(), src)
			}
			back := spec.Machines[0]
			ignore := cmp.Options{cmpopts.IgnoreTypes(lexer.Position{}), cmpopts.IgnoreFields(dsl.Machine{}, "Upgrades")}
			if diff := cmp.Diff(m, back, ignore); diff != "" {
				t.Errorf("the imported machine differs (-exported +imported):\n%s\n%s", diff, src)
			}
			again, err := gen.XState(back)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(exported), string(again)); diff != "" {
				t.Errorf("exporting the import differs (-first +second):\n%s", diff)
			}
		})
	}
}
