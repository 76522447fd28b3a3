package lsp

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"go.lsp.dev/protocol"

	"github.com/fsmgen/fsmgen/dsl"
)

// lspDiagnostics returns the document's diagnostics in the protocol's
// terms, in the order fsmgen check prints them.
func (d *document) lspDiagnostics() []protocol.Diagnostic {
	out := []protocol.Diagnostic{}
	for _, dg := range d.diags {
		out = append(out, d.lspDiagnostic(dg))
	}
	return out
}

func (d *document) lspDiagnostic(dg dsl.Diagnostic) protocol.Diagnostic {
	sev := protocol.DiagnosticSeverityError
	if dg.Severity == dsl.Warning {
		sev = protocol.DiagnosticSeverityWarning
	}
	return protocol.Diagnostic{
		Range:    d.lspRange(dg.Pos, dg.End(d.src)),
		Severity: sev,
		Source:   "fsmgen",
		Message:  dg.Message,
	}
}

// refAt returns the name under a protocol position.
func (d *document) refAt(p protocol.Position) (dsl.Ref, bool) {
	line, col, _ := d.dslPos(p)
	return dsl.RefAt(d.file, line, col)
}

// declAt returns the name under a protocol position and its declaration.
func (d *document) declAt(p protocol.Position) (ref, decl dsl.Ref, ok bool) {
	if ref, ok = d.refAt(p); !ok {
		return ref, decl, false
	}
	decl, ok = dsl.Decl(d.file, ref)
	return ref, decl, ok
}

// sameRefs returns every occurrence of the symbol r names, in source
// order.
func (d *document) sameRefs(r dsl.Ref) []dsl.Ref {
	var out []dsl.Ref
	for _, o := range dsl.Refs(d.file) {
		if o.Same(r) {
			out = append(out, o)
		}
	}
	return out
}

func (d *document) location(r dsl.Ref) protocol.Location {
	return protocol.Location{URI: d.uri, Range: d.lspRange(r.Pos, r.End)}
}

func (d *document) hover(p *protocol.HoverParams) (*protocol.Hover, error) {
	ref, decl, ok := d.declAt(p.Position)
	if !ok {
		return nil, nil
	}
	var text string
	switch decl.Kind {
	case dsl.StateSymbol:
		text = stateHover(decl)
	case dsl.EventSymbol:
		text = eventHover(decl.Item)
	case dsl.GuardSymbol:
		text = d.guardHover(decl)
	case dsl.ActionSymbol:
		text = "action **" + decl.Name + "**" + docText(decl.Doc) + "\n\nRun when a state that names it in entry or exit is entered or exited, implemented in Go by the generated Actions interface."
	}
	r := d.lspRange(ref.Pos, ref.End)
	return &protocol.Hover{Contents: protocol.MarkupContent{Kind: protocol.Markdown, Value: text}, Range: &r}, nil
}

// docText renders a doc comment as a paragraph, or "" when there is none.
func docText(doc []string) string {
	if len(doc) == 0 {
		return ""
	}
	return "\n\n" + strings.Join(doc, "\n")
}

func stateHover(decl dsl.Ref) string {
	if h := decl.History; h != nil {
		kind, what := "history", "the child of its composite that was active"
		if h.Deep {
			kind, what = "deep history", "the leaf state the run was in"
		}
		return fmt.Sprintf("%s **%s**%s\n\nA row to it enters its composite where the run last left it: %s; the composite's initial state before it was ever left.", kind, decl.Name, docText(decl.Doc), what)
	}
	s := decl.State
	var b strings.Builder
	kind := map[string]string{"initial": "initial state", "state": "state", "final": "final state"}[s.Kind]
	if s.Block {
		kind = map[string]string{"initial": "initial composite state", "state": "composite state", "final": "final state"}[s.Kind]
	}
	fmt.Fprintf(&b, "%s **%s**%s\n", kind, s.Name.Value, docText(decl.Doc))
	var bullets []string
	if s.Kind == "final" {
		if s.Status != nil {
			bullets = append(bullets, "status: "+s.Status.Value)
		}
		if s.Outcome != nil {
			bullets = append(bullets, "outcome: "+s.Outcome.Value)
		}
	} else {
		wait := slices.ContainsFunc(s.Options, func(o *dsl.StateOption) bool { return o.Wait })
		if wait {
			bullets = append(bullets, "waits: the runtime parks a run here until an event or a timer moves it")
		} else {
			bullets = append(bullets, "driven: the runtime calls its handler")
		}
		retry := "retry: none; its handler is tried once"
		for _, o := range s.Options {
			switch {
			case o.Retry != nil:
				retry = "retry: " + retryText(o.Retry)
			case o.Timer != nil && o.Timer.After != nil:
				bullets = append(bullets, fmt.Sprintf("timer: after %s fires %s", o.Timer.After.Value, o.Timer.Event.Value))
			case o.Timer != nil:
				bullets = append(bullets, fmt.Sprintf("timer: after %s.%s (between %s and %s) fires %s", o.Timer.FieldOf.Value, o.Timer.Field.Value, o.Timer.Min.Value, o.Timer.Max.Value, o.Timer.Event.Value))
			}
		}
		if !wait {
			bullets = append(bullets, retry)
		}
	}
	if len(bullets) > 0 {
		b.WriteString("\n")
		for _, l := range bullets {
			b.WriteString("- " + l + "\n")
		}
	}
	return b.String()
}

