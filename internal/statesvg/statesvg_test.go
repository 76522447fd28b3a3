package statesvg_test

import (
	"bytes"
	"encoding/xml"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/internal/statesvg"
	"github.com/fsmgen/fsmgen/runtime"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// order is a shop order: waits, retries, guards, a loop, terminal states
// with outcomes and a state the initial one cannot reach.
func order() runtime.Definition {
	return runtime.Definition{
		Machine: "Order", Type: "shop_order", Version: 1, Initial: "PENDING_PAYMENT", Cancel: "Cancel",
		States: []runtime.StateSpec{
			{Name: "PENDING_PAYMENT", Initial: true, Status: runtime.StatusRunning, Wait: true},
			{Name: "PACKING", Status: runtime.StatusRunning},
			{Name: "IN_TRANSIT", Status: runtime.StatusRunning, Wait: true},
			{Name: "DELIVERED", Status: runtime.StatusRunning, Wait: true},
			{Name: "REFUNDING", Status: runtime.StatusRunning},
			{Name: "COMPLETED", Status: runtime.StatusSucceeded},
			{Name: "CANCELLED", Status: runtime.StatusCancelled},
			{Name: "REFUNDED", Status: runtime.StatusCancelled, Outcome: "refunded"},
			{Name: "ARCHIVED", Status: runtime.StatusSucceeded},
		},
		Events: []runtime.EventSpec{{Name: "Pay"}, {Name: "PaymentExpired"}, {Name: "Packed"}, {Name: "Delivered"}, {Name: "Lost"},
			{Name: "Returned"}, {Name: "ReturnWindowClosed"}, {Name: "Refunded"}, {Name: "Cancel"}, {Name: "Retry"}},
		Guards: []string{"UserOwnsRun"},
		Transitions: []runtime.TransitionSpec{
			{From: "PENDING_PAYMENT", To: "PACKING", Event: "Pay"},
			{From: "PENDING_PAYMENT", To: "CANCELLED", Event: "PaymentExpired"},
			{From: "PENDING_PAYMENT", To: "CANCELLED", Event: "Cancel", Guard: "UserOwnsRun"},
			{From: "PACKING", To: "IN_TRANSIT", Event: "Packed"},
			{From: "PACKING", To: "REFUNDING", Event: "Cancel", Guard: "UserOwnsRun"},
			{From: "IN_TRANSIT", To: "DELIVERED", Event: "Delivered"},
			{From: "IN_TRANSIT", To: "REFUNDING", Event: "Lost"},
			{From: "DELIVERED", To: "REFUNDING", Event: "Returned", Guard: "UserOwnsRun", Negated: true},
			{From: "DELIVERED", To: "COMPLETED", Event: "ReturnWindowClosed"},
			{From: "REFUNDING", To: "REFUNDED", Event: "Refunded", Outcome: "refunded"},
			{From: "REFUNDING", To: "REFUNDING", Event: "Retry"},
			{From: "REFUNDING", To: "PACKING", Event: "Retry"},
		},
	}
}

// wellFormed fails the test when svg is not well-formed XML.
func wellFormed(t *testing.T, svg []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(svg))
	for {
		_, err := d.Token()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("the SVG is not well-formed XML: %v\n%s", err, svg)
		}
	}
}

func TestRenderGolden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		marks statesvg.Marks
	}{
		{"plain", statesvg.Marks{}},
		{"current", statesvg.Marks{Current: "IN_TRANSIT"}},
		{"heat", statesvg.Marks{ID: "heat", Heat: map[string]statesvg.Heat{
			"PENDING_PAYMENT": {Runs: 40, Median: 1500 * time.Millisecond, HasMedian: true},
			"PACKING":         {Runs: 3, Stuck: 1, Median: 2 * time.Minute, HasMedian: true},
			"REFUNDING":       {Runs: 1, Parked: 1},
			"COMPLETED":       {Runs: 200},
		}, Link: func(state string) string { return "/runs?type=shop_order&state=" + state }}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := statesvg.Render(order(), tc.marks)
			wellFormed(t, got)
			if again := statesvg.Render(order(), tc.marks); !bytes.Equal(got, again) {
				t.Fatal("two renderings of the same definition and marks differ")
			}
			path := filepath.Join("testdata", tc.name+".svg")
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
		})
	}
}

var boxRE = regexp.MustCompile(`<g class="([^"]*)" data-state="([^"]*)">(?:<a [^>]*>)?(?:<circle[^>]*/><path[^>]*/>)?<rect class="box" x="(\d+)" y="(\d+)"`)

