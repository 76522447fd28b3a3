package gen

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fsmgen/fsmgen/dsl"
)

// Diagram conventions, shared by Mermaid and DOT:
//
//   - the initial state is entered from a start point;
//   - an edge label is EVENT, then (after D) when a timer of the source
//     state fires the event, then [GUARD] or [!GUARD], then / OUTCOME when
//     the row declares a business outcome its target state does not;
//   - rows with the same source and target share one edge, their labels
//     one per line, in table order;
//   - final states are coloured by generic status and marked as final (an
//     arrow to [*] in Mermaid, a double border in DOT), with a line giving
//     their status and outcome unless the name says it all; wait states have
//     a dashed border and a "wait" line;
//   - doc comments stay out of the picture, which they would crowd: the
//     Markdown page lists them, and DOT gives them as node tooltips (SVG).

// statusColors are the fill, border and text colours of final states by
// generic status.
var statusColors = map[string][3]string{
	"succeeded": {"#d4edda", "#2e7d32", "#1b5e20"},
	"failed":    {"#f8d7da", "#c62828", "#7f0000"},
	"cancelled": {"#e2e3e5", "#616161", "#212121"},
}

var statuses = []string{"succeeded", "failed", "cancelled"}

// timerOf returns the timer of t's source state that fires t's event, or nil.
func timerOf(t *dsl.Transition) *dsl.Timer {
	if t.Event == nil {
		return nil
	}
	for _, tm := range rowSource(t).Timers {
		if tm.Event == t.Event {
			return tm
		}
	}
	return nil
}

// rowSource is the state a row was written on: its Source, or From in a
// model that does not say.
func rowSource(t *dsl.Transition) *dsl.State {
	if t.Source != nil {
		return t.Source
	}
	return t.From
}

// rowTarget is the name of what a row was written to: its target state,
// a composite included, or its history pseudostate.
func rowTarget(t *dsl.Transition) string {
	switch {
	case t.History != nil:
		return t.History.Name
	case t.Target != nil:
		return t.Target.Name
	}
	return t.To.Name
}

// writtenRows returns one transition per row as written and event: the
// rows of a composite, which the model repeats for each of its leaves,
// once; in order of first appearance in the table.
func writtenRows(m *dsl.Machine) []*dsl.Transition {
	type key struct {
		source        *dsl.State
		target        string
		event         *dsl.Event
		guard         *dsl.Guard
		in            *dsl.State
		negated, done bool
		internal      bool
		outcome       string
	}
	var out []*dsl.Transition
	seen := map[key]bool{}
	for _, t := range m.Transitions {
		k := key{rowSource(t), rowTarget(t), t.Event, t.Guard, t.In, t.Negated, t.Done, t.Internal, t.Outcome}
		if !seen[k] {
			seen[k] = true
			out = append(out, t)
		}
	}
	return out
}

// eventText is a row's event as the diagrams and the page write it:
// its name, done for a completion row, "" for an eventless row.
func eventText(t *dsl.Transition) string {
	switch {
	case t.Event != nil:
		return t.Event.Name
	case t.Done:
		return "done"
	}
	return ""
}

// guardName is a row's guard as the .fsm file writes it, without its
// negation: G, or In(S) for a guard on the configuration; "" for an
// unguarded row.
func guardName(t *dsl.Transition) string {
	switch {
	case t.In != nil:
		return "In(" + t.In.Name + ")"
	case t.Guard != nil:
		return t.Guard.Name
	}
	return ""
}

// guardText is [G] or [!G], [In(S)] or [!In(S)], or "" for an unguarded
// row.
func guardText(t *dsl.Transition) string {
	switch g := guardName(t); {
	case g == "":
		return ""
	case t.Negated:
		return "[!" + g + "]"
	default:
		return "[" + g + "]"
	}
}

// edgeOutcome is the outcome a row's label shows: the row's own, when the
// target state does not already say it.
func edgeOutcome(t *dsl.Transition) string {
	if t.Outcome == "" || t.Outcome == t.To.Outcome {
		return ""
	}
	return t.Outcome
}

