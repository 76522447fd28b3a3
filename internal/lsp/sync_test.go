package lsp

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.lsp.dev/protocol"
)

// machineOfStates is a machine of n states in a chain, with an event per
// state: a file the checker takes some time over.
func machineOfStates(n int) string {
	var b strings.Builder
	b.WriteString("machine Big {\n    initial S0\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "    state S%d\n", i)
	}
	fmt.Fprintf(&b, "    final S%d succeeded\n", n)
	for i := range n {
		fmt.Fprintf(&b, "    event E%d\n", i)
	}
	for i := range n {
		fmt.Fprintf(&b, "    S%d -> S%d on E%d\n", i, i+1, i)
	}
	b.WriteString("}\n")
	return b.String()
}

// Twenty changes sent back to back, as an editor sends keystrokes, are
// each applied, but only the last version is checked and published.
func TestBackToBackChangesPublishTheLastVersionOnly(t *testing.T) {
	t.Parallel()
	c := startServer(t)
	c.initialize()
	const uri = protocol.DocumentURI("file:///work/big.fsm")
	text := machineOfStates(200)
	if diags := c.open(uri, text); len(diags) != 0 {
		t.Fatalf("the 200-state machine has diagnostics: %+v", diags)
	}
	// Type "    event Typed" on a new line before the closing brace, one
	// character a change, incrementally; all the frames in one write.
	lines := strings.Count(text, "\n")
	typed := "    event Typed\n"
	var frames bytes.Buffer
	w := &writer{out: &frames}
	for i, ch := range typed {
		p := pos(uint32(lines-1), uint32(i))
		if err := w.notify(protocol.MethodTextDocumentDidChange, &didChangeParams{
			TextDocument:   protocol.VersionedTextDocumentIdentifier{TextDocumentIdentifier: protocol.TextDocumentIdentifier{URI: uri}, Version: int32(2 + i)},
			ContentChanges: []contentChange{{Range: &protocol.Range{Start: p, End: p}, Text: string(ch)}},
		}); err != nil {
			t.Fatal(err)
		}
	}
	// ... and four more that break and mend the file, to make twenty.
	last := int32(1 + len(typed))
	for _, fix := range []string{"X", "", "Y", ""} {
		last++
		p := pos(uint32(lines-1), 0)
		rng := protocol.Range{Start: p, End: p}
		if fix == "" {
			rng.End = pos(uint32(lines-1), 1)
		}
		if err := w.notify(protocol.MethodTextDocumentDidChange, &didChangeParams{
			TextDocument:   protocol.VersionedTextDocumentIdentifier{TextDocumentIdentifier: protocol.TextDocumentIdentifier{URI: uri}, Version: last},
			ContentChanges: []contentChange{{Range: &rng, Text: fix}},
		}); err != nil {
			t.Fatal(err)
		}
	}
	if last != 21 {
		t.Fatalf("sent versions 2..%d, want twenty changes", last)
	}
	start := time.Now()
	if _, err := c.raw.Write(frames.Bytes()); err != nil {
		t.Fatal(err)
	}
	// The symbols request is answered after every change before it: the
	// diagnostics of each version that was published have arrived by then.
	var symbols []protocol.DocumentSymbol
	c.mustCall(protocol.MethodTextDocumentDocumentSymbol, &protocol.DocumentSymbolParams{TextDocument: protocol.TextDocumentIdentifier{URI: uri}}, &symbols)
	var published []uint32
	var messages []string
	for len(c.diags) > 0 {
		p := <-c.diags
		published = append(published, p.Version)
		for _, d := range p.Diagnostics {
			messages = append(messages, fmt.Sprintf("%d:%d %s", d.Range.Start.Line, d.Range.Start.Character, d.Message))
		}
	}
	t.Logf("twenty changes of a 200-state file: the last version's diagnostics after %v", time.Since(start))
	diff(t, "versions published", []uint32{21}, published)
	diff(t, "diagnostics of version 21", []string{fmt.Sprintf("%d:10 event Typed is never used", lines-1)}, messages)
	if n := len(symbols[0].Children); n != 201+200+1 {
		t.Errorf("the last version has %d symbols, want 402 (with the event typed)", n)
	}
}

