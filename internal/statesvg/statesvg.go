package statesvg

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fsmgen/fsmgen/runtime"
)

// Marks says what to highlight on a diagram. The zero value draws the
// machine alone.
type Marks struct {
	// Current names the state to highlight (a run's current state): a
	// leaf, or a configuration of a parallel state ("A|B"), whose leaf in
	// each region is highlighted.
	Current string
	// Heat, when not nil, holds per-state figures: each state is coloured
	// by its share of the largest Runs and labelled with its figures.
	Heat map[string]Heat
	// Link, when not nil, returns the address a state's box links to
	// (empty for none).
	Link func(state string) string
	// Visited names the states a run has been in, and Taken the changes
	// of state it made, as the (from, to) pairs of its log: the diagram
	// draws them as the run's path, a visited state's box (class
	// "visited") and a taken row's arrow (class "taken") in the path's
	// colour. A configuration of a parallel state is named by its leaves.
	Visited []string
	Taken   [][2]string
	// ID prefixes the ids of the drawing's definitions (its arrow head), for
	// a page with several diagrams. Default "fsm".
	ID string
}

// current reports whether the state named name is highlighted: Current
// names it, or a configuration that holds it.
func (m Marks) current(name string) bool {
	return m.Current != "" && slices.Contains(strings.Split(m.Current, runtime.ConfigurationSeparator), name)
}

// took reports whether the run took an arrow from the state of which
// from reports the leaves to the one of which to does: a row written on a
// composite is taken when the run left one of its leaves on it.
func (m Marks) took(from, to func(leaf string) bool) bool {
	for _, t := range m.Taken {
		if from(t[0]) && to(t[1]) {
			return true
		}
	}
	return false
}

// edgeStyle is the class and stroke of an arrow, taken or not.
func edgeStyle(taken bool) (class, stroke, width string) {
	if taken {
		return "edge taken", "#d35400", "2.6"
	}
	return "edge", "#555", "1.3"
}

// Heat is what a heatmap says of one state.
type Heat struct {
	// Runs is the number of runs in the state now.
	Runs int
	// Median is the median time runs spent in the state before they left
	// it; HasMedian is false when no run has left it yet.
	Median    time.Duration
	HasMedian bool
	// Stuck and Parked count the state's runs that are overdue or parked.
	Stuck, Parked int
}

// Geometry of the drawing, in SVG user units.
const (
	margin    = 24
	nodeH     = 40
	heatNodeH = 62
	minNodeW  = 120
	charW     = 9 // an estimate of a bold capital's width at font-size 13
)

type node struct {
	spec    runtime.StateSpec
	x, y    int // top-left corner
	w, h    int
	declIdx int
	// ownStart draws the initial state's start point above its box; a
	// drawing laid out by dot draws it as an edge of its own.
	ownStart bool
}

func (n *node) cx() int { return n.x + n.w/2 }

type edge struct {
	from, to *node
	labels   []string
}

// Render draws def with marks, as an <svg> element.
func Render(def runtime.Definition, marks Marks) []byte {
	prefix := marks.ID
	if prefix == "" {
		prefix = "fsm"
	}
	if len(def.Composites) > 0 {
		return renderNested(def, marks, prefix)
	}
	nodes := sized(def, marks.Heat != nil)
	edges := edgesOf(def, nodes)
	g, f, width, height, err := layOut(flatDot(def, nodes, edges))
	if err != nil {
		return errorSVG(def, err)
	}
	byName := map[string]*node{}
	for i, n := range nodes {
		byName["n"+strconv.Itoa(i)] = n
	}
	var start [2]int
	for _, o := range g.Objects {
		p := floats(o.Pos)
		if len(p) != 2 {
			continue
		}
		cx, cy := f.pt(p[0], p[1])
		if n := byName[o.Name]; n != nil {
			n.x, n.y = cx-n.w/2, cy-n.h/2
		} else if o.Name == startNode {
			start = [2]int{cx, cy}
		}
	}

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="fsm-diagram" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">`+"\n",
		width, height, width, height, esc("state diagram of "+def.Type+" v"+strconv.Itoa(def.Version)))
	fmt.Fprintf(&b, `<title>%s</title>`+"\n", esc(def.Type+" v"+strconv.Itoa(def.Version)))
	fmt.Fprintf(&b, `<defs><marker id="%s-arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>`+"\n", esc(prefix))

	maxRuns := 0
	for _, h := range marks.Heat {
		maxRuns = max(maxRuns, h.Runs)
	}
	b.WriteString(`<g class="edges">` + "\n")
	drawEdges(&b, g, f, map[string][2]int{"": start}, prefix, len(edges), func(i int) (string, string, []string, bool) {
		e := edges[i]
		return e.from.spec.Name, e.to.spec.Name, e.labels, marks.took(is(e.from.spec.Name), is(e.to.spec.Name))
	})
	b.WriteString("</g>\n<g class=\"states\">\n")
	for _, n := range nodes {
		drawNode(&b, n, marks, maxRuns, prefix)
	}
	b.WriteString("</g>\n</svg>\n")
	return []byte(b.String())
}

