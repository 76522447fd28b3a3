package gen_test

import (
	"fmt"
	"go/parser"
	"go/token"
	"strings"
	"testing"

	"github.com/fsmgen/fsmgen/dsl"
	"github.com/fsmgen/fsmgen/gen"
)

// TestMoreThan255States checks that a machine of 300 states, more than a
// byte can number, checks and generates Go that parses.
func TestMoreThan255States(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("machine Long {\n    initial S0\n")
	for i := 1; i < 299; i++ {
		fmt.Fprintf(&b, "    state S%d\n", i)
	}
	b.WriteString("    final DONE succeeded\n    event Next\n")
	for i := 0; i < 298; i++ {
		fmt.Fprintf(&b, "    S%d -> S%d on Next\n", i, i+1)
	}
	b.WriteString("    S298 -> DONE on Next\n}\n")
	spec, ds := dsl.Load("long.fsm", []byte(b.String()))
	if ds.HasErrors() {
		t.Fatal(ds.Err())
	}
	if n := len(spec.Machines[0].States); n != 300 {
		t.Fatalf("%d states", n)
	}
	files, err := gen.Generate(spec)
	if err != nil {
		t.Fatal(err)
	}
	sawCode := false
	for _, f := range files {
		if !strings.HasSuffix(f.Path, ".go") {
			continue
		}
		if _, err := parser.ParseFile(token.NewFileSet(), f.Path, f.Content, 0); err != nil {
			t.Errorf("%s: %v", f.Path, err)
		}
		if f.Path == "long/fsm.go" {
			sawCode = true
			if !strings.Contains(string(f.Content), "type State uint16") {
				t.Error("State is not a uint16")
			}
		}
	}
	if !sawCode {
		t.Error("no long/fsm.go generated")
	}
}
