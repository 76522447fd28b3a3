package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/fsmgen/fsmgen/dsl"
	"github.com/fsmgen/fsmgen/gen"
	"github.com/fsmgen/fsmgen/internal/safeio"
	"github.com/fsmgen/fsmgen/internal/version"
)

// Exit codes.
const (
	exitOK    = 0
	exitInput = 1
	exitUsage = 2
)

const usage = `usage:
	fsmgen [generate] FILE.fsm...
	fsmgen check [-json] FILE.fsm...
	fsmgen fmt [-l] [-w] [PATH...]
	fsmgen diagram [-format mermaid|dot] [-machine NAME] FILE.fsm
	fsmgen sql -table TABLE -column COLUMN [-key COLS] [-log TABLE] [-machine NAME] [-o FILE] FILE.fsm
	fsmgen export -format xstate|scxml [-machine NAME] [-o FILE] FILE.fsm
	fsmgen import -format xstate [-o FILE.fsm] FILE.json
	fsmgen lsp
	fsmgen -version
`

// run is the whole command, testable: it reads its arguments and streams
// and returns the exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "generate":
		return generate(args[1:], stdout, stderr)
	case "check":
		return check(args[1:], stdout, stderr)
	case "fmt":
		return format(args[1:], stdin, stdout, stderr)
	case "diagram":
		return diagram(args[1:], stdout, stderr)
	case "sql":
		return sqlGuard(args[1:], stdout, stderr)
	case "export":
		return export(args[1:], stdout, stderr)
	case "import":
		return importMachine(args[1:], stdout, stderr)
	case "lsp":
		return serveLSP(args[1:], stdin, stdout, stderr)
	case "-version", "--version", "version":
		fmt.Fprintf(stdout, "fsmgen %s\n", version.Version)
		return exitOK
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	if strings.HasPrefix(args[0], "-") {
		fmt.Fprintf(stderr, "fsmgen: unknown flag %s\n%s", args[0], usage)
		return exitUsage
	}
	if !strings.HasSuffix(args[0], ".fsm") {
		fmt.Fprintf(stderr, "fsmgen: unknown command %q\n%s", args[0], usage)
		return exitUsage
	}
	return generate(args, stdout, stderr)
}

func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fl := flag.NewFlagSet("fsmgen "+name, flag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.Usage = func() { fmt.Fprint(stderr, usage) }
	return fl
}

// loaded is one checked input file.
type loaded struct {
	path string
	spec *dsl.Spec
}

// loadAll reads and checks every file, then checks the files against each
// other, prints every diagnostic, and reports whether all of them are free
// of errors. A file named twice (by the same cleaned path) is read once.
func loadAll(paths []string, stderr io.Writer) ([]loaded, bool) {
	return loadWith(paths, stderr, func(d dsl.Diagnostic, _ []byte) { fmt.Fprintln(stderr, d) })
}

// loadWith is loadAll handing each diagnostic, with the source of the file
// it is about, to report instead of printing it. Errors reading a file are
// printed to stderr.
func loadWith(paths []string, stderr io.Writer, report func(d dsl.Diagnostic, src []byte)) ([]loaded, bool) {
	var out []loaded
	ok := true
	seen := map[string]bool{}
	srcs := map[string][]byte{}
	for _, p := range paths {
		key := absPath(p)
		if seen[key] {
			continue
		}
		seen[key] = true
		src, err := readSource(p)
		if err != nil {
			fmt.Fprintf(stderr, "fsmgen: %v\n", err)
			ok = false
			continue
		}
		srcs[p] = src
		spec, diags := dsl.Load(p, src)
		for _, d := range diags {
			report(d, src)
		}
		if spec == nil {
			ok = false
			continue
		}
		out = append(out, loaded{path: p, spec: spec})
	}
	for _, d := range crossCheck(out) {
		report(d, srcs[d.Pos.Filename])
		ok = false
	}
	return out, ok
}