// startNode names the point the arrow to the initial state starts from.
const startNode = "__fsmgen_start"

// sized returns the nodes of def's states, in declaration order, sized
// for their names (and the heatmap's figures).
func sized(def runtime.Definition, heat bool) []*node {
	h := nodeH
	if heat {
		h = heatNodeH
	}
	nodes := make([]*node, len(def.States))
	for i, s := range def.States {
		nodes[i] = &node{spec: s, w: max(minNodeW, charW*len([]rune(s.Name))+28), h: h, declIdx: i}
	}
	return nodes
}

// flatDot is the dot graph of a flat machine: a fixed-size box per state,
// an edge per (from, to) pair with its labels (laid out wider than dot's
// estimate, see labelScale), and the start point.
func flatDot(def runtime.Definition, nodes []*node, edges []*edge) string {
	var b strings.Builder
	fmt.Fprintf(&b, "digraph {\n rankdir=TB; nodesep=0.45; ranksep=0.55; margin=0;\n")
	fmt.Fprintf(&b, " node [shape=box, fixedsize=true, label=\"\"];\n edge [fontname=\"Helvetica\", fontsize=%.2f];\n", 11*labelScale)
	// States are named n0, n1, ... in the graph: their names are only
	// drawn, never given to dot.
	for i, n := range nodes {
		fmt.Fprintf(&b, " n%d [width=%.3f, height=%.3f];\n", i, float64(n.w)/72, float64(n.h)/72)
		if n.spec.Name == def.Initial {
			fmt.Fprintf(&b, " %s [shape=point, width=0.17, height=0.17, fixedsize=true];\n %s -> n%d [id=\"start:\"];\n", startNode, startNode, i)
		}
	}
	for i, e := range edges {
		fmt.Fprintf(&b, " n%d -> n%d [id=\"e%d\", label=%s];\n", e.from.declIdx, e.to.declIdx, i, dotQuote(strings.Join(e.labels, ", ")))
	}
	b.WriteString("}\n")
	return b.String()
}

// errorSVG is what Render draws when the layout fails: the error, as text.
func errorSVG(def runtime.Definition, err error) []byte {
	return []byte(fmt.Sprintf(`<svg xmlns="http://www.w3.org/2000/svg" class="fsm-diagram error" width="640" height="40" viewBox="0 0 640 40" role="img" aria-label="%s"><text x="8" y="24" font-size="12" font-family="sans-serif" fill="#c0392b">%s</text></svg>`+"\n",
		esc("state diagram of "+def.Type+" v"+strconv.Itoa(def.Version)), esc(err.Error())))
}

// edgesOf merges the table's rows into one edge per (from, to), in the
// order of their first row.
func edgesOf(def runtime.Definition, nodes []*node) []*edge {
	byName := make(map[string]*node, len(nodes))
	for _, n := range nodes {
		byName[n.spec.Name] = n
	}
	var edges []*edge
	index := map[[2]string]*edge{}
	for _, t := range def.Transitions {
		f, to := byName[t.From], byName[t.To]
		if f == nil || to == nil {
			continue
		}
		label := t.Event
		if t.Guard != "" {
			g := t.Guard
			if t.Negated {
				g = "!" + g
			}
			label += " [" + g + "]"
		}
		k := [2]string{t.From, t.To}
		e := index[k]
		if e == nil {
			e = &edge{from: f, to: to}
			index[k] = e
			edges = append(edges, e)
		}
		if !slices.Contains(e.labels, label) {
			e.labels = append(e.labels, label)
		}
	}
	return edges
}

// drawEdgePath draws an arrow along path from state from to state to,
// with its label at (lx, ly).
func drawEdgePath(b *strings.Builder, from, to, path string, lx, ly int, anchor, label, prefix string, taken bool) {
	class, stroke, width := edgeStyle(taken)
	fmt.Fprintf(b, `<g class="%s" data-from="%s" data-to="%s"><path d="%s" fill="none" stroke="%s" stroke-width="%s" marker-end="url(#%s-arrow)"/>`,
		class, esc(from), esc(to), path, stroke, width, esc(prefix))
	fmt.Fprintf(b, `<text class="edge-label" x="%d" y="%d" text-anchor="%s" font-size="11" font-family="sans-serif" fill="#333" stroke="#fff" stroke-width="3" paint-order="stroke">%s</text></g>`+"\n",
		lx, ly, anchor, esc(label))
}

