package gen_test

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/dsl"
	"github.com/fsmgen/fsmgen/gen"
)

// rowParts is what an edge label must say about one transition row: its
// event first, then its guard as [G] or [!G] when it has one.
func rowParts(t *dsl.Transition) (event, guard string) {
	if t.Guard == nil {
		return t.Event.Name, ""
	}
	if t.Negated {
		return t.Event.Name, "[!" + t.Guard.Name + "]"
	}
	return t.Event.Name, "[" + t.Guard.Name + "]"
}

// checkEdges checks that the labels of the edges from -> to hold every
// transition row, each row once, in table order.
func checkEdges(t *testing.T, m *dsl.Machine, edges map[[2]string][]string) {
	t.Helper()
	used := map[[2]string]int{}
	for _, tr := range m.Transitions {
		k := [2]string{tr.From.Name, tr.To.Name}
		labels := edges[k]
		i := used[k]
		if i >= len(labels) {
			t.Errorf("no edge label for row %s -> %s on %s", tr.From.Name, tr.To.Name, tr.Event.Name)
			continue
		}
		used[k]++
		event, guard := rowParts(tr)
		l := labels[i]
		if !strings.HasPrefix(l, event+" ") && l != event {
			t.Errorf("edge %s -> %s, line %d: %q does not start with event %s", k[0], k[1], i+1, l, event)
		}
		if guard != "" && !strings.Contains(l, guard) {
			t.Errorf("edge %s -> %s, line %d: %q lacks guard %s", k[0], k[1], i+1, l, guard)
		}
		if guard == "" && strings.Contains(l, "[") {
			t.Errorf("edge %s -> %s, line %d: %q shows a guard the row does not have", k[0], k[1], i+1, l)
		}
		if tr.Outcome != "" && tr.Outcome != tr.To.Outcome && !strings.HasSuffix(l, " / "+tr.Outcome) {
			t.Errorf("edge %s -> %s, line %d: %q lacks outcome %s", k[0], k[1], i+1, l, tr.Outcome)
		}
	}
	for k, labels := range edges {
		if used[k] != len(labels) {
			t.Errorf("edge %s -> %s has %d label lines for %d rows: %q", k[0], k[1], len(labels), used[k], labels)
		}
	}
}

func loadRetrieveOrGenerate(t *testing.T) *dsl.Machine {
	t.Helper()
	spec := load(t, filepath.Join("..", "machines", "problems", "retrieve_or_generate.fsm"))
	if len(spec.Machines) != 1 {
		t.Fatalf("%d machines, want 1", len(spec.Machines))
	}
	return spec.Machines[0]
}

var (
	mermaidEdge  = regexp.MustCompile(`^    (\S+) --> (\S+)(?: : (.*))?$`)
	mermaidClass = regexp.MustCompile(`^    class (\S+) (\w+)$`)
)

func TestMermaidRetrieveOrGenerate(t *testing.T) {
	m := loadRetrieveOrGenerate(t)
	out := string(gen.Mermaid(m))
	if !strings.HasPrefix(out, "stateDiagram-v2\n") {
		t.Fatalf("Mermaid output does not start with stateDiagram-v2:\n%s", out)
	}
	edges := map[[2]string][]string{}
	var starts, ends []string
	classes := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if c := mermaidClass.FindStringSubmatch(line); c != nil {
			for _, id := range strings.Split(c[1], ",") {
				classes[id] = c[2]
			}
			continue
		}
		e := mermaidEdge.FindStringSubmatch(line)
		switch {
		case e == nil:
		case e[1] == "[*]":
			starts = append(starts, e[2])
		case e[2] == "[*]":
			ends = append(ends, e[1])
		default:
			k := [2]string{e[1], e[2]}
			if _, dup := edges[k]; dup {
				t.Errorf("two edges %s -> %s; rows with the same ends share one", e[1], e[2])
			}
			edges[k] = strings.Split(e[3], "<br/>")
		}
	}
	checkEdges(t, m, edges)
	if diff := cmp.Diff([]string{m.Initial.Name}, starts); diff != "" {
		t.Errorf("edges from [*] (-want +got):\n%s", diff)
	}
	var finals []string
	wantClasses := map[string]string{}
	for _, s := range m.States {
		if s.Terminal() {
			finals = append(finals, s.Name)
			wantClasses[s.Name] = s.Status
		}
	}
	if diff := cmp.Diff(finals, ends); diff != "" {
		t.Errorf("edges to [*] (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantClasses, classes); diff != "" {
		t.Errorf("state classes (-want +got):\n%s", diff)
	}
	for _, st := range []string{"succeeded", "failed", "cancelled"} {
		if !strings.Contains(out, "\n    classDef "+st+" ") {
			t.Errorf("no classDef %s", st)
		}
	}
}