// boxes returns each state's classes and the y of its box.
func boxes(t *testing.T, svg []byte) (classes map[string]string, ys map[string]int) {
	t.Helper()
	classes, ys = map[string]string{}, map[string]int{}
	for _, m := range boxRE.FindAllStringSubmatch(string(svg), -1) {
		y, _ := strconv.Atoi(m[4])
		classes[m[2]], ys[m[2]] = m[1], y
	}
	return classes, ys
}

// TestBoxesDoNotOverlap lays out the order machine and checks that no
// two states' boxes overlap and that every box is inside the drawing.
func TestBoxesDoNotOverlap(t *testing.T) {
	t.Parallel()
	svg := string(statesvg.Render(order(), statesvg.Marks{}))
	size := regexp.MustCompile(`viewBox="0 0 (\d+) (\d+)"`).FindStringSubmatch(svg)
	if size == nil {
		t.Fatalf("no viewBox:\n%s", svg)
	}
	w, _ := strconv.Atoi(size[1])
	h, _ := strconv.Atoi(size[2])
	type rect struct {
		name       string
		x, y, w, h int
	}
	var rects []rect
	for _, m := range regexp.MustCompile(`data-state="([^"]+)"><rect class="box" x="(-?\d+)" y="(-?\d+)" width="(\d+)" height="(\d+)"`).FindAllStringSubmatch(svg, -1) {
		r := rect{name: m[1]}
		r.x, _ = strconv.Atoi(m[2])
		r.y, _ = strconv.Atoi(m[3])
		r.w, _ = strconv.Atoi(m[4])
		r.h, _ = strconv.Atoi(m[5])
		rects = append(rects, r)
	}
	if len(rects) != len(order().States) {
		t.Fatalf("%d boxes, want %d", len(rects), len(order().States))
	}
	for i, a := range rects {
		if a.x < 0 || a.y < 0 || a.x+a.w > w || a.y+a.h > h {
			t.Errorf("%s at %+v is outside the drawing (%dx%d)", a.name, a, w, h)
		}
		for _, b := range rects[i+1:] {
			if a.x < b.x+b.w && b.x < a.x+a.w && a.y < b.y+b.h && b.y < a.y+a.h {
				t.Errorf("%s %+v overlaps %s %+v", a.name, a, b.name, b)
			}
		}
	}
}

func TestClasses(t *testing.T) {
	t.Parallel()
	classes, _ := boxes(t, statesvg.Render(order(), statesvg.Marks{Current: "PACKING", Heat: map[string]statesvg.Heat{
		"PACKING": {Runs: 10}, "IN_TRANSIT": {Runs: 1}, "REFUNDING": {Runs: 5, Parked: 1}}}))
	want := map[string]string{
		"PENDING_PAYMENT": "state initial waits heat-0",
		"PACKING":         "state current heat-5",
		"IN_TRANSIT":      "state waits heat-1",
		"DELIVERED":       "state waits heat-0",
		"REFUNDING":       "state heat-3 stuck",
		"COMPLETED":       "state terminal status-succeeded heat-0",
		"CANCELLED":       "state terminal status-cancelled heat-0",
		"REFUNDED":        "state terminal status-cancelled heat-0",
		"ARCHIVED":        "state terminal status-succeeded heat-0",
	}
	if diff := cmp.Diff(want, classes); diff != "" {
		t.Errorf("classes by state (-want +got):\n%s", diff)
	}
}

func TestEscapesEverything(t *testing.T) {
	t.Parallel()
	evil := `<script>window.x=1</script>`
	def := runtime.Definition{
		Type: `t"><img src=x onerror=alert(1)>`, Version: 1, Initial: evil,
		States:      []runtime.StateSpec{{Name: evil, Initial: true, Status: runtime.StatusRunning}, {Name: "B&'\x01", Status: runtime.StatusFailed}},
		Events:      []runtime.EventSpec{{Name: `<b>Go</b>`}},
		Transitions: []runtime.TransitionSpec{{From: evil, To: "B&'\x01", Event: `<b>Go</b>`, Guard: `"g"`}},
	}
	svg := statesvg.Render(def, statesvg.Marks{Current: evil, ID: `"x`, Heat: map[string]statesvg.Heat{evil: {Runs: 1}},
		Link: func(s string) string { return `javascript:"` + s }})
	wellFormed(t, svg)
	for _, bad := range []string{"<script", "<img", "<b>", `"g"`, "\x01"} {
		if bytes.Contains(svg, []byte(bad)) {
			t.Errorf("the SVG holds %q unescaped:\n%s", bad, svg)
		}
	}
	for _, good := range []string{"&lt;script&gt;window.x=1&lt;/script&gt;", "B&amp;&#39;\uFFFD", "&lt;b&gt;Go&lt;/b&gt; [&#34;g&#34;]"} {
		if !bytes.Contains(svg, []byte(good)) {
			t.Errorf("the SVG lacks %q:\n%s", good, svg)
		}
	}
}

