package gen_test

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/dsl"
	"github.com/fsmgen/fsmgen/gen"
)

// exporters are the export formats, by file extension of their goldens.
var exporters = map[string]func(*dsl.Machine) ([]byte, error){
	"xstate.json": gen.XState,
	"scxml":       gen.SCXML,
}

// TestExportGolden compares each machine's exports with its golden copy,
// testdata/export/INPUT.MACHINE.EXT; go test ./gen -update rewrites them.
// Rendering twice gives the same bytes.
func TestExportGolden(t *testing.T) {
	t.Parallel()
	for _, file := range inputs(t) {
		for _, m := range load(t, file).Machines {
			for ext, render := range exporters {
				name := baseName(file) + "." + m.Name + "." + ext
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					got, err := render(m)
					if err != nil {
						t.Fatal(err)
					}
					again, err := render(m)
					if err != nil {
						t.Fatal(err)
					}
					if diff := cmp.Diff(string(got), string(again)); diff != "" {
						t.Fatalf("a second rendering differs (-first +second):\n%s", diff)
					}
					if ext == "scxml" {
						wellFormedSCXML(t, got)
					}
					p := filepath.Join("testdata", "export", name)
					if *update {
						if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
							t.Fatal(err)
						}
						if err := os.WriteFile(p, got, 0o644); err != nil {
							t.Fatal(err)
						}
					}
					want, err := os.ReadFile(p)
					if err != nil {
						t.Fatalf("%v (run go test ./gen -update)", err)
					}
					if diff := cmp.Diff(string(want), string(got)); diff != "" {
						t.Errorf("%s differs from its golden file (-want +got):\n%s", p, diff)
					}
				})
			}
		}
	}
}

// TestXStateShape checks, on the turnstile, the parts of the XState
// config that the conventions promise: final states, named and negated
// guards, * expanded with its FROM kept, timers as delayed transitions.
func TestXStateShape(t *testing.T) {
	t.Parallel()
	spec := load(t, filepath.Join("testdata", "turnstile.fsm"))
	out, err := gen.XState(spec.Machines[0])
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		ID      string
		Initial string
		States  map[string]struct {
			Type  string
			After map[string][]map[string]any
			On    map[string][]map[string]any
		}
	}
	if err := json.Unmarshal(out, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.ID != "Turnstile" || cfg.Initial != "LOCKED" {
		t.Errorf("id %q initial %q", cfg.ID, cfg.Initial)
	}
	if got := cfg.States["BROKEN"].Type; got != "final" {
		t.Errorf("BROKEN has type %q, want final", got)
	}
	want := map[string]any{
		"target": "BROKEN",
		"meta":   map[string]any{"fsmgen": map[string]any{"row": float64(3), "from": []any{"*"}}},
	}
	for _, s := range []string{"LOCKED", "UNLOCKED"} {
		if diff := cmp.Diff([]map[string]any{want}, cfg.States[s].On["Smash"]); diff != "" {
			t.Errorf("%s on Smash (-want +got):\n%s", s, diff)
		}
	}
	if got := cfg.States["LOCKED"].On["Coin"][0]["guard"]; got != "EnoughCoins" {
		t.Errorf("LOCKED on Coin has guard %v", got)
	}
	after := cfg.States["UNLOCKED"].After["30000"]
	if len(after) != 1 || after[0]["target"] != "LOCKED" {
		t.Errorf("UNLOCKED after 30000 = %v, want the Timeout row to LOCKED", after)
	}
}

// wellFormedSCXML checks that doc is well-formed XML whose root is an
// <scxml> element of the SCXML namespace; the Node tests load it in a
// real SCXML interpreter.
func wellFormedSCXML(t *testing.T, doc []byte) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(doc))
	dec.Strict = true
	var root *xml.StartElement
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && root == nil {
			root = &se
		}
	}
	if root == nil || root.Name.Space != "http://www.w3.org/2005/07/scxml" || root.Name.Local != "scxml" {
		t.Fatalf("root element %v, want scxml of http://www.w3.org/2005/07/scxml", root)
	}
}