// retryText describes a retry policy, with the defaults the checker fills
// in for a backoff and factor that are not written.
func retryText(r *dsl.RetryOpt) string {
	var parts []string
	if r.Preset != nil {
		parts = append(parts, "the runtime's "+r.Preset.Value+" policy")
	} else {
		if r.UpTo {
			parts = append(parts, "up to "+r.Attempts.Value+" attempts, as the run's policy says")
		} else {
			parts = append(parts, r.Attempts.Value+" attempts")
		}
		backoff, factor := "1s", "2"
		if r.Backoff != nil {
			backoff = r.Backoff.Value
		}
		if r.Factor != nil {
			factor = r.Factor.Value
		}
		parts = append(parts, "backoff "+backoff, "factor "+factor)
		if r.Max != nil {
			parts = append(parts, "max "+r.Max.Value)
		}
		if r.Jitter != nil {
			parts = append(parts, "jitter "+r.Jitter.Value)
		}
		if len(r.NonRetryable) > 0 {
			codes := make([]string, len(r.NonRetryable))
			for i, c := range r.NonRetryable {
				codes[i] = c.Value
			}
			parts = append(parts, "non-retryable "+strings.Join(codes, ", "))
		}
	}
	s := strings.Join(parts, ", ")
	if r.Else != nil {
		s += "; when retries run out, " + r.Else.Value + " fires"
	}
	return s
}

func eventHover(it *dsl.Item) string {
	e := it.Event
	var b strings.Builder
	external := ""
	if e.External {
		external = " (external: callers may fire it too)"
	}
	fmt.Fprintf(&b, "event **%s**%s%s\n\n", e.Name.Value, external, docText(it.Doc))
	if len(e.Fields) == 0 {
		b.WriteString("No payload.\n")
		return b.String()
	}
	b.WriteString("Fields:\n")
	for _, f := range e.Fields {
		fmt.Fprintf(&b, "- `%s` %s\n", f.Name.Value, typeText(f.Type))
	}
	return b.String()
}

func typeText(t *dsl.TypeExpr) string {
	s := ""
	if t.Slice {
		s = "[]"
	}
	if t.Path != nil {
		s += t.Path.Value + "."
	}
	s += t.Name
	if t.Sel != "" {
		s += "." + t.Sel
	}
	return s
}

func (d *document) guardHover(decl dsl.Ref) string {
	var b strings.Builder
	fmt.Fprintf(&b, "guard **%s**%s\n\n", decl.Name, docText(decl.Item.Doc))
	var rows []string
	for _, r := range d.sameRefs(decl) {
		if !r.Decl && r.Item.Transition != nil {
			rows = append(rows, fmt.Sprintf("- line %d: `%s`\n", r.Pos.Line, rowText(r.Item.Transition)))
		}
	}
	if len(rows) == 0 {
		b.WriteString("No transition uses it.\n")
		return b.String()
	}
	b.WriteString("Used by:\n")
	for _, r := range rows {
		b.WriteString(r)
	}
	return b.String()
}

