// Package docs holds the test that compiles the Go code of the
// documentation: TestGoBlocks type-checks every Go block of README.md,
// docs/*.md, bench/*.md and contrib/*/*.md against the packages of this
// checkout, and fails with the file and line of the block and the type
// checker's message. Its conventions:
//
//   - A block fenced with ```go is checked. One fenced with ```go skip is
//     not, and the test lists it as skipped: code that is illustrative on
//     purpose (an excerpt of generated code, pseudo-code). One fenced with
//     ```go file=NAME is a file of the program a tutorial page builds, which
//     its own test builds and runs (programPages: docs/getting-started.md,
//     TestGettingStarted), and only such a page may have one. No other word
//     may follow go.
//   - A block with a package clause is a whole file, checked as it is, alone.
//   - Any other block is a fragment: the declarations it opens with
//     (imports, types, functions, methods) are checked at the top level of a
//     file, the statements that follow them, if any, as the body of a
//     function. "{ ... }" elides code: it is checked as an empty block or
//     composite literal. Variables and imports that a fragment leaves unused
//     are no errors.
//   - A fragment is checked in one package with its page's context,
//     testdata/PAGE.go (testdata/docs/durable-workflows.go for
//     docs/durable-workflows.md): the declarations the page's fragments take
//     as given (ctx, eng, an input type, ...) and the packages they use,
//     which a fragment names without importing them. A fragment sees the
//     context, not the page's other fragments.
//   - A block fenced with ```fsm is a machine of the page: it is checked and
//     generated as fsmgen generate does, and its package is imported as
//     example.com/PACKAGE (example.com/refund). One fenced ```fsm skip is an
//     excerpt, not checked; a machine in a block fenced without a language
//     is an error, so that every machine a page shows is one or the other.
//   - A block is checked in the module of the packages it imports: a block
//     importing a package of contrib/otel is checked in that module, with its
//     dependencies; every other block in the main module.
//
// The packages a block imports are read from their export data, which
// go list -export compiles into the build cache: no network is needed once
// the modules' dependencies are in the module cache. The subtests are named
// by block (go test ./docs -run 'GoBlocks/docs/operating.md:43').
package docs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/scanner"
	"go/token"
	"go/types"
	"io"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/dsl"
	"github.com/fsmgen/fsmgen/gen"
)

// root is the repository's root, the main module's directory, from the
// test's working directory.
const root = ".."

// pageGlobs are the pages whose blocks are checked, relative to root.
var pageGlobs = []string{"README.md", "docs/*.md", "bench/*.md", "contrib/*/*.md"}

// moduleGlobs find the modules a block may be checked in, besides the main
// module.
var moduleGlobs = []string{"bench/go.mod", "contrib/*/go.mod"}

// generatedPrefix is the import path prefix of the packages generated from
// a page's ```fsm blocks.
const generatedPrefix = "example.com/"

// block is one fenced code block of a page.
type block struct {
	page string // the page's path from root, slash-separated
	line int    // the line of the opening fence
	info string // the fence's info string: "go", "go skip", "fsm", ...
	text string // the lines between the fences, as written
}

func (b block) String() string { return fmt.Sprintf("%s:%d", b.page, b.line) }

// filename is the name of the file the block is parsed as, whose line
// directives name the page: a name without a directory, which the parser
// would prefix to the directives' relative names.
func (b block) filename() string { return strings.ReplaceAll(b.String(), "/", "_") + ".go" }

// parseBlocks returns the fenced code blocks of a page: fences of three or
// more backticks or tildes, closed by a fence of the same character at least
// as long, as CommonMark has them.
func parseBlocks(page string, src []byte) ([]block, error) {
	var (
		out   []block
		open  *block
		fence string
		body  []string
	)
	for i, line := range strings.Split(string(src), "\n") {
		trimmed := strings.TrimLeft(line, " \t")
		if open == nil {
			if f := fenceOf(trimmed); f != "" {
				open = &block{page: page, line: i + 1, info: strings.TrimSpace(trimmed[len(f):])}
				fence, body = f, nil
			}
			continue
		}
		if f := fenceOf(trimmed); f != "" && f[0] == fence[0] && len(f) >= len(fence) && strings.TrimSpace(trimmed[len(f):]) == "" {
			open.text = strings.Join(body, "\n") + "\n"
			out = append(out, *open)
			open = nil
			continue
		}
		body = append(body, line)
	}
	if open != nil {
		return nil, fmt.Errorf("%s: code block not closed", open)
	}
	return out, nil
}

