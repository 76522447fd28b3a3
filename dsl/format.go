package dsl

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"unicode/utf8"
)

// The canonical layout, as Format prints it.
//
// Structure:
//   - machine Name { on one line, its items indented by four spaces, } alone
//     at the start of its line; a machine without items prints as
//     "machine Name {" and "}".
//   - One item per line, in the order written. A declaration split over
//     several lines is joined; several declarations on one line are split.
//   - Machines are separated by exactly one blank line. Blank lines between
//     items are kept, collapsed to one; there is never a blank line at the
//     start of the file, right after a {, right before a } or at the end of
//     the file, which ends with exactly one newline. No line has trailing
//     spaces.
//   - Tokens are separated by one space, except in [], "path".Name, !GUARD,
//     "A, B" lists and in alignment padding. Names, numbers, durations and
//     strings are printed exactly as written, guard clauses as written
//     (when G, when !G, unless G), state options in the order written and
//     retry settings in grammar order.
//
// Events:
//   - event Name when written without braces, event Name {} when written
//     with empty ones; the flag external follows the name.
//   - With fields: one line, event Name { a string; b float64 }, when the
//     declaration was written on one line and that line (indentation
//     included, alignment padding and trailing comment excluded) fits in
//     100 columns; otherwise a block with one field per line, indented one
//     more level, and } on its own line. Inside a block, blank lines between
//     fields are kept (collapsed to one) and field types are aligned like
//     the columns below.
//
// Comments are all kept, their text as written minus trailing whitespace:
//   - A comment after code on its line stays at the end of that line.
//   - Comment lines keep their place between machines and items, and the
//     blank lines around them (collapsed to one; a comment line after the
//     } of a machine is always separated from it by a blank line). A doc comment (the comment lines directly
//     above a machine or an item) stays directly above it; a comment that
//     documents nothing stays separated from the next node by a blank line,
//     so that reformatting never turns it into a doc comment.
//   - A comment inside a declaration that is printed on one line (between
//     two of its tokens) cannot stay there: the first such comment becomes
//     the line's trailing comment and any others follow the declaration on
//     lines of their own, then a blank line. The same happens to a second
//     comment in a machine's header (machine // a, Name { // b).
//
// Alignment. Within a run of consecutive lines of the same kind (state
// declarations, transitions, one-line events, or fields of one event
// block), columns are padded so that they line up; a blank line or a line
// of another kind ends the run, while a comment line between two lines of
// the run does not (it is skipped over, so that documented state tables
// still line up). Only a column followed by more text on its line is
// padded, and a column is as wide as its widest cell that is followed by
// more text, like gofmt's tab stops.
//   - States: the keyword (initial, state, final) and the name are padded,
//     so that the options of plain states and the status of final ones
//     start in one column.
//   - Transitions: the source list, the target, the event and the guard
//     clause are padded, so that ->, on, the guard clause and outcome each
//     start in one column (a transition without a guard leaves the guard
//     column empty).
//   - One-line events: the name, and the external flag when one of the
//     run has it, are padded so that the braces line up.
//   - Trailing comments of consecutive lines (comment lines between them
//     are skipped over, as above) start one space after the longest of
//     those lines; a line without a trailing comment, a blank line, or a
//     line that is not an item or a field ends such a run, as in gofmt.

// maxOneLineEvent is the widest an event with fields may be, indentation
// included, to stay on one line.
const maxOneLineEvent = 100

// Format prints f in the canonical layout described above, with every
// comment of f.Comments in its place. Formatting the output again gives
// the same bytes, and parsing it gives the same tree as f apart from
// positions. When f has no Comments at all (a tree built in code), the Doc
// of each machine and item is printed as its doc comment instead.
func Format(f *File) []byte {
	p := &printer{displacedBlank: true, blockStart: true}
	p.comments = slices.Clone(f.Comments)
	slices.SortStableFunc(p.comments, func(a, b *Comment) int { return a.Pos.Offset - b.Pos.Offset })
	p.docs = len(f.Comments) == 0
	p.file(f)
	return render(p.lines)
}

// FormatSource parses src and formats it. A syntax error is returned as
// Parse returns it, an ErrorList.
func FormatSource(filename string, src []byte) ([]byte, error) {
	f, err := Parse(filename, src)
	if err != nil {
		return nil, err
	}
	return Format(f), nil
}

// outLine is one line of output before alignment.
type outLine struct {
	indent  int      // nesting depth, four spaces each
	comment bool     // a comment alone on its line, text in cells[0]
	cells   []string // code, joined by single spaces once aligned
	kind    string   // alignment class of the cells; "" never aligns
	trail   string   // trailing comment
	blank   bool     // a blank line precedes this line
	code    string   // the aligned code, set by align
}

