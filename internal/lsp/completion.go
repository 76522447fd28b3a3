package lsp

import (
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.lsp.dev/protocol"

	"github.com/fsmgen/fsmgen/dsl"
)

// itemKeywords are the words that start a declaration in a machine block,
// as the grammar in the dsl package spells them.
var itemKeywords = []string{"type", "version", "package", "cancel", "initial", "state", "final", "history", "event", "guard", "action", "upgrade"}

// lineToken matches the tokens of a line's text before the cursor, well
// enough to tell what may come next: an arrow, a string, a comment, a
// word or number, or one other character.
var lineToken = regexp.MustCompile(`->|"(?:\\.|[^"\\])*"?|//.*|[A-Za-z0-9_.µ]+|\S`)

// partialWord matches the word being typed at the end of a line's text.
var partialWord = regexp.MustCompile(`[A-Za-z0-9_]*$`)

// completion offers what may be written at the cursor, read from the
// tokens before it on its line: state names after -> (or in a list of
// source states), event names after on, cancel, else or a timer's
// duration, guard names and In after when, unless or !, state names in
// In(, retry presets after retry, and keywords where a declaration, an
// option or a clause goes.
// The word being typed is left to the editor to filter by.
func (d *document) completion(p *protocol.CompletionParams) (*protocol.CompletionList, error) {
	line, _, offset := d.dslPos(p.Position)
	prefix := d.text[d.lines[line-1]:offset]
	prefix = prefix[:len(prefix)-len(partialWord.FindString(prefix))]
	toks := lineToken.FindAllString(prefix, -1)
	if slices.ContainsFunc(toks, func(t string) bool { return strings.HasPrefix(t, "//") }) {
		return &protocol.CompletionList{Items: []protocol.CompletionItem{}}, nil
	}
	m := d.machineAt(line)
	var items []protocol.CompletionItem
	switch {
	case m == nil:
		items = keywords("machine")
	default:
		if old := d.upgradeFrom(m, line); old != nil {
			items = d.completeUpgrade(m, old, toks)
		} else {
			items = d.complete(m, toks)
		}
	}
	if items == nil {
		items = []protocol.CompletionItem{}
	}
	return &protocol.CompletionList{Items: items}, nil
}

// machineAt returns the machine block that holds line, nil when none
// does.
func (d *document) machineAt(line int) *dsl.MachineDecl {
	for _, m := range d.file.Machines {
		if m.Pos.Line < line && line <= m.EndPos.Line {
			return m
		}
	}
	return nil
}

func (d *document) complete(m *dsl.MachineDecl, toks []string) []protocol.CompletionItem {
	n := len(toks)
	if n == 0 {
		return append(keywords(itemKeywords...), d.names(m, dsl.StateSymbol)...)
	}
	last, first := toks[n-1], toks[0]
	row := slices.Contains(toks, "->")
	switch {
	case last == "->":
		return d.names(m, dsl.StateSymbol)
	case last == "on" && row:
		return append(d.names(m, dsl.EventSymbol), keywords("done")...)
	case last == "on" || last == "cancel" || last == "else" || n >= 2 && toks[n-2] == "after":
		return d.names(m, dsl.EventSymbol)
	case last == "entry" || last == "exit":
		return d.names(m, dsl.ActionSymbol)
	case last == "deep":
		return keywords("history")
	case last == "when" || last == "unless" || last == "!" && n >= 2 && toks[n-2] == "when":
		return append(d.names(m, dsl.GuardSymbol), keywords("In")...)
	case last == "(" && n >= 2 && toks[n-2] == "In":
		return d.names(m, dsl.StateSymbol)
	case last == "retry":
		return d.presets()
	case last == "," && !row && !slices.Contains(itemKeywords, first):
		return d.names(m, dsl.StateSymbol)
	case row:
		switch {
		case toks[n-2] == "->":
			return keywords("on", "when", "unless", "internal")
		case n >= 2 && toks[n-2] == "on":
			return keywords("when", "unless", "outcome", "internal")
		case n >= 3 && (toks[n-2] == "when" || toks[n-2] == "unless" || toks[n-2] == "!"), last == ")":
			return keywords("outcome", "internal")
		}
	case first == "final":
		switch n {
		case 2:
			return keywords("succeeded", "failed", "cancelled")
		case 3:
			return keywords("outcome")
		}
	case (first == "initial" || first == "state") && n >= 2:
		opts := []string{"parallel", "wait", "retry", "after", "entry", "exit"}
		if slices.Contains(toks, "retry") {
			opts = append(opts, "backoff", "factor", "max", "jitter", "nonretryable", "else")
		}
		return keywords(opts...)
	}
	return nil
}

