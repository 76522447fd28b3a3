package gen_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"path/filepath"
	"slices"
	"testing"

	"github.com/fsmgen/fsmgen/dsl"
)

// nameInputs returns the .fsm files whose generated code the name checks
// read: the golden inputs, which together use every feature of the
// language (see TestGoldenCoverage), and the repository's own machines.
func nameInputs(t *testing.T) []string {
	t.Helper()
	files := inputs(t)
	for _, pattern := range []string{"../machines/*/*.fsm", "../bench/machines/*.fsm"} {
		more, err := filepath.Glob(filepath.FromSlash(pattern))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, more...)
	}
	return files
}

// declaredNames returns the exported top-level identifiers a Go file
// declares, and the exported methods it declares on the type Machine.
func declaredNames(f *ast.File) (top, methods []string) {
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				top = append(top, d.Name.Name)
				continue
			}
			rt := d.Recv.List[0].Type
			if star, ok := rt.(*ast.StarExpr); ok {
				rt = star.X
			}
			if id, ok := rt.(*ast.Ident); ok && id.Name == "Machine" {
				methods = append(methods, d.Name.Name)
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					top = append(top, s.Name.Name)
				case *ast.ValueSpec:
					for _, n := range s.Names {
						top = append(top, n.Name)
					}
				}
			}
		}
	}
	keep := func(names []string) []string {
		return slices.DeleteFunc(names, func(n string) bool { return !token.IsExported(n) })
	}
	return keep(top), keep(methods)
}

// TestGeneratedNamesAreKnown reads every Go file the generator writes for
// machines that use every feature, and checks that each exported top-level
// identifier it declares, and each exported method of Machine, is one the
// checker knows (dsl.GoNames): so a state or event that would collide with
// it is refused by check instead of breaking the build of the generated
// package. Unexported identifiers cannot collide: the Go name of every
// state, event and event set is exported.
func TestGeneratedNamesAreKnown(t *testing.T) {
	t.Parallel()
	for _, file := range nameInputs(t) {
		spec := load(t, file)
		files := generate(t, file)
		for _, m := range spec.Machines {
			known := dsl.GoNames(m)
			goFiles := 0
			for _, f := range files {
				if path.Dir(f.Path) != m.Package || path.Ext(f.Path) != ".go" {
					continue
				}
				goFiles++
				af, err := parser.ParseFile(token.NewFileSet(), f.Path, f.Content, 0)
				if err != nil {
					t.Fatalf("%s: %s: %v", file, f.Path, err)
				}
				top, methods := declaredNames(af)
				if len(top) == 0 {
					t.Errorf("%s: %s declares no exported name", file, f.Path)
				}
				for _, n := range top {
					if !slices.Contains(known, n) {
						t.Errorf("%s: %s declares %s, which dsl.GoNames does not list: the checker would let a declaration collide with it", file, f.Path, n)
					}
				}
				for _, n := range methods {
					if !slices.Contains(known, n) {
						t.Errorf("%s: %s declares method Machine.%s, which dsl.GoNames does not list", file, f.Path, n)
					}
				}
			}
			if goFiles < 2 {
				t.Errorf("%s: machine %s has %d Go files, want the code and its tests", file, m.Name, goFiles)
			}
		}
	}
}

// TestReservedNamesRefused checks that the checker refuses an event named
// after each reserved identifier, with the message that says why.
func TestReservedNamesRefused(t *testing.T) {
	t.Parallel()
	for _, name := range dsl.ReservedNames() {
		src := "machine M {\n    initial A\n    final DONE succeeded\n    event " + name + "\n    A -> DONE on " + name + "\n}\n"
		_, ds := dsl.Load("t.fsm", []byte(src))
		want := "t.fsm:4:11: event " + name + " would be named " + name + " in Go, a name the generated package declares itself"
		var got []string
		for _, d := range ds {
			got = append(got, d.String())
		}
		if !slices.Contains(got, want) {
			t.Errorf("event %s: diagnostics %q, want one %q", name, got, want)
		}
	}
}