type printer struct {
	lines    []*outLine
	comments []*Comment // every comment, by offset
	next     int        // first comment not yet printed
	docs     bool       // print Doc fields: there are no comments
	indent   int        // depth of the lines being printed

	pendingBlank   bool // a blank line goes before the next line
	blockStart     bool // no line since the last { or the start of the file
	afterDisplaced bool // the last line is a displaced comment
	displacedBlank bool // a blank line follows displaced comments
}

// take returns the comments not printed yet that start before offset end.
func (p *printer) take(end int) []*Comment {
	i := p.next
	for p.next < len(p.comments) && p.comments[p.next].Pos.Offset < end {
		p.next++
	}
	return p.comments[i:p.next]
}

func (p *printer) emit(l *outLine) {
	if p.pendingBlank && !p.blockStart {
		l.blank = true
	}
	p.pendingBlank = false
	p.blockStart = false
	p.afterDisplaced = false
	p.lines = append(p.lines, l)
}

// open marks the start of a block: the line just printed ends with {.
func (p *printer) open() {
	p.blockStart = true
	p.pendingBlank = false
	p.indent++
}

// close prints the } of a block.
func (p *printer) close() {
	p.indent--
	p.pendingBlank = false
	p.emit(&outLine{indent: p.indent, cells: []string{"}"}})
}

func (p *printer) code(kind string, cells ...string) {
	p.emit(&outLine{indent: p.indent, kind: kind, cells: cells})
}

func (p *printer) ownComment(text string) {
	p.emit(&outLine{indent: p.indent, comment: true, cells: []string{trimComment(text)}})
}

// trail puts c at the end of the last line, or on a line of its own after
// it when that line already has a trailing comment or is a comment.
func (p *printer) trail(c *Comment) {
	if n := len(p.lines); n > 0 && !p.lines[n-1].comment && p.lines[n-1].trail == "" {
		p.lines[n-1].trail = trimComment(c.Text)
		return
	}
	if p.afterDisplaced {
		p.pendingBlank = false
	}
	p.ownComment(c.Text)
	p.afterDisplaced = true
	if p.displacedBlank {
		p.pendingBlank = true
	}
}

func trimComment(s string) string { return strings.TrimRight(s, " \t\r") }

// gap prints the comments before offset end, which stand between the
// previous line (ending on source line prevLine) and the next node. That
// node starts on source line nextLine (0 when there is none: the end of a
// block or of the file) and its doc is doc.
func (p *printer) gap(end, prevLine, nextLine int, doc []string) {
	cs := p.take(end)
	docFrom := len(cs)
	if n := len(doc); n > 0 && nextLine > 0 && len(cs) >= n {
		i := len(cs) - n
		ok := true
		for j, c := range cs[i:] {
			ok = ok && c.Own && c.Pos.Line == nextLine-n+j
		}
		if ok {
			docFrom = i
		}
	}
	last := prevLine
	free := false // a comment that documents nothing was printed
	for _, c := range cs[:docFrom] {
		if !c.Own {
			p.trail(c)
		} else {
			if c.Pos.Line > last+1 {
				p.pendingBlank = true
			}
			p.ownComment(c.Text)
			free = true
		}
		last = c.Pos.Line
	}
	if nextLine == 0 {
		return
	}
	first := nextLine
	if docFrom < len(cs) {
		first = cs[docFrom].Pos.Line
	}
	if free || first > last+1 {
		p.pendingBlank = true
	}
	for _, c := range cs[docFrom:] {
		p.ownComment(c.Text)
	}
	if p.docs {
		for _, d := range doc {
			p.ownComment(strings.TrimRight("// "+d, " "))
		}
	}
}

func (p *printer) file(f *File) {
	prevLine := 0
	for i, m := range f.Machines {
		if i > 0 {
			p.pendingBlank = true
		}
		p.gap(m.Pos.Offset, prevLine, max(m.Pos.Line, 1), m.Doc)
		p.machine(m)
		prevLine = m.EndPos.Line
		p.pendingBlank = true
	}
	p.gap(math.MaxInt, prevLine, 0, nil)
}

func (p *printer) machine(m *MachineDecl) {
	p.code("", "machine "+m.Name+" {")
	p.open()
	prevLine := m.Pos.Line
	for _, it := range m.Items {
		p.gap(it.Pos.Offset, prevLine, max(it.Pos.Line, 1), it.Doc)
		p.item(it)
		prevLine = it.EndPos.Line
	}
	// EndPos is just after the closing brace.
	p.gap(m.EndPos.Offset-1, prevLine, 0, nil)
	p.close()
}

