package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/dsl"
	"github.com/fsmgen/fsmgen/runtime/fsmtest"
)

// repoRoot is the repository's root, two directories up.
const repoRoot = "../.."

// interopDir holds the Node tests that replay the exports.
var interopDir = filepath.Join(repoRoot, "editors", "interop")

// exportedMachine is one machine of machines/ with its .fsm file.
type exportedMachine struct {
	fsm string
	m   *dsl.Machine
}

// repoMachines loads every machine of machines/*/*.fsm.
func repoMachines(t *testing.T) []exportedMachine {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot, "machines", "*", "*.fsm"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no machines/*/*.fsm: %v", err)
	}
	var out []exportedMachine
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		spec, ds := dsl.Load(f, src)
		if spec == nil || ds.HasErrors() {
			t.Fatalf("%s does not check: %v", f, ds.Err())
		}
		for _, m := range spec.Machines {
			out = append(out, exportedMachine{f, m})
		}
	}
	return out
}

func baseOf(m *dsl.Machine) string { return fmt.Sprintf("%s.v%d", m.Type, m.Version) }

// TestInterop exports every machine of machines/ and those of
// nestedGlobs (nested ones among them) to XState and SCXML,
// records the traces of its generated Go machine (its generated test, run
// with fsmtest.TracesEnv set), and replays them through XState and SCION
// with the Node tests of editors/interop, which assert the same state
// after every event, refusals included.
func TestInterop(t *testing.T) {
	t.Parallel()
	node := needNode(t, interopDir)
	dir := t.TempDir()
	machines := append(repoMachines(t), nestedMachines(t)...)

	var pkgs, want []string
	for _, em := range machines {
		if len(em.m.Parallels) > 0 {
			// Its generated tests have no TestFSM to record traces with
			// (fsmtest runs leaves, not configurations); machines/specs
			// replays its traces through XState and SCION.
			continue
		}
		rel, err := filepath.Rel(repoRoot, filepath.Join(filepath.Dir(em.fsm), em.m.Package))
		if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, "./"+filepath.ToSlash(rel))
		want = append(want, baseOf(em.m)+".traces.json")
		for format, ext := range map[string]string{"xstate": ".json", "scxml": ".scxml"} {
			if _, ok := exporters[format]; !ok {
				continue
			}
			out := filepath.Join(dir, baseOf(em.m)+ext)
			code, _, stderr := runCmd(t, ".", "", "export", "-format", format, "-machine", em.m.Name, "-o", out, em.fsm)
			if code != exitOK {
				t.Fatalf("fsmgen export -format %s %s: exit %d\n%s", format, em.fsm, code, stderr)
			}
		}
	}
	slices.Sort(want)

	// The generated machines' own tests write the traces.
	gotest := exec.Command("go", append([]string{"test", "-count=1", "-run", "^TestFSM$"}, pkgs...)...)
	gotest.Dir = repoRoot
	gotest.Env = append(os.Environ(), fsmtest.TracesEnv+"="+dir)
	if out, err := gotest.CombinedOutput(); err != nil {
		t.Fatalf("go test of the generated machines: %v\n%s", err, out)
	}
	traces, err := filepath.Glob(filepath.Join(dir, "*.traces.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range traces {
		got = append(got, filepath.Base(f))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("traces written (-want +got):\n%s", diff)
	}

	cmd := exec.Command(node, "--test")
	cmd.Dir = interopDir
	cmd.Env = append(os.Environ(), "FSMGEN_EXPORTS="+dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("node --test in %s: %v\n%s", interopDir, err, tail(out.String(), 200))
	}
	t.Logf("node --test:\n%s", tail(out.String(), 10))
}

// nestedGlobs are the machines TestInterop replays besides those of
// machines/*/, whose packages are not generated in the repository: the
// nested machines of gen/testdata/nested and the machines from published
// specifications of machines/specs, nested and flat.
var nestedGlobs = []string{
	filepath.Join(repoRoot, "gen", "testdata", "nested", "*.fsm"),
	filepath.Join(repoRoot, "machines", "specs", "*", "*.fsm"),
}

// nestedMachines generates the Go packages of the machines of
// nestedGlobs, each in a directory of its own under the repository's tmp/
// (ignored by git; go test needs the packages in the module), removed
// after the test, and returns them as generated there.
func nestedMachines(t *testing.T) []exportedMachine {
	t.Helper()
	var files []string
	for _, g := range nestedGlobs {
		fs, err := filepath.Glob(g)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, fs...)
	}
	if len(files) == 0 {
		t.Fatalf("no %s", nestedGlobs)
	}
	if err := os.MkdirAll(filepath.Join(repoRoot, "tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	var out []exportedMachine
	for _, f := range files {
		gen, err := os.MkdirTemp(filepath.Join(repoRoot, "tmp"), "interop-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(gen) })
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		copied := filepath.Join(gen, filepath.Base(f))
		if err := os.WriteFile(copied, src, 0o644); err != nil {
			t.Fatal(err)
		}
		if code, _, stderr := runCmd(t, "", "", "generate", copied); code != exitOK {
			t.Fatalf("fsmgen generate %s: exit %d\n%s", copied, code, stderr)
		}
		spec, ds := dsl.Load(copied, src)
		if spec == nil || ds.HasErrors() {
			t.Fatalf("%s does not check: %v", f, ds.Err())
		}
		for _, m := range spec.Machines {
			out = append(out, exportedMachine{copied, m})
		}
	}
	return out
}

// needNode returns the path of node, failing the test when node or the
// npm dependencies of dir are missing.
func needNode(t *testing.T, dir string) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not installed (Node.js 20 or later; .ci/run installs the Debian packages nodejs and npm): %v", err)
	}
	out, err := exec.Command(node, "-p", "process.versions.node").Output()
	if err != nil {
		t.Fatalf("%s -p process.versions.node: %v", node, err)
	}
	version := strings.TrimSpace(string(out))
	if major, _, _ := strings.Cut(version, "."); atoi(major) < 20 {
		t.Fatalf("node is %s; the tests need Node.js 20 or later (.ci/run installs it)", version)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); err != nil {
		t.Fatalf("%s has no node_modules: run npm ci there (make test does)", dir)
	}
	return node
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// atoi is s as a number, 0 when it is not one.
func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