// rowLabel is one row's edge label: "" for an unguarded eventless row.
func rowLabel(t *dsl.Transition) string {
	var parts []string
	if e := eventText(t); e != "" {
		parts = append(parts, e)
	}
	if tm := timerOf(t); tm != nil {
		parts = append(parts, "(after "+tm.Text+")")
	}
	if g := guardText(t); g != "" {
		parts = append(parts, g)
	}
	if o := edgeOutcome(t); o != "" {
		parts = append(parts, "/ "+o)
	}
	if t.Internal {
		parts = append(parts, "(internal)")
	}
	return strings.Join(parts, " ")
}

// finalText describes a final state's status and outcome, or "" when the
// state's name already says all of it (FAILED, failed).
func finalText(s *dsl.State) string {
	txt := s.Status
	if s.Outcome != "" {
		return txt + " (" + s.Outcome + ")"
	}
	if strings.EqualFold(s.Name, s.Status) {
		return ""
	}
	return txt
}

// actionLines are a state's entry and exit actions, one line each.
func actionLines(s *dsl.State) []string {
	var out []string
	for _, a := range s.Entry {
		out = append(out, "entry "+a.Name)
	}
	for _, a := range s.Exit {
		out = append(out, "exit "+a.Name)
	}
	return out
}

// edge is one drawn edge: the rows sharing a source and a target.
type edge struct {
	from  *dsl.State
	to    string
	timer bool
	rows  []*dsl.Transition
}

// edges groups m's written rows by (source, target), and by whether a
// timer fires them when byTimer is set, in order of each group's first
// row.
func edges(m *dsl.Machine, byTimer bool) []*edge {
	type key struct {
		from  *dsl.State
		to    string
		timer bool
	}
	var out []*edge
	index := map[key]*edge{}
	for _, t := range writtenRows(m) {
		k := key{from: rowSource(t), to: rowTarget(t)}
		if byTimer {
			k.timer = timerOf(t) != nil
		}
		e := index[k]
		if e == nil {
			e = &edge{from: k.from, to: k.to, timer: k.timer}
			index[k] = e
			out = append(out, e)
		}
		e.rows = append(e.rows, t)
	}
	return out
}

// roots returns the top-level states: Roots, or States in a model that
// does not fill Roots (a flat machine's top level is its states).
func roots(m *dsl.Machine) []*dsl.State {
	if len(m.Roots) > 0 {
		return m.Roots
	}
	return m.States
}

// topInitial is the initial state of the top level, a leaf or a composite.
func topInitial(m *dsl.Machine) *dsl.State {
	s := m.Initial
	for s.Parent != nil {
		s = s.Parent
	}
	return s
}

// container is the composite whose block (Mermaid) or cluster (DOT) a
// state or history of that name is drawn in, nil for the top level.
func container(m *dsl.Machine, name string) *dsl.State {
	for _, h := range m.Histories {
		if h.Name == name {
			return h.Parent
		}
	}
	for _, s := range m.Composites {
		if s.Name == name {
			return s.Parent
		}
	}
	for _, s := range m.States {
		if s.Name == name {
			return s.Parent
		}
	}
	return nil
}

// commonBlock is the innermost composite whose block holds both a and b,
// nil for the top level.
func commonBlock(a, b *dsl.State) *dsl.State {
	for x := a; x != nil; x = x.Parent {
		if b.In(x) {
			return x
		}
	}
	return nil
}

