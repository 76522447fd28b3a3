package gen

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/fsmgen/fsmgen/dsl"
)

// File is one generated file: its path, relative to the directory of the
// .fsm file it came from and slash-separated, and its content.
type File struct {
	Path    string
	Content []byte
}

// The files generated for each machine, inside a directory named after its
// Go package.
const (
	GoFile      = "fsm.go"
	TestFile    = "fsm_test.go"
	MermaidFile = "diagram.mmd"
	DOTFile     = "diagram.dot"
	PageFile    = "README.md"
)

// Generate renders every file of every machine of spec, in memory. It
// returns the files sorted by path, or an error and no file at all.
// Output depends only on spec: no time stamp, no absolute path.
func Generate(spec *dsl.Spec) ([]File, error) {
	source := filepath.Base(spec.Filename)
	var out []File
	for _, m := range spec.Machines {
		code, err := render(machineCode(source, m))
		if err != nil {
			return nil, fmt.Errorf("machine %s: %w", m.Name, err)
		}
		test, err := render(testCode(source, m))
		if err != nil {
			return nil, fmt.Errorf("machine %s tests: %w", m.Name, err)
		}
		mmd := Mermaid(m)
		out = append(out,
			File{Path: path.Join(m.Package, GoFile), Content: code},
			File{Path: path.Join(m.Package, TestFile), Content: test},
			File{Path: path.Join(m.Package, MermaidFile), Content: mmd},
			File{Path: path.Join(m.Package, DOTFile), Content: DOT(m)},
			File{Path: path.Join(m.Package, PageFile), Content: Page(source, m, mmd)},
		)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

func render(f *jen.File) ([]byte, error) {
	var buf bytes.Buffer
	if err := f.Render(&buf); err != nil {
		return nil, err
	}
	return groupImports(buf.Bytes())
}

// groupImports rewrites the import block the way goimports lays it out:
// standard library first, then a blank line, then everything else.
func groupImports(src []byte) ([]byte, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", src, parser.ImportsOnly|parser.ParseComments)
	if err != nil {
		return nil, err
	}
	var decl *ast.GenDecl
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.IMPORT && g.Lparen.IsValid() {
			decl = g
			break
		}
	}
	if decl == nil {
		return src, nil
	}
	var std, other []string
	for _, spec := range decl.Specs {
		is := spec.(*ast.ImportSpec)
		line := is.Path.Value
		if is.Name != nil {
			line = is.Name.Name + " " + line
		}
		path, _ := strconv.Unquote(is.Path.Value)
		if strings.Contains(strings.SplitN(path, "/", 2)[0], ".") {
			other = append(other, line)
		} else {
			std = append(std, line)
		}
	}
	var b bytes.Buffer
	b.WriteString("import (\n")
	for _, l := range std {
		b.WriteString("\t" + l + "\n")
	}
	if len(std) > 0 && len(other) > 0 {
		b.WriteString("\n")
	}
	for _, l := range other {
		b.WriteString("\t" + l + "\n")
	}
	b.WriteString(")")
	start, end := fset.Position(decl.Pos()).Offset, fset.Position(decl.End()).Offset
	out := append(append(append([]byte(nil), src[:start]...), b.Bytes()...), src[end:]...)
	return format.Source(out)
}
