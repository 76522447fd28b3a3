package gen_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestCommentsNameRuntimeAPI: every name of package runtime or of package
// runtime/fsmimpl that the generator mentions, in its own comments or in
// the comments it writes into generated code (string literals), is
// declared in that package, so that a comment about the code the generator
// writes does not outlive a renamed, moved or removed name.
func TestCommentsNameRuntimeAPI(t *testing.T) {
	fset := token.NewFileSet()
	declared := map[string]map[string]bool{
		"runtime": declarations(t, fset, filepath.Join("..", "runtime")),
		"fsmimpl": declarations(t, fset, filepath.Join("..", "runtime", "fsmimpl")),
	}
	ref := regexp.MustCompile(`\b(runtime|fsmimpl)\.([A-Z][A-Za-z0-9_]*)`)
	check := func(pos token.Pos, text string) {
		for _, m := range ref.FindAllStringSubmatch(text, -1) {
			if !declared[m[1]][m[2]] {
				t.Errorf("%s: %s.%s is named, which package %s does not declare", fset.Position(pos), m[1], m[2], m[1])
			}
		}
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range f.Comments {
			for _, c := range g.List {
				check(c.Pos(), c.Text)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil {
					check(lit.Pos(), s)
				}
			}
			return true
		})
	}
}

// declarations returns the top-level names that the package in dir
// declares in its non-test files.
func declarations(t *testing.T, fset *token.FileSet, dir string) map[string]bool {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string]bool{}
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					declared[d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						declared[s.Name.Name] = true
					case *ast.ValueSpec:
						for _, n := range s.Names {
							declared[n.Name] = true
						}
					}
				}
			}
		}
	}
	if len(declared) == 0 {
		t.Fatalf("no declarations read from %s", dir)
	}
	return declared
}