// Mermaid returns the machine as a Mermaid stateDiagram-v2. A composite
// state is a composite of the diagram (state NAME { ... }) with its own
// start point, its final children arrows to its [*], its entry and exit
// actions in a note; a history pseudostate is a state of its composite
// labelled H (shallow) or H* (deep); a parallel state is a composite
// whose regions, composites of their own, are separated by "--" (Mermaid's
// concurrency); a row is drawn from the state it was written on to the
// state or history it names.
func Mermaid(m *dsl.Machine) []byte {
	var b bytes.Buffer
	ids := mermaidIDs(m)
	b.WriteString("stateDiagram-v2\n")
	fmt.Fprintf(&b, "    %%%% %s\n", header(sourceOf(m)))
	fmt.Fprintf(&b, "    %%%% %s: type %s, version %d.\n", m.Name, m.Type, m.Version)

	// Each row's edge is drawn in the innermost block that holds both ends.
	byBlock := map[*dsl.State][]*edge{}
	for _, e := range edges(m, false) {
		var blk *dsl.State
		if from, to := container(m, e.from.Name), container(m, e.to); from != nil && to != nil {
			blk = commonBlock(from, to)
		}
		byBlock[blk] = append(byBlock[blk], e)
	}
	writeEdges := func(indent string, es []*edge) {
		for _, e := range es {
			var labels []string
			for _, t := range e.rows {
				if l := rowLabel(t); l != "" {
					labels = append(labels, mermaidText(l))
				}
			}
			if len(labels) == 0 {
				fmt.Fprintf(&b, "%s%s --> %s\n", indent, ids[e.from.Name], ids[e.to])
				continue
			}
			fmt.Fprintf(&b, "%s%s --> %s : %s\n", indent, ids[e.from.Name], ids[e.to], strings.Join(labels, "<br/>"))
		}
	}
	var states func(indent string, ss []*dsl.State)
	states = func(indent string, ss []*dsl.State) {
		for _, s := range ss {
			if s.Composite() {
				fmt.Fprintf(&b, "%sstate %s {\n", indent, ids[s.Name])
				in := indent + "    "
				if s.Parallel {
					// A row never crosses regions: every edge inside
					// is drawn in the block of its region.
					for i, r := range s.Children {
						if i > 0 {
							fmt.Fprintf(&b, "%s--\n", in)
						}
						states(in, []*dsl.State{r})
					}
					fmt.Fprintf(&b, "%s}\n", indent)
					mermaidActions(&b, indent, ids[s.Name], s)
					continue
				}
				states(in, s.Children)
				for _, h := range s.History {
					label := h.Name + "<br/>H"
					if h.Deep {
						label += "*"
					}
					fmt.Fprintf(&b, "%s%s : %s\n", in, ids[h.Name], label)
				}
				fmt.Fprintf(&b, "%s[*] --> %s\n", in, ids[s.InitialChild.Name])
				writeEdges(in, byBlock[s])
				for _, c := range s.Children {
					if c.Terminal() || c.Done {
						fmt.Fprintf(&b, "%s%s --> [*]\n", in, ids[c.Name])
					}
				}
				fmt.Fprintf(&b, "%s}\n", indent)
				mermaidActions(&b, indent, ids[s.Name], s)
				continue
			}
			// A state's one description line is its label.
			label := s.Name
			switch {
			case s.Done:
				label += "<br/>final"
			case s.Wait:
				label += "<br/>wait"
			case s.Terminal():
				if txt := finalText(s); txt != "" {
					label += "<br/>" + mermaidText(txt)
				}
			}
			for _, l := range actionLines(s) {
				label += "<br/>" + mermaidText(l)
			}
			if label != ids[s.Name] {
				fmt.Fprintf(&b, "%s%s : %s\n", indent, ids[s.Name], label)
			}
		}
	}
	states("    ", roots(m))
	b.WriteString("\n")
	fmt.Fprintf(&b, "    [*] --> %s\n", ids[topInitial(m).Name])
	writeEdges("    ", byBlock[nil])
	for _, s := range roots(m) {
		if s.Terminal() {
			fmt.Fprintf(&b, "    %s --> [*]\n", ids[s.Name])
		}
	}
	var classes bytes.Buffer
	for _, st := range statuses {
		var members []string
		for _, s := range m.States {
			if s.Status == st {
				members = append(members, ids[s.Name])
			}
		}
		if len(members) > 0 {
			c := statusColors[st]
			fmt.Fprintf(&classes, "    classDef %s fill:%s,stroke:%s,color:%s,stroke-width:2px\n", st, c[0], c[1], c[2])
			fmt.Fprintf(&classes, "    class %s %s\n", strings.Join(members, ","), st)
		}
	}
	var waits []string
	for _, s := range m.States {
		if s.Wait && !s.Done {
			waits = append(waits, ids[s.Name])
		}
	}
	if len(waits) > 0 {
		classes.WriteString("    classDef wait stroke-dasharray:5 5\n")
		fmt.Fprintf(&classes, "    class %s wait\n", strings.Join(waits, ","))
	}
	if classes.Len() > 0 {
		b.WriteString("\n")
		b.Write(classes.Bytes())
	}
	return b.Bytes()
}