// fenceOf returns the fence that line opens with, or "".
func fenceOf(line string) string {
	for _, c := range "`~" {
		n := 0
		for n < len(line) && rune(line[n]) == c {
			n++
		}
		if n >= 3 {
			return line[:n]
		}
	}
	return ""
}

// untaggedMachine finds a machine declaration at the start of a line.
var untaggedMachine = regexp.MustCompile(`(?m)^\s*machine\s+\w+\s*\{`)

// elision is "{ ... }", code left out of a block.
var elision = regexp.MustCompile(`\{\s*\.\.\.\s*\}`)

// elide blanks the dots of every "{ ... }" in src, keeping every other
// character in place, so that positions stay those of the page.
func elide(src string) string {
	return elision.ReplaceAllStringFunc(src, func(s string) string {
		return strings.Replace(s, "...", "   ", 1)
	})
}

// lineDirective makes the positions of what follows it those of the page,
// from the block's first line on.
func lineDirective(b block) string {
	return fmt.Sprintf("//line %s:%d:1\n", b.page, b.line+1)
}

// module is a Go module of the repository.
type module struct {
	path string // module path
	dir  string // directory, relative to the test's
}

// modules returns the main module and the others moduleGlobs find, the
// main module first.
func modules(t *testing.T) []module {
	t.Helper()
	files := []string{filepath.Join(root, "go.mod")}
	for _, g := range moduleGlobs {
		m, err := filepath.Glob(filepath.Join(root, g))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	var mods []module
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		p := modfile.ModulePath(data)
		if p == "" {
			t.Fatalf("%s: no module path", f)
		}
		mods = append(mods, module{path: p, dir: filepath.Dir(f)})
	}
	return mods
}

// moduleOf returns the module a block importing paths is checked in: the
// module of the deepest module path that holds one of them, the main
// module when none but the main module does.
func moduleOf(mods []module, paths []string) (module, error) {
	best := mods[0]
	for _, p := range paths {
		for _, m := range mods[1:] {
			if p != m.path && !strings.HasPrefix(p, m.path+"/") {
				continue
			}
			if best != mods[0] && best != m {
				return best, fmt.Errorf("imports packages of two modules, %s and %s", best.path, m.path)
			}
			best = m
		}
	}
	return best, nil
}

// listed is what go list says of a package.
type listed struct {
	ImportPath string
	Name       string
	Export     string
	Error      *struct{ Err string }
}

// list runs go list -export on paths and their dependencies in m, and
// returns what it says of each package by import path.
func list(t *testing.T, m module, paths []string) map[string]listed {
	t.Helper()
	args := append([]string{"list", "-e", "-export", "-deps", "-json=ImportPath,Name,Export,Error"}, paths...)
	cmd := exec.Command("go", args...)
	cmd.Dir = m.dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go list in %s: %v\n%s", m.dir, err, stderr.Bytes())
	}
	pkgs := make(map[string]listed)
	dec := json.NewDecoder(&stdout)
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list in %s: %v", m.dir, err)
		}
		pkgs[p.ImportPath] = p
	}
	return pkgs
}

// importPath returns the path s imports.
func importPath(s *ast.ImportSpec) string {
	p, err := strconv.Unquote(s.Path.Value)
	if err != nil {
		return s.Path.Value // the parser accepted it: not reached
	}
	return p
}

// imports returns the import paths of f.
func imports(f *ast.File) []string {
	var paths []string
	for _, s := range f.Imports {
		paths = append(paths, importPath(s))
	}
	return paths
}

// page is a page's blocks, context and generated packages.
type page struct {
	path    string
	blocks  []block
	context *ast.File           // nil when the page has none
	gen     map[string][]gofile // generated packages' files by import path
	from    map[string]block    // the ```fsm block of each generated package
	errs    []string            // what is wrong with its machines
}

// gofile is a Go file by name.
type gofile struct {
	name string
	src  []byte
}

