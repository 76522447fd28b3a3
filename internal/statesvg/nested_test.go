package statesvg_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/internal/statesvg"
	"github.com/fsmgen/fsmgen/machines/specs/deviceauth/deviceauth"
	"github.com/fsmgen/fsmgen/machines/specs/dhcpclient/dhcpclient"
	"github.com/fsmgen/fsmgen/machines/specs/sipinvite/inviteclient"
	"github.com/fsmgen/fsmgen/machines/specs/tcpconn/tcpconn"
	"github.com/fsmgen/fsmgen/machines/specs/usbdevice/usbdevice"
	"github.com/fsmgen/fsmgen/runtime"
)

// player is the nested Player machine's definition, as package
// defdiagram's tests keep it.
func player(t *testing.T) runtime.Definition {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "defdiagram", "testdata", "player.json"))
	if err != nil {
		t.Fatal(err)
	}
	var def runtime.Definition
	if err := json.Unmarshal(data, &def); err != nil {
		t.Fatal(err)
	}
	return def
}

// TestRenderNested draws a nested machine: a frame per composite around
// its children, history circles, and each row once from the state it was
// written on; the composites holding the current state are active.
func TestRenderNested(t *testing.T) {
	t.Parallel()
	def := player(t)
	got := statesvg.Render(def, statesvg.Marks{Current: "PAUSED"})
	wellFormed(t, got)
	if again := statesvg.Render(def, statesvg.Marks{Current: "PAUSED"}); !bytes.Equal(got, again) {
		t.Fatal("two renderings of the same definition and marks differ")
	}
	path := filepath.Join("testdata", "nested.svg")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("Render (-want +got):\n%s", diff)
	}

	var edges []string
	for _, m := range regexp.MustCompile(`data-from="(\w+)" data-to="(\w+)"`).FindAllStringSubmatch(string(got), -1) {
		edges = append(edges, m[1]+"->"+m[2])
	}
	wantEdges := []string{"STOPPED->PLAYING", "STOPPED->RESUME", "STOPPED->LAST", "PLAYING->PAUSED", "PLAYING->PLAYING",
		"PLAYING->ENDED", "PLAYING->BROKEN", "ACTIVE->STOPPED", "ACTIVE->OFF", "PAUSED->PLAYING", "PAUSED->STOPPED"}
	if diff := cmp.Diff(wantEdges, edges); diff != "" {
		t.Errorf("edges (-want +got):\n%s", diff)
	}
	if !bytes.Contains(got, []byte(`<g class="composite active" data-state="ACTIVE">`)) {
		t.Error("ACTIVE, which holds the current state, is not drawn active")
	}
	for _, h := range []string{`<g class="history" data-state="RESUME">`, `<g class="history" data-state="LAST">`} {
		if !bytes.Contains(got, []byte(h)) {
			t.Errorf("no %s", h)
		}
	}
}

// TestRenderNestedSpecs draws the nested machines of machines/specs: every
// leaf, composite and history once, well-formed.
func TestRenderNestedSpecs(t *testing.T) {
	t.Parallel()
	for _, def := range []runtime.Definition{deviceauth.Definition(), dhcpclient.Definition(), inviteclient.Definition(), tcpconn.Definition(), usbdevice.Definition()} {
		t.Run(def.Type, func(t *testing.T) {
			t.Parallel()
			got := statesvg.Render(def, statesvg.Marks{Current: def.Initial})
			wellFormed(t, got)
			for _, s := range def.States {
				if n := bytes.Count(got, []byte(`data-state="`+s.Name+`"`)); n != 1 {
					t.Errorf("state %s drawn %d times", s.Name, n)
				}
			}
			for _, c := range def.Composites {
				if n := bytes.Count(got, []byte(`<g class="composite active" data-state="`+c.Name+`">`)) + bytes.Count(got, []byte(`<g class="composite" data-state="`+c.Name+`">`)); n != 1 {
					t.Errorf("composite %s drawn %d times", c.Name, n)
				}
				for _, h := range c.History {
					if n := bytes.Count(got, []byte(`<g class="history" data-state="`+h.Name+`">`)); n != 1 {
						t.Errorf("history %s drawn %d times", h.Name, n)
					}
				}
			}
		})
	}
}