// mermaidActions writes the note of a composite's entry and exit actions,
// if it has any.
func mermaidActions(b *bytes.Buffer, indent, id string, s *dsl.State) {
	lines := actionLines(s)
	if len(lines) == 0 {
		return
	}
	for i, l := range lines {
		lines[i] = mermaidText(l)
	}
	fmt.Fprintf(b, "%snote right of %s : %s\n", indent, id, strings.Join(lines, "<br/>"))
}

// mermaidKeywords are words that Mermaid's state diagram lexer, which
// ignores case, reads as keywords where a state id stands.
var mermaidKeywords = []string{"default", "state", "note", "class", "classdef", "scale", "style",
	"direction", "acctitle", "accdescr", "statediagram", "statediagram-v2", "hide", "end"}

// mermaidIDs returns the id in the diagram of each state, composite and
// history pseudostate, by name: its name, unless Mermaid would read the
// name as a keyword, then an alias whose label is the name.
func mermaidIDs(m *dsl.Machine) map[string]string {
	var names []string
	for _, s := range m.States {
		names = append(names, s.Name)
	}
	for _, s := range m.Composites {
		names = append(names, s.Name)
	}
	for _, h := range m.Histories {
		names = append(names, h.Name)
	}
	taken := map[string]bool{}
	for _, n := range names {
		taken[strings.ToLower(n)] = true
	}
	ids := make(map[string]string, len(names))
	for _, n := range names {
		low := strings.ToLower(n)
		if !slices.Contains(mermaidKeywords, low) {
			ids[n] = n
			continue
		}
		id := "state_" + n
		for taken[strings.ToLower(id)] {
			id += "_"
		}
		taken[strings.ToLower(id)] = true
		ids[n] = id
	}
	return ids
}

// mermaidText makes free text safe in a Mermaid state diagram label, note
// or description, which end at a colon, a semicolon or a newline, may not
// use entity codes (they end with a semicolon), and are read as HTML.
var mermaidText = strings.NewReplacer(
	":", "\u02d0", // ː
	";", ",",
	"\n", " ",
	"\r", " ",
	"%%", "% %",
	"<", "\u2039", // ‹
	">", "\u203a", // ›
	"&", "+",
	"#", "\u266f", // ♯
	`"`, "'",
).Replace

