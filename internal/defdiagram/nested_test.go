package defdiagram_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/dsl"
	"github.com/fsmgen/fsmgen/gen"
	"github.com/fsmgen/fsmgen/internal/defdiagram"
	"github.com/fsmgen/fsmgen/machines/specs/deviceauth/deviceauth"
	"github.com/fsmgen/fsmgen/machines/specs/dhcpclient/dhcpclient"
	"github.com/fsmgen/fsmgen/machines/specs/sipinvite/inviteclient"
	"github.com/fsmgen/fsmgen/machines/specs/tcpconn/tcpconn"
	"github.com/fsmgen/fsmgen/machines/specs/usbdevice/usbdevice"
	"github.com/fsmgen/fsmgen/runtime"
)

// playerDefinition is the definition of the Player machine of
// gen/testdata/nested (STATECHARTS.md's example), rows leaf to leaf as the
// generator lists them.
func playerDefinition() runtime.Definition {
	row := func(from, event, to string, opts ...string) runtime.TransitionSpec {
		t := runtime.TransitionSpec{From: from, Event: event, To: to}
		for _, o := range opts {
			switch {
			case o == "internal":
				t.Internal = true
			case o == "done":
				t.Done = true
			case strings.HasPrefix(o, "guard "):
				t.Guard = o[6:]
			case strings.HasPrefix(o, "history "):
				t.History = o[8:]
			}
		}
		return t
	}
	var rows []runtime.TransitionSpec
	rows = append(rows, row("STOPPED", "Play", "PLAYING"))
	for _, h := range []string{"RESUME", "LAST"} {
		ev := map[string]string{"RESUME": "Resume", "LAST": "Recall"}[h]
		for _, to := range []string{"PLAYING", "PAUSED", "ENDED"} {
			rows = append(rows, row("STOPPED", ev, to, "history "+h))
		}
	}
	rows = append(rows,
		row("PLAYING", "Pause", "PAUSED"),
		row("PLAYING", "Tick", "PLAYING", "internal"),
		row("PLAYING", "Finish", "ENDED"),
		row("PLAYING", "Fail", "BROKEN"),
		row("PLAYING", "Stop", "STOPPED"),
		row("PLAYING", "IdleTimeout", "OFF"),
		row("PAUSED", "Pause", "PLAYING"),
		row("PAUSED", "Play", "PLAYING"),
		row("PAUSED", "", "STOPPED", "guard Expired"),
		row("PAUSED", "Stop", "STOPPED"),
		row("PAUSED", "IdleTimeout", "OFF"),
		row("ENDED", "Stop", "STOPPED"),
		row("ENDED", "", "OFF", "done"),
		row("ENDED", "IdleTimeout", "OFF"),
	)
	var events []runtime.EventSpec
	for _, e := range []string{"IdleTimeout", "Stop", "Play", "Pause", "Resume", "Recall", "Tick", "Finish", "Fail"} {
		events = append(events, runtime.EventSpec{Name: e})
	}
	return runtime.Definition{
		Machine: "Player", Type: "Player", Version: 1, Initial: "STOPPED",
		States: []runtime.StateSpec{
			{Name: "STOPPED", Initial: true, Status: runtime.StatusRunning, Wait: true},
			{Name: "PLAYING", Status: runtime.StatusRunning, Wait: true, Parent: "ACTIVE"},
			{Name: "PAUSED", Status: runtime.StatusRunning, Wait: true, Parent: "ACTIVE", Timers: []runtime.Timer{{After: 5 * time.Minute, Event: "Stop"}}},
			{Name: "ENDED", Status: runtime.StatusRunning, Wait: true, Parent: "ACTIVE"},
			{Name: "BROKEN", Status: runtime.StatusFailed, Parent: "ACTIVE"},
			{Name: "OFF", Status: runtime.StatusSucceeded},
		},
		Composites: []runtime.CompositeSpec{{
			Name: "ACTIVE", Initial: "PLAYING", Timers: []runtime.Timer{{After: 30 * time.Minute, Event: "IdleTimeout"}},
			History: []runtime.HistorySpec{{Name: "RESUME"}, {Name: "LAST", Deep: true}},
			Entry:   []string{"StartClock"}, Exit: []string{"StopClock"},
		}},
		Events:      events,
		Guards:      []string{"Expired"},
		Actions:     []string{"StartClock", "StopClock"},
		Transitions: rows,
	}
}

// TestMermaidNested draws a nested machine from its definition as the
// generator draws it from its .fsm file: composites, histories, final
// children and the rows as written, not leaf to leaf.
func TestMermaidNested(t *testing.T) {
	t.Parallel()
	want, err := os.ReadFile(filepath.Join("..", "..", "gen", "testdata", "nested", "player.mmd"))
	if err != nil {
		t.Fatal(err)
	}
	got := defdiagram.Mermaid(playerDefinition())
	wantLines := strings.Split(string(want), "\n")
	gotLines := strings.Split(string(got), "\n")
	if gotLines[1] != "    %% Drawn from the registered definition of Player v1." {
		t.Errorf("first comment %q", gotLines[1])
	}
	// The definition lists rows leaf by leaf, not in the order they were
	// written: the edges and the labels of one edge may come in another
	// order, within their block.
	// A row written to a composite is drawn to its initial leaf.
	for i, l := range wantLines {
		wantLines[i] = strings.Replace(l, "STOPPED --> ACTIVE : Play", "STOPPED --> PLAYING : Play", 1)
	}
	if diff := cmp.Diff(normalized(wantLines[2:]), normalized(gotLines[2:])); diff != "" {
		t.Errorf("the diagram differs from the generator's (-generator +definition):\n%s", diff)
	}
}

