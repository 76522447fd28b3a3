package dsl

import (
	"slices"
	"strings"

	"github.com/alecthomas/participle/v2/lexer"
)

// SymbolKind tells what a name in a .fsm file stands for.
type SymbolKind int

// The kinds of names a machine declares and refers to.
const (
	// StateSymbol names a state, at any depth, or a history
	// pseudostate: they share one name space.
	StateSymbol SymbolKind = iota + 1
	EventSymbol
	GuardSymbol
	// ActionSymbol names an entry or exit action.
	ActionSymbol
)

// String returns "state", "event", "guard" or "action".
func (k SymbolKind) String() string {
	switch k {
	case StateSymbol:
		return "state"
	case EventSymbol:
		return "event"
	case GuardSymbol:
		return "guard"
	case ActionSymbol:
		return "action"
	}
	return "symbol"
}

// Ref is one occurrence of a state, event, guard or action name in a
// file: its declaration, or a use of it (in a transition row, a timer, a
// retry policy's else clause, an entry or exit option or the cancel
// declaration).
type Ref struct {
	Kind SymbolKind
	Name string
	// Machine is the machine block the name occurs in; names are scoped by
	// machine.
	Machine *MachineDecl
	// Item is the declaration or row the name occurs in: for a name
	// inside a composite state's block, the top-level declaration of
	// that composite.
	Item *Item
	// State is, for the declaration of a state, that state's own
	// declaration (also inside a block), and History that of a history
	// pseudostate; Doc is the declaration's doc comment.
	State   *StateDecl
	History *HistoryDecl
	Doc     []string
	// Pos is the position of the name's first character and End that of
	// the character after its last.
	Pos, End lexer.Position
	// Decl reports whether the occurrence declares the name.
	Decl bool
}

// Same reports whether r and o name the same symbol: the same kind of
// name, spelled the same, in the same machine.
func (r Ref) Same(o Ref) bool {
	return r.Kind == o.Kind && r.Name == o.Name && r.Machine == o.Machine
}

// Refs returns every occurrence of a state, event or guard name in f, in
// source order. It works on any File, also one from ParsePartial, and
// resolves nothing: a use of a name that is not declared is listed too.
// The names of an upgrade block that belong to the older version (a rule's
// OLD state, its when or unless event) are refs of that version's machine
// when the file declares it, and are left out when it does not.
func Refs(f *File) []Ref {
	var out []Ref
	versions := declVersions(f)
	for _, md := range f.Machines {
		for _, it := range md.Items {
			addIn := func(m *MachineDecl, kind SymbolKind, n *Name, decl bool) bool {
				if m == nil || n == nil || n.Value == "" {
					return false
				}
				end := n.Pos
				end.Advance(n.Value)
				out = append(out, Ref{Kind: kind, Name: n.Value, Machine: m, Item: it, Pos: n.Pos, End: end, Decl: decl})
				return true
			}
			add := func(kind SymbolKind, name string, pos lexer.Position, decl bool) {
				addIn(md, kind, &Name{Pos: pos, Value: name}, decl)
			}
			addName := func(kind SymbolKind, n *Name, decl bool) bool { return addIn(md, kind, n, decl) }
			// declare adds the declaration of n with its doc comment.
			declare := func(kind SymbolKind, n *Name, doc []string) *Ref {
				if !addName(kind, n, true) {
					return &Ref{}
				}
				r := &out[len(out)-1]
				r.Doc = doc
				return r
			}
			switch {
			case it.Upgrade != nil:
				var old *MachineDecl
				if n, err := parseCount(it.Upgrade.From.Value); err == nil {
					old = versions[typeVersion{declType(md), n}]
				}
				for _, r := range it.Upgrade.Rules {
					switch {
					case r.Default != nil:
						addName(EventSymbol, r.Default.Event, false)
					default:
						addIn(old, StateSymbol, r.From, false)
						addName(StateSymbol, r.To, false)
						if r.Cond != nil {
							addIn(old, EventSymbol, r.Cond.Event, false)
						}
					}
				}
			case it.Cancel != nil:
				addName(EventSymbol, it.Cancel.Event, false)
			case it.State != nil:
				var state func(sd *StateDecl, doc []string)
				state = func(sd *StateDecl, doc []string) {
					declare(StateSymbol, sd.Name, doc).State = sd
					for _, o := range sd.Options {
						switch {
						case o.Retry != nil:
							addName(EventSymbol, o.Retry.Else, false)
						case o.Timer != nil:
							addName(EventSymbol, o.Timer.FieldOf, false)
							addName(EventSymbol, o.Timer.Event, false)
						case o.Entry != nil:
							addName(ActionSymbol, o.Entry, false)
						case o.Exit != nil:
							addName(ActionSymbol, o.Exit, false)
						}
					}
					for _, c := range sd.Children {
						switch {
						case c.State != nil:
							state(c.State, c.Doc)
						case c.History != nil:
							declare(StateSymbol, c.History.Name, c.Doc).History = c.History
						}
					}
				}
				state(it.State, it.Doc)
			case it.History != nil:
				declare(StateSymbol, it.History.Name, it.Doc).History = it.History
			case it.Action != nil:
				declare(ActionSymbol, it.Action.Name, it.Doc)
			case it.Event != nil:
				declare(EventSymbol, it.Event.Name, it.Doc)
			case it.Guard != nil:
				declare(GuardSymbol, it.Guard.Name, it.Doc)
			case it.Transition != nil:
				t := it.Transition
				for _, ref := range t.From {
					if !ref.Star {
						add(StateSymbol, ref.Name, ref.Pos, false)
					}
				}
				addName(StateSymbol, t.To, false)
				for _, e := range t.Events() {
					if e.Value != "done" {
						addName(EventSymbol, e, false)
					}
				}
				if t.Guard != nil {
					addName(GuardSymbol, t.Guard.Name, false)
					addName(StateSymbol, t.Guard.In, false)
				}
			}
		}
	}
	slices.SortStableFunc(out, func(a, b Ref) int { return a.Pos.Offset - b.Pos.Offset })
	return out
}