var (
	dotEdge = regexp.MustCompile(`^    ("(?:[^"\\]|\\.)*"|\w+) -> ("(?:[^"\\]|\\.)*")(?: \[(.*)\])?;$`)
	dotNode = regexp.MustCompile(`^    ("(?:[^"\\]|\\.)*") \[(.*)\];$`)
	dotAttr = regexp.MustCompile(`(\w+)=("(?:[^"\\]|\\.)*"|[^,\s]+)`)
)

// dotAttrs reads a DOT attribute list; quoted values are unquoted, their
// \n line breaks kept as newlines.
func dotAttrs(t *testing.T, list string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, a := range dotAttr.FindAllStringSubmatch(list, -1) {
		out[a[1]] = dotUnquote(t, a[2])
	}
	return out
}

func dotUnquote(t *testing.T, s string) string {
	t.Helper()
	if !strings.HasPrefix(s, `"`) {
		return s
	}
	v, err := strconv.Unquote(s)
	if err != nil {
		t.Fatalf("bad DOT string %s: %v", s, err)
	}
	return v
}

func TestDOTRetrieveOrGenerate(t *testing.T) {
	m := loadRetrieveOrGenerate(t)
	out := string(gen.DOT(m))
	if !strings.Contains(out, "digraph \""+m.Name+"\" {\n") || !strings.HasSuffix(out, "}\n") {
		t.Fatalf("not a digraph named %s:\n%s", m.Name, out)
	}
	if !strings.Contains(out, "\n    rankdir=LR;\n") {
		t.Errorf("no rankdir=LR")
	}
	edges := map[[2]string][]string{}
	nodes := map[string]map[string]string{}
	var starts []string
	for _, line := range strings.Split(out, "\n") {
		if e := dotEdge.FindStringSubmatch(line); e != nil {
			to := dotUnquote(t, e[2])
			if !strings.HasPrefix(e[1], `"`) {
				starts = append(starts, to)
				continue
			}
			k := [2]string{dotUnquote(t, e[1]), to}
			if _, dup := edges[k]; dup {
				t.Errorf("two edges %s -> %s; rows with the same ends share one", k[0], k[1])
			}
			edges[k] = strings.Split(dotAttrs(t, e[3])["label"], "\n")
			continue
		}
		if n := dotNode.FindStringSubmatch(line); n != nil {
			nodes[dotUnquote(t, n[1])] = dotAttrs(t, n[2])
		}
	}
	checkEdges(t, m, edges)
	if diff := cmp.Diff([]string{m.Initial.Name}, starts); diff != "" {
		t.Errorf("edges from the start point (-want +got):\n%s", diff)
	}
	for _, s := range m.States {
		attrs, ok := nodes[s.Name]
		if !ok {
			t.Errorf("no node %s", s.Name)
			continue
		}
		if got, want := attrs["peripheries"] == "2", s.Terminal(); got != want {
			t.Errorf("node %s: double border %v, want %v", s.Name, got, want)
		}
		if s.Terminal() && attrs["fillcolor"] == "#ffffff" {
			t.Errorf("final node %s is not coloured", s.Name)
		}
		if !strings.HasPrefix(attrs["label"], s.Name) {
			t.Errorf("node %s: label %q", s.Name, attrs["label"])
		}
	}
}

// TestDiagramTimers checks that a timer shows on its edge: after D in the
// label, and a dashed edge in DOT.
func TestDiagramTimers(t *testing.T) {
	m := machine(t, `
machine Door {
    initial OPEN wait after 7d Close after 1m30s Beep
    final CLOSED succeeded
    event Close
    event Beep
    OPEN -> OPEN on Beep
    OPEN -> CLOSED on Close
}`)
	mmd := string(gen.Mermaid(m))
	for _, want := range []string{
		"    OPEN --> OPEN : Beep (after 1m30s)\n",
		"    OPEN --> CLOSED : Close (after 7d)\n",
		"    OPEN : OPEN<br/>wait\n",
		"    class OPEN wait\n",
	} {
		if !strings.Contains(mmd, want) {
			t.Errorf("Mermaid output lacks %q:\n%s", want, mmd)
		}
	}
	dot := string(gen.DOT(m))
	for _, want := range []string{
		`    "OPEN" -> "CLOSED" [label="Close (after 7d)", style=dashed];`,
		`    "OPEN" [label="OPEN\nwait", style="rounded,filled,dashed"];`,
	} {
		if !strings.Contains(dot, want) {
			t.Errorf("DOT output lacks %q:\n%s", want, dot)
		}
	}
}

