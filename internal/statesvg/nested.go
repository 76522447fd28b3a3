package statesvg

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/fsmgen/fsmgen/dsl"
	"github.com/fsmgen/fsmgen/internal/defdiagram"
	"github.com/fsmgen/fsmgen/runtime"
)

// Geometry of a nested drawing's composites.
const (
	boxPad    = 14 // inside a composite's border
	boxHeader = 44 // a composite's title and the start point under it
	nestGapY  = 60
	histR     = 14
)

// nbox is a state of a nested drawing: a leaf (node), a composite (a frame
// around its children's layout) or a history pseudostate (a circle).
type nbox struct {
	name     string
	state    *dsl.State
	hist     *dsl.History
	node     *node
	children []*nbox
	initial  *nbox
	rank     int
	decl     int
	x, y     int
	w, h     int
}

func (b *nbox) holds(name string) bool {
	if b.name == name {
		return true
	}
	for _, c := range b.children {
		if c.holds(name) {
			return true
		}
	}
	return false
}

// nestedEdge is one drawn edge of a nested drawing: the rows written from
// one state to one state or history.
type nestedEdge struct {
	from, to *nbox
	labels   []string
}

// renderNested draws a nested machine: each composite is a frame around
// its children, laid out in ranks by breadth-first depth from its initial
// child as the top level is; a history pseudostate is a circle marked H or
// H*; a row is drawn from the state it was written on (a composite's row
// from the composite's frame) to the state or history it names, as
// fsmgen's diagrams draw them (defdiagram.Machine).
func renderNested(def runtime.Definition, marks Marks, prefix string) []byte {
	m := defdiagram.Machine(def)
	h := nodeH
	if marks.Heat != nil {
		h = heatNodeH
	}
	specs := map[string]runtime.StateSpec{}
	for _, s := range def.States {
		specs[s.Name] = s
	}
	byName := map[string]*nbox{}
	decl := 0
	var build func(s *dsl.State) *nbox
	build = func(s *dsl.State) *nbox {
		b := &nbox{name: s.Name, state: s, decl: decl}
		decl++
		byName[s.Name] = b
		if !s.Composite() {
			b.w, b.h = max(minNodeW, charW*len([]rune(s.Name))+28), h
			b.node = &node{spec: specs[s.Name], w: b.w, h: b.h, declIdx: b.decl}
			return b
		}
		for _, c := range s.Children {
			b.children = append(b.children, build(c))
		}
		for _, hs := range s.History {
			hb := &nbox{name: hs.Name, hist: hs, decl: decl, w: 2 * histR, h: 2 * histR}
			decl++
			byName[hs.Name] = hb
			b.children = append(b.children, hb)
		}
		if s.InitialChild != nil {
			// A parallel state has none: its regions are all entered.
			b.initial = byName[s.InitialChild.Name]
		}
		return b
	}
	root := &nbox{}
	for _, s := range m.Roots {
		root.children = append(root.children, build(s))
	}
	top := m.Initial
	for top.Parent != nil {
		top = top.Parent
	}
	root.initial = byName[top.Name]

	var edges []*nestedEdge
	index := map[[2]string]*nestedEdge{}
	for _, t := range m.Transitions {
		from, to := t.Source.Name, ""
		switch {
		case t.History != nil:
			to = t.History.Name
		case t.Target != nil:
			to = t.Target.Name
		default:
			to = t.To.Name
		}
		k := [2]string{from, to}
		e := index[k]
		if e == nil {
			e = &nestedEdge{from: byName[from], to: byName[to]}
			index[k] = e
			edges = append(edges, e)
		}
		if l := nestedLabel(t); l != "" && !slices.Contains(e.labels, l) {
			e.labels = append(e.labels, l)
		}
	}

	arrange(root, edges, true)
	place(root, margin+loopW, margin)

	width, height := root.w+2*margin+loopW, root.h+2*margin
	for _, e := range edges {
		if e.to.y+e.to.h <= e.from.y {
			width = max(width, (e.from.x+e.from.w/2+e.to.x+e.to.w/2)/2+24+7*len(strings.Join(e.labels, ", ")))
		}
	}

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="fsm-diagram" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">`+"\n",
		width, height, width, height, esc("state diagram of "+def.Type+" v"+strconv.Itoa(def.Version)))
	fmt.Fprintf(&b, `<title>%s</title>`+"\n", esc(def.Type+" v"+strconv.Itoa(def.Version)))
	fmt.Fprintf(&b, `<defs><marker id="%s-arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>`+"\n", esc(prefix))

	// Composites first, outermost first, so that their children are
	// drawn over them.
	b.WriteString(`<g class="composites">` + "\n")
	active := map[string]bool{}
	for _, l := range def.Configuration(marks.Current) {
		if _, ok := def.State(l); !ok {
			continue
		}
		for _, a := range def.Ancestors(l) {
			active[a] = true
		}
	}
	var frames func(x *nbox)
	frames = func(x *nbox) {
		for _, c := range x.children {
			if c.state == nil || !c.state.Composite() {
				continue
			}
			classes := "composite"
			stroke := "#777"
			if active[c.name] {
				classes += " active"
				stroke = "#d35400"
			}
			fmt.Fprintf(&b, `<g class="%s" data-state="%s"><rect class="frame" x="%d" y="%d" width="%d" height="%d" rx="12" fill="#fafbfc" stroke="%s" stroke-width="1.2"/>`,
				classes, esc(c.name), c.x, c.y, c.w, c.h, stroke)
			fmt.Fprintf(&b, `<text class="name" x="%d" y="%d" font-size="13" font-family="sans-serif" font-weight="bold" fill="#333">%s</text></g>`+"\n",
				c.x+boxPad, c.y+18, esc(c.name))
			frames(c)
		}
	}
	frames(root)
	b.WriteString("</g>\n")

	maxRuns := 0
	for _, h := range marks.Heat {
		maxRuns = max(maxRuns, h.Runs)
	}
	b.WriteString(`<g class="edges">` + "\n")
	for _, e := range edges {
		drawNestedEdge(&b, e, prefix, marks.took(e.from.holds, e.to.holds))
	}
	b.WriteString("</g>\n<g class=\"states\">\n")
	// The start point of each composite (and of the machine) above its
	// initial child; the machine's initial leaf has its own.
	var starts func(x *nbox)
	starts = func(x *nbox) {
		if x.initial != nil && !(x.initial.node != nil && x.initial.node.spec.Initial) {
			cx := x.initial.x + x.initial.w/2
			fmt.Fprintf(&b, `<g class="start"><circle cx="%d" cy="%d" r="5" fill="#222"/><path d="M%d,%d L%d,%d" stroke="#222" stroke-width="1.3" marker-end="url(#%s-arrow)"/></g>`+"\n",
				cx, x.initial.y-24, cx, x.initial.y-19, cx, x.initial.y, esc(prefix))
		}
		for _, c := range x.children {
			starts(c)
		}
	}
	starts(root)
	var nodes func(x *nbox)
	nodes = func(x *nbox) {
		for _, c := range x.children {
			switch {
			case c.node != nil:
				c.node.x, c.node.y = c.x, c.y
				drawNode(&b, c.node, marks, maxRuns, prefix)
			case c.hist != nil:
				mark := "H"
				if c.hist.Deep {
					mark = "H*"
				}
				fmt.Fprintf(&b, `<g class="history" data-state="%s"><title>%s</title><circle cx="%d" cy="%d" r="%d" fill="#ffffff" stroke="#444" stroke-width="1.2"/>`,
					esc(c.name), esc(c.name), c.x+histR, c.y+histR, histR)
				fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" font-size="12" font-family="sans-serif" font-weight="bold" fill="#111">%s</text></g>`+"\n",
					c.x+histR, c.y+histR+4, mark)
			default:
				nodes(c)
			}
		}
	}
	nodes(root)
	b.WriteString("</g>\n</svg>\n")
	return []byte(b.String())
}