func (p *printer) item(it *Item) {
	switch {
	case it.Type != nil:
		p.code("type", "type", it.Type.Name)
	case it.Version != nil:
		p.code("version", "version", it.Version.Number)
	case it.Package != nil:
		p.code("package", "package", it.Package.Name)
	case it.Cancel != nil:
		p.code("cancel", "cancel", name(it.Cancel.Event))
	case it.State != nil:
		p.state(it.State)
	case it.History != nil:
		p.code("history", historyCells(it.History)...)
	case it.Action != nil:
		p.code("action", "action", name(it.Action.Name))
	case it.Event != nil:
		if p.eventBlock(it) {
			return
		}
		ev := it.Event
		braces := ""
		if ev.Block {
			braces = "{}"
			if len(ev.Fields) > 0 {
				braces = "{ " + oneLineFields(ev.Fields) + " }"
			}
		}
		p.code("event", "event", name(ev.Name), external(ev), braces)
	case it.Guard != nil:
		p.code("guard", "guard", name(it.Guard.Name))
	case it.Transition != nil:
		p.code("transition", transitionCells(it.Transition)...)
	case it.Upgrade != nil:
		p.upgrade(it)
	}
	for _, c := range p.take(it.EndPos.Offset) {
		p.trail(c)
	}
}

// eventBlock prints it as a block of fields if that is its layout, and
// reports whether it did.
func (p *printer) eventBlock(it *Item) bool {
	ev := it.Event
	if !ev.Block {
		return false
	}
	end := it.EndPos.Offset - 1 // the closing brace
	if len(ev.Fields) == 0 {
		// Empty braces stay {} unless a comment line stands inside.
		own := false
		for _, c := range p.comments[p.next:] {
			if c.Pos.Offset >= end {
				break
			}
			own = own || c.Own
		}
		if !own {
			return false
		}
	} else if it.Pos.Line == it.EndPos.Line {
		w := 4*p.indent + utf8.RuneCountInString(eventHead(ev)+" { "+oneLineFields(ev.Fields)+" }")
		if w <= maxOneLineEvent {
			return false
		}
	}
	p.code("", eventHead(ev)+" {")
	p.open()
	saved := p.displacedBlank
	p.displacedBlank = false
	last := it.Pos.Line
	comments := func(end int) { p.blockComments(&last, end) }
	for _, fd := range ev.Fields {
		comments(fd.Pos.Offset)
		if fd.Pos.Line > last+1 {
			p.pendingBlank = true
		}
		p.code("field", name(fd.Name), typeString(fd.Type))
		last = fd.Pos.Line
		if fd.Type != nil {
			last = max(last, fd.Type.Pos.Line)
		}
	}
	comments(end)
	p.displacedBlank = saved
	p.close()
	return true
}

// external returns the flag of an external event, or "".
func external(ev *EventDecl) string {
	if ev.External {
		return "external"
	}
	return ""
}

// eventHead is an event declaration up to its braces: event Name [external].
func eventHead(ev *EventDecl) string {
	if ev.External {
		return "event " + name(ev.Name) + " external"
	}
	return "event " + name(ev.Name)
}

// state prints a state declaration; a composite's children go on the
// lines after it, one level deeper, up to the } that closes its block.
func (p *printer) state(s *StateDecl) {
	cells := stateCells(s)
	if !s.Block {
		p.code("state", cells...)
		return
	}
	cells[2] = strings.TrimSpace(cells[2] + " {")
	p.code("state", cells...)
	p.open()
	prevLine := s.Pos.Line
	for _, c := range s.Children {
		p.gap(c.Pos.Offset, prevLine, max(c.Pos.Line, 1), c.Doc)
		switch {
		case c.State != nil:
			p.state(c.State)
		case c.History != nil:
			p.code("history", historyCells(c.History)...)
		}
		for _, cm := range p.take(c.EndPos.Offset) {
			p.trail(cm)
		}
		prevLine = c.EndPos.Line
	}
	// EndPos is just after the closing brace.
	p.gap(s.EndPos.Offset-1, prevLine, 0, nil)
	p.close()
}

func historyCells(h *HistoryDecl) []string {
	if h.Deep {
		return []string{"deep history", name(h.Name)}
	}
	return []string{"history", name(h.Name)}
}

