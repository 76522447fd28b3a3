package dsl

import (
	"bytes"

	"github.com/alecthomas/participle/v2/lexer"
)

// ParsePartial parses src as Parse does, but returns a File even when src
// has syntax errors, for editors that work on a file being typed: the
// File then holds every machine block found and, in each, every item that
// parses on its own, in source order; an item with an error is left out.
// The diagnostics are those Parse returns as its ErrorList (nil when src
// parses). The File of a file with errors must not be checked as if it
// were the whole file: a declaration left out makes every use of it look
// unknown.
func ParsePartial(filename string, src []byte) (*File, Diagnostics) {
	f, err := Parse(filename, src)
	if err == nil {
		return f, nil
	}
	var diags Diagnostics
	if l, ok := err.(ErrorList); ok {
		diags = Diagnostics(l)
	} else {
		diags = Diagnostics{{Pos: lexer.Position{Filename: filename, Line: 1, Column: 1}, Message: err.Error()}}
	}
	f = &File{Pos: lexer.Position{Filename: filename, Line: 1, Column: 1}}
	if _, bad := overLimit(filename, src); bad {
		return f, diags
	}
	if _, bad := badBytes(filename, src); bad {
		return f, diags
	}
	src = bytes.TrimPrefix(src, []byte("\uFEFF"))
	toks, _ := lexRecover(filename, src)
	sc := &syntaxScanner{toks: toks}
	sc.file()
	for _, sm := range sc.machines {
		if sm.name == "" {
			continue
		}
		md := &MachineDecl{Pos: sm.pos, EndPos: sm.end, Name: sm.name}
		for _, ch := range sc.chunks[sm.first:sm.last] {
			if items, err := parseChunk(ch); err == nil {
				md.Items = append(md.Items, items...)
			}
		}
		f.Machines = append(f.Machines, md)
	}
	if comments, lineStart, err := lexComments(filename, src); err == nil {
		f.Comments = comments
		attachDocs(f, lineStart)
	}
	return f, diags
}
