package store_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestEngineOperationsAreInternal checks that the package exports none of
// the operations only the engine may make (claims, leases, the fenced
// transition, retries, parking, the reads that drive runs) nor their types:
// they live in runtime/internal/enginestore.
func TestEngineOperationsAreInternal(t *testing.T) {
	t.Parallel()
	engineOnly := map[string]bool{
		"Claim": true, "ClaimParams": true, "Lease": true, "Kind": true, "ExtendLease": true, "ReleaseLease": true, "InterruptLease": true,
		"Advance": true, "AdvanceParams": true, "Advanced": true, "Effects": true, "StepEffect": true,
		"MessageEffect": true, "StartEffect": true, "ScheduleRetry": true, "Park": true,
		"FinishedChildren": true, "Child": true, "AttemptEvents": true, "LoggedEvent": true,
		"Due": true, "DueIn": true, "KeepDue": true, "NotDue": true,
	}
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var exported []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, e.Name(), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Name.IsExported() {
					exported = append(exported, d.Name.Name)
				}
			case *ast.GenDecl:
				for _, sp := range d.Specs {
					switch sp := sp.(type) {
					case *ast.TypeSpec:
						exported = append(exported, sp.Name.Name)
					case *ast.ValueSpec:
						for _, n := range sp.Names {
							exported = append(exported, n.Name)
						}
					}
				}
			}
		}
	}
	var leaked []string
	for _, n := range exported {
		if engineOnly[n] {
			leaked = append(leaked, n)
		}
	}
	sort.Strings(leaked)
	if diff := cmp.Diff([]string(nil), leaked); diff != "" {
		t.Errorf("engine-only identifiers exported by package store (-want +got):\n%s", diff)
	}
}