// readPage reads a page and its context.
func readPage(t *testing.T, fset *token.FileSet, name string) *page {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	ctxName := filepath.Join("testdata", filepath.FromSlash(strings.TrimSuffix(name, ".md")+".go"))
	ctx, err := os.ReadFile(ctxName)
	if errors.Is(err, os.ErrNotExist) {
		ctx, err = nil, nil
	}
	if err != nil {
		t.Fatal(err)
	}
	p, err := newPage(fset, name, src, path.Join("docs", filepath.ToSlash(ctxName)), ctx)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// newPage parses page name's source and its context ctx (none when nil),
// and generates the packages of its machines.
func newPage(fset *token.FileSet, name string, src []byte, ctxName string, ctx []byte) (*page, error) {
	bs, err := parseBlocks(name, src)
	if err != nil {
		return nil, err
	}
	p := &page{path: name, blocks: bs, gen: make(map[string][]gofile), from: make(map[string]block)}
	if ctx != nil {
		if p.context, err = parser.ParseFile(fset, ctxName, ctx, parser.ParseComments); err != nil {
			return nil, fmt.Errorf("the context of %s: %w", name, err)
		}
	}
	for _, b := range bs {
		if b.info == "" && untaggedMachine.MatchString(b.text) {
			p.errs = append(p.errs, fmt.Sprintf("%s: a machine in a block without a language: fence it ```fsm to have it checked and generated, or ```fsm skip for an excerpt", b))
		}
		if b.info != "fsm" {
			continue
		}
		spec, diags := dsl.Load(b.page, []byte(b.text))
		for _, d := range diags {
			if d.Severity == dsl.Error {
				p.errs = append(p.errs, fmt.Sprintf("%s:%d:%d: %s (fsm block at %s)", b.page, b.line+d.Pos.Line, d.Pos.Column, d.Message, b))
			}
		}
		if spec == nil {
			continue
		}
		files, err := gen.Generate(spec)
		if err != nil {
			p.errs = append(p.errs, fmt.Sprintf("%s: generate: %v", b, err))
			continue
		}
		for _, f := range files {
			if path.Ext(f.Path) != ".go" || strings.HasSuffix(f.Path, "_test.go") {
				continue
			}
			imp := generatedPrefix + path.Dir(f.Path)
			if from, ok := p.from[imp]; ok && from != b {
				p.errs = append(p.errs, fmt.Sprintf("%s: generates package %s, as %s does", b, path.Base(imp), from))
				continue
			}
			p.from[imp] = b
			p.gen[imp] = append(p.gen[imp], gofile{name: imp + "/" + path.Base(f.Path), src: f.Content})
		}
	}
	return p, nil
}

// check is one Go block to type-check.
type check struct {
	block   block
	page    *page
	whole   bool      // a file with a package clause
	file    *ast.File // the block's file; a fragment's without the context's imports
	err     error     // the block does not parse
	imports []string  // the paths it imports itself
	mod     module
}

// prepare parses a Go block into a check.
func prepare(fset *token.FileSet, p *page, b block) *check {
	c := &check{block: b, page: p}
	text := elide(b.text)
	if _, err := parser.ParseFile(fset, b.filename(), lineDirective(b)+text, parser.PackageClauseOnly); err == nil {
		c.whole = true
		c.file, c.err = parser.ParseFile(fset, b.filename(), lineDirective(b)+text, parser.ParseComments)
		if c.file != nil {
			c.imports = imports(c.file)
		}
		return c
	}
	c.file, c.err = parseFragment(fset, p, b, text, nil)
	if c.file != nil {
		c.imports = imports(c.file)
	}
	return c
}

// parseFragment parses a fragment into a file of the context's package,
// importing first the paths of extra by name: the declarations the fragment
// opens with at the top level, its statements after them as the body of a
// function.
func parseFragment(fset *token.FileSet, p *page, b block, text string, extra map[string]string) (*ast.File, error) {
	pkg := "doc"
	if p.context != nil {
		pkg = p.context.Name.Name
	}
	var head strings.Builder
	fmt.Fprintf(&head, "package %s\n", pkg)
	if len(extra) > 0 {
		// On one line, which is the fence's for the type checker.
		fmt.Fprintf(&head, "//line %s:%d:1\nimport (", b.page, b.line)
		for _, n := range slices.Sorted(maps.Keys(extra)) {
			fmt.Fprintf(&head, "%s %q; ", n, extra[n])
		}
		head.WriteString(")\n")
	}
	prefix := head.String() + lineDirective(b)
	f, err := parser.ParseFile(fset, b.filename(), prefix+text, parser.ParseComments)
	if err == nil {
		return f, nil
	}
	// The statements start at the line where the parser found no
	// declaration.
	var list scanner.ErrorList
	if !errors.As(err, &list) || len(list) == 0 || !strings.HasPrefix(list[0].Msg, "expected declaration") {
		return nil, err
	}
	split := list[0].Pos.Offset - len(prefix)
	split = strings.LastIndex(text[:split], "\n") + 1
	line := b.line + strings.Count(text[:split], "\n")
	return parser.ParseFile(fset, b.filename(), prefix+text[:split]+"func _() {\n"+
		lineDirective(block{page: b.page, line: line})+text[split:]+"}\n", parser.ParseComments)
}

// packageNames returns the names a fragment uses as the left of a selector,
// which may name packages.
func packageNames(f *ast.File) map[string]bool {
	used := make(map[string]bool)
	ast.Inspect(f, func(n ast.Node) bool {
		if s, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := s.X.(*ast.Ident); ok {
				used[id.Name] = true
			}
		}
		return true
	})
	return used
}