// rowText renders a transition row on one line, as fsmgen fmt writes it
// but without alignment.
func rowText(t *dsl.TransitionDecl) string {
	froms := make([]string, len(t.From))
	for i, f := range t.From {
		froms[i] = f.Name
		if f.Star {
			froms[i] = "*"
		}
	}
	s := strings.Join(froms, ", ") + " -> " + t.To.Value
	if evs := t.Events(); len(evs) > 0 {
		names := make([]string, len(evs))
		for i, e := range evs {
			names[i] = e.Value
		}
		s += " on " + strings.Join(names, ", ")
	}
	if g := t.Guard; g != nil {
		if g.Unless {
			s += " unless "
		} else {
			s += " when "
		}
		if g.Not {
			s += "!"
		}
		s += g.Name.Value
	}
	if t.Outcome != nil {
		s += " outcome " + t.Outcome.Value
	}
	if t.Internal {
		s += " internal"
	}
	return s
}

func (d *document) definition(p *protocol.DefinitionParams) ([]protocol.Location, error) {
	_, decl, ok := d.declAt(p.Position)
	if !ok {
		return nil, nil
	}
	return []protocol.Location{d.location(decl)}, nil
}

func (d *document) references(p *protocol.ReferenceParams) ([]protocol.Location, error) {
	ref, ok := d.refAt(p.Position)
	if !ok {
		return nil, nil
	}
	out := []protocol.Location{}
	for _, r := range d.sameRefs(ref) {
		if !r.Decl || p.Context.IncludeDeclaration {
			out = append(out, d.location(r))
		}
	}
	return out, nil
}

func (d *document) prepareRename(p *protocol.PrepareRenameParams) (*protocol.Range, error) {
	ref, ok := d.refAt(p.Position)
	if !ok {
		return nil, nil
	}
	r := d.lspRange(ref.Pos, ref.End)
	return &r, nil
}

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (d *document) rename(p *protocol.RenameParams) (*protocol.WorkspaceEdit, error) {
	ref, ok := d.refAt(p.Position)
	if !ok {
		return nil, rpcError(CodeRequestFailed, "there is no state, event or guard to rename here")
	}
	name := p.NewName
	if !identRE.MatchString(name) {
		return nil, rpcError(CodeRequestFailed, fmt.Sprintf("cannot rename %s %s to %q: a name is a letter or _ followed by letters, digits and _", ref.Kind, ref.Name, name))
	}
	refs := d.sameRefs(ref)
	edits := make([]protocol.TextEdit, len(refs))
	for i, r := range refs {
		edits[i] = protocol.TextEdit{Range: d.lspRange(r.Pos, r.End), NewText: name}
	}
	if reason := d.renameClash(ref, refs, name); reason != "" {
		return nil, rpcError(CodeRequestFailed, fmt.Sprintf("cannot rename %s %s to %s: %s", ref.Kind, ref.Name, name, reason))
	}
	return &protocol.WorkspaceEdit{Changes: map[protocol.DocumentURI][]protocol.TextEdit{d.uri: edits}}, nil
}

// renameClash checks the document as the rename would leave it, and
// returns the first error of the checker that the rename brings in, such
// as a name declared twice or two names that become one Go identifier;
// "" when it brings in none.
func (d *document) renameClash(ref dsl.Ref, refs []dsl.Ref, name string) string {
	if name == ref.Name {
		return ""
	}
	var b bytes.Buffer
	last := 0
	for _, r := range refs {
		b.Write(d.src[last:r.Pos.Offset])
		b.WriteString(name)
		last = r.End.Offset
	}
	b.Write(d.src[last:])
	fname := filename(d.uri)
	word := regexp.MustCompile(`\b` + regexp.QuoteMeta(ref.Name) + `\b`)
	had := map[string]int{}
	for _, dg := range d.diags {
		if dg.Severity == dsl.Error {
			had[word.ReplaceAllLiteralString(dg.Message, name)]++
		}
	}
	_, after := dsl.Load(fname, b.Bytes())
	for _, dg := range after {
		if dg.Severity != dsl.Error {
			continue
		}
		if had[dg.Message] > 0 {
			had[dg.Message]--
			continue
		}
		return dg.Message
	}
	return ""
}

func (d *document) formatting(*protocol.DocumentFormattingParams) ([]protocol.TextEdit, error) {
	out, err := dsl.FormatSource(filename(d.uri), []byte(d.text))
	if err != nil {
		// The file does not parse: its diagnostics say why.
		return nil, nil
	}
	if string(out) == d.text {
		return []protocol.TextEdit{}, nil
	}
	return []protocol.TextEdit{{
		Range:   protocol.Range{End: d.endPos()},
		NewText: string(out),
	}}, nil
}