// nestedLabel is a row's label: its event (done for a completion row,
// none for an eventless one), its guard, and (internal).
func nestedLabel(t *dsl.Transition) string {
	var parts []string
	switch {
	case t.Event != nil:
		parts = append(parts, t.Event.Name)
	case t.Done:
		parts = append(parts, "done")
	}
	if t.Guard != nil {
		g := t.Guard.Name
		if t.Negated {
			g = "!" + g
		}
		parts = append(parts, "["+g+"]")
	}
	if t.Internal {
		parts = append(parts, "(internal)")
	}
	return strings.Join(parts, " ")
}

// arrange lays out a composite's children (the machine's top level when
// top) in ranks and sets its size; children's positions are relative to
// it until place.
func arrange(b *nbox, edges []*nestedEdge, top bool) {
	for _, c := range b.children {
		if len(c.children) > 0 {
			arrange(c, edges, false)
		}
	}
	childOf := func(x *nbox) *nbox {
		for _, c := range b.children {
			if c.holds(x.name) {
				return c
			}
		}
		return nil
	}
	succ := map[*nbox][]*nbox{}
	for _, e := range edges {
		f, t := childOf(e.from), childOf(e.to)
		if f != nil && t != nil && f != t && !slices.Contains(succ[f], t) {
			succ[f] = append(succ[f], t)
		}
	}
	for _, c := range b.children {
		c.rank = -1
	}
	maxRank := 0
	if b.initial != nil {
		b.initial.rank = 0
		queue := []*nbox{b.initial}
		for len(queue) > 0 {
			n := queue[0]
			queue = queue[1:]
			for _, s := range succ[n] {
				if s.rank < 0 {
					s.rank = n.rank + 1
					maxRank = max(maxRank, s.rank)
					queue = append(queue, s)
				}
			}
		}
	}
	// The states the initial one does not reach go in a last row; the
	// regions of a parallel state, which has no initial child, in its one
	// row.
	var unreached bool
	last := maxRank + 1
	if b.initial == nil {
		last = 0
	}
	for _, c := range b.children {
		if c.rank < 0 {
			c.rank = last
			unreached = true
		}
	}
	if unreached && last > maxRank {
		maxRank = last
	}
	rows := make([][]*nbox, maxRank+1)
	for _, c := range b.children {
		rows[c.rank] = append(rows[c.rank], c)
	}
	widest := 0
	for _, row := range rows {
		w := 0
		for i, c := range row {
			if i > 0 {
				w += nodeGapX
			}
			w += c.w
		}
		widest = max(widest, w)
	}
	pad, header := boxPad, boxHeader
	if top {
		pad, header = 0, 16
	}
	y := header
	for _, row := range rows {
		w, rh := 0, 0
		for i, c := range row {
			if i > 0 {
				w += nodeGapX
			}
			w += c.w
			rh = max(rh, c.h)
		}
		x := pad + (widest-w)/2
		for _, c := range row {
			c.x, c.y = x, y+(rh-c.h)/2
			x += c.w + nodeGapX
		}
		y += rh + nestGapY
	}
	b.w = widest + 2*pad
	b.h = y - nestGapY + pad
}

