// Package statesvg draws a machine's registered definition
// (runtime.Definition) as a small, deterministic SVG diagram, on the
// server, with no JavaScript: the web console of fsmctl serve shows it on a
// run's page, with the run's current state highlighted, and on a machine's
// page as a heatmap of where its runs are.
//
// The layout is layered. States are ranked by their breadth-first depth
// from the initial state, one row per depth, top to bottom; states the
// initial one cannot reach go in a last row. Within a row, states keep
// their declaration order, then are ordered by the mean position of their
// predecessors in the rows above, to cross fewer edges. Every (from, to)
// pair gets one edge, labelled with its events (a guard in brackets,
// negated with !). The initial state has an entry dot, terminal states a
// double border.
//
// A nested machine (a definition with composites) is drawn as fsmgen's
// diagrams draw it: each composite is a frame around its children, which
// are ranked inside it as the top level is, with a start point above its
// initial child; history pseudostates are circles marked H or H*; each
// row is drawn once, from the state it was written on (a composite's row
// from its frame) to the state or history it names, as
// defdiagram.Machine reads the rows back from the leaf-to-leaf table. The
// composites that hold Marks.Current have the class active. A parallel
// state is a frame around its regions, side by side; a run in one of its
// configurations has the leaf of each region highlighted.
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
//	edge, edge-label every edge and its label
//
// The same definition and marks always give the same bytes.
package statesvg
