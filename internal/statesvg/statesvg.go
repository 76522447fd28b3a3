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
	nodeGapX  = 48
	rowGap    = 84
	loopW     = 28
)

type node struct {
	spec    runtime.StateSpec
	depth   int
	x, y    int // top-left corner
	w, h    int
	declIdx int
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
	nodes := layout(def, marks.Heat != nil)
	edges := edgesOf(def, nodes)

	width, height := 0, 0
	for _, n := range nodes {
		width = max(width, n.x+n.w+margin+loopW)
		height = max(height, n.y+n.h+margin)
	}
	// Edges that go back up or along a row bend out to the right: make room.
	for _, e := range edges {
		if e.to.depth < e.from.depth {
			width = max(width, margin+loopW+rowsRight(nodes)+36+10*e.to.depth+8*len(strings.Join(e.labels, ", ")))
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
	for _, e := range edges {
		drawEdge(&b, e, nodes, prefix, marks.took(is(e.from.spec.Name), is(e.to.spec.Name)))
	}
	b.WriteString("</g>\n<g class=\"states\">\n")
	for _, n := range nodes {
		drawNode(&b, n, marks, maxRuns, prefix)
	}
	b.WriteString("</g>\n</svg>\n")
	return []byte(b.String())
}

// layout ranks the states and places them; it returns the nodes in
// declaration order.
func layout(def runtime.Definition, heat bool) []*node {
	h := nodeH
	if heat {
		h = heatNodeH
	}
	nodes := make([]*node, len(def.States))
	byName := make(map[string]*node, len(def.States))
	for i, s := range def.States {
		w := max(minNodeW, charW*len([]rune(s.Name))+28)
		nodes[i] = &node{spec: s, depth: -1, w: w, h: h, declIdx: i}
		byName[s.Name] = nodes[i]
	}
	succ := map[string][]string{}
	for _, t := range def.Transitions {
		if !slices.Contains(succ[t.From], t.To) {
			succ[t.From] = append(succ[t.From], t.To)
		}
	}
	maxDepth := 0
	if start, ok := byName[def.Initial]; ok {
		start.depth = 0
		queue := []*node{start}
		for len(queue) > 0 {
			n := queue[0]
			queue = queue[1:]
			for _, name := range succ[n.spec.Name] {
				if m, ok := byName[name]; ok && m.depth < 0 {
					m.depth = n.depth + 1
					maxDepth = max(maxDepth, m.depth)
					queue = append(queue, m)
				}
			}
		}
	}
	unreached := false
	for _, n := range nodes {
		if n.depth < 0 {
			n.depth = maxDepth + 1
			unreached = true
		}
	}
	if unreached {
		maxDepth++
	}
	rows := make([][]*node, maxDepth+1)
	for _, n := range nodes {
		rows[n.depth] = append(rows[n.depth], n)
	}
	// Order each row by the mean position of its predecessors above.
	pos := map[*node]float64{}
	for i, n := range rows[0] {
		pos[n] = float64(i)
	}
	preds := map[*node][]*node{}
	for _, t := range def.Transitions {
		f, to := byName[t.From], byName[t.To]
		if f != nil && to != nil && f.depth < to.depth && !slices.Contains(preds[to], f) {
			preds[to] = append(preds[to], f)
		}
	}
	for d := 1; d < len(rows); d++ {
		key := func(n *node) float64 {
			if len(preds[n]) == 0 {
				return float64(n.declIdx) / float64(len(nodes)+1) * float64(len(rows[d]))
			}
			sum := 0.0
			for _, p := range preds[n] {
				sum += pos[p]
			}
			return sum / float64(len(preds[n]))
		}
		slices.SortStableFunc(rows[d], func(a, b *node) int {
			ka, kb := key(a), key(b)
			switch {
			case ka < kb:
				return -1
			case ka > kb:
				return 1
			}
			return a.declIdx - b.declIdx
		})
		for i, n := range rows[d] {
			pos[n] = float64(i)
		}
	}
	widest := 0
	for _, row := range rows {
		widest = max(widest, rowWidth(row))
	}
	for d, row := range rows {
		x := margin + loopW + (widest-rowWidth(row))/2
		for _, n := range row {
			n.x = x
			n.y = margin + 16 + d*(h+rowGap)
			x += n.w + nodeGapX
		}
	}
	return nodes
}

// rowsRight is the right edge of the widest row.
func rowsRight(nodes []*node) int {
	r := 0
	for _, n := range nodes {
		r = max(r, n.x+n.w-margin-loopW)
	}
	return r
}

func rowWidth(row []*node) int {
	w := 0
	for i, n := range row {
		if i > 0 {
			w += nodeGapX
		}
		w += n.w
	}
	return w
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

func drawEdge(b *strings.Builder, e *edge, nodes []*node, prefix string, taken bool) {
	label := strings.Join(e.labels, ", ")
	var path string
	var lx, ly int
	anchor := "middle"
	f, t := e.from, e.to
	switch {
	case f == t: // a loop on the left side
		x, y := f.x, f.y+f.h/2
		path = fmt.Sprintf("M%d,%d C%d,%d %d,%d %d,%d", x, y-8, x-loopW, y-24, x-loopW, y+24, x, y+8)
		lx, ly, anchor = x-loopW-2, y-20, "end"
	case t.depth > f.depth: // down
		x1, y1 := f.cx(), f.y+f.h
		x2, y2 := t.cx(), t.y
		dy := (y2 - y1) / 2
		path = fmt.Sprintf("M%d,%d C%d,%d %d,%d %d,%d", x1, y1, x1, y1+dy, x2, y2-dy, x2, y2)
		// The label sits at the curve's middle, on the side it heads to, so
		// that the labels of a fan of edges do not overlap.
		lx, ly = (x1+x2)/2, (y1+y2)/2+4
		switch {
		case x2 < x1-8:
			lx, anchor = lx+4, "end"
		case x2 > x1+8:
			lx, anchor = lx-4, "start"
		}
	case t.depth == f.depth: // along a row: side to side, bowed down
		x1, x2 := f.x+f.w, t.x
		if t.x < f.x {
			x1, x2 = f.x, t.x+t.w
		}
		// The curve dips below the boxes, and its label under it, clear of
		// the boxes whatever the gap between them.
		y, dip := f.y+f.h/2, f.h/2+24
		path = fmt.Sprintf("M%d,%d C%d,%d %d,%d %d,%d", x1, y, x1+12, y+dip, x2-12, y+dip, x2, y)
		lx, ly = (x1+x2)/2, y+dip+6
	default: // up: out below the source, then up to the right of every state on the way
		x1, y1 := f.cx(), f.y+f.h
		x2, y2 := t.x+t.w, t.y+t.h/2-6
		right := max(f.x+f.w, x2)
		for _, n := range nodes {
			if n.depth >= t.depth && n.depth <= f.depth {
				right = max(right, n.x+n.w)
			}
		}
		bend := right + 36 + 10*t.depth
		turn := y1 + 22 + 4*t.depth
		path = fmt.Sprintf("M%d,%d C%d,%d %d,%d %d,%d S%d,%d %d,%d", x1, y1, x1, turn, bend, turn, bend, y1-16, bend, y2, x2, y2)
		lx, ly, anchor = bend+4, (y1+y2)/2, "start"
	}
	class, stroke, width := edgeStyle(taken)
	fmt.Fprintf(b, `<g class="%s" data-from="%s" data-to="%s"><path d="%s" fill="none" stroke="%s" stroke-width="%s" marker-end="url(#%s-arrow)"/>`,
		class, esc(f.spec.Name), esc(t.spec.Name), path, stroke, width, esc(prefix))
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
	if s.Initial {
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