// DOT returns the machine as a Graphviz digraph. A composite state is a
// cluster (compound=true) with its own start point; an edge to or from a
// composite ends at the cluster's border (lhead, ltail), drawn to or from
// its initial leaf; a history pseudostate is a circle labelled H or H*.
// A parallel state is a cluster without a start point of its own, its
// regions clusters inside it with dashed borders, each with its start
// point.
func DOT(m *dsl.Machine) []byte {
	var b bytes.Buffer
	nested := len(m.Composites) > 0
	fmt.Fprintf(&b, "// %s\n", header(sourceOf(m)))
	fmt.Fprintf(&b, "// %s: type %s, version %d.\n", m.Name, m.Type, m.Version)
	fmt.Fprintf(&b, "digraph %s {\n", dotID(m.Name))
	b.WriteString("    rankdir=LR;\n")
	if nested {
		b.WriteString("    compound=true;\n")
	}
	fmt.Fprintf(&b, "    label=%s;\n", dotID(fmt.Sprintf("%s (%s v%d)", m.Name, m.Type, m.Version)))
	b.WriteString("    labelloc=t;\n")
	b.WriteString("    fontname=\"Helvetica\";\n")
	b.WriteString("    node [shape=box, style=\"rounded,filled\", fillcolor=\"#ffffff\", fontname=\"Helvetica\", fontsize=11];\n")
	b.WriteString("    edge [fontname=\"Helvetica\", fontsize=9];\n")
	b.WriteString("\n")
	taken := map[string]bool{}
	for _, s := range m.States {
		taken[s.Name] = true
	}
	for _, h := range m.Histories {
		taken[h.Name] = true
	}
	startOf := func(s *dsl.State) string {
		id := "__start"
		if s != nil {
			id += "_" + s.Name
		}
		for taken[id] {
			id += "_"
		}
		return id
	}
	composite := map[string]*dsl.State{}
	for _, s := range m.Composites {
		composite[s.Name] = s
	}
	// anchor is the node an edge to or from a state is drawn to: the
	// state, or a composite's initial leaf with the cluster to clip at.
	anchor := func(name string) (node, cluster string) {
		if c := composite[name]; c != nil {
			return c.InitialLeaf().Name, "cluster_" + name
		}
		return name, ""
	}
	var starts []string
	var states func(indent string, ss []*dsl.State)
	states = func(indent string, ss []*dsl.State) {
		for _, s := range ss {
			if s.Composite() {
				fmt.Fprintf(&b, "%ssubgraph %s {\n", indent, dotID("cluster_"+s.Name))
				in := indent + "    "
				label := strings.Join(append([]string{s.Name}, actionLines(s)...), "\n")
				fmt.Fprintf(&b, "%slabel=%s;\n", in, dotID(label))
				style := "rounded"
				if s.Parent != nil && s.Parent.Parallel {
					style = "rounded,dashed"
				}
				fmt.Fprintf(&b, "%sstyle=%s;\n", in, dotID(style))
				if len(s.Doc) > 0 {
					fmt.Fprintf(&b, "%stooltip=%s;\n", in, dotID(strings.Join(s.Doc, "\n")))
				}
				if s.Parallel {
					states(in, s.Children)
					fmt.Fprintf(&b, "%s}\n", indent)
					continue
				}
				st := startOf(s)
				fmt.Fprintf(&b, "%s%s [shape=point, width=0.1, style=filled, fillcolor=black, label=\"\"];\n", in, dotID(st))
				node, cluster := anchor(s.InitialChild.Name)
				attrs := ""
				if cluster != "" {
					attrs = " [lhead=" + dotID(cluster) + "]"
				}
				starts = append(starts, fmt.Sprintf("    %s -> %s%s;\n", dotID(st), dotID(node), attrs))
				states(in, s.Children)
				for _, h := range s.History {
					label := "H"
					if h.Deep {
						label = "H*"
					}
					attrs := []string{"shape=circle", "label=" + dotID(label), "xlabel=" + dotID(h.Name), "width=0.3", "fixedsize=true"}
					if len(h.Doc) > 0 {
						attrs = append(attrs, "tooltip="+dotID(strings.Join(h.Doc, "\n")))
					}
					fmt.Fprintf(&b, "%s%s [%s];\n", in, dotID(h.Name), strings.Join(attrs, ", "))
				}
				fmt.Fprintf(&b, "%s}\n", indent)
				continue
			}
			label := s.Name
			attrs := []string{}
			switch {
			case s.Terminal():
				if txt := finalText(s); txt != "" {
					label += "\n" + txt
				}
				c := statusColors[s.Status]
				attrs = append(attrs, "peripheries=2", "fillcolor="+dotID(c[0]), "color="+dotID(c[1]), "fontcolor="+dotID(c[2]))
			case s.Done:
				label += "\nfinal"
				attrs = append(attrs, "peripheries=2")
			case s.Wait:
				label += "\nwait"
				attrs = append(attrs, `style="rounded,filled,dashed"`)
			}
			for _, l := range actionLines(s) {
				label += "\n" + l
			}
			attrs = append([]string{"label=" + dotID(label)}, attrs...)
			if len(s.Doc) > 0 {
				attrs = append(attrs, "tooltip="+dotID(strings.Join(s.Doc, "\n")))
			}
			fmt.Fprintf(&b, "%s%s [%s];\n", indent, dotID(s.Name), strings.Join(attrs, ", "))
		}
	}
	start := startOf(nil)
	fmt.Fprintf(&b, "    %s [shape=point, width=0.15, style=filled, fillcolor=black, label=\"\"];\n", start)
	states("    ", roots(m))
	b.WriteString("\n")
	top, topCluster := anchor(topInitial(m).Name)
	if topCluster != "" {
		fmt.Fprintf(&b, "    %s -> %s [lhead=%s];\n", start, dotID(top), dotID(topCluster))
	} else {
		fmt.Fprintf(&b, "    %s -> %s;\n", start, dotID(top))
	}
	for _, s := range starts {
		b.WriteString(s)
	}
	for _, e := range edges(m, true) {
		labels := make([]string, len(e.rows))
		for i, t := range e.rows {
			labels[i] = rowLabel(t)
		}
		attrs := []string{"label=" + dotID(strings.Join(labels, "\n"))}
		if e.timer {
			attrs = append(attrs, "style=dashed")
		}
		from, ltail := anchor(e.from.Name)
		to, lhead := anchor(e.to)
		// Graphviz clips at a cluster only when the other end is outside it.
		if lhead != "" && e.from.In(composite[e.to]) {
			lhead = ""
		}
		if ltail != "" {
			if c := container(m, e.to); c != nil && c.In(e.from) || e.to == e.from.Name {
				ltail = ""
			}
		}
		if lhead != "" {
			attrs = append(attrs, "lhead="+dotID(lhead))
		}
		if ltail != "" {
			attrs = append(attrs, "ltail="+dotID(ltail))
		}
		fmt.Fprintf(&b, "    %s -> %s [%s];\n", dotID(from), dotID(to), strings.Join(attrs, ", "))
	}
	b.WriteString("}\n")
	return b.Bytes()
}

