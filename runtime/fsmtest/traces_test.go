package fsmtest_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime/fsmtest"
)

// TestTraces checks what Traces records of the door: a trace per state,
// event and guard outcome, every row taken, both kinds of refusal.
func TestTraces(t *testing.T) {
	t.Parallel()
	tf, err := fsmtest.Traces(machine(bugs{}))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"BROKEN"}, tf.Final); diff != "" {
		t.Errorf("Final (-want +got):\n%s", diff)
	}
	byName := map[string]fsmtest.Trace{}
	for _, tr := range tf.Traces {
		byName[tr.Name] = tr
	}
	// CLOSED, OPEN: Open, Close, Kick twice (Hard or not); BROKEN: Open,
	// Close, Kick (no guard asked in a final state).
	if len(tf.Traces) != 4+4+3 {
		t.Errorf("%d traces, want 11", len(tf.Traces))
	}
	want := map[string][]fsmtest.Step{
		"OPEN on Kick map[Hard:true]": {
			{Event: "Open", Guards: map[string]bool{}, State: "OPEN"},
			{Event: "Kick", Guards: map[string]bool{"Hard": true}, State: "BROKEN"},
		},
		"CLOSED on Kick map[Hard:false]": {
			{Event: "Kick", Guards: map[string]bool{"Hard": false}, State: "CLOSED", Refused: "guard"},
		},
		"CLOSED on Close": {
			{Event: "Close", Guards: map[string]bool{}, State: "CLOSED", Refused: "illegal"},
		},
		"BROKEN on Open": {
			{Event: "Kick", Guards: map[string]bool{"Hard": true}, State: "BROKEN"},
			{Event: "Open", Guards: map[string]bool{}, State: "BROKEN", Refused: "illegal"},
		},
	}
	for name, steps := range want {
		if diff := cmp.Diff(steps, byName[name].Steps); diff != "" {
			t.Errorf("trace %q (-want +got):\n%s", name, diff)
		}
	}
}

// TestRunWritesTraces checks that Run writes the traces where TracesEnv
// says, and nothing without it.
func TestRunWritesTraces(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(fsmtest.TracesEnv, dir)
	m := machine(bugs{})
	fsmtest.Run(t, m)
	data, err := os.ReadFile(filepath.Join(dir, "door.v1.traces.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got fsmtest.TraceFile
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	want, err := fsmtest.Traces(m)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("written traces (-want +got):\n%s", diff)
	}
}
