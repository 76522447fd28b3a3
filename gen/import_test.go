package gen_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/alecthomas/participle/v2/lexer"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/fsmgen/fsmgen/dsl"
	"github.com/fsmgen/fsmgen/gen"
)

// roundTripInputs are the .fsm files whose machines must survive an
// export to XState and an import back: the machines of the repository
// (machines/specs' nested ones and their flat equivalents included), the
// nested machines of testdata/nested and the golden inputs.
func roundTripInputs(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "machines", "*", "*.fsm"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no ../machines/*/*.fsm: %v", err)
	}
	specs, err := filepath.Glob(filepath.Join("..", "machines", "specs", "*", "*.fsm"))
	if err != nil {
		t.Fatal(err)
	}
	nested, err := filepath.Glob(filepath.Join("testdata", "nested", "*.fsm"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, specs...)
	files = append(files, nested...)
	return append(files, inputs(t)...)
}

// importXState imports an export under name, failing the test on error.
func importXState(t *testing.T, name string, data []byte) []byte {
	t.Helper()
	src, notes, err := gen.ImportXState(name, data)
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) > 0 {
		t.Errorf("notes on fsmgen's own export: %q", notes)
	}
	return src
}

// TestXStateRoundTrip exports every machine to XState and imports it
// back: the imported .fsm checks to the same machine (every field of the
// checked model but positions: docs, type, version, package, cancel,
// states with their statuses, outcomes, retry policies and timers, events
// with their fields, guards, and the table in its order, rows still
// written with their FROM lists and *; not the upgrade blocks, which
// relate two machines); exporting it gives the same
// bytes; and importing that gives the same .fsm text, a fixed point.
func TestXStateRoundTrip(t *testing.T) {
	t.Parallel()
	for _, file := range roundTripInputs(t) {
		for _, m := range load(t, file).Machines {
			t.Run(filepath.Base(file)+"/"+m.Name, func(t *testing.T) {
				t.Parallel()
				exported, err := gen.XState(m)
				if err != nil {
					t.Fatal(err)
				}
				// The imported file takes the original's name, which the
				// export's note names.
				name := filepath.Join(t.TempDir(), filepath.Base(file))
				src := importXState(t, name, exported)
				spec, ds := dsl.Load(name, src)
				if spec == nil || ds.HasErrors() {
					t.Fatalf("the import does not check: %v\n%s", ds.Err(), src)
				}
				if len(spec.Machines) != 1 {
					t.Fatalf("the import holds %d machines", len(spec.Machines))
				}
				back := spec.Machines[0]
				// An upgrade block relates two machines of one file; an
				// export is one machine, without it.
				ignore := cmp.Options{cmpopts.IgnoreTypes(lexer.Position{}), cmpopts.IgnoreFields(dsl.Machine{}, "Upgrades")}
				if diff := cmp.Diff(m, back, ignore); diff != "" {
					t.Errorf("the imported machine differs (-exported +imported):\n%s\n%s", diff, src)
				}
				again, err := gen.XState(back)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(string(exported), string(again)); diff != "" {
					t.Errorf("exporting the import differs (-first +second):\n%s", diff)
				}
				if diff := cmp.Diff(string(src), string(importXState(t, name, again))); diff != "" {
					t.Errorf("importing again differs (-first +second):\n%s", diff)
				}
			})
		}
	}
}

// TestXStateRoundTripText checks that the import of a machine's export is
// its .fsm file as written, formatted, for the machines of testdata/import
// (one per file, documented only where the model keeps docs).
func TestXStateRoundTripText(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "import", "*.fsm"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/import/*.fsm: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			exported, err := gen.XState(load(t, file).Machines[0])
			if err != nil {
				t.Fatal(err)
			}
			got := importXState(t, file, exported)
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("import of the export differs from the file (-file +import):\n%s", diff)
			}
		})
	}
}

// TestImportXStatePlain imports a config XState users write, without
// fsmgen's metadata.
func TestImportXStatePlain(t *testing.T) {
	t.Parallel()
	config := `{
  "id": "toggle",
  "initial": "inactive",
  "context": {"count": 0},
  "states": {
    "inactive": {
      "description": "Off.",
      "on": {"TOGGLE": {"target": "active", "actions": "count"}}
    },
    "active": {
      "after": {"90000": {"target": "inactive"}},
      "on": {
        "TOGGLE": [
          {"target": "inactive", "guard": "canStop"},
          {"target": "#toggle.broken", "guard": {"type": "not", "params": {"guard": "canStop"}}}
        ],
        "KICK": "broken"
      }
    },
    "broken": {"type": "final"}
  }
}`
	src, notes, err := gen.ImportXState("toggle.fsm", []byte(config))
	if err != nil {
		t.Fatal(err)
	}
	want := `machine Toggle {
    version 1

    // Off.
    initial inactive
    state   active after 1m30s After1m30s
    final   broken succeeded

    event TOGGLE
    event KICK
    event After1m30s

    guard CanStop

    inactive -> active   on TOGGLE
    active   -> inactive on TOGGLE when CanStop
    active   -> broken   on TOGGLE unless CanStop
    active   -> broken   on KICK
    active   -> inactive on After1m30s
}
`
	if diff := cmp.Diff(want, string(src)); diff != "" {
		t.Errorf("import (-want +got):\n%s", diff)
	}
	wantNotes := []string{
		"machine toggle is named Toggle: a .fsm machine name starts with an upper-case letter",
		"machine toggle: context dropped: a .fsm machine has no context",
		"state inactive on TOGGLE: actions dropped: they belong in Go",
		"guard canStop is named CanStop: a .fsm guard name starts with an upper-case letter",
	}
	if diff := cmp.Diff(wantNotes, notes); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
}

// TestImportXStateErrors checks what does not import, and the message.
func TestImportXStateErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ config, err string }{
		{`[]`, "x.json: want a JSON object, an XState machine config"},
		{`{"id": "a", "states": {"A": {}}} {}`, "x.json: invalid JSON at byte 34: more after the machine config"},
		{`{"id": "m-1", "states": {"A": {}}}`, `x.json: machine id "m-1" is not a .fsm name (a letter or _, then letters, digits and _)`},
		{`{"id": "m", "initial": "A", "states": {"A": {"states": {}}}}`, "x.json: state A: states: want an object of child states"},
		{`{"id": "m", "initial": "A", "states": {"A": {"type": "parallel"}}}`, `x.json: state A: a state of type "parallel" without states does not import`},
		{`{"id": "m", "initial": "A", "states": {"A": {"type": "parallel", "initial": "B", "states": {"B": {}}}}}`, `x.json: state A: a parallel state has no initial state: it enters every region`},
		{`{"id": "m", "initial": "A", "states": {"A": {"type": "history"}}}`, `x.json: state A: a history node at the top level does not import; put it in a compound state`},
		{`{"id": "m", "initial": "A", "states": {"A": {"type": "atom"}}}`, `x.json: state A: a state of type "atom" does not import`},
		{`{"id": "m", "initial": "A", "states": {"A": {"on": {"E": {"target": "A", "guard": {"type": "stateIn", "params": {}}}}}}}`, `x.json: state A: on E: guard {"type": "stateIn"} without params.state`},
		{`{"id": "m", "initial": "A", "states": {"A": {"on": {"E": {"target": "A", "guard": {"type": "stateIn", "params": {"state": "#m.Z"}}}}}}}`, `x.json: state A: stateIn "#m.Z": want a state of this machine`},
		{`{"id": "m", "initial": "A", "states": {"A": {"on": {"E": {"target": "A", "guard": {"type": "not", "params": {"guard": {"type": "not", "params": {"guard": {"type": "stateIn", "params": {"state": "A"}}}}}}}}}}}`, `x.json: state A: on E: guard: a double negation does not import`},
		{`{"id": "m", "initial": "A", "states": {"A": {}, "H": {"type": "history"}}}`, "x.json: state H: a history node at the top level does not import; put it in a compound state"},
		{`{"id": "m", "initial": "A", "states": {"A": {"initial": "A", "states": {"A": {}}}}}`, "x.json: state A: state A: a second state named A: .fsm names are unique across the machine"},
		{`{"id": "m", "initial": "A", "states": {"A": {"initial": "C", "states": {"B": {}}}}}`, `x.json: state A: initial state "C" is not one of the children`},
		{`{"id": "m", "initial": "A", "states": {"A": {"on": {"done": "A"}}}}`, `x.json: state A: on "done": done is a reserved word of .fsm, the completion of a composite state; rename the event`},
		{`{"id": "m", "initial": "A", "states": {"A": {"onDone": "A"}}}`, "x.json: state A: onDone on a state without children does not import: only a compound state completes"},
		{`{"id": "m", "initial": "A", "states": {"A": {"on": {"go": "#other.A"}}}}`, `x.json: state A: target "#other.A": no state has id other`},
		{`{"id": "m", "type": "parallel", "states": {"A": {}}}`, `x.json: machine m is of type "parallel"; only a flat machine of states imports`},
		{`{"id": "m", "initial": "A", "states": {"A": {"on": {"user.go": "A"}}}}`, `x.json: state A: on "user.go": wildcard and dotted event descriptors do not import; name each event`},
		{`{"id": "m", "initial": "A", "states": {"A": {"on": {"go": {"target": ["A", "B"]}}}}}`, "x.json: state A: on go: a transition with several targets does not import"},
		{`{"id": "m", "initial": "A", "states": {"A": {"after": {"slow": "A"}}}}`, `x.json: state A: after "slow": a named delay imports as the duration field slow of the event that enters the state: the run starts there, entered by no event`},
		{`{"id": "m", "initial": "A", "states": {"A": {"on": {"Go": "B", "Run": "B"}}, "B": {"after": {"slow": "A"}}}}`, `x.json: state B: after "slow": a named delay imports as the duration field slow of the event that enters the state: the rows that enter it are on Go, Run, not one event`},
		{`{"id": "m", "initial": "A", "states": {"A": {"on": {"Go": "B"}}, "B": {"after": {"slow-ly": "A"}}}}`, `x.json: state B: after slow-ly: a named delay imports as the duration field of that name of the event that enters the state; "slow-ly" is not a .fsm name`},
		{`{"id": "m", "initial": "B", "states": {"A": {"on": {"go": "A"}}}}`, `x.json: initial state "B" is not one of the states`},
		{`{"id": "M", "initial": "A", "states": {"A": {"on": {"Go": "C"}}}}`, `x.json: state A: target "C": want a state of this machine`},
		{`{"id": "M", "initial": "A", "states": {"A": {"on": {"Go": "B"}}, "B": {"type": "final", "on": {"Go": "A"}}}}`, "x.json: the imported machine does not check:\nx.json:"},
	} {
		_, _, err := gen.ImportXState("x.json", []byte(tc.config))
		if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
			t.Errorf("import of %s: error %v, want %q", tc.config, err, tc.err)
		}
	}
}