// place turns the positions arrange set into absolute ones.
func place(b *nbox, x, y int) {
	b.x, b.y = b.x+x, b.y+y
	for _, c := range b.children {
		place(c, b.x, b.y)
	}
}

func (b *nbox) inside(o *nbox) bool {
	return b.x >= o.x && b.y >= o.y && b.x+b.w <= o.x+o.w && b.y+b.h <= o.y+o.h
}

func drawNestedEdge(b *strings.Builder, e *nestedEdge, prefix string, taken bool) {
	f, t := e.from, e.to
	var path string
	var lx, ly int
	anchor := "middle"
	switch {
	case f == t || t.inside(f) || f.inside(t): // a loop on the left side
		x, y := f.x, f.y+min(f.h/2, 24)
		if t != f {
			x, y = min(f.x, t.x), t.y+t.h/2
		}
		path = fmt.Sprintf("M%d,%d C%d,%d %d,%d %d,%d", x, y-8, x-loopW, y-24, x-loopW, y+24, x, y+8)
		lx, ly, anchor = x-loopW-2, y-20, "end"
	case t.y >= f.y+f.h: // down
		x1, y1 := f.x+f.w/2, f.y+f.h
		x2, y2 := t.x+t.w/2, t.y
		dy := (y2 - y1) / 2
		path = fmt.Sprintf("M%d,%d C%d,%d %d,%d %d,%d", x1, y1, x1, y1+dy, x2, y2-dy, x2, y2)
		lx, ly = (x1+x2)/2, (y1+y2)/2+4
		switch {
		case x2 < x1-8:
			lx, anchor = lx+4, "end"
		case x2 > x1+8:
			lx, anchor = lx-4, "start"
		}
	case t.y+t.h <= f.y: // up, beside the edges down
		x1, y1 := f.x+f.w/2+10, f.y
		x2, y2 := t.x+t.w/2+10, t.y+t.h
		dy := (y1 - y2) / 2
		path = fmt.Sprintf("M%d,%d C%d,%d %d,%d %d,%d", x1, y1, x1, y1-dy, x2, y2+dy, x2, y2)
		lx, ly, anchor = x1+(x2-x1)/4+6, y1-(y1-y2)/4, "start"
	default: // side by side, bowed down
		x1, x2 := f.x+f.w, t.x
		if t.x < f.x {
			x1, x2 = f.x, t.x+t.w
		}
		y, dip := f.y+f.h/2, min(f.h, t.h)/2+24
		path = fmt.Sprintf("M%d,%d C%d,%d %d,%d %d,%d", x1, y, x1+12, y+dip, x2-12, y+dip, x2, t.y+t.h/2)
		lx, ly = (x1+x2)/2, y+dip+6
	}
	class, stroke, width := edgeStyle(taken)
	fmt.Fprintf(b, `<g class="%s" data-from="%s" data-to="%s"><path d="%s" fill="none" stroke="%s" stroke-width="%s" marker-end="url(#%s-arrow)"/>`,
		class, esc(f.name), esc(t.name), path, stroke, width, esc(prefix))
	fmt.Fprintf(b, `<text class="edge-label" x="%d" y="%d" text-anchor="%s" font-size="11" font-family="sans-serif" fill="#333" stroke="#fff" stroke-width="3" paint-order="stroke">%s</text></g>`+"\n",
		lx, ly, anchor, esc(strings.Join(e.labels, ", ")))
}