func drawNode(b *strings.Builder, n *node, marks Marks, maxRuns int, prefix string) {
	classes := []string{"state"}
	s := n.spec
	if s.Initial {
		classes = append(classes, "initial")
	}
	if s.Terminal() {
		classes = append(classes, "terminal", "status-"+string(s.Status))
	}
	if s.Wait {
		classes = append(classes, "waits")
	}
	current := marks.current(s.Name)
	if current {
		classes = append(classes, "current")
	}
	visited := slices.Contains(marks.Visited, s.Name)
	if visited {
		classes = append(classes, "visited")
	}
	fill, stroke, strokeW := "#ffffff", "#444", "1.2"
	var heat Heat
	if marks.Heat != nil {
		heat = marks.Heat[s.Name]
		level := Level(heat.Runs, maxRuns)
		classes = append(classes, "heat-"+strconv.Itoa(level))
		fill = heatFill[level]
		if heat.Stuck > 0 || heat.Parked > 0 {
			classes = append(classes, "stuck")
			stroke, strokeW = "#c0392b", "2.5"
		}
	}
	if visited && !current {
		stroke, strokeW = "#d35400", "2"
	}
	if current {
		fill, stroke, strokeW = "#fff3b0", "#d35400", "3"
	}
	link := ""
	if marks.Link != nil {
		link = marks.Link(s.Name)
	}
	fmt.Fprintf(b, `<g class="%s" data-state="%s">`, strings.Join(classes, " "), esc(s.Name))
	if link != "" {
		fmt.Fprintf(b, `<a href="%s">`, esc(link))
	}
	if s.Initial && n.ownStart {
		fmt.Fprintf(b, `<circle cx="%d" cy="%d" r="6" fill="#222"/><path d="M%d,%d L%d,%d" stroke="#222" stroke-width="1.3" marker-end="url(#%s-arrow)"/>`,
			n.cx(), n.y-30, n.cx(), n.y-24, n.cx(), n.y, esc(prefix))
	}
	fmt.Fprintf(b, `<rect class="box" x="%d" y="%d" width="%d" height="%d" rx="8" fill="%s" stroke="%s" stroke-width="%s"/>`,
		n.x, n.y, n.w, n.h, fill, stroke, strokeW)
	if s.Terminal() {
		fmt.Fprintf(b, `<rect class="inner" x="%d" y="%d" width="%d" height="%d" rx="5" fill="none" stroke="%s" stroke-width="1"/>`,
			n.x+4, n.y+4, n.w-8, n.h-8, stroke)
	}
	nameY := n.y + n.h/2 + 5
	if marks.Heat != nil {
		nameY = n.y + 19
	}
	fmt.Fprintf(b, `<text class="name" x="%d" y="%d" text-anchor="middle" font-size="13" font-family="sans-serif" font-weight="bold" fill="#111">%s</text>`,
		n.cx(), nameY, esc(s.Name))
	if marks.Heat != nil {
		line1, line2 := heat.Lines()
		fmt.Fprintf(b, `<text class="count" x="%d" y="%d" text-anchor="middle" font-size="11" font-family="sans-serif" fill="#111">%s</text>`,
			n.cx(), n.y+37, esc(line1))
		fmt.Fprintf(b, `<text class="median" x="%d" y="%d" text-anchor="middle" font-size="11" font-family="sans-serif" fill="#333">%s</text>`,
			n.cx(), n.y+52, esc(line2))
	}
	if link != "" {
		b.WriteString(`</a>`)
	}
	b.WriteString("</g>\n")
}

// is returns a test for one name.
func is(name string) func(string) bool {
	return func(s string) bool { return s == name }
}

// Level returns the heat level of a state with runs runs when the fullest
// state has maxRuns: 0 for none, else 1 to 5.
func Level(runs, maxRuns int) int {
	if runs <= 0 || maxRuns <= 0 {
		return 0
	}
	return min(5, (runs*5+maxRuns-1)/maxRuns)
}

// Lines returns the two lines a heatmap writes under a state's name: its
// runs (with the stuck and parked among them) and its median time.
func (h Heat) Lines() (runs, median string) {
	runs = plural(h.Runs, "run")
	switch {
	case h.Parked > 0 && h.Stuck > 0:
		runs += fmt.Sprintf(", %d stuck, %d parked", h.Stuck, h.Parked)
	case h.Parked > 0:
		runs += fmt.Sprintf(", %d parked", h.Parked)
	case h.Stuck > 0:
		runs += fmt.Sprintf(", %d stuck", h.Stuck)
	}
	median = "median –"
	if h.HasMedian {
		median = "median " + Duration(h.Median)
	}
	return runs, median
}

// heatFill are the fills of heat levels 0 (no run) to 5 (the most runs).
var heatFill = [6]string{"#f4f6f8", "#fde0c5", "#facba6", "#f8b58b", "#f59e72", "#f0855d"}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// Duration formats d shortly, with about three significant figures:
// 850ms, 4.2s, 3m10s, 5h4m, 3d2h.
func Duration(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
	case d < time.Hour:
		d = d.Round(time.Second)
		return fmt.Sprintf("%dm%ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		d = d.Round(time.Minute)
		return fmt.Sprintf("%dh%dm", int(d.Hours()), int(d.Minutes())%60)
	}
	d = d.Round(time.Hour)
	return fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24)
}

// esc escapes s for XML text and attribute values.
func esc(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '"':
			b.WriteString("&#34;")
		case '\'':
			b.WriteString("&#39;")
		case '\uFFFD':
			b.WriteRune(r)
		default:
			if r < 0x20 && r != '\t' && r != '\n' && r != '\r' { // not allowed in XML
				b.WriteRune('\uFFFD')
				continue
			}
			b.WriteRune(r)
		}
	}
	return b.String()
}