// TestDiagramEscaping checks names and text that the diagram languages
// read specially: Mermaid keywords as state names, and an outcome with
// colons, semicolons, quotes, angle brackets and backslashes.
func TestDiagramEscaping(t *testing.T) {
	m := machine(t, `
machine Odd {
    initial NOTE
    state Class
    final DONE succeeded
    final GONE failed
    event Go
    event Stop
    NOTE -> Class on Go
    Class -> DONE on Go outcome "a: \"b\"; <c> & #d \\ e"
    NOTE, Class -> GONE on Stop
}`)
	mmd := string(gen.Mermaid(m))
	for _, want := range []string{
		"    state_NOTE : NOTE\n",
		"    state_Class : Class\n",
		"    [*] --> state_NOTE\n",
		"    state_NOTE --> state_Class : Go\n",
	} {
		if !strings.Contains(mmd, want) {
			t.Errorf("Mermaid output lacks %q:\n%s", want, mmd)
		}
	}
	for i, line := range strings.Split(mmd, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "%%") {
			continue
		}
		_, text, _ := strings.Cut(line, " : ")
		if strings.ContainsAny(strings.ReplaceAll(text, "<br/>", ""), `:;"#&<>`) {
			t.Errorf("Mermaid line %d: text %q holds a character Mermaid reads specially", i+1, text)
		}
	}
	dot := string(gen.DOT(m))
	want := `    "Class" -> "DONE" [label="Go / a: \"b\"; <c> & #d \\ e"];`
	if !strings.Contains(dot, want) {
		t.Errorf("DOT output lacks %s:\n%s", want, dot)
	}
	page := string(gen.Page("odd.fsm", m, gen.Mermaid(m)))
	if want := "| `Class` | `Go` | – | `DONE` | `a: \"b\"; <c> & #d \\ e` |"; !strings.Contains(page, want) {
		t.Errorf("page lacks %s:\n%s", want, page)
	}
}

// TestPage checks the page's parts: header, title, doc, diagram, tables.
func TestPage(t *testing.T) {
	m := loadRetrieveOrGenerate(t)
	mmd := gen.Mermaid(m)
	page := string(gen.Page("retrieve_or_generate.fsm", m, mmd))
	for _, want := range []string{
		"<!-- Code generated by fsmgen from retrieve_or_generate.fsm. DO NOT EDIT. -->\n\n# RetrieveOrGenerate\n\n" + m.Doc[0] + "\n",
		"```mermaid\n" + string(mmd) + "```\n",
		"| `INGESTING` | driven | up to 6 attempts, as the run's policy says, backoff 1s ×4, max 16s, jitter 0.2, not retried on `MEDIA_REJECTED` | – |",
		"| `RETRIEVING` | driven | 3 attempts, backoff 1s ×2 | – |",
		"| `SUCCEEDED` | final: succeeded | – | – |",
		"| `RETRIEVING` | `RetrievalHit` | `AtOrAboveThreshold` | `SUCCEEDED` | `hit` |",
		"//go:generate go tool fsmgen retrieve_or_generate.fsm\n",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	var rows int
	for _, line := range strings.Split(page, "\n") {
		for _, tr := range m.Transitions {
			if strings.HasPrefix(line, fmt.Sprintf("| `%s` | `%s` |", tr.From.Name, tr.Event.Name)) {
				rows++
				break
			}
		}
	}
	if rows != len(m.Transitions) {
		t.Errorf("page has %d transition rows, want %d", rows, len(m.Transitions))
	}
}

// machine checks src, which must hold one machine, and returns it.
func machine(t *testing.T, src string) *dsl.Machine {
	t.Helper()
	spec, ds := dsl.Load("test.fsm", []byte(src))
	if ds.HasErrors() {
		t.Fatalf("does not check:\n%v", ds.Err())
	}
	return spec.Machines[0]
}

// TestPageEscapesHTMLOfDocComments writes raw HTML in doc comments: the
// page holds it as text (entities Markdown shows as the characters), never
// as markup a Markdown renderer would pass through.
func TestPageEscapesHTMLOfDocComments(t *testing.T) {
	t.Parallel()
	m := machine(t, `
// Door <script>alert(1)</script> & <img src=x onerror=alert(2)>.
machine Door {
    // Open <iframe src="https://evil.example"></iframe>.
    initial OPEN
    final SHUT succeeded
    // Close <b>now</b> | or later.
    event Close
    // The <a href="javascript:alert(3)">row</a>.
    OPEN -> SHUT on Close
}`)
	page := string(gen.Page("door.fsm", m, gen.Mermaid(m)))
	for _, bad := range []string{"<script>", "<img", "<iframe", "<b>", "<a href"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page holds %q as HTML:\n%s", bad, page)
		}
	}
	for _, want := range []string{
		"Door &lt;script>alert(1)&lt;/script> &amp; &lt;img src=x onerror=alert(2)>.\n",
		"Open &lt;iframe src=\"https://evil.example\">&lt;/iframe>. |",
		"| `Close` | – | Close &lt;b>now&lt;/b> \\| or later. |",
		"The &lt;a href=\"javascript:alert(3)\">row&lt;/a>. |",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q:\n%s", want, page)
		}
	}
}
