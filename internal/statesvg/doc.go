// Package statesvg draws a machine's registered definition
// (runtime.Definition) as a small, deterministic SVG diagram, on the
// server, with no JavaScript: the web console of fsmctl serve shows it on a
// run's page, with the run's current state highlighted, and on a machine's
// page as a heatmap of where its runs are.
//
// The layout is Graphviz's dot, run as a command for each drawing (Dot:
// $FSMGEN_DOT, else dot on the PATH; Debian: apt-get install graphviz);
// without it Render draws the error instead of the machine. Each state is a box of a fixed size (wide enough
// for its name in bold 13 px), every (from, to) pair one edge labelled with
// its events (a guard in brackets, negated with !); dot places the boxes,
// routes the edges as splines and places their labels so that no two
// overlap, each label sized a quarter wider than dot's estimate for
// Helvetica, for the browser's sans-serif. The drawing is then written
// here, from dot's coordinates, with the classes below. The initial state
// has an entry dot, terminal states a double border.
//
// A nested machine (a definition with composites) is drawn as fsmgen's
// diagrams draw it: each composite is a frame (a dot cluster) around its
// children, with a start point before its initial child; history
// pseudostates are circles marked H or H*; each row is drawn once, from
// the state it was written on (a composite's row from its frame) to the
// state or history it names, as defdiagram.Machine reads the rows back
// from the leaf-to-leaf table. The composites that hold Marks.Current have
// the class active. A parallel state is a frame around its regions, side
// by side; a run in one of its configurations has the leaf of each region
// highlighted.
//
// Marks.Visited and Marks.Taken draw a run's path: the boxes of the states
// it has been in (class visited) and the arrows of the rows it took (class
// taken) in the path's colour.
//
// Render returns the SVG element as text. Everything that comes from the
// definition or the marks (state and event names, guards, counts) is
// escaped, so the result can be inlined in an HTML page as is. The drawing
// has default colours as SVG attributes (no style attributes or elements,
// so that a strict Content-Security-Policy allows it); the class names
// below let a style sheet restyle it:
//
//	state            every state's group; also initial, terminal, waits
//	current          the state Marks.Current names (each leaf of a configuration)
//	heat-0 … heat-5  with Marks.Heat: 0 for no run, 5 for the most runs
//	stuck            a state with stuck or parked runs (Marks.Heat)
//	visited, taken   the states and arrows of Marks.Visited and Marks.Taken
//	edge, edge-label every edge and its label
//
// The same definition and marks always give the same bytes, with the same
// version of Graphviz.
package statesvg