// dotID quotes s as a DOT string: backslashes and quotes escaped, line
// breaks written \n (a centred line in a label).
func dotID(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// Page returns the machine's Markdown page.
func Page(source string, m *dsl.Machine, mermaid []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "<!-- %s -->\n\n", header(source))
	fmt.Fprintf(&b, "# %s\n\n", m.Name)
	if len(m.Doc) > 0 {
		for _, l := range m.Doc {
			b.WriteString(markdownText(strings.TrimRight(l, " \t")))
			b.WriteString("\n")
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "Go package `%s`, persisted type `%s`, definition version %d; generated from [%s](../%s).\n\n",
		m.Package, m.Type, m.Version, markdownText(source), source)
	if !hasFinal(m) {
		b.WriteString("The machine has no final state: a run of it never finishes; it keeps the status `running`\n")
		b.WriteString("and stores no result.\n\n")
	}

	b.WriteString("## Diagram\n\n")
	b.WriteString("```mermaid\n")
	b.Write(bytes.TrimRight(mermaid, "\n"))
	b.WriteString("\n```\n\n")
	fmt.Fprintf(&b, "The same diagram for Graphviz is in [%s](%s): `dot -Tsvg %s -o diagram.svg`.\n\n", DOTFile, DOTFile, DOTFile)

	b.WriteString("## States\n\n")
	b.WriteString("| State | Kind | Retry | Timers | Description |\n")
	b.WriteString("|---|---|---|---|---|\n")
	var stateRows func(ss []*dsl.State)
	stateRows = func(ss []*dsl.State) {
		for _, s := range ss {
			var timers []string
			for _, tm := range s.Timers {
				timers = append(timers, fmt.Sprintf("after %s `%s`", tm.Text, tm.Event.Name))
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n",
				s.Name, stateKind(s), orDash(retryText(s.Retry)), orDash(strings.Join(timers, ", ")), cell(s.Doc))
			if s.Composite() {
				stateRows(s.Children)
				for _, h := range s.History {
					kind := "shallow history of `" + s.Name + "`"
					if h.Deep {
						kind = "deep history of `" + s.Name + "`"
					}
					fmt.Fprintf(&b, "| `%s` | %s | – | – | %s |\n", h.Name, kind, cell(h.Doc))
				}
			}
		}
	}
	stateRows(roots(m))
	b.WriteString("\n")

	b.WriteString("## Transitions\n\n")
	b.WriteString("In table order: for a state and an event, the first row whose guard admits the event wins.\n")
	if len(m.Composites) > 0 {
		b.WriteString("A row written on a composite state applies in every state inside it, after their own rows.\n")
	}
	if len(m.Parallels) > 0 {
		b.WriteString("The regions of a parallel state are active together: an event is offered to each, in order,\n")
		b.WriteString("and a row written on the parallel state applies when none of them takes it.\n")
	}
	b.WriteString("\n")
	b.WriteString("| From | Event | Guard | To | Outcome | Description |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	for _, t := range writtenRows(m) {
		var ev string
		switch {
		case t.Event != nil:
			ev = "`" + t.Event.Name + "`"
		case t.Done:
			ev = "done"
		}
		if tm := timerOf(t); tm != nil {
			ev += " (after " + tm.Text + ")"
		}
		if t.Internal {
			ev += " (internal)"
		}
		guard := ""
		if g := guardName(t); g != "" {
			guard = "`" + g + "`"
			if t.Negated {
				guard = "not " + guard
			}
		}
		outcome := ""
		if t.Outcome != "" {
			outcome = code(t.Outcome)
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | `%s` | %s | %s |\n",
			rowSource(t).Name, orDash(ev), orDash(guard), rowTarget(t), orDash(outcome), cell(t.Doc))
	}
	b.WriteString("\n")

	b.WriteString("## Events\n\n")
	var notes []string
	if m.Cancel != nil {
		notes = append(notes, fmt.Sprintf("A run's owner cancels it with `%s`, the machine's cancel event.", m.Cancel.Name))
	}
	if slices.ContainsFunc(m.Events, func(e *dsl.Event) bool { return e.External }) {
		notes = append(notes, "An event marked external may be signalled by callers although the runtime fires it too.")
	}
	if len(notes) > 0 {
		b.WriteString(strings.Join(notes, " ") + "\n\n")
	}
	b.WriteString("| Event | Payload | Description |\n")
	b.WriteString("|---|---|---|\n")
	for _, e := range m.Events {
		fields := make([]string, len(e.Fields))
		for i, f := range e.Fields {
			fields[i] = fmt.Sprintf("`%s %s`", f.Name, f.Type)
		}
		name := "`" + e.Name + "`"
		switch {
		case e == m.Cancel:
			name += " (cancel)"
		case e.External:
			name += " (external)"
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", name, orDash(strings.Join(fields, ", ")), cell(e.Doc))
	}
	b.WriteString("\n")

	if len(m.Guards) > 0 {
		b.WriteString("## Guards\n\n")
		b.WriteString("| Guard | Reads | Description |\n")
		b.WriteString("|---|---|---|\n")
		for _, g := range m.Guards {
			evs := make([]string, len(g.Events))
			for i, e := range g.Events {
				evs[i] = "`" + e.Name + "`"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s |\n", g.Name, orDash(strings.Join(evs, ", ")), cell(g.Doc))
		}
		b.WriteString("\n")
	}

	if len(m.Actions) > 0 {
		b.WriteString("## Actions\n\n")
		b.WriteString("| Action | Description |\n")
		b.WriteString("|---|---|\n")
		for _, a := range m.Actions {
			fmt.Fprintf(&b, "| `%s` | %s |\n", a.Name, cell(a.Doc))
		}
		b.WriteString("\n")
	}

	b.WriteString("## Regenerating\n\n")
	fmt.Fprintf(&b, "Every file in this directory is generated from [%s](../%s). Edit that file, then run\n", source, source)
	b.WriteString("`go generate` in its directory, whose `//go:generate` line runs fsmgen on it (a Go tool of the\n")
	b.WriteString("module: `go get -tool github.com/fsmgen/fsmgen/cmd/fsmgen`):\n\n")
	fmt.Fprintf(&b, "```go\n//go:generate go tool fsmgen %s\n```\n", source)
	return b.Bytes()
}

// hasFinal reports whether m has a final state.
func hasFinal(m *dsl.Machine) bool {
	return slices.ContainsFunc(m.States, (*dsl.State).Terminal)
}

// stateKind is a state's kind for the page: initial, driven, wait, final
// with its status and outcome, final child, or composite; and for a state
// inside a composite, which one.
func stateKind(s *dsl.State) string {
	var k string
	switch {
	case s.Terminal() && s.Outcome != "":
		k = fmt.Sprintf("final: %s, outcome %s", s.Status, code(s.Outcome))
	case s.Terminal():
		k = "final: " + s.Status
	case s.Done:
		k = "final child"
	case s.Parallel:
		regions := make([]string, len(s.Children))
		for i, r := range s.Children {
			regions[i] = "`" + r.Name + "`"
		}
		k = "parallel, regions " + strings.Join(regions, ", ")
	case s.Composite() && s.Parent != nil && s.Parent.Parallel:
		k = "region, initial `" + s.InitialChild.Name + "`"
	case s.Composite():
		k = "composite, initial `" + s.InitialChild.Name + "`"
	case s.Wait:
		k = "wait"
	default:
		k = "driven"
	}
	if s.Initial && !s.Terminal() {
		k = "initial, " + k
	}
	if s.Parent != nil {
		k += ", in `" + s.Parent.Name + "`"
	}
	if lines := actionLines(s); len(lines) > 0 {
		k += "; " + strings.Join(lines, ", ")
	}
	return k
}

// retryText describes a retry policy, or returns "" for none.
func retryText(r *dsl.Retry) string {
	if r == nil {
		return ""
	}
	if r.Preset != "" {
		return "`" + r.Preset + "` policy"
	}
	parts := []string{fmt.Sprintf("%d attempts", r.MaxAttempts)}
	if r.FromPolicy {
		parts[0] = fmt.Sprintf("up to %d attempts, as the run's policy says", r.MaxAttempts)
	}
	backoff := fmt.Sprintf("backoff %s ×%s", durationText(r.Initial), strconv.FormatFloat(r.Factor, 'g', -1, 64))
	if r.Max > 0 {
		backoff += ", max " + durationText(r.Max)
	}
	parts = append(parts, backoff)
	if r.Jitter > 0 {
		parts = append(parts, "jitter "+strconv.FormatFloat(r.Jitter, 'g', -1, 64))
	}
	if len(r.NonRetryable) > 0 {
		codes := make([]string, len(r.NonRetryable))
		for i, c := range r.NonRetryable {
			codes[i] = code(c)
		}
		parts = append(parts, "not retried on "+strings.Join(codes, ", "))
	}
	return strings.Join(parts, ", ")
}

// durationText writes d as the .fsm language would: whole days as 7d,
// else Go's form without zero trailing units (1h, 1m30s, 500ms).
func durationText(d time.Duration) string {
	day := 24 * time.Hour
	if d > 0 && d%day == 0 {
		return strconv.FormatInt(int64(d/day), 10) + "d"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// cell joins doc lines into one Markdown table cell.
func cell(doc []string) string {
	var words []string
	for _, l := range doc {
		if l = strings.TrimSpace(l); l != "" {
			words = append(words, l)
		}
	}
	return cellText(markdownText(strings.Join(words, " ")))
}

// cellText makes text safe inside a Markdown table cell (inside a code
// span too, where HTML is not read).
func cellText(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	return strings.ReplaceAll(s, "|", `\|`)
}

// htmlEscaper escapes what Markdown would pass through as HTML: a tag
// starts with <, an entity with & (a > alone starts neither).
var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;")

// markdownText makes text of a .fsm file (a doc comment) safe in the
// generated page: Markdown renders raw HTML, so < and & are written as
// entities, which it shows as the characters they stand for. The rest of
// Markdown (emphasis, code, links) is kept.
func markdownText(s string) string { return htmlEscaper.Replace(s) }

// code writes s as a code span that is safe inside a Markdown table cell.
func code(s string) string {
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return fence + cellText(s) + fence
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}