func stateCells(s *StateDecl) []string {
	var rest []string
	if s.Status != nil {
		rest = append(rest, s.Status.Value)
	}
	if s.Outcome != nil {
		rest = append(rest, "outcome", s.Outcome.Value)
	}
	for _, o := range s.Options {
		switch {
		case o.Parallel:
			rest = append(rest, "parallel")
		case o.Wait:
			rest = append(rest, "wait")
		case o.Retry != nil:
			rest = append(rest, retryString(o.Retry))
		case o.Timer != nil && o.Timer.After != nil:
			rest = append(rest, "after", dur(o.Timer.After), name(o.Timer.Event))
		case o.Timer != nil:
			rest = append(rest, "after", name(o.Timer.FieldOf)+"."+name(o.Timer.Field), "min", dur(o.Timer.Min), "max", dur(o.Timer.Max), name(o.Timer.Event))
		case o.Entry != nil:
			rest = append(rest, "entry", name(o.Entry))
		case o.Exit != nil:
			rest = append(rest, "exit", name(o.Exit))
		}
	}
	return []string{s.Kind, name(s.Name), strings.Join(rest, " ")}
}

func retryString(r *RetryOpt) string {
	parts := []string{"retry"}
	if r.Preset != nil {
		parts = append(parts, r.Preset.Value)
	}
	if r.UpTo {
		parts = append(parts, "up", "to")
	}
	if r.Attempts != nil {
		parts = append(parts, r.Attempts.Value)
	}
	if r.Backoff != nil {
		parts = append(parts, "backoff", r.Backoff.Value)
	}
	if r.Factor != nil {
		parts = append(parts, "factor", r.Factor.Value)
	}
	if r.Max != nil {
		parts = append(parts, "max", r.Max.Value)
	}
	if r.Jitter != nil {
		parts = append(parts, "jitter", r.Jitter.Value)
	}
	if len(r.NonRetryable) > 0 {
		codes := make([]string, len(r.NonRetryable))
		for i, s := range r.NonRetryable {
			codes[i] = str(s)
		}
		parts = append(parts, "nonretryable", strings.Join(codes, ", "))
	}
	if r.Else != nil {
		parts = append(parts, "else", r.Else.Value)
	}
	return strings.Join(parts, " ")
}

func transitionCells(t *TransitionDecl) []string {
	from := make([]string, len(t.From))
	for i, r := range t.From {
		if r.Star {
			from[i] = "*"
		} else {
			from[i] = r.Name
		}
	}
	guard, outcome := "", ""
	if g := t.Guard; g != nil {
		guard = "when "
		if g.Unless {
			guard = "unless "
		}
		if g.Not {
			guard += "!"
		}
		if g.In != nil {
			guard += "In(" + name(g.In) + ")"
		} else {
			guard += name(g.Name)
		}
	}
	if t.Outcome != nil {
		outcome = "outcome " + t.Outcome.Value
	}
	on, events := "", make([]string, 0, 1+len(t.More))
	for _, e := range t.Events() {
		on = "on"
		events = append(events, name(e))
	}
	internal := ""
	if t.Internal {
		internal = "internal"
	}
	return []string{strings.Join(from, ", "), "->", name(t.To), on, strings.Join(events, ", "), guard, outcome, internal}
}

func oneLineFields(fs []*Field) string {
	parts := make([]string, len(fs))
	for i, fd := range fs {
		parts[i] = name(fd.Name) + " " + typeString(fd.Type)
	}
	return strings.Join(parts, "; ")
}

func typeString(t *TypeExpr) string {
	if t == nil {
		return ""
	}
	var b strings.Builder
	if t.Slice {
		b.WriteString("[]")
	}
	if t.Path != nil {
		b.WriteString(t.Path.Value + ".")
	}
	b.WriteString(t.Name)
	if t.Sel != "" {
		b.WriteString("." + t.Sel)
	}
	return b.String()
}

func name(n *Name) string {
	if n == nil {
		return ""
	}
	return n.Value
}

func str(s *StringLit) string {
	if s == nil {
		return ""
	}
	return s.Value
}

func dur(d *DurationLit) string {
	if d == nil {
		return ""
	}
	return d.Value
}

// align pads the cells of each run of lines of one kind, then sets code.
func align(lines []*outLine) {
	for i := 0; i < len(lines); {
		l := lines[i]
		if l.comment || l.kind == "" {
			i++
			continue
		}
		run := []*outLine{l}
		j := i + 1
		for ; j < len(lines); j++ {
			m := lines[j]
			if m.blank {
				break
			}
			if m.comment {
				continue
			}
			if m.kind != l.kind || m.indent != l.indent {
				break
			}
			run = append(run, m)
		}
		alignCells(run)
		i = j
	}
	for _, l := range lines {
		if l.code == "" && !l.comment {
			l.code = joinCells(l.cells, nil)
		}
	}
}