func (d *document) symbols(*protocol.DocumentSymbolParams) ([]protocol.DocumentSymbol, error) {
	out := []protocol.DocumentSymbol{}
	for _, m := range d.file.Machines {
		namePos := m.Pos
		if m.Pos.Offset < len(d.src) {
			if i := bytes.Index(d.src[m.Pos.Offset:], []byte(m.Name)); i >= 0 {
				namePos.Advance(string(d.src[m.Pos.Offset : m.Pos.Offset+i]))
			}
		}
		nameEnd := namePos
		nameEnd.Advance(m.Name)
		ms := protocol.DocumentSymbol{
			Name:           m.Name,
			Detail:         "machine",
			Kind:           protocol.SymbolKindClass,
			Range:          d.lspRange(m.Pos, m.EndPos),
			SelectionRange: d.lspRange(namePos, nameEnd),
		}
		for _, r := range dsl.Refs(d.file) {
			if !r.Decl || r.Machine != m {
				continue
			}
			sym := protocol.DocumentSymbol{
				Name:           r.Name,
				Range:          d.lspRange(r.Item.Pos, r.Item.EndPos),
				SelectionRange: d.lspRange(r.Pos, r.End),
			}
			switch r.Kind {
			case dsl.StateSymbol:
				sym.Kind, sym.Detail = protocol.SymbolKindEnumMember, refDetail(r)
			case dsl.EventSymbol:
				sym.Kind, sym.Detail = protocol.SymbolKindEvent, eventDetail(r.Item.Event)
			case dsl.GuardSymbol:
				sym.Kind, sym.Detail = protocol.SymbolKindFunction, "guard"
			case dsl.ActionSymbol:
				sym.Kind, sym.Detail = protocol.SymbolKindFunction, "action"
			}
			ms.Children = append(ms.Children, sym)
		}
		out = append(out, ms)
	}
	return out, nil
}

// refDetail is the detail of a state's or history's declaration.
func refDetail(r dsl.Ref) string {
	switch {
	case r.History != nil && r.History.Deep:
		return "deep history"
	case r.History != nil:
		return "history"
	case r.State != nil:
		return stateDetail(r.State)
	}
	return "state"
}

func stateDetail(s *dsl.StateDecl) string {
	if s.Block && slices.ContainsFunc(s.Options, func(o *dsl.StateOption) bool { return o.Parallel }) {
		return s.Kind + ", parallel"
	}
	if s.Block {
		return s.Kind + ", composite"
	}
	switch {
	case s.Kind == "final" && s.Status != nil:
		return "final " + s.Status.Value
	case slices.ContainsFunc(s.Options, func(o *dsl.StateOption) bool { return o.Wait }):
		return s.Kind + ", waits"
	}
	return s.Kind
}

func eventDetail(e *dsl.EventDecl) string {
	var parts []string
	for _, f := range e.Fields {
		parts = append(parts, f.Name.Value+" "+typeText(f.Type))
	}
	s := "event"
	if e.External {
		s += " external"
	}
	if len(parts) > 0 {
		s += " { " + strings.Join(parts, "; ") + " }"
	}
	return s
}

func (d *document) codeActions(p *protocol.CodeActionParams) ([]protocol.CodeAction, error) {
	out := []protocol.CodeAction{}
	for _, dg := range d.diags {
		name := dg.Suggestion()
		if name == "" {
			continue
		}
		end := dg.End(d.src)
		r := d.lspRange(dg.Pos, end)
		if !overlaps(r, p.Range) {
			continue
		}
		was := string(d.src[dg.Pos.Offset:end.Offset])
		out = append(out, protocol.CodeAction{
			Title:       fmt.Sprintf("Change %s to %s", was, name),
			Kind:        protocol.QuickFix,
			Diagnostics: []protocol.Diagnostic{d.lspDiagnostic(dg)},
			IsPreferred: true,
			Edit: &protocol.WorkspaceEdit{Changes: map[protocol.DocumentURI][]protocol.TextEdit{
				d.uri: {{Range: r, NewText: name}},
			}},
		})
	}
	return out, nil
}
