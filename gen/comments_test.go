package gen_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestCommentsNameRuntimeAPI: every name of package runtime that the
// generator's comments mention is declared there, so that a comment about
// the code the generator writes does not outlive a renamed or removed
// helper.
func TestCommentsNameRuntimeAPI(t *testing.T) {
	declared := map[string]bool{}
	fset := token.NewFileSet()
	rt, err := filepath.Glob(filepath.Join("..", "runtime", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range rt {
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
		t.Fatal("no declarations read from package runtime")
	}
	ref := regexp.MustCompile(`\bruntime\.([A-Z][A-Za-z0-9_]*)`)
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range files {
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range f.Comments {
			for _, c := range g.List {
				for _, m := range ref.FindAllStringSubmatch(c.Text, -1) {
					if !declared[m[1]] {
						t.Errorf("%s: a comment names runtime.%s, which package runtime does not declare", fset.Position(c.Pos()), m[1])
					}
				}
			}
		}
	}
}
