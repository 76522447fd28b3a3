package specs_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/fsmgen/fsmgen/gen"
	"github.com/fsmgen/fsmgen/machines/specs/internal/spectrace"
)

// interopDir holds the npm dependencies (xstate) of the Node tests.
var interopDir = filepath.Join("..", "..", "editors", "interop")

// jsStep is a step as xstate_replay.mjs reads it.
type jsStep struct {
	Line    int             `json:"line"`
	Start   bool            `json:"start,omitempty"`
	AfterMS int64           `json:"afterMs,omitempty"`
	Event   string          `json:"event,omitempty"`
	Payload json.RawMessage `json:"payload,omitempty"`
	Guards  map[string]bool `json:"guards"`
	Leaf    string          `json:"leaf"`
	In      []string        `json:"in"`
	Refused bool            `json:"refused,omitempty"`
	Do      []string        `json:"do"`
	Checked bool            `json:"checked"`
}

type jsTrace struct {
	Name  string   `json:"name"`
	Steps []jsStep `json:"steps"`
}

// needNode returns the path of node, failing the test when node (20 or
// later) or the npm dependencies of editors/interop are missing.
func needNode(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not installed (Node.js 20 or later; .ci/run installs it): %v", err)
	}
	out, err := exec.Command(node, "-p", "process.versions.node").Output()
	if err != nil {
		t.Fatalf("%s -p process.versions.node: %v", node, err)
	}
	major, _, _ := strings.Cut(strings.TrimSpace(string(out)), ".")
	if n, _ := strconv.Atoi(major); n < 20 {
		t.Fatalf("node is %s; the tests need Node.js 20 or later", out)
	}
	if _, err := os.Stat(filepath.Join(interopDir, "node_modules", "xstate")); err != nil {
		t.Fatalf("%s has no node_modules/xstate: run npm ci there (make test does)", interopDir)
	}
	return node
}

// writeTraces writes the traces of machine name as the Node scripts read
// them, and returns the file's path.
func writeTraces(t *testing.T, name string) string {
	t.Helper()
	traces, err := spectrace.ParseFile(filepath.Join(name, "trace.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var js []jsTrace
	for _, tr := range traces {
		jt := jsTrace{Name: tr.Name}
		for _, s := range tr.Steps {
			jt.Steps = append(jt.Steps, jsStep{
				Line: s.Line, Start: s.Start, AfterMS: s.After.Milliseconds(), Event: s.Event,
				Payload: s.Payload, Guards: s.Guards, Leaf: s.Leaf, In: s.In, Refused: s.Refused,
				Do: s.Do, Checked: s.Checked,
			})
		}
		js = append(js, jt)
	}
	data, err := json.Marshal(js)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "traces.json")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// node runs a replay script of this directory with node.
func node(t *testing.T, script string, args ...string) {
	t.Helper()
	bin := needNode(t)
	interop, err := filepath.Abs(interopDir)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{script}, args...)...)
	cmd.Env = append(os.Environ(), "FSMGEN_INTEROP="+interop)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("node %s %s: %v\n%s", script, strings.Join(args, " "), err, out)
	}
}

// TestXStateTraces replays each machine's traces through XState v5 from
// its hand-written xstate.json, those of the machines with parallel
// regions included.
func TestXStateTraces(t *testing.T) {
	t.Parallel()
	needNode(t)
	for _, name := range append(slices.Clone(machines), parallelMachines...) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			node(t, "xstate_replay.mjs", filepath.Join(name, "xstate.json"), writeTraces(t, name))
		})
	}
}

// scxmlMachines are the machines whose SCXML export SCION replays. The
// export writes a timer whose duration is an event's field with its
// minimum as a fixed delay, so deviceauth and dhcpclient are left out.
var scxmlMachines = []string{"sipinvite", "usbdevice", "tcpconn"}

// TestSCXMLTraces replays the traces through SCION, a W3C SCXML
// interpreter, from the SCXML fsmgen export writes for the nested .fsm,
// with the configurations of the machines with parallel regions.
func TestSCXMLTraces(t *testing.T) {
	t.Parallel()
	needNode(t)
	for _, name := range append(slices.Clone(scxmlMachines), parallelMachines...) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			doc, err := gen.SCXML(load(t, filepath.Join(name, name+".fsm")))
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(t.TempDir(), name+".scxml")
			if err := os.WriteFile(file, doc, 0o600); err != nil {
				t.Fatal(err)
			}
			node(t, "scxml_replay.mjs", file, writeTraces(t, name))
		})
	}
}

// TestXStateExportTraces replays the traces of the machines with parallel
// regions through XState v5 from fsmgen's XState export of their .fsm
// (parallel nodes, stateIn guards, onDone), as TestXStateTraces does from
// their hand-written configs. cmd/fsmgen's TestInterop replays the
// exports of the other machines.
func TestXStateExportTraces(t *testing.T) {
	t.Parallel()
	needNode(t)
	for _, name := range parallelMachines {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			doc, err := gen.XState(load(t, filepath.Join(name, name+".fsm")))
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(t.TempDir(), name+".json")
			if err := os.WriteFile(file, doc, 0o600); err != nil {
				t.Fatal(err)
			}
			node(t, "xstate_replay.mjs", file, writeTraces(t, name))
		})
	}
}