// upgradeOpen matches the line that opens an upgrade block, and its version.
var upgradeOpen = regexp.MustCompile(`^\s*upgrade\s+from\s+([0-9]+)\s*\{`)

// upgradeFrom returns the older version that the upgrade block holding
// line upgrades from (a machine without names when the file declares no
// such version), nil when line is in no upgrade block: no line above it
// in m opens one, or a "}" comes first.
func (d *document) upgradeFrom(m *dsl.MachineDecl, line int) *dsl.MachineDecl {
	for l := line - 1; l >= m.Pos.Line; l-- {
		text := d.line(l - 1)
		if i := strings.Index(text, "//"); i >= 0 {
			text = text[:i]
		}
		if g := upgradeOpen.FindStringSubmatch(text); g != nil {
			n, err := strconv.Atoi(g[1])
			if err != nil {
				return nil
			}
			if old := dsl.Version(d.file, m, n); old != nil {
				return old
			}
			return &dsl.MachineDecl{} // a block, of a version not declared
		}
		if strings.Contains(text, "}") {
			return nil
		}
	}
	return nil
}

// completeUpgrade offers what an upgrade block's rules may name: the older
// version's states first on a line, this version's after ->, the older
// version's events after when or unless, this version's after default,
// and the keywords of a rule.
func (d *document) completeUpgrade(m, old *dsl.MachineDecl, toks []string) []protocol.CompletionItem {
	n := len(toks)
	if n == 0 {
		return append(d.names(old, dsl.StateSymbol), keywords("default")...)
	}
	last := toks[n-1]
	switch {
	case last == "->":
		return d.names(m, dsl.StateSymbol)
	case last == "when" || last == "unless":
		return d.names(old, dsl.EventSymbol)
	case last == "default":
		return d.names(m, dsl.EventSymbol)
	case last == "timers":
		return keywords("keep", "restart")
	case n == 1:
		return keywords("->", "drain")
	case n == 3 && toks[1] == "->":
		return keywords("when", "unless", "timers")
	case n == 5 && toks[1] == "->":
		return keywords("timers")
	}
	return nil
}

func keywords(words ...string) []protocol.CompletionItem {
	out := make([]protocol.CompletionItem, len(words))
	for i, w := range words {
		out[i] = protocol.CompletionItem{Label: w, Kind: protocol.CompletionItemKindKeyword}
	}
	return out
}

// names returns the names of kind that machine m declares, in
// declaration order.
func (d *document) names(m *dsl.MachineDecl, kind dsl.SymbolKind) []protocol.CompletionItem {
	out := []protocol.CompletionItem{}
	seen := map[string]bool{}
	for _, r := range dsl.Refs(d.file) {
		if !r.Decl || r.Machine != m || r.Kind != kind || seen[r.Name] {
			continue
		}
		seen[r.Name] = true
		item := protocol.CompletionItem{Label: r.Name}
		switch kind {
		case dsl.StateSymbol:
			item.Kind, item.Detail = protocol.CompletionItemKindEnumMember, refDetail(r)
		case dsl.EventSymbol:
			item.Kind, item.Detail = protocol.CompletionItemKindEvent, eventDetail(r.Item.Event)
		case dsl.GuardSymbol:
			item.Kind, item.Detail = protocol.CompletionItemKindFunction, "guard"
		case dsl.ActionSymbol:
			item.Kind, item.Detail = protocol.CompletionItemKindFunction, "action"
		}
		if len(r.Doc) > 0 {
			item.Documentation = strings.Join(r.Doc, "\n")
		}
		out = append(out, item)
	}
	return out
}

func (d *document) presets() []protocol.CompletionItem {
	out := make([]protocol.CompletionItem, len(dsl.RetryPresets))
	for i, p := range dsl.RetryPresets {
		out[i] = protocol.CompletionItem{Label: p, Kind: protocol.CompletionItemKindConstant, Detail: "retry policy"}
	}
	return out
}