// TestRenderParallel draws a machine with a parallel state, a run in one
// of its configurations: the leaf of each region is current, the
// parallel state and both regions active, every state drawn once.
func TestRenderParallel(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("..", "defdiagram", "testdata", "pod.json"))
	if err != nil {
		t.Fatal(err)
	}
	var def runtime.Definition
	if err := json.Unmarshal(data, &def); err != nil {
		t.Fatal(err)
	}
	got := statesvg.Render(def, statesvg.Marks{Current: "ApiRunning|WorkerWaiting"})
	wellFormed(t, got)
	var current []string
	for _, m := range regexp.MustCompile(`<g class="state[^"]* current[^"]*" data-state="(\w+)">`).FindAllStringSubmatch(string(got), -1) {
		current = append(current, m[1])
	}
	if diff := cmp.Diff([]string{"ApiRunning", "WorkerWaiting"}, current); diff != "" {
		t.Errorf("current states (-want +got):\n%s", diff)
	}
	var active []string
	for _, m := range regexp.MustCompile(`<g class="composite active" data-state="(\w+)">`).FindAllStringSubmatch(string(got), -1) {
		active = append(active, m[1])
	}
	if diff := cmp.Diff([]string{"Bound", "Api", "Worker"}, active); diff != "" {
		t.Errorf("active composites (-want +got):\n%s", diff)
	}
	for _, s := range def.States {
		if n := bytes.Count(got, []byte(`data-state="`+s.Name+`"`)); n != 1 {
			t.Errorf("state %s drawn %d times", s.Name, n)
		}
	}
	// The regions are side by side in one row, just under the parallel
	// state's name (dot chooses which is on the left).
	frames := map[string][2]int{}
	for _, m := range regexp.MustCompile(`data-state="(\w+)"><rect class="frame" x="(\d+)" y="(\d+)"`).FindAllStringSubmatch(string(got), -1) {
		x, _ := strconv.Atoi(m[2])
		y, _ := strconv.Atoi(m[3])
		frames[m[1]] = [2]int{x, y}
	}
	api, worker, bound := frames["Api"], frames["Worker"], frames["Bound"]
	if api[1] != worker[1] || api[0] == worker[0] {
		t.Errorf("regions at %v (Api) and %v (Worker), want side by side", api, worker)
	}
	if gap := api[1] - bound[1]; gap > 60 {
		t.Errorf("regions %d below the top of Bound, want at most 60", gap)
	}
}

// TestPathNested marks a row written on a composite as taken when the run
// left one of the composite's leaves on it.
func TestPathNested(t *testing.T) {
	t.Parallel()
	def := player(t)
	edge := regexp.MustCompile(`<g class="edge" data-from="ACTIVE" data-to="([^"]+)">`).FindStringSubmatch(string(statesvg.Render(def, statesvg.Marks{})))
	if edge == nil {
		t.Fatal("the player has no row drawn from ACTIVE")
	}
	to := edge[1]
	svg := string(statesvg.Render(def, statesvg.Marks{Current: to, Visited: []string{"PLAYING", to}, Taken: [][2]string{{"PLAYING", to}}}))
	wellFormed(t, []byte(svg))
	var got []string
	for _, m := range regexp.MustCompile(`<g class="edge taken" data-from="([^"]+)" data-to="([^"]+)">`).FindAllStringSubmatch(svg, -1) {
		got = append(got, m[1]+" -> "+m[2])
	}
	if diff := cmp.Diff([]string{"ACTIVE -> " + to}, got); diff != "" {
		t.Errorf("taken arrows (-want +got):\n%s", diff)
	}
}