// Incremental changes give the text the same edits made on the whole text
// do, positions counted in UTF-16 code units as the protocol says.
func TestIncrementalChangesEditTheText(t *testing.T) {
	t.Parallel()
	const before = "machine Café {\n    // 🚀 ünïcödé\n    initial A\n}\n"
	tests := []struct {
		name    string
		changes []contentChange
		want    string
	}{
		{"insert at the start", []contentChange{{Range: &protocol.Range{Start: pos(0, 0), End: pos(0, 0)}, Text: "// x\n"}},
			"// x\nmachine Café {\n    // 🚀 ünïcödé\n    initial A\n}\n"},
		{"replace after an é (one code unit)", []contentChange{{Range: &protocol.Range{Start: pos(0, 12), End: pos(0, 13)}, Text: "("}},
			"machine Café({\n    // 🚀 ünïcödé\n    initial A\n}\n"},
		{"replace the é", []contentChange{{Range: &protocol.Range{Start: pos(0, 11), End: pos(0, 12)}, Text: "e"}},
			"machine Cafe {\n    // 🚀 ünïcödé\n    initial A\n}\n"},
		{"after the rocket (two code units)", []contentChange{{Range: &protocol.Range{Start: pos(1, 9), End: pos(1, 9)}, Text: "!"}},
			"machine Café {\n    // 🚀! ünïcödé\n    initial A\n}\n"},
		{"delete the rocket", []contentChange{{Range: &protocol.Range{Start: pos(1, 7), End: pos(1, 10)}, Text: ""}},
			"machine Café {\n    // ünïcödé\n    initial A\n}\n"},
		{"across lines", []contentChange{{Range: &protocol.Range{Start: pos(1, 10), End: pos(2, 4)}, Text: "x\n    "}},
			"machine Café {\n    // 🚀 x\n    initial A\n}\n"},
		{"past the end of a line", []contentChange{{Range: &protocol.Range{Start: pos(0, 99), End: pos(0, 99)}, Text: " // ß"}},
			"machine Café { // ß\n    // 🚀 ünïcödé\n    initial A\n}\n"},
		{"past the last line", []contentChange{{Range: &protocol.Range{Start: pos(9, 0), End: pos(9, 0)}, Text: "// end\n"}},
			"machine Café {\n    // 🚀 ünïcödé\n    initial A\n}\n// end\n"},
		{"in turn, each on the text before it", []contentChange{
			{Range: &protocol.Range{Start: pos(0, 8), End: pos(0, 12)}, Text: "Naïve"},
			{Range: &protocol.Range{Start: pos(0, 13), End: pos(0, 13)}, Text: "🚀"},
			{Range: &protocol.Range{Start: pos(0, 15), End: pos(0, 15)}, Text: "é"},
		}, "machine Naïve🚀é {\n    // 🚀 ünïcödé\n    initial A\n}\n"},
		{"whole text, then an edit", []contentChange{{Text: "machine M {\n}\n"}, {Range: &protocol.Range{Start: pos(1, 0), End: pos(1, 0)}, Text: "    initial Ü\n"}},
			"machine M {\n    initial Ü\n}\n"},
	}
	for _, tt := range tests {
		d := newDocument("file:///x.fsm", 1, before)
		diff(t, tt.name, tt.want, d.apply(tt.changes))
	}

	// Over the protocol, the same edits give the same document as the
	// whole texts: the same symbols and diagnostics.
	c := startServer(t)
	c.initialize()
	const inc, full = protocol.DocumentURI("file:///work/inc.fsm"), protocol.DocumentURI("file:///work/full.fsm")
	c.open(inc, before)
	c.open(full, before)
	for i, tt := range tests {
		c.notify(protocol.MethodTextDocumentDidOpen, &protocol.DidOpenTextDocumentParams{
			TextDocument: protocol.TextDocumentItem{URI: inc, LanguageID: "fsm", Version: int32(10 * (i + 1)), Text: before}})
		c.waitDiagnostics(inc, uint32(10*(i+1)))
		c.notify(protocol.MethodTextDocumentDidChange, &didChangeParams{
			TextDocument:   protocol.VersionedTextDocumentIdentifier{TextDocumentIdentifier: protocol.TextDocumentIdentifier{URI: inc}, Version: int32(10*(i+1) + 1)},
			ContentChanges: tt.changes})
		got := c.waitDiagnostics(inc, uint32(10*(i+1)+1))
		want := c.change(full, int32(10*(i+1)+1), tt.want)
		diff(t, tt.name+": diagnostics", want, got)
		var a, b []protocol.DocumentSymbol
		c.mustCall(protocol.MethodTextDocumentDocumentSymbol, &protocol.DocumentSymbolParams{TextDocument: protocol.TextDocumentIdentifier{URI: inc}}, &a)
		c.mustCall(protocol.MethodTextDocumentDocumentSymbol, &protocol.DocumentSymbolParams{TextDocument: protocol.TextDocumentIdentifier{URI: full}}, &b)
		diff(t, tt.name+": symbols", b, a)
	}
}
