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
	for _, tm := range t.From.Timers {
		if tm.Event == t.Event {
			return tm
		}
	}
	return nil
}

// guardText is [G] or [!G], or "" for an unguarded row.
func guardText(t *dsl.Transition) string {
	switch {
	case t.Guard == nil:
		return ""
	case t.Negated:
		return "[!" + t.Guard.Name + "]"
	default:
		return "[" + t.Guard.Name + "]"
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

// rowLabel is one row's edge label.
func rowLabel(t *dsl.Transition) string {
	parts := []string{t.Event.Name}
	if tm := timerOf(t); tm != nil {
		parts = append(parts, "(after "+tm.Text+")")
	}
	if g := guardText(t); g != "" {
		parts = append(parts, g)
	}
	if o := edgeOutcome(t); o != "" {
		parts = append(parts, "/ "+o)
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

// edge is one drawn edge: the rows sharing a source and a target.
type edge struct {
	from, to *dsl.State
	timer    bool
	rows     []*dsl.Transition
}

// edges groups m's rows by (from, to), and by whether a timer fires them
// when byTimer is set, in order of each group's first row.
func edges(m *dsl.Machine, byTimer bool) []*edge {
	type key struct {
		from, to *dsl.State
		timer    bool
	}
	var out []*edge
	index := map[key]*edge{}
	for _, t := range m.Transitions {
		k := key{from: t.From, to: t.To}
		if byTimer {
			k.timer = timerOf(t) != nil
		}
		e := index[k]
		if e == nil {
			e = &edge{from: t.From, to: t.To, timer: k.timer}
			index[k] = e
			out = append(out, e)
		}
		e.rows = append(e.rows, t)
	}
	return out
}

// Mermaid returns the machine as a Mermaid stateDiagram-v2.
func Mermaid(m *dsl.Machine) []byte {
	var b bytes.Buffer
	ids := mermaidIDs(m)
	b.WriteString("stateDiagram-v2\n")
	fmt.Fprintf(&b, "    %%%% %s\n", header(sourceOf(m)))
	fmt.Fprintf(&b, "    %%%% %s: type %s, version %d.\n", m.Name, m.Type, m.Version)
	for _, s := range m.States {
		// A state's one description line is its label.
		label := s.Name
		switch {
		case s.Wait:
			label += "<br/>wait"
		case s.Terminal():
			if txt := finalText(s); txt != "" {
				label += "<br/>" + mermaidText(txt)
			}
		}
		if label != ids[s] {
			fmt.Fprintf(&b, "    %s : %s\n", ids[s], label)
		}
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "    [*] --> %s\n", ids[m.Initial])
	for _, e := range edges(m, false) {
		labels := make([]string, len(e.rows))
		for i, t := range e.rows {
			labels[i] = mermaidText(rowLabel(t))
		}
		fmt.Fprintf(&b, "    %s --> %s : %s\n", ids[e.from], ids[e.to], strings.Join(labels, "<br/>"))
	}
	for _, s := range m.States {
		if s.Terminal() {
			fmt.Fprintf(&b, "    %s --> [*]\n", ids[s])
		}
	}
	var classes bytes.Buffer
	for _, st := range statuses {
		var members []string
		for _, s := range m.States {
			if s.Status == st {
				members = append(members, ids[s])
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
		if s.Wait {
			waits = append(waits, ids[s])
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

// mermaidKeywords are words that Mermaid's state diagram lexer, which
// ignores case, reads as keywords where a state id stands.
var mermaidKeywords = []string{"default", "state", "note", "class", "classdef", "scale", "style",
	"direction", "acctitle", "accdescr", "statediagram", "statediagram-v2", "hide", "end"}

// mermaidIDs returns the id of each state in the diagram: its name, unless
// Mermaid would read the name as a keyword, then an alias whose label is
// the name.
func mermaidIDs(m *dsl.Machine) map[*dsl.State]string {
	taken := map[string]bool{}
	for _, s := range m.States {
		taken[strings.ToLower(s.Name)] = true
	}
	ids := make(map[*dsl.State]string, len(m.States))
	for _, s := range m.States {
		low := strings.ToLower(s.Name)
		if !slices.Contains(mermaidKeywords, low) {
			ids[s] = s.Name
			continue
		}
		id := "state_" + s.Name
		for taken[strings.ToLower(id)] {
			id += "_"
		}
		taken[strings.ToLower(id)] = true
		ids[s] = id
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

// DOT returns the machine as a Graphviz digraph.
func DOT(m *dsl.Machine) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "// %s\n", header(sourceOf(m)))
	fmt.Fprintf(&b, "// %s: type %s, version %d.\n", m.Name, m.Type, m.Version)
	fmt.Fprintf(&b, "digraph %s {\n", dotID(m.Name))
	b.WriteString("    rankdir=LR;\n")
	fmt.Fprintf(&b, "    label=%s;\n", dotID(fmt.Sprintf("%s (%s v%d)", m.Name, m.Type, m.Version)))
	b.WriteString("    labelloc=t;\n")
	b.WriteString("    fontname=\"Helvetica\";\n")
	b.WriteString("    node [shape=box, style=\"rounded,filled\", fillcolor=\"#ffffff\", fontname=\"Helvetica\", fontsize=11];\n")
	b.WriteString("    edge [fontname=\"Helvetica\", fontsize=9];\n")
	b.WriteString("\n")
	start := "__start"
	for _, s := range m.States {
		if s.Name == start {
			start += "_"
		}
	}
	fmt.Fprintf(&b, "    %s [shape=point, width=0.15, style=filled, fillcolor=black, label=\"\"];\n", start)
	for _, s := range m.States {
		label := s.Name
		attrs := []string{}
		switch {
		case s.Terminal():
			if txt := finalText(s); txt != "" {
				label += "\n" + txt
			}
			c := statusColors[s.Status]
			attrs = append(attrs, "peripheries=2", "fillcolor="+dotID(c[0]), "color="+dotID(c[1]), "fontcolor="+dotID(c[2]))
		case s.Wait:
			label += "\nwait"
			attrs = append(attrs, `style="rounded,filled,dashed"`)
		}
		attrs = append([]string{"label=" + dotID(label)}, attrs...)
		if len(s.Doc) > 0 {
			attrs = append(attrs, "tooltip="+dotID(strings.Join(s.Doc, "\n")))
		}
		fmt.Fprintf(&b, "    %s [%s];\n", dotID(s.Name), strings.Join(attrs, ", "))
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "    %s -> %s;\n", start, dotID(m.Initial.Name))
	for _, e := range edges(m, true) {
		labels := make([]string, len(e.rows))
		for i, t := range e.rows {
			labels[i] = rowLabel(t)
		}
		attrs := []string{"label=" + dotID(strings.Join(labels, "\n"))}
		if e.timer {
			attrs = append(attrs, "style=dashed")
		}
		fmt.Fprintf(&b, "    %s -> %s [%s];\n", dotID(e.from.Name), dotID(e.to.Name), strings.Join(attrs, ", "))
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
	for _, s := range m.States {
		var timers []string
		for _, tm := range s.Timers {
			timers = append(timers, fmt.Sprintf("after %s `%s`", tm.Text, tm.Event.Name))
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n",
			s.Name, stateKind(s), orDash(retryText(s.Retry)), orDash(strings.Join(timers, ", ")), cell(s.Doc))
	}
	b.WriteString("\n")

	b.WriteString("## Transitions\n\n")
	b.WriteString("In table order: for a state and an event, the first row whose guard admits the event wins.\n\n")
	b.WriteString("| From | Event | Guard | To | Outcome | Description |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	for _, t := range m.Transitions {
		ev := "`" + t.Event.Name + "`"
		if tm := timerOf(t); tm != nil {
			ev += " (after " + tm.Text + ")"
		}
		guard := ""
		if t.Guard != nil {
			guard = "`" + t.Guard.Name + "`"
			if t.Negated {
				guard = "not " + guard
			}
		}
		outcome := ""
		if t.Outcome != "" {
			outcome = code(t.Outcome)
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | `%s` | %s | %s |\n",
			t.From.Name, ev, orDash(guard), t.To.Name, orDash(outcome), cell(t.Doc))
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

// stateKind is a state's kind for the page: initial, driven, wait, or final
// with its status and outcome.
func stateKind(s *dsl.State) string {
	switch {
	case s.Terminal() && s.Outcome != "":
		return fmt.Sprintf("final: %s, outcome %s", s.Status, code(s.Outcome))
	case s.Terminal():
		return "final: " + s.Status
	}
	k := "driven"
	if s.Wait {
		k = "wait"
	}
	if s.Initial {
		k = "initial, " + k
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
