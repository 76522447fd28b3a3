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
	boxPad = 14 // inside a composite's border
	histR  = 14
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
	decl     int
	x, y     int
	w, h     int
}

// dotID is the box's name in the dot graph: n and its declaration number,
// root for the machine (state names are only drawn, never given to dot).
func (b *nbox) dotID() string {
	if b.state == nil && b.hist == nil {
		return "root"
	}
	return "n" + strconv.Itoa(b.decl)
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

	g, f, width, height, err := layOut(nestedDot(root, edges))
	if err != nil {
		return errorSVG(def, err)
	}
	byID := map[string]*nbox{}
	for _, x := range byName {
		byID[x.dotID()] = x
	}
	starts := map[string][2]int{}
	for _, o := range g.Objects {
		if cb := floats(o.BB); len(cb) == 4 {
			if x := byID[strings.TrimPrefix(o.Name, "cluster_")]; x != nil && strings.HasPrefix(o.Name, "cluster_") {
				x0, y0 := f.pt(cb[0], cb[3])
				x1, y1 := f.pt(cb[2], cb[1])
				x.x, x.y, x.w, x.h = x0, y0, x1-x0, y1-y0
			}
			continue
		}
		p := floats(o.Pos)
		if len(p) != 2 {
			continue
		}
		cx, cy := f.pt(p[0], p[1])
		if id, ok := strings.CutPrefix(o.Name, startNode); ok {
			starts[id] = [2]int{cx, cy}
		} else if x := byID[o.Name]; x != nil {
			x.x, x.y = cx-x.w/2, cy-x.h/2
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
	drawEdges(&b, g, f, starts, prefix, len(edges), func(i int) (string, string, []string, bool) {
		e := edges[i]
		return e.from.name, e.to.name, e.labels, marks.took(e.from.holds, e.to.holds)
	})
	b.WriteString("</g>\n<g class=\"states\">\n")
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

// nestedDot is the dot graph of a nested machine: a cluster per
// composite (a parallel state's regions are clusters in it) holding its
// children and the start point of its initial child, a fixed-size box per
// leaf, a circle per history pseudostate, and an edge per drawn row; a row
// from or to a composite is drawn between one of its leaves and clipped at
// its frame (compound, ltail, lhead).
func nestedDot(root *nbox, edges []*nestedEdge) string {
	var b strings.Builder
	fmt.Fprintf(&b, "digraph {\n rankdir=TB; compound=true; nodesep=0.45; ranksep=0.55; margin=0;\n")
	fmt.Fprintf(&b, " node [shape=box, fixedsize=true, label=\"\"];\n edge [fontname=\"Helvetica\", fontsize=%.2f];\n", 11*labelScale)
	var emit func(x *nbox, indent string)
	emit = func(x *nbox, indent string) {
		if x.initial != nil {
			fmt.Fprintf(&b, "%s%s [shape=point, width=0.14, height=0.14];\n", indent, startNode+x.dotID())
		}
		for _, c := range x.children {
			switch {
			case c.node != nil:
				fmt.Fprintf(&b, "%s%s [width=%.3f, height=%.3f];\n", indent, c.dotID(), float64(c.w)/72, float64(c.h)/72)
			case c.hist != nil:
				fmt.Fprintf(&b, "%s%s [shape=circle, width=%.3f, height=%.3f];\n", indent, c.dotID(), float64(2*histR)/72, float64(2*histR)/72)
			default:
				fmt.Fprintf(&b, "%ssubgraph %s {\n%s label=%s; labeljust=l; fontname=\"Helvetica\"; fontsize=%.2f; margin=12;\n",
					indent, "cluster_"+c.dotID(), indent, dotQuote(c.name), 13*labelScale)
				emit(c, indent+" ")
				fmt.Fprintf(&b, "%s}\n", indent)
			}
		}
	}
	emit(root, " ")
	// An edge to or from a composite ends on one of its leaves, clipped at
	// its frame.
	end := func(x *nbox) (string, string) {
		if x.node != nil || x.hist != nil {
			return x.dotID(), ""
		}
		rep := x
		for rep.node == nil && rep.hist == nil && len(rep.children) > 0 {
			if rep.initial != nil {
				rep = rep.initial
			} else {
				rep = rep.children[0]
			}
		}
		return rep.dotID(), "cluster_" + x.dotID()
	}
	var starts func(x *nbox)
	starts = func(x *nbox) {
		if x.initial != nil {
			to, head := end(x.initial)
			fmt.Fprintf(&b, " %s -> %s [id=\"start:%s\"", startNode+x.dotID(), to, x.dotID())
			if head != "" {
				fmt.Fprintf(&b, ", lhead=%s", head)
			}
			b.WriteString("];\n")
		}
		for _, c := range x.children {
			starts(c)
		}
	}
	starts(root)
	for i, e := range edges {
		from, tail := end(e.from)
		to, head := end(e.to)
		fmt.Fprintf(&b, " %s -> %s [id=\"e%d\", label=%s", from, to, i, dotQuote(strings.Join(e.labels, ", ")))
		// Clipping at a frame that holds the other end is not done.
		if tail != "" && !e.from.holds(e.to.name) {
			fmt.Fprintf(&b, ", ltail=%s", tail)
		}
		if head != "" && !e.to.holds(e.from.name) {
			fmt.Fprintf(&b, ", lhead=%s", head)
		}
		b.WriteString("];\n")
	}
	b.WriteString("}\n")
	return b.String()
}
