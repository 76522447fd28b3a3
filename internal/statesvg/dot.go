package statesvg

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// The layout is Graphviz's dot, run as a command (Dot names it): each
// drawing is one run of dot -Tjson, fed the graph on its standard input.

// Dot is the dot command Render runs: $FSMGEN_DOT, else "dot" on the PATH
// (Debian: apt-get install graphviz).
var Dot = func() string {
	if p := os.Getenv("FSMGEN_DOT"); p != "" {
		return p
	}
	return "dot"
}()

// dotTimeout bounds one layout.
const dotTimeout = 20 * time.Second

// labelScale is how much wider than dot's estimate (Helvetica's metrics) a
// row's label is laid out: the browser may draw it in a wider sans-serif.
const labelScale = 1.25

// dotGraph is the part of dot's JSON output the drawing uses.
type dotGraph struct {
	BB      string      `json:"bb"`
	Objects []dotObject `json:"objects"`
	Edges   []dotEdge   `json:"edges"`
}

type dotObject struct {
	Name string `json:"name"`
	Pos  string `json:"pos"`
	BB   string `json:"bb"` // a cluster's box
}

type dotEdge struct {
	Pos string `json:"pos"`
	LP  string `json:"lp"`
	ID  string `json:"id"`
}

// runDot lays out the graph src with dot and returns its JSON output.
func runDot(src string) (dotGraph, error) {
	var out dotGraph
	ctx, cancel := context.WithTimeout(context.Background(), dotTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, Dot, "-Tjson")
	cmd.Stdin = strings.NewReader(src)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return out, fmt.Errorf("statesvg: layout by %s (Graphviz; apt-get install graphviz, or set FSMGEN_DOT): %w: %s", Dot, err, strings.TrimSpace(stderr.String()))
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		return out, fmt.Errorf("statesvg: output of %s: %w", Dot, err)
	}
	return out, nil
}

// layOut lays out the graph src with dot and returns the layout, the
// mapping of its coordinates to the drawing's, and the drawing's size.
func layOut(src string) (dotGraph, flip, int, int, error) {
	g, err := runDot(src)
	if err != nil {
		return g, flip{}, 0, 0, err
	}
	bb := floats(g.BB)
	if len(bb) != 4 {
		return g, flip{}, 0, 0, fmt.Errorf("statesvg: %s gave no bounding box", Dot)
	}
	return g, flip{height: bb[3]}, int(bb[2]+0.5) + 2*margin, int(bb[3]+0.5) + 2*margin, nil
}

// dotQuote quotes s as a dot string. Control characters become "?": dot
// writes them back raw into its JSON, which then does not parse; a label
// given to dot only sizes the space it gets, the drawing writes the text.
func dotQuote(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, s)
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// floats parses "x,y[,...]".
func floats(s string) []float64 {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil {
			return nil
		}
		out = append(out, v)
	}
	return out
}

// flip turns dot's coordinates (points, y up, from the bounding box's
// corner) into the drawing's (y down, margin added).
type flip struct{ height float64 }

func (f flip) pt(x, y float64) (int, int) {
	return int(x + 0.5 + margin), int(f.height - y + 0.5 + margin)
}

// splinePath turns an edge's pos ("e,x,y x,y x,y ...": a B-spline of
// cubic pieces, and the arrow's tip) into an SVG path ending at the tip.
func (f flip) splinePath(pos string) string {
	var b strings.Builder
	var end []float64
	var pts [][]float64
	for _, tok := range strings.Fields(pos) {
		switch {
		case strings.HasPrefix(tok, "e,"):
			end = floats(tok[2:])
		case strings.HasPrefix(tok, "s,"):
			// the start's arrow: none is drawn
		default:
			if p := floats(tok); len(p) == 2 {
				pts = append(pts, p)
			}
		}
	}
	if len(pts) == 0 {
		return ""
	}
	x, y := f.pt(pts[0][0], pts[0][1])
	fmt.Fprintf(&b, "M%d,%d", x, y)
	for i := 1; i+2 < len(pts); i += 3 {
		x1, y1 := f.pt(pts[i][0], pts[i][1])
		x2, y2 := f.pt(pts[i+1][0], pts[i+1][1])
		x3, y3 := f.pt(pts[i+2][0], pts[i+2][1])
		fmt.Fprintf(&b, " C%d,%d %d,%d %d,%d", x1, y1, x2, y2, x3, y3)
	}
	if len(end) == 2 {
		ex, ey := f.pt(end[0], end[1])
		fmt.Fprintf(&b, " L%d,%d", ex, ey)
	}
	return b.String()
}

// drawEdges draws dot's edges: the arrows from the start points (id
// "start:ID", from the point starts has under ID) and the rows (id "eN",
// the drawing's edge N of n, which at describes: its states, labels and
// whether the run took it), each label where dot placed it.
func drawEdges(b *strings.Builder, g dotGraph, f flip, starts map[string][2]int, prefix string, n int,
	at func(i int) (from, to string, labels []string, taken bool)) {
	// The drawing's order, not dot's: the start arrows, then the rows.
	rows := make([]*dotEdge, n)
	for _, de := range g.Edges {
		if id, ok := strings.CutPrefix(de.ID, "start:"); ok {
			pt := starts[id]
			fmt.Fprintf(b, `<g class="start"><circle cx="%d" cy="%d" r="5" fill="#222"/><path d="%s" fill="none" stroke="#222" stroke-width="1.3" marker-end="url(#%s-arrow)"/></g>`+"\n",
				pt[0], pt[1], f.splinePath(de.Pos), esc(prefix))
			continue
		}
		if i, err := strconv.Atoi(strings.TrimPrefix(de.ID, "e")); err == nil && i >= 0 && i < n {
			rows[i] = &de
		}
	}
	for i, de := range rows {
		if de == nil {
			continue
		}
		from, to, labels, taken := at(i)
		lx, ly := 0, 0
		if lp := floats(de.LP); len(lp) == 2 {
			lx, ly = f.pt(lp[0], lp[1])
		}
		drawEdgePath(b, from, to, f.splinePath(de.Pos), lx, ly+4, "middle", strings.Join(labels, ", "), prefix, taken)
	}
}
