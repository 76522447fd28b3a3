package lsp

import (
	"unicode/utf16"
	"unicode/utf8"

	"github.com/alecthomas/participle/v2/lexer"
	"go.lsp.dev/protocol"
)

// Positions. The dsl counts lines and columns from 1, columns in
// characters (Unicode code points), after a leading byte order mark; the
// protocol counts lines and characters from 0, characters in UTF-16 code
// units, with the byte order mark as one of them. Every conversion goes
// through the document's text.

// line returns the text of line i (0-based) without its line feed.
func (d *document) line(i int) string {
	if i < 0 || i >= len(d.lines) {
		return ""
	}
	end := len(d.text)
	if i+1 < len(d.lines) {
		end = d.lines[i+1] - 1
	}
	return d.text[d.lines[i]:end]
}

// lspPos converts a dsl position to the protocol's.
func (d *document) lspPos(p lexer.Position) protocol.Position {
	line := min(max(p.Line-1, 0), len(d.lines)-1)
	s := d.line(line)
	units := 0
	if line == 0 && d.bom {
		s = s[len("\uFEFF"):]
		units = 1
	}
	n := p.Column - 1
	for _, r := range s {
		if n <= 0 {
			break
		}
		units += utf16Len(r)
		n--
	}
	return protocol.Position{Line: uint32(line), Character: uint32(units)}
}

// lspRange converts a dsl span to the protocol's.
func (d *document) lspRange(start, end lexer.Position) protocol.Range {
	return protocol.Range{Start: d.lspPos(start), End: d.lspPos(end)}
}

// dslPos converts a protocol position to the dsl's line and column, and
// to the byte offset in the document's text. A character past the end of
// its line stands for the end of the line.
func (d *document) dslPos(p protocol.Position) (line, col, offset int) {
	i := int(p.Line)
	if i >= len(d.lines) {
		i = len(d.lines) - 1
		p.Character = 1 << 30
	}
	s := d.line(i)
	units, col, k := 0, 1, 0
	for k < len(s) && units < int(p.Character) {
		r, size := utf8.DecodeRuneInString(s[k:])
		units += utf16Len(r)
		k += size
		if !(i == 0 && k == len("\uFEFF") && d.bom) {
			col++
		}
	}
	return i + 1, col, d.lines[i] + k
}

func utf16Len(r rune) int {
	if n := utf16.RuneLen(r); n > 0 {
		return n
	}
	return 1
}

// endPos is the protocol position of the end of the document.
func (d *document) endPos() protocol.Position {
	last := len(d.lines) - 1
	units := 0
	for _, r := range d.line(last) {
		units += utf16Len(r)
	}
	return protocol.Position{Line: uint32(last), Character: uint32(units)}
}

// before reports whether protocol position a comes before b.
func before(a, b protocol.Position) bool {
	return a.Line < b.Line || a.Line == b.Line && a.Character < b.Character
}

// overlaps reports whether two ranges share a position, ends included.
func overlaps(a, b protocol.Range) bool {
	return !before(a.End, b.Start) && !before(b.End, a.Start)
}
