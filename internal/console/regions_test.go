package console

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime"
)

// pod is the definition of a machine with a parallel state, Bound, of
// regions Api and Worker, as package defdiagram's tests keep it.
func pod(t *testing.T) *runtime.Definition {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "defdiagram", "testdata", "pod.json"))
	if err != nil {
		t.Fatal(err)
	}
	var def runtime.Definition
	if err := json.Unmarshal(data, &def); err != nil {
		t.Fatal(err)
	}
	return &def
}

// TestRegionLeaves names each region's leaf of a run in a configuration:
// by the region's name from the definition, by its number without one,
// and nothing for a run in one leaf.
func TestRegionLeaves(t *testing.T) {
	t.Parallel()
	def := pod(t)
	for _, tt := range []struct {
		name  string
		def   *runtime.Definition
		state string
		want  []regionLeaf
	}{
		{"configuration", def, "ApiRunning|WorkerWaiting", []regionLeaf{{"Api", "ApiRunning"}, {"Worker", "WorkerWaiting"}}},
		{"no definition", nil, "ApiRunning|WorkerWaiting", []regionLeaf{{"1", "ApiRunning"}, {"2", "WorkerWaiting"}}},
		{"leaf", def, "Unscheduled", nil},
	} {
		if diff := cmp.Diff(tt.want, regionLeaves(tt.def, tt.state)); diff != "" {
			t.Errorf("%s: regionLeaves(%q) (-want +got):\n%s", tt.name, tt.state, diff)
		}
	}
}

// TestHasRowConfiguration finds the events of a run in a configuration:
// those of each region's leaf and those of the parallel state, whose rows
// the definition lists from it.
func TestHasRowConfiguration(t *testing.T) {
	t.Parallel()
	def := pod(t)
	var got []string
	for _, ev := range def.Events {
		if hasRow(def, "ApiRunning|WorkerWaiting", ev.Name) {
			got = append(got, ev.Name)
		}
	}
	want := []string{"ApiCompleted", "ApiError", "WorkerStarted", "DeadlineExceeded"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestLeafHeat counts the runs of a configuration in each of its leaves,
// beside the runs of a leaf alone, whose median it keeps.
func TestLeafHeat(t *testing.T) {
	t.Parallel()
	got := leafHeat(map[string]heat{
		"Unscheduled":              {State: "Unscheduled", Runs: 2, Median: 3, Left: 4},
		"ApiRunning|WorkerWaiting": {State: "ApiRunning|WorkerWaiting", Runs: 3, Stuck: 1},
		"ApiRunning|WorkerRunning": {State: "ApiRunning|WorkerRunning", Runs: 1, Parked: 1},
	})
	want := map[string]heat{
		"Unscheduled":   {State: "Unscheduled", Runs: 2, Median: 3, Left: 4},
		"ApiRunning":    {State: "ApiRunning", Runs: 4, Stuck: 1, Parked: 1},
		"WorkerWaiting": {State: "WorkerWaiting", Runs: 3, Stuck: 1},
		"WorkerRunning": {State: "WorkerRunning", Runs: 1, Parked: 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("leafHeat (-want +got):\n%s", diff)
	}
}