// crossCheck reports what no single file can show: two machines, in
// different files, that would generate the same package directory (each
// file's packages go next to it), or that share a persisted type name and
// version, which the runtime must tell apart. Each error is positioned at
// the later declaration, in the order the files were given.
func crossCheck(inputs []loaded) dsl.Diagnostics {
	type first struct {
		m    *dsl.Machine
		file string
	}
	dirs := map[string]first{}
	types := map[string]first{}
	var diags dsl.Diagnostics
	for _, in := range inputs {
		for _, m := range in.spec.Machines {
			dir := absPath(filepath.Join(filepath.Dir(in.path), m.Package))
			typ := fmt.Sprintf("%s\x00%d", m.Type, m.Version)
			if prev, dup := dirs[dir]; dup && prev.file != in.path {
				msg := fmt.Sprintf("machine %s would generate package %s, as does machine %s", m.Name, m.Package, prev.m.Name)
				if prev.m.Name == m.Name {
					msg = fmt.Sprintf("machine %s declared twice", m.Name)
				}
				diags = append(diags, dsl.Diagnostic{Pos: m.Pos, Message: msg + "; first declared at " + where(prev.m)})
				if prev.m.Type == m.Type && prev.m.Version == m.Version {
					continue // the same machine twice: one error is enough
				}
			} else if !dup {
				dirs[dir] = first{m, in.path}
			}
			if prev, dup := types[typ]; dup && prev.file != in.path {
				diags = append(diags, dsl.Diagnostic{Pos: m.Pos, Message: fmt.Sprintf(
					"machine %s has type %q version %d, as does machine %s; first declared at %s",
					m.Name, m.Type, m.Version, prev.m.Name, where(prev.m))})
			} else if !dup {
				types[typ] = first{m, in.path}
			}
		}
	}
	return diags
}

// absPath is p made absolute and clean, or only clean when the working
// directory cannot be read: the key under which two names of one file or
// directory compare equal.
func absPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return filepath.Clean(p)
}

// where renders a machine's position as path:line:col.
func where(m *dsl.Machine) string {
	return fmt.Sprintf("%s:%d:%d", m.Pos.Filename, m.Pos.Line, m.Pos.Column)
}

func fileArgs(cmd string, args []string, stderr io.Writer) ([]string, int) {
	fl := newFlags(cmd, stderr)
	if err := fl.Parse(args); err != nil {
		return nil, exitUsage
	}
	if fl.NArg() == 0 {
		fmt.Fprintf(stderr, "fsmgen %s: no .fsm file given\n%s", cmd, usage)
		return nil, exitUsage
	}
	for _, p := range fl.Args() {
		if !strings.HasSuffix(p, ".fsm") {
			fmt.Fprintf(stderr, "fsmgen %s: %s is not a .fsm file\n", cmd, p)
			return nil, exitUsage
		}
	}
	return fl.Args(), exitOK
}

func check(args []string, stdout, stderr io.Writer) int {
	fl := newFlags("check", stderr)
	asJSON := fl.Bool("json", false, "print the diagnostics as a JSON list on standard output")
	if err := fl.Parse(args); err != nil {
		return exitUsage
	}
	paths, code := fileArgs("check", fl.Args(), stderr)
	if code != exitOK {
		return code
	}
	if *asJSON {
		return checkJSON(paths, stdout, stderr)
	}
	if _, ok := loadAll(paths, stderr); !ok {
		return exitInput
	}
	return exitOK
}

// output is a file to write.
type output struct {
	path    string
	content []byte
}

func generate(args []string, stdout, stderr io.Writer) int {
	return generateWith(gen.Generate, args, stdout, stderr)
}

// generateWith is generate rendering with render, which tests replace.
func generateWith(render func(*dsl.Spec) ([]gen.File, error), args []string, _, stderr io.Writer) int {
	paths, code := fileArgs("generate", args, stderr)
	if code != exitOK {
		return code
	}
	inputs, ok := loadAll(paths, stderr)
	if !ok {
		return exitInput
	}
	// Render everything in memory first: nothing is written unless every
	// input generated cleanly.
	var outs []output
	seen := map[string]string{}
	for _, in := range inputs {
		files, err := renderSafely(render, in.spec)
		if errors.Is(err, gen.ErrInternal) {
			// The generator's defect, not the input's: say so, once.
			msg := strings.Replace(err.Error(), gen.ErrInternal.Error()+": ", "", 1)
			fmt.Fprintf(stderr, "fsmgen: internal error generating %s: %s\n", in.path, msg)
			return exitInput
		}
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", in.path, err)
			return exitInput
		}
		for _, f := range files {
			p := filepath.Join(filepath.Dir(in.path), filepath.FromSlash(f.Path))
			if prev, dup := seen[p]; dup {
				fmt.Fprintf(stderr, "fsmgen: %s and %s both generate %s\n", prev, in.path, p)
				return exitInput
			}
			seen[p] = in.path
			outs = append(outs, output{path: p, content: f.Content})
		}
	}
	sort.Slice(outs, func(i, j int) bool { return outs[i].path < outs[j].path })
	// Write everything, and remove what earlier runs generated from these
	// inputs and this one does not, all or nothing (see write.go).
	var fsms []string
	for _, in := range inputs {
		fsms = append(fsms, in.path)
	}
	plan, err := planWrites(fsms, outs)
	if err == nil {
		err = apply(plan)
	}
	if err != nil {
		fmt.Fprintf(stderr, "fsmgen: %v\n", err)
		return exitInput
	}
	return exitOK
}

