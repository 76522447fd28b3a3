package gen_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/gen"
)

// golden compares got with testdata/nested/NAME; go test ./gen -update
// rewrites it.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	file := filepath.Join("testdata", "nested", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run go test ./gen -update)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs from its golden file (-want +got):\n%s", name, diff)
	}
}

// TestDiagramNested draws the nested machines of testdata/nested: Mermaid
// composites with their start points, histories and final children; DOT
// clusters with edges clipped at their borders; rows drawn once, from the
// state they were written on.
func TestDiagramNested(t *testing.T) {
	t.Parallel()
	for _, file := range nestedInputs(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			m := load(t, file).Machines[0]
			base := strings.TrimSuffix(filepath.Base(file), ".fsm")
			golden(t, base+".mmd", gen.Mermaid(m))
			golden(t, base+".dot", gen.DOT(m))
			golden(t, base+".md", gen.Page(filepath.Base(file), m, gen.Mermaid(m)))
		})
	}
}
