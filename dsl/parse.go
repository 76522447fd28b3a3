package dsl

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
)

var fsmLexer = lexer.MustSimple([]lexer.SimpleRule{
	{Name: "Comment", Pattern: `//[^\n]*`},
	{Name: "String", Pattern: `"(\\.|[^"\\\n])*"`},
	{Name: "Duration", Pattern: `[0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h|d)([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h|d))*`},
	{Name: "Number", Pattern: `[0-9]+(\.[0-9]+)?`},
	{Name: "Ident", Pattern: `[A-Za-z_][A-Za-z0-9_]*`},
	{Name: "Arrow", Pattern: `->`},
	{Name: "Punct", Pattern: `[{}\[\];,.*!]`},
	{Name: "Whitespace", Pattern: `[ \t\r\n]+`},
})

var fsmParser = participle.MustBuild[File](
	participle.Lexer(fsmLexer),
	participle.Elide("Whitespace", "Comment"),
	participle.UseLookahead(4),
)

// Parse parses the .fsm source src. filename is used in positions only, as
// given: pass a path relative to where the user works for readable errors.
// A syntax error is returned as an ErrorList of one positioned Diagnostic.
func Parse(filename string, src []byte) (*File, error) {
	if d, ok := badBytes(filename, src); ok {
		return nil, ErrorList{d}
	}
	src = bytes.TrimPrefix(src, []byte("\uFEFF"))
	f, err := fsmParser.ParseBytes(filename, src)
	if err != nil {
		return nil, ErrorList{syntaxDiagnostic(filename, err)}
	}
	comments, lineStart, err := lexComments(filename, src)
	if err != nil {
		return nil, ErrorList{syntaxDiagnostic(filename, err)}
	}
	f.Comments = comments
	attachDocs(f, lineStart)
	return f, nil
}

// badBytes returns the position of the first byte sequence of src that a
// .fsm file, like a Go source file, may not hold: invalid UTF-8, a NUL, or
// a byte order mark anywhere but at the very start. Columns count bytes, as
// the lexer's do.
func badBytes(filename string, src []byte) (Diagnostic, bool) {
	line, col := 1, 1
	for i := 0; i < len(src); {
		r, size := utf8.DecodeRune(src[i:])
		msg := ""
		switch {
		case r == utf8.RuneError && size <= 1:
			msg = "invalid UTF-8 encoding"
		case r == 0:
			msg = "invalid NUL character"
		case r == '\uFEFF' && i > 0:
			msg = "invalid byte order mark in the middle of the file"
		}
		if msg != "" {
			return Diagnostic{Pos: lexer.Position{Filename: filename, Offset: i, Line: line, Column: col}, Message: msg}, true
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col += size
		}
		i += size
	}
	return Diagnostic{}, false
}

func syntaxDiagnostic(filename string, err error) Diagnostic {
	var perr participle.Error
	if errors.As(err, &perr) {
		pos := perr.Position()
		if pos.Filename == "" {
			pos.Filename = filename
		}
		if pos.Line == 0 {
			pos.Line, pos.Column = 1, 1
		}
		return Diagnostic{Pos: pos, Message: friendlySyntax(perr.Message())}
	}
	return Diagnostic{Pos: lexer.Position{Filename: filename, Line: 1, Column: 1}, Message: err.Error()}
}

// friendlySyntax rewrites participle's messages into plainer words: the
// offending character rather than the rest of the file, and what was
// expected next rather than the rest of the grammar rule.
func friendlySyntax(msg string) string {
	msg = strings.TrimPrefix(msg, "lexer: ")
	if sample, ok := strings.CutPrefix(msg, "invalid input text "); ok {
		if text, err := strconv.Unquote(sample); err == nil && text != "" {
			r, _ := utf8.DecodeRuneInString(text)
			if r == '"' {
				return "syntax error: string literal not terminated"
			}
			return fmt.Sprintf("syntax error: invalid character %q", r)
		}
	}
	msg = strings.Replace(msg, `unexpected token "<EOF>"`, "unexpected end of file", 1)
	if i := strings.Index(msg, " (expected "); i >= 0 && strings.HasSuffix(msg, ")") {
		want := expectedNext(msg[i+len(" (expected ") : len(msg)-1])
		msg = msg[:i]
		if want != "" {
			msg += ", expected " + want
		}
	}
	return "syntax error: " + msg
}