// renderSafely calls render, turning a panic on the calling goroutine into
// an error matching gen.ErrInternal (gen.Generate does the same on its own
// goroutines).
func renderSafely(render func(*dsl.Spec) ([]gen.File, error), spec *dsl.Spec) (files []gen.File, err error) {
	defer func() {
		if r := recover(); r != nil {
			files, err = nil, fmt.Errorf("%w: %v", gen.ErrInternal, r)
		}
	}()
	return render(spec)
}

// writeIfChanged writes content to path with safeio.WriteFile (a
// temporary file and a rename, the file's mode kept, a path that is not a
// regular file refused), and leaves the file untouched when it already
// holds content.
func writeIfChanged(path string, content []byte) error {
	if old, err := safeio.ReadFile(path, int64(len(content))); err == nil && bytes.Equal(old, content) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return safeio.WriteFile(path, content, 0o644)
}

// readSource reads a .fsm file: a regular file of at most dsl.MaxFileSize
// bytes.
func readSource(path string) ([]byte, error) {
	return safeio.ReadFile(path, dsl.MaxFileSize)
}

func format(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fl := newFlags("fmt", stderr)
	list := fl.Bool("l", false, "list files whose formatting differs")
	write := fl.Bool("w", false, "write the result to the file instead of standard output")
	if err := fl.Parse(args); err != nil {
		return exitUsage
	}
	if fl.NArg() == 0 {
		if *write {
			fmt.Fprintln(stderr, "fsmgen fmt: cannot use -w with standard input")
			return exitUsage
		}
		src, err := safeio.ReadAll("<standard input>", stdin, dsl.MaxFileSize)
		if err != nil {
			fmt.Fprintf(stderr, "fsmgen fmt: %v\n", err)
			return exitInput
		}
		out, err := dsl.FormatSource("<standard input>", src)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return exitInput
		}
		if *list {
			if !bytes.Equal(src, out) {
				fmt.Fprintln(stdout, "<standard input>")
			}
			return exitOK
		}
		stdout.Write(out)
		return exitOK
	}
	var files []string
	for _, p := range fl.Args() {
		info, err := os.Stat(p)
		if err != nil {
			fmt.Fprintf(stderr, "fsmgen fmt: %v\n", err)
			return exitInput
		}
		if !info.IsDir() {
			files = append(files, p)
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && strings.HasSuffix(path, ".fsm") {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			fmt.Fprintf(stderr, "fsmgen fmt: %v\n", err)
			return exitInput
		}
	}
	code := exitOK
	for _, p := range files {
		src, err := readSource(p)
		if err != nil {
			fmt.Fprintf(stderr, "fsmgen fmt: %v\n", err)
			code = exitInput
			continue
		}
		out, err := dsl.FormatSource(p, src)
		if err != nil {
			fmt.Fprintln(stderr, err)
			code = exitInput
			continue
		}
		changed := !bytes.Equal(src, out)
		if *list && changed {
			fmt.Fprintln(stdout, p)
		}
		if *write {
			if changed {
				if err := writeIfChanged(p, out); err != nil {
					fmt.Fprintf(stderr, "fsmgen fmt: %v\n", err)
					code = exitInput
				}
			}
		} else if !*list {
			stdout.Write(out)
		}
	}
	return code
}

func diagram(args []string, stdout, stderr io.Writer) int {
	fl := newFlags("diagram", stderr)
	formatName := fl.String("format", "mermaid", "diagram format: mermaid or dot")
	machine := fl.String("machine", "", "the machine to draw, when the file holds several")
	if err := fl.Parse(args); err != nil {
		return exitUsage
	}
	if *formatName != "mermaid" && *formatName != "dot" {
		fmt.Fprintf(stderr, "fsmgen diagram: unknown format %q, want mermaid or dot\n", *formatName)
		return exitUsage
	}
	if fl.NArg() != 1 || !strings.HasSuffix(fl.Arg(0), ".fsm") {
		fmt.Fprintf(stderr, "fsmgen diagram: want exactly one .fsm file\n%s", usage)
		return exitUsage
	}
	inputs, ok := loadAll(fl.Args(), stderr)
	if !ok {
		return exitInput
	}
	pick, code := pickMachine("diagram", fl.Arg(0), inputs[0].spec.Machines, *machine, stderr)
	if pick == nil {
		return code
	}
	var out []byte
	if *formatName == "dot" {
		out = gen.DOT(pick)
	} else {
		out = gen.Mermaid(pick)
	}
	if _, err := stdout.Write(out); err != nil && !errors.Is(err, os.ErrClosed) {
		fmt.Fprintf(stderr, "fsmgen diagram: %v\n", err)
		return exitInput
	}
	return exitOK
}
