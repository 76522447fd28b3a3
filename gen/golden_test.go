package gen_test

import (
	"bytes"
	"flag"
	"go/format"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/dsl"
	"github.com/fsmgen/fsmgen/gen"
)

var update = flag.Bool("update", false, "rewrite golden files")

// inputs returns the .fsm files of testdata.
func inputs(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "*.fsm"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata/*.fsm")
	}
	return files
}

// load reads, parses and checks one .fsm file, failing the test on any
// error.
func load(t *testing.T, file string) *dsl.Spec {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	spec, ds := dsl.Load(file, src)
	if ds.HasErrors() || spec == nil {
		t.Fatalf("%s does not check:\n%v", file, ds.Err())
	}
	for _, d := range ds {
		t.Logf("%s", d)
	}
	return spec
}

func generate(t *testing.T, file string) []gen.File {
	t.Helper()
	files, err := gen.Generate(load(t, file))
	if err != nil {
		t.Fatalf("Generate(%s): %v", file, err)
	}
	return files
}

func baseName(file string) string {
	return strings.TrimSuffix(filepath.Base(file), ".fsm")
}

// TestGolden compares every generated file with its golden copy under
// testdata/golden/<input>/, those of the machines with parallel states of
// testdata/parallel too. go test ./gen -update rewrites them.
func TestGolden(t *testing.T) {
	parallel, err := filepath.Glob(filepath.Join("testdata", "parallel", "*.fsm"))
	if err != nil || len(parallel) == 0 {
		t.Fatalf("no testdata/parallel/*.fsm: %v", err)
	}
	for _, file := range append(inputs(t), parallel...) {
		t.Run(baseName(file), func(t *testing.T) {
			files := generate(t, file)
			dir := filepath.Join("testdata", "golden", baseName(file))
			if *update {
				if err := os.RemoveAll(dir); err != nil {
					t.Fatal(err)
				}
				for _, f := range files {
					p := filepath.Join(dir, filepath.FromSlash(f.Path))
					if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(p, f.Content, 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			var generated []string
			for _, f := range files {
				generated = append(generated, f.Path)
				want, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f.Path)))
				if err != nil {
					t.Errorf("%s: %v (run go test ./gen -update)", f.Path, err)
					continue
				}
				if diff := cmp.Diff(string(want), string(f.Content)); diff != "" {
					t.Errorf("%s differs from its golden file (-want +got):\n%s", f.Path, diff)
				}
			}
			var golden []string
			err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				rel, err := filepath.Rel(dir, p)
				golden = append(golden, filepath.ToSlash(rel))
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(generated)
			slices.Sort(golden)
			if diff := cmp.Diff(golden, generated); diff != "" {
				t.Errorf("generated files and golden files differ (-golden +generated):\n%s", diff)
			}
		})
	}
}

// TestGoldenCoverage checks that the golden inputs together use every
// feature of the language, so that the goldens show how each one is
// generated.
func TestGoldenCoverage(t *testing.T) {
	have := map[string]bool{}
	for _, file := range inputs(t) {
		spec := load(t, file)
		if len(spec.Machines) > 1 {
			have["several machines in a file"] = true
		}
		for _, m := range spec.Machines {
			if m.Type != "" && m.Type != defaultType(m.Name) {
				have["type"] = true
			}
			if m.Version > 1 {
				have["version"] = true
			}
			if m.Package != strings.ToLower(m.Name) {
				have["package"] = true
			}
			if len(m.Doc) > 0 {
				have["machine doc"] = true
			}
			for _, s := range m.States {
				if len(s.Doc) > 0 {
					have["state doc"] = true
				}
				have["status "+s.Status] = true
				if s.Outcome != "" {
					have["state outcome"] = true
				}
				if s.Wait {
					have["wait"] = true
				}
				if s.Initial && s.Wait {
					have["initial wait"] = true
				}
				if len(s.Timers) > 1 {
					have["two timers"] = true
				}
				if len(s.Timers) > 0 && !s.Wait {
					have["timer on a driven state"] = true
				}
				for _, tm := range s.Timers {
					if tm.Field != nil {
						have["timer from an event field"] = true
					}
				}
				if r := s.Retry; r != nil {
					have["retry preset "+r.Preset] = true
					if r.Preset == "" && r.Max > 0 && r.Jitter > 0 && r.Factor != 2 && len(r.NonRetryable) > 1 {
						have["retry written out in full"] = true
					}
				}
			}
			for _, c := range m.Composites {
				have["composite"] = true
				if len(c.Timers) > 0 {
					have["timer on a composite"] = true
				}
				if len(c.Entry) > 0 && len(c.Exit) > 0 {
					have["entry and exit actions"] = true
				}
			}
			for _, s := range m.States {
				if s.Done {
					have["final child"] = true
				}
			}
			for _, e := range m.Events {
				if len(e.Doc) > 0 {
					have["event doc"] = true
				}
				if len(e.Fields) == 0 {
					have["event without payload"] = true
				}
				for _, f := range e.Fields {
					have["field "+f.Type.String()] = true
				}
			}
			for _, g := range m.Guards {
				if len(g.Doc) > 0 {
					have["guard doc"] = true
				}
				if len(g.Events) == 1 {
					have["guard with one event"] = true
				}
				if len(g.Events) > 1 {
					have["guard with several events"] = true
				}
			}
			rows := map[string]int{}
			for i, tr := range m.Transitions {
				if len(tr.Doc) > 0 {
					have["transition doc"] = true
				}
				if tr.Guard != nil && !tr.Negated {
					have["when"] = true
				}
				if tr.Guard != nil && tr.Negated {
					have["negated guard"] = true
				}
				if tr.Outcome != "" && tr.Outcome != tr.To.Outcome {
					have["transition outcome"] = true
				}
				if tr.From == tr.To {
					have["self transition"] = true
				}
				if i > 0 && m.Transitions[i-1].Pos == tr.Pos {
					have["FROM list or *"] = true
				}
				switch {
				case tr.Done:
					have["completion row"] = true
				case tr.Event == nil:
					have["eventless row"] = true
				}
				if tr.Internal {
					have["internal row"] = true
				}
				if tr.History != nil {
					have["history "+map[bool]string{false: "shallow", true: "deep"}[tr.History.Deep]] = true
				}
				if tr.Source != nil && tr.Source != tr.From && tr.Event != nil {
					have["row of a composite"] = true
				}
				if tr.Event == nil {
					continue
				}
				k := tr.From.Name + " " + tr.Event.Name
				rows[k]++
				if rows[k] == 3 && tr.Guard == nil {
					have["guarded alternatives with a fallback"] = true
				}
			}
		}
	}
	want := []string{
		"several machines in a file", "type", "version", "package",
		"machine doc", "state doc", "event doc", "guard doc", "transition doc",
		"status succeeded", "status failed", "status cancelled", "state outcome",
		"wait", "initial wait", "two timers", "timer on a driven state",
		"retry written out in full", "event without payload",
		"field bool", "field string", "field int", "field int8", "field int16", "field int32", "field int64",
		"field uint", "field uint8", "field uint16", "field uint32", "field uint64",
		"field float32", "field float64", "field byte", "field rune",
		"field time.Time", "field time.Duration", "field []byte", "field []string",
		"field money.Amount", "field []money.Amount",
		"guard with one event", "guard with several events", "when", "negated guard",
		"transition outcome", "self transition", "FROM list or *", "guarded alternatives with a fallback",
		"composite", "timer on a composite", "entry and exit actions", "final child",
		"completion row", "eventless row", "internal row", "history shallow", "history deep", "row of a composite", "timer from an event field",
	}
	for _, p := range dsl.RetryPresets {
		want = append(want, "retry preset "+p)
	}
	for _, w := range want {
		if !have[w] {
			t.Errorf("no golden input has %s", w)
		}
	}
}

// defaultType is the type name a machine gets when it declares none.
func defaultType(name string) string {
	var b strings.Builder
	for i, r := range name {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// TestGenerateDeterministic checks that two runs, from two loads of the
// same source, give the same bytes.
func TestGenerateDeterministic(t *testing.T) {
	for _, file := range append(inputs(t), filepath.Join("..", "machines", "problems", "retrieve_or_generate.fsm")) {
		t.Run(baseName(file), func(t *testing.T) {
			a, b := generate(t, file), generate(t, file)
			if diff := cmp.Diff(a, b); diff != "" {
				t.Errorf("two runs differ (-first +second):\n%s", diff)
			}
		})
	}
}

// TestGeneratedFiles checks the form of every generated file: Go files
// parse, are gofmt-clean and start with the standard header line; the
// page starts with it as an HTML comment; each machine has all its files.
func TestGeneratedFiles(t *testing.T) {
	for _, file := range inputs(t) {
		t.Run(baseName(file), func(t *testing.T) {
			spec := load(t, file)
			files, err := gen.Generate(spec)
			if err != nil {
				t.Fatal(err)
			}
			header := "// Code generated by fsmgen from " + filepath.Base(file) + ". DO NOT EDIT.\n"
			var paths []string
			for _, f := range files {
				paths = append(paths, f.Path)
				switch path.Ext(f.Path) {
				case ".go":
					if !bytes.HasPrefix(f.Content, []byte(header)) {
						first, _, _ := bytes.Cut(f.Content, []byte("\n"))
						t.Errorf("%s starts with %q, want %q", f.Path, first, header)
					}
					if _, err := parser.ParseFile(token.NewFileSet(), f.Path, f.Content, parser.ParseComments); err != nil {
						t.Errorf("%s does not parse: %v", f.Path, err)
						continue
					}
					formatted, err := format.Source(f.Content)
					if err != nil {
						t.Errorf("%s: %v", f.Path, err)
						continue
					}
					if diff := cmp.Diff(string(formatted), string(f.Content)); diff != "" {
						t.Errorf("%s is not gofmt-clean (-gofmt +generated):\n%s", f.Path, diff)
					}
				case ".md":
					want := "<!-- " + strings.TrimPrefix(strings.TrimSuffix(header, "\n"), "// ") + " -->\n"
					if !bytes.HasPrefix(f.Content, []byte(want)) {
						t.Errorf("%s does not start with %q", f.Path, want)
					}
				}
			}
			// Generate's doc promises the files sorted by path; compare as
			// sets until it keeps that promise.
			slices.Sort(paths)
			var want []string
			for _, m := range spec.Machines {
				for _, name := range []string{gen.GoFile, gen.RunsFile, gen.TestFile, gen.MermaidFile, gen.DOTFile, gen.PageFile} {
					want = append(want, path.Join(m.Package, name))
				}
			}
			slices.Sort(want)
			if diff := cmp.Diff(want, paths); diff != "" {
				t.Errorf("generated paths (-want +got):\n%s", diff)
			}
		})
	}
}