// expectedNext names the first element of a grammar expression as
// participle prints it ("->" Name "on" Name GuardRef?), or returns "" when
// that element is not a plain token or rule.
func expectedNext(grammar string) string {
	if strings.HasPrefix(grammar, `"`) {
		if end := strings.Index(grammar[1:], `"`); end >= 0 {
			return grammar[:end+2]
		}
		return ""
	}
	first, _, _ := strings.Cut(grammar, " ")
	switch first {
	case "<ident>", "Name":
		return "a name"
	case "StateRef":
		return "a state name or *"
	case "<string>", "StringLit":
		return "a string"
	case "<number>", "NumberLit":
		return "a number"
	case "<duration>", "DurationLit":
		return "a duration"
	}
	return ""
}

// lexComments returns every comment of src with its position, and the
// offset of the first token (neither comment nor whitespace) of each line
// that has one.
func lexComments(filename string, src []byte) ([]*Comment, map[int]int, error) {
	lx, err := fsmLexer.LexString(filename, string(src))
	if err != nil {
		return nil, nil, err
	}
	commentType := fsmLexer.Symbols()["Comment"]
	wsType := fsmLexer.Symbols()["Whitespace"]
	var out []*Comment
	lineStart := make(map[int]int)
	lastLine := 0 // line of the last token that was neither comment nor whitespace
	for {
		tok, err := lx.Next()
		if err != nil {
			return nil, nil, err
		}
		if tok.EOF() {
			return out, lineStart, nil
		}
		switch tok.Type {
		case commentType:
			out = append(out, &Comment{Pos: tok.Pos, Text: strings.TrimRight(tok.Value, " \t\r"), Own: lastLine != tok.Pos.Line})
		case wsType:
		default:
			if lastLine != tok.Pos.Line {
				lineStart[tok.Pos.Line] = tok.Pos.Offset
			}
			lastLine = tok.Pos.Line
		}
	}
}

// attachDocs copies into each machine and item the comment lines that
// stand directly above it, with no blank line between. Only a node that
// starts its line has a doc: in "machine M { state A }" the comment above
// documents the machine, not the state. lineStart maps each line to the
// offset of its first token.
func attachDocs(f *File, lineStart map[int]int) {
	byLine := make(map[int]*Comment, len(f.Comments))
	for _, c := range f.Comments {
		if c.Own {
			byLine[c.Pos.Line] = c
		}
	}
	docAbove := func(pos lexer.Position) []string {
		line := pos.Line
		if start, ok := lineStart[line]; !ok || start != pos.Offset {
			return nil
		}
		var doc []string
		for l := line - 1; byLine[l] != nil; l-- {
			doc = append([]string{commentText(byLine[l].Text)}, doc...)
		}
		return doc
	}
	for _, m := range f.Machines {
		m.Doc = docAbove(m.Pos)
		for _, it := range m.Items {
			it.Doc = docAbove(it.Pos)
		}
	}
}

// commentText strips the // and one following space.
func commentText(c string) string {
	c = strings.TrimPrefix(c, "//")
	return strings.TrimPrefix(c, " ")
}

// unquote returns the value of a string literal.
func unquote(s string) (string, error) {
	v, err := strconv.Unquote(s)
	if err != nil {
		return "", fmt.Errorf("invalid string %s", s)
	}
	return v, nil
}

// ParseDuration parses a duration as the .fsm language writes it: Go's
// time.ParseDuration syntax plus the unit d for 24 hours (7d, 1d12h).
func ParseDuration(s string) (time.Duration, error) {
	var total time.Duration
	rest := s
	if rest == "" {
		return 0, fmt.Errorf("invalid duration %q", s)
	}
	for rest != "" {
		i := strings.IndexFunc(rest, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
		if i <= 0 {
			return 0, fmt.Errorf("invalid duration %q", s)
		}
		j := i
		for j < len(rest) && ((rest[j] < '0' || rest[j] > '9') && rest[j] != '.') {
			j++
		}
		num, unit := rest[:i], rest[i:j]
		rest = rest[j:]
		if unit == "d" {
			f, err := strconv.ParseFloat(num, 64)
			if err != nil {
				return 0, fmt.Errorf("invalid duration %q", s)
			}
			d := time.Duration(f * float64(24*time.Hour))
			if f > 100000 || d < 0 {
				return 0, fmt.Errorf("duration %q is too long", s)
			}
			total += d
			if total < 0 {
				return 0, fmt.Errorf("duration %q is too long", s)
			}
			continue
		}
		d, err := time.ParseDuration(num + unit)
		if err != nil {
			return 0, fmt.Errorf("invalid duration %q", s)
		}
		total += d
		if total < 0 {
			return 0, fmt.Errorf("duration %q is too long", s)
		}
	}
	return total, nil
}