// lastCell returns the index of the last non-empty cell, or -1.
func lastCell(cells []string) int {
	for i := len(cells) - 1; i >= 0; i-- {
		if cells[i] != "" {
			return i
		}
	}
	return -1
}

func alignCells(run []*outLine) {
	var widths []int
	for _, l := range run {
		last := lastCell(l.cells)
		for i := 0; i < last; i++ {
			for len(widths) <= i {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(l.cells[i]))
		}
	}
	for _, l := range run {
		l.code = joinCells(l.cells, widths)
	}
}

// joinCells joins cells with single spaces, padding each cell followed by
// more text to its column's width. A column empty in every line of the run
// (width 0) takes no room.
func joinCells(cells []string, widths []int) string {
	last := lastCell(cells)
	var b strings.Builder
	sep := false
	for i := 0; i <= last; i++ {
		w := 0
		if i < len(widths) {
			w = widths[i]
		}
		c := cells[i]
		if c == "" && w == 0 {
			continue
		}
		if sep {
			b.WriteByte(' ')
		}
		sep = true
		b.WriteString(c)
		if i < last {
			if pad := w - utf8.RuneCountInString(c); pad > 0 {
				b.WriteString(strings.Repeat(" ", pad))
			}
		}
	}
	return b.String()
}

// alignComments sets the column of the trailing comments of each run of
// consecutive lines that have one.
func alignComments(lines []*outLine) []int {
	col := make([]int, len(lines))
	for i := 0; i < len(lines); {
		l := lines[i]
		if l.comment || l.trail == "" || l.kind == "" {
			col[i] = width(l) + 1
			i++
			continue
		}
		run := []int{i}
		j := i + 1
		for ; j < len(lines); j++ {
			m := lines[j]
			if m.blank {
				break
			}
			if m.comment {
				continue
			}
			if m.trail == "" || m.kind == "" || m.indent != l.indent {
				break
			}
			run = append(run, j)
		}
		w := 0
		for _, k := range run {
			w = max(w, width(lines[k]))
		}
		for _, k := range run {
			col[k] = w + 1
		}
		i = j
	}
	return col
}

func width(l *outLine) int {
	return 4*l.indent + utf8.RuneCountInString(l.code)
}

func render(lines []*outLine) []byte {
	align(lines)
	cols := alignComments(lines)
	var b bytes.Buffer
	for i, l := range lines {
		if l.blank && i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(strings.Repeat("    ", l.indent))
		if l.comment {
			b.WriteString(l.cells[0])
		} else {
			b.WriteString(l.code)
			if l.trail != "" {
				b.WriteString(strings.Repeat(" ", cols[i]-width(l)))
				b.WriteString(l.trail)
			}
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// blockComments prints the comments before offset end inside a block: a
// comment that followed code on its line trails the code, any other stands
// on a line of its own, after a blank line where the source had one below
// line *last. It moves *last to the last comment's line.
func (p *printer) blockComments(last *int, end int) {
	for _, c := range p.take(end) {
		if !c.Own {
			p.trail(c)
		} else {
			if c.Pos.Line > *last+1 {
				p.pendingBlank = true
			}
			p.ownComment(c.Text)
		}
		*last = c.Pos.Line
	}
}

// upgrade prints an upgrade declaration: upgrade from N drain on one line,
// or its block with one rule per line, indented one more level, rules
// aligned like transitions and comments kept as in an event block.
func (p *printer) upgrade(it *Item) {
	d := it.Upgrade
	if d.Drain {
		p.code("", "upgrade from "+d.From.Value+" drain")
		return
	}
	p.code("", "upgrade from "+d.From.Value+" {")
	p.open()
	saved := p.displacedBlank
	p.displacedBlank = false
	last := it.Pos.Line
	comments := func(end int) { p.blockComments(&last, end) }
	for _, r := range d.Rules {
		comments(r.Pos.Offset)
		if r.Pos.Line > last+1 {
			p.pendingBlank = true
		}
		switch {
		case r.Default != nil:
			p.code("default", "default", name(r.Default.Event)+"."+name(r.Default.Field), r.Default.Value.Value)
		case r.Drain:
			p.code("rule", name(r.From), "drain")
		default:
			cond, timers := "", ""
			if r.Cond != nil {
				cond = "when " + name(r.Cond.Event)
				if r.Cond.Unless {
					cond = "unless " + name(r.Cond.Event)
				}
			}
			if r.Timers != nil {
				timers = "timers " + name(r.Timers)
			}
			p.code("rule", name(r.From), "->", name(r.To), cond, timers)
		}
		last = r.EndPos.Line
	}
	comments(it.EndPos.Offset - 1)
	p.displacedBlank = saved
	p.close()
}