// Version returns the machine of f that has the persisted type of md and
// the given version, as an upgrade block of md names it ("upgrade from
// 1"), and nil when f declares none.
func Version(f *File, md *MachineDecl, version int) *MachineDecl {
	return declVersions(f)[typeVersion{declType(md), version}]
}

// declVersions maps each machine of f to its persisted type and version,
// as the checker reads them (the first type and version declared, the
// defaults otherwise); the first machine of each wins.
func declVersions(f *File) map[typeVersion]*MachineDecl {
	out := map[typeVersion]*MachineDecl{}
	for _, md := range f.Machines {
		version := 1
		for _, it := range md.Items {
			if it.Version != nil {
				if n, err := parseCount(it.Version.Number); err == nil {
					version = n
				}
				break
			}
		}
		k := typeVersion{declType(md), version}
		if out[k] == nil {
			out[k] = md
		}
	}
	return out
}

// declType is the persisted type name of a machine as declared: its type
// declaration, else the snake_case of its name.
func declType(md *MachineDecl) string {
	for _, it := range md.Items {
		if it.Type != nil {
			if v, err := unquote(it.Type.Name); err == nil {
				return v
			}
			break
		}
	}
	return snakeCase(md.Name)
}

// RefAt returns the occurrence of a name in f that covers line:col, as
// positions count them (1-based, columns in characters). A position just
// after a name's last character counts as on it, as an editor's cursor at
// the end of a word does.
func RefAt(f *File, line, col int) (Ref, bool) {
	for _, r := range Refs(f) {
		if r.Pos.Line == line && r.Pos.Column <= col && col <= r.End.Column {
			return r, true
		}
	}
	return Ref{}, false
}

// Decl returns the declaration of the symbol r names, and false when its
// machine declares none.
func Decl(f *File, r Ref) (Ref, bool) {
	for _, d := range Refs(f) {
		if d.Decl && d.Same(r) {
			return d, true
		}
	}
	return Ref{}, false
}

// Suggestion returns the name that d proposes with "did you mean", or ""
// when it proposes none. The name replaces the text that starts at d.Pos
// and ends at d.End.
func (d Diagnostic) Suggestion() string {
	const hint = "; did you mean "
	i := strings.LastIndex(d.Message, hint)
	if i < 0 {
		return ""
	}
	rest := d.Message[i+len(hint):]
	j := strings.IndexByte(rest, '?')
	if j < 0 {
		return ""
	}
	return rest[:j]
}

// End returns the position just after the text that d is about, in src,
// the source d was reported for: the token at d.Pos, with a dotted name
// (time.Duraton) taken whole. It is d.Pos when nothing can be read there
// (the end of the file), and one character past d.Pos for a character the
// lexer cannot read.
func (d Diagnostic) End(src []byte) lexer.Position {
	src = trimBOM(src)
	start := d.Pos
	if start.Offset < 0 || start.Offset >= len(src) {
		return start
	}
	lx, err := fsmLexer.LexString(start.Filename, string(src[start.Offset:]))
	if err != nil {
		return start
	}
	end := start
	first := true
	for {
		tok, err := lx.Next()
		if err != nil || tok.EOF() {
			break
		}
		if first {
			if tok.Type == spaceToken || tok.Type == commentToken {
				return start
			}
			end.Advance(tok.Value)
			first = false
			continue
		}
		// A "." and a name right after the token extend it.
		if !isPunct(tok, ".") || tok.Pos.Offset+start.Offset != end.Offset {
			break
		}
		name, err := lx.Next()
		if err != nil || name.Type != identToken || name.Pos.Offset+start.Offset != end.Offset+1 {
			break
		}
		end.Advance("." + name.Value)
	}
	if first {
		// Not a token: one character.
		r := []rune(string(src[start.Offset:min(len(src), start.Offset+4)]))
		if len(r) > 0 && r[0] != '\n' {
			end.Advance(string(r[0]))
		}
	}
	return end
}

// trimBOM returns src without a leading byte order mark, as Parse reads it.
func trimBOM(src []byte) []byte {
	if len(src) >= 3 && src[0] == 0xEF && src[1] == 0xBB && src[2] == 0xBF {
		return src[3:]
	}
	return src
}