func TestDuration(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		850 * time.Microsecond:               "850µs",
		1500 * time.Microsecond:              "2ms",
		420 * time.Millisecond:               "420ms",
		4240 * time.Millisecond:              "4.2s",
		190 * time.Second:                    "3m10s",
		5*time.Hour + 4*time.Minute:          "5h4m",
		74 * time.Hour:                       "3d2h",
		47*time.Hour + 59*time.Minute:        "47h59m",
		2*time.Minute + 500*time.Millisecond: "2m1s",
	} {
		if got := statesvg.Duration(d); got != want {
			t.Errorf("Duration(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestHeatLines(t *testing.T) {
	t.Parallel()
	tests := []struct {
		h            statesvg.Heat
		runs, median string
	}{
		{statesvg.Heat{}, "0 runs", "median –"},
		{statesvg.Heat{Runs: 1, Median: 3 * time.Second, HasMedian: true}, "1 run", "median 3.0s"},
		{statesvg.Heat{Runs: 4, Stuck: 1}, "4 runs, 1 stuck", "median –"},
		{statesvg.Heat{Runs: 4, Parked: 2}, "4 runs, 2 parked", "median –"},
		{statesvg.Heat{Runs: 4, Stuck: 1, Parked: 2}, "4 runs, 1 stuck, 2 parked", "median –"},
	}
	for _, tc := range tests {
		runs, median := tc.h.Lines()
		if runs != tc.runs || median != tc.median {
			t.Errorf("%+v.Lines() = %q, %q; want %q, %q", tc.h, runs, median, tc.runs, tc.median)
		}
	}
	for _, tc := range []struct{ runs, max, want int }{{0, 10, 0}, {1, 10, 1}, {2, 10, 1}, {3, 10, 2}, {10, 10, 5}, {1, 1, 5}, {5, 0, 0}} {
		if got := statesvg.Level(tc.runs, tc.max); got != tc.want {
			t.Errorf("Level(%d, %d) = %d, want %d", tc.runs, tc.max, got, tc.want)
		}
	}
}

func TestEmptyDefinitionDrawsNothingBroken(t *testing.T) {
	t.Parallel()
	svg := statesvg.Render(runtime.Definition{Type: "empty", Version: 1}, statesvg.Marks{})
	wellFormed(t, svg)
	if !strings.Contains(string(svg), `<g class="states">`) {
		t.Errorf("no states group:\n%s", svg)
	}
}

// TestPath draws a run's path: the states it visited and the arrows of the
// changes it made, and nothing else.
func TestPath(t *testing.T) {
	t.Parallel()
	svg := string(statesvg.Render(order(), statesvg.Marks{
		Current: "REFUNDING",
		Visited: []string{"PENDING_PAYMENT", "PACKING", "IN_TRANSIT", "REFUNDING"},
		Taken:   [][2]string{{"PENDING_PAYMENT", "PACKING"}, {"PACKING", "IN_TRANSIT"}, {"IN_TRANSIT", "REFUNDING"}},
	}))
	wellFormed(t, []byte(svg))
	var visited, taken []string
	for _, m := range regexp.MustCompile(`<g class="state[^"]*\bvisited\b[^"]*" data-state="([^"]+)"`).FindAllStringSubmatch(svg, -1) {
		visited = append(visited, m[1])
	}
	for _, m := range regexp.MustCompile(`<g class="edge taken" data-from="([^"]+)" data-to="([^"]+)">`).FindAllStringSubmatch(svg, -1) {
		taken = append(taken, m[1]+" -> "+m[2])
	}
	if diff := cmp.Diff([]string{"PENDING_PAYMENT", "PACKING", "IN_TRANSIT", "REFUNDING"}, visited); diff != "" {
		t.Errorf("visited states (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"PENDING_PAYMENT -> PACKING", "PACKING -> IN_TRANSIT", "IN_TRANSIT -> REFUNDING"}, taken); diff != "" {
		t.Errorf("taken arrows (-want +got):\n%s", diff)
	}
}