// pageImporter imports the packages generated from a page's machines from
// source and every other package from its export data in a module.
type pageImporter struct {
	fset    *token.FileSet
	base    types.Importer
	page    *page
	checked map[string]*types.Package
	errs    []error // the type errors of the generated packages
}

// Import implements types.Importer.
func (im *pageImporter) Import(p string) (*types.Package, error) {
	files, ok := im.page.gen[p]
	if !ok && strings.HasPrefix(p, generatedPrefix) {
		return nil, fmt.Errorf("no ```fsm block of %s generates package %s", im.page.path, path.Base(p))
	}
	if !ok {
		return im.base.Import(p)
	}
	if pkg, ok := im.checked[p]; ok {
		return pkg, nil
	}
	var asts []*ast.File
	for _, f := range files {
		a, err := parser.ParseFile(im.fset, f.name, f.src, parser.ParseComments)
		if err != nil {
			return nil, fmt.Errorf("generated %s: %w", p, err)
		}
		asts = append(asts, a)
	}
	conf := types.Config{Importer: im, Error: func(err error) { im.errs = append(im.errs, err) }}
	pkg, _ := conf.Check(p, im.fset, asts, nil)
	im.checked[p] = pkg
	return pkg, nil
}

// unused says whether err is about a variable or an import left unused,
// which a block may leave.
func unused(err types.Error) bool {
	return err.Soft && (strings.HasPrefix(err.Msg, "declared and not used") || strings.HasSuffix(err.Msg, "imported and not used"))
}