// TestPlayerDefinitionFile keeps testdata/player.json, the definition
// package statesvg draws in its tests, equal to playerDefinition.
func TestPlayerDefinitionFile(t *testing.T) {
	t.Parallel()
	got, err := json.MarshalIndent(playerDefinition(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	file := filepath.Join("testdata", "player.json")
	if os.Getenv("FSMGEN_UPDATE") != "" {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run with FSMGEN_UPDATE=1)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("testdata/player.json (-file +playerDefinition):\n%s", diff)
	}
}

// normalized sorts the labels of each edge and the edges of each run of
// edge lines.
func normalized(lines []string) []string {
	out := slices.Clone(lines)
	start := -1
	for i := 0; i <= len(out); i++ {
		edge := i < len(out) && strings.Contains(out[i], " --> ") && !strings.Contains(out[i], "[*]")
		if edge {
			if l, labels, ok := strings.Cut(out[i], " : "); ok {
				ls := strings.Split(labels, "<br/>")
				slices.Sort(ls)
				out[i] = l + " : " + strings.Join(ls, "<br/>")
			}
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			slices.Sort(out[start:i])
			start = -1
		}
	}
	return out
}

// TestMermaidNestedSpecs draws the registered definitions of the nested
// machines of machines/specs as the generator draws their .fsm files.
func TestMermaidNestedSpecs(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		fsm string
		def runtime.Definition
	}{
		{"machines/specs/deviceauth/deviceauth.fsm", deviceauth.Definition()},
		{"machines/specs/dhcpclient/dhcpclient.fsm", dhcpclient.Definition()},
		{"machines/specs/sipinvite/sipinvite.fsm", inviteclient.Definition()},
		{"machines/specs/tcpconn/tcpconn.fsm", tcpconn.Definition()},
		{"machines/specs/usbdevice/usbdevice.fsm", usbdevice.Definition()},
	} {
		t.Run(filepath.Base(tt.fsm), func(t *testing.T) {
			t.Parallel()
			file := filepath.Join("..", "..", filepath.FromSlash(tt.fsm))
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			spec, ds := dsl.Load(file, src)
			if spec == nil || ds.HasErrors() {
				t.Fatalf("%s: %v", tt.fsm, ds.Err())
			}
			// The definition keeps neither a row's written target (a
			// composite or the leaf it enters) nor a duration as written
			// (24h is 1d): the states, composites and notes are the same,
			// and each row is drawn from the same state with the same
			// label.
			want, wantRows := splitDiagram(gen.Mermaid(spec.Machines[0]))
			got, gotRows := splitDiagram(defdiagram.Mermaid(tt.def))
			if diff := cmp.Diff(want[2:], got[2:]); diff != "" {
				t.Errorf("the states differ from the generator's (-generator +definition):\n%s", diff)
			}
			if diff := cmp.Diff(wantRows, gotRows); diff != "" {
				t.Errorf("the rows differ from the generator's (-generator +definition):\n%s", diff)
			}
		})
	}
}

var timerText = regexp.MustCompile(`\(after [^)]*\)`)

// splitDiagram returns a diagram's lines but its edges between states,
// and those edges as "SOURCE : LABEL", one per label, sorted.
func splitDiagram(mermaid []byte) (lines, rows []string) {
	for _, l := range strings.Split(string(mermaid), "\n") {
		from, rest, isEdge := strings.Cut(strings.TrimSpace(l), " --> ")
		if !isEdge || from == "[*]" || strings.HasSuffix(rest, "[*]") {
			lines = append(lines, l)
			continue
		}
		_, labels, _ := strings.Cut(rest, " : ")
		for _, label := range strings.Split(labels, "<br/>") {
			rows = append(rows, from+" : "+timerText.ReplaceAllString(label, "(after)"))
		}
	}
	slices.Sort(rows)
	return lines, rows
}

// podDefinition is the definition of the Pod machine of
// dsl/testdata/parallel, which has a parallel state: rows from region
// leaf to region leaf, the row entering the parallel state to the
// configuration it enters, its own rows from it.
func podDefinition(t *testing.T) runtime.Definition {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "pod.json"))
	if err != nil {
		t.Fatal(err)
	}
	var def runtime.Definition
	if err := json.Unmarshal(data, &def); err != nil {
		t.Fatal(err)
	}
	if err := def.Validate(); err != nil {
		t.Fatalf("testdata/pod.json: %v", err)
	}
	return def
}

// TestMermaidParallel draws a machine with a parallel state from its
// definition as the generator draws it from its .fsm file: the regions
// separated by "--", the row entering the parallel state drawn to it, its
// completion rows from it and the final children of its regions.
func TestMermaidParallel(t *testing.T) {
	t.Parallel()
	file := filepath.Join("..", "..", "dsl", "testdata", "parallel", "podlifecycle.fsm")
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	spec, ds := dsl.Load(file, src)
	if spec == nil || ds.HasErrors() {
		t.Fatalf("%s: %v", file, ds.Err())
	}
	want, wantRows := splitDiagram(gen.Mermaid(spec.Machines[0]))
	got, gotRows := splitDiagram(defdiagram.Mermaid(podDefinition(t)))
	if diff := cmp.Diff(want[2:], got[2:]); diff != "" {
		t.Errorf("the states differ from the generator's (-generator +definition):\n%s", diff)
	}
	if diff := cmp.Diff(wantRows, gotRows); diff != "" {
		t.Errorf("the rows differ from the generator's (-generator +definition):\n%s", diff)
	}
}