// pages returns the pages pageGlobs find, relative to root, slash-separated.
func pages(t *testing.T) []string {
	t.Helper()
	var names []string
	for _, g := range pageGlobs {
		m, err := filepath.Glob(filepath.Join(root, g))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range m {
			rel, err := filepath.Rel(root, f)
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, filepath.ToSlash(rel))
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// given returns the paths a page's context and generated packages import.
func (p *page) given(fset *token.FileSet) []string {
	var paths []string
	if p.context != nil {
		paths = imports(p.context)
	}
	for _, files := range p.gen {
		for _, f := range files {
			// Generated code parses (gen checks it): on an error, the
			// imports read are those before it, and the type check
			// reports the error.
			a, _ := parser.ParseFile(fset, f.name, f.src, parser.ImportsOnly)
			if a != nil {
				paths = append(paths, imports(a)...)
			}
		}
	}
	return paths
}

// loaded is the packages of a module, from their export data.
type loaded struct {
	pkgs     map[string]listed
	importer types.Importer
}

// load lists paths in m and makes an importer of their export data.
func load(t *testing.T, fset *token.FileSet, m module, paths []string) *loaded {
	t.Helper()
	l := &loaded{pkgs: make(map[string]listed)}
	if len(paths) > 0 {
		l.pkgs = list(t, m, paths)
	}
	l.importer = importer.ForCompiler(fset, "gc", func(p string) (io.ReadCloser, error) {
		pkg, ok := l.pkgs[p]
		switch {
		case !ok:
			return nil, fmt.Errorf("%s is not among the packages go list found in %s", p, m.dir)
		case pkg.Error != nil:
			return nil, errors.New(pkg.Error.Err)
		case pkg.Export == "":
			return nil, fmt.Errorf("go list gave no export data for %s", p)
		}
		return os.Open(pkg.Export)
	})
	return l
}

// files returns the files c is checked as: a whole file alone; a fragment
// with the imports of the context's packages it names, and the context.
func (c *check) files(fset *token.FileSet, l *loaded) ([]*ast.File, error) {
	if c.whole {
		return []*ast.File{c.file}, nil
	}
	ctx := c.page.context
	if ctx == nil {
		return []*ast.File{c.file}, nil
	}
	name := func(s *ast.ImportSpec) string {
		switch p := importPath(s); {
		case s.Name != nil:
			return s.Name.Name
		case strings.HasPrefix(p, generatedPrefix):
			return path.Base(p)
		default:
			return l.pkgs[p].Name
		}
	}
	own := make(map[string]bool)
	for _, s := range c.file.Imports {
		own[name(s)] = true
	}
	used := packageNames(c.file)
	extra := make(map[string]string)
	for _, s := range ctx.Imports {
		if n := name(s); used[n] && !own[n] && n != "_" && n != "." {
			extra[n] = importPath(s)
		}
	}
	f, err := parseFragment(fset, c.page, c.block, elide(c.block.text), extra)
	if err != nil {
		return nil, err
	}
	return []*ast.File{f, ctx}, nil
}

// syntaxError returns the first of err's syntax errors, with its position
// on the page: the parser's guesses after it say little.
func syntaxError(err error) string {
	var list scanner.ErrorList
	if errors.As(err, &list) && len(list) > 0 {
		return list[0].Error()
	}
	return err.Error()
}

// report is what checking the blocks of some pages found.
type report struct {
	errs     []string            // about pages and their machines
	checked  []string            // the blocks checked, in order
	skipped  []string            // the blocks marked ```go skip
	programs []string            // the files of programs, and the tests that run them
	found    map[string][]string // the errors of each block checked
}

// checkPages type-checks the Go blocks of ps, each in its module of mods
// (the main module first).
func checkPages(t *testing.T, fset *token.FileSet, mods []module, ps []*page) report {
	t.Helper()
	r := report{found: make(map[string][]string)}

	// Parse every block, choose its module and gather the packages each
	// module must list.
	var checks []*check
	paths := make(map[module]map[string]bool)
	need := func(m module, ps []string) {
		if paths[m] == nil {
			paths[m] = make(map[string]bool)
		}
		for _, p := range ps {
			if !strings.HasPrefix(p, generatedPrefix) {
				paths[m][p] = true
			}
		}
	}
	for _, p := range ps {
		r.errs = append(r.errs, p.errs...)
		given := p.given(fset)
		for _, b := range p.blocks {
			lang, mark, _ := strings.Cut(b.info, " ")
			if !strings.EqualFold(lang, "go") && !strings.EqualFold(lang, "golang") {
				continue
			}
			_, file := fileOf(b.info)
			switch strings.TrimSpace(mark) {
			case "":
			case "skip":
				r.skipped = append(r.skipped, b.String())
				continue
			default:
				if test, ok := programPages[p.path]; ok && file {
					r.programs = append(r.programs, b.String()+" "+test)
					continue
				}
				r.errs = append(r.errs, fmt.Sprintf("%s: ```%s: go may be followed by skip only, or by file=NAME on a page a test runs as a program", b, b.info))
				continue
			}
			c := prepare(fset, p, b)
			mine := c.imports
			if !c.whole {
				mine = append(slices.Clone(mine), given...)
			}
			var err error
			if c.mod, err = moduleOf(mods, mine); err != nil {
				r.errs = append(r.errs, fmt.Sprintf("%s: %v", b, err))
				continue
			}
			need(c.mod, c.imports)
			need(c.mod, given)
			checks = append(checks, c)
		}
	}
	mod := make(map[module]*loaded)
	for m, ps := range paths {
		mod[m] = load(t, fset, m, slices.Sorted(maps.Keys(ps)))
	}

	type pageMod struct {
		page *page
		mod  module
	}
	importers := make(map[pageMod]*pageImporter)
	for _, c := range checks {
		im := importers[pageMod{c.page, c.mod}]
		if im == nil {
			im = &pageImporter{fset: fset, base: mod[c.mod].importer, page: c.page, checked: make(map[string]*types.Package)}
			importers[pageMod{c.page, c.mod}] = im
		}
		name := c.block.String()
		r.checked = append(r.checked, name)
		found := func(msg string) { r.found[name] = append(r.found[name], msg+" (go block at "+name+")") }
		if c.err != nil {
			found(syntaxError(c.err))
			continue
		}
		files, err := c.files(fset, mod[c.mod])
		if err != nil {
			found(syntaxError(err))
			continue
		}
		conf := types.Config{
			Importer: im,
			Error: func(err error) {
				var te types.Error
				switch {
				case !errors.As(err, &te):
					found(err.Error())
				case !unused(te):
					found(fmt.Sprintf("%s: %s", fset.Position(te.Pos), te.Msg))
				}
			},
		}
		_, _ = conf.Check("example.com/docs", fset, files, nil)
	}
	for _, c := range checks {
		im := importers[pageMod{c.page, c.mod}]
		for _, err := range im.errs {
			r.errs = append(r.errs, fmt.Sprintf("%v (in a package generated from %s)", err, im.page.path))
		}
		im.errs = nil
	}
	return r
}

// TestGoBlocks type-checks the Go blocks of the documentation as the
// package's doc comment says, a subtest for each block.
func TestGoBlocks(t *testing.T) {
	fset := token.NewFileSet()
	var ps []*page
	for _, name := range pages(t) {
		ps = append(ps, readPage(t, fset, name))
	}
	r := checkPages(t, fset, modules(t), ps)
	for _, msg := range r.errs {
		t.Error(msg)
	}
	for _, name := range r.skipped {
		t.Run(name, func(t *testing.T) { t.Skip("marked ```go skip") })
	}
	for _, prog := range r.programs {
		name, test, _ := strings.Cut(prog, " ")
		t.Run(name, func(t *testing.T) { t.Skip("a file of the program " + test + " builds and runs") })
	}
	for _, name := range r.checked {
		t.Run(name, func(t *testing.T) {
			for _, msg := range r.found[name] {
				t.Error(msg)
			}
		})
	}
}

// TestCheckPages holds the checker to its conventions on a page of its own.
func TestCheckPages(t *testing.T) {
	const src = "# A page\n" +
		"\n" +
		"```fsm\n" +
		"machine Door {\n" +
		"    type \"door\"\n" +
		"    version 1\n" +
		"    initial OPEN\n" +
		"    final   SHUT succeeded\n" +
		"    event Close\n" +
		"    OPEN -> SHUT on Close\n" +
		"}\n" +
		"```\n" +
		"\n" +
		"```go\n" +
		"d := door.New(nil)\n" +
		"err := d.Close(ctx, door.Close{}) // unused: no error\n" +
		"if err != nil { ... }\n" +
		"```\n" +
		"\n" +
		"```go\n" +
		"_ = door.New(nil).Open(ctx, door.Close{})\n" +
		"```\n" +
		"\n" +
		"```go\n" +
		"import \"fmt\"\n" +
		"\n" +
		"type shut struct{ door.Close }\n" +
		"\n" +
		"func (shut) String() string { return \"shut\" }\n" +
		"\n" +
		"s := shut{}\n" +
		"fmt.Println(s, door.StateShut)\n" +
		"```\n" +
		"\n" +
		"```go\n" +
		"d := door.New(nil\n" +
		"```\n" +
		"\n" +
		"~~~go skip\n" +
		"a fragment of pseudo-code\n" +
		"~~~\n" +
		"\n" +
		"```go vet\n" +
		"x := 1\n" +
		"```\n" +
		"\n" +
		"```go\n" +
		"package main\n" +
		"\n" +
		"func main() { _ = ctx }\n" +
		"```\n" +
		"\n" +
		"```\n" +
		"machine Lamp { ... }\n" +
		"```\n" +
		"\n" +
		"```fsm skip\n" +
		"machine Lamp { ... }\n" +
		"```\n"
	const ctx = "package doc\n\nimport (\n\t\"context\"\n\n\t\"example.com/door\"\n)\n\nvar ctx context.Context\n"
	fset := token.NewFileSet()
	p, err := newPage(fset, "docs/page.md", []byte(src), "docs/testdata/docs/page.go", []byte(ctx))
	if err != nil {
		t.Fatal(err)
	}
	got := checkPages(t, fset, modules(t), []*page{p})
	want := report{
		errs: []string{
			"docs/page.md:53: a machine in a block without a language: fence it ```fsm to have it checked and generated, or ```fsm skip for an excerpt",
			"docs/page.md:43: ```go vet: go may be followed by skip only, or by file=NAME on a page a test runs as a program",
		},
		checked: []string{"docs/page.md:14", "docs/page.md:20", "docs/page.md:24", "docs/page.md:35", "docs/page.md:47"},
		skipped: []string{"docs/page.md:39"},
		found: map[string][]string{
			"docs/page.md:20": {"docs/page.md:21:19: door.New(nil).Open undefined (type *door.Machine has no field or method Open) (go block at docs/page.md:20)"},
			"docs/page.md:35": {"docs/page.md:36:18: missing ',' before newline in argument list (go block at docs/page.md:35)"},
			"docs/page.md:47": {"docs/page.md:50:19: undefined: ctx (go block at docs/page.md:47)"},
		},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(report{})); diff != "" {
		t.Errorf("checkPages (-want +got):\n%s", diff)
	}
}
