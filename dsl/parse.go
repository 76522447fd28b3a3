package dsl

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
)

var fsmParser = participle.MustBuild[File](
	participle.Lexer(fsmLexer),
	participle.Elide("Whitespace", "Comment"),
	participle.UseLookahead(lookahead),
)

// Parse parses the .fsm source src. filename is used in positions only, as
// given: pass a path relative to where the user works for readable errors.
// Syntax errors are returned as an ErrorList of positioned Diagnostics,
// sorted by position: after an error the parser resumes at the next
// declaration or transition row, so one run reports several of them.
func Parse(filename string, src []byte) (*File, error) {
	if d, ok := overLimit(filename, src); ok {
		return nil, ErrorList{d}
	}
	if d, ok := badBytes(filename, src); ok {
		return nil, ErrorList{d}
	}
	src = bytes.TrimPrefix(src, []byte("\uFEFF"))
	f, err := fsmParser.ParseBytes(filename, src)
	if err != nil {
		return nil, ErrorList(diagnoseSyntax(filename, src, err))
	}
	comments, lineStart, err := lexComments(filename, src)
	if err != nil {
		return nil, ErrorList{participleDiagnostic(filename, src, err)}
	}
	f.Comments = comments
	attachDocs(f, lineStart)
	return f, nil
}

// badBytes returns the position of the first byte sequence of src that a
// .fsm file, like a Go source file, may not hold: invalid UTF-8, a NUL, or
// a byte order mark anywhere but at the very start. Columns count
// characters, as the lexer's do.
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
			col++
		}
		i += size
	}
	return Diagnostic{}, false
}

// participleDiagnostic turns an error of the parser or its lexer into a
// positioned diagnostic, reading the typed errors participle returns.
func participleDiagnostic(filename string, src []byte, err error) Diagnostic {
	d := Diagnostic{Pos: lexer.Position{Filename: filename, Line: 1, Column: 1}, Message: "syntax error: " + err.Error()}
	var (
		lexErr   *lexer.Error
		tokenErr *participle.UnexpectedTokenError
		parseErr participle.Error
	)
	switch {
	case errors.As(err, &lexErr):
		d.Pos = lexErr.Pos
		d.Message, _ = badCharacter(src, lexErr.Pos.Offset)
	case errors.As(err, &tokenErr):
		d.Pos = tokenErr.Unexpected.Pos
		d.Message = "syntax error: unexpected " + describeToken(tokenErr.Unexpected)
		if want := expectation(tokenErr); want != "" {
			d.Message += ", expected " + want
		}
	case errors.As(err, &parseErr):
		d.Pos = parseErr.Position()
		d.Message = "syntax error: " + parseErr.Message()
	}
	if d.Pos.Filename == "" {
		d.Pos.Filename = filename
	}
	if d.Pos.Line == 0 {
		d.Pos.Line, d.Pos.Column = 1, 1
	}
	return d
}

// expectation returns, in the language's words, what the grammar expected
// where it met the unexpected token, which expectedAt writes as
// participle writes alternatives: "x" | <ident> | ...
func expectation(err *participle.UnexpectedTokenError) string {
	if err.Expect == "" {
		return ""
	}
	return describeTerms(strings.Split(err.Expect, " | "))
}

// groupWords names the alternatives of the grammar that a message names
// together: when every term of a key is expected, its words replace them.
// Each key occurs in the grammar's EBNF, as
// TestExpectationWordsInGrammar checks.
var groupWords = []struct{ key, words string }{
	{`"succeeded" | "failed" | "cancelled"`, "a status (succeeded, failed or cancelled)"},
	{`<string> | <number> | <duration> | "true" | "false"`, "a value (a quoted string, a number, a duration, true or false)"},
}

// termWords names the grammar's token types, its names by the literal
// before them, and the ends of what is parsed. Each key but an end occurs
// in the grammar's EBNF, as TestExpectationWordsInGrammar checks.
var termWords = map[string]string{
	"<ident>":              "a name",
	`"machine" <ident>`:    "the machine's name",
	`"package" <ident>`:    "a Go package name",
	`"->" Name`:            "a state",
	`"on" Name`:            "an event",
	`"cancel" Name`:        "the event that cancels a run",
	`"event" Name`:         "an event name",
	`"guard" Name`:         "a guard name",
	`"action" Name`:        "an action name",
	`"entry" Name`:         "an action",
	`"exit" Name`:          "an action",
	`"else" Name`:          "the event fired when the policy gives up",
	`"history" Name`:       "the history's name",
	`"." Name`:             "a field name",
	`"timers" Name`:        "keep or restart",
	"<string>":             "a quoted string",
	"<number>":             "a number",
	"<duration>":           "a duration (a number and a unit: ms, s, m, h or d, as in 30s)",
	"<end of row>":         "the end of the row",
	"<end of declaration>": "the end of the declaration",
	"<end of file>":        "the end of the file",
}

// describeTerms lists terms, alternatives of the grammar, in words: a
// keyword as it is written, a punctuation mark quoted, a token type or a
// group of alternatives by what it is.
func describeTerms(terms []string) string {
	group := map[string]string{} // term to the words of its complete group
	for _, g := range groupWords {
		if keys := strings.Split(g.key, " | "); containsAll(terms, keys) {
			for _, k := range keys {
				group[k] = g.words
			}
		}
	}
	var words []string
	for _, t := range terms {
		w, ok := group[t]
		if !ok {
			w, ok = termWords[t]
		}
		if !ok && (strings.HasSuffix(t, " Name") || strings.HasSuffix(t, " <ident>")) {
			w, ok = termWords["<ident>"], true
		}
		if !ok {
			w = t
			if lit, err := strconv.Unquote(t); err == nil && lit != "" && isIdentStart(lit[0]) {
				w = lit
			}
		}
		if !slices.Contains(words, w) {
			words = append(words, w)
		}
	}
	// Words first, then punctuation, then the end.
	slices.SortStableFunc(words, func(a, b string) int { return wordRank(a) - wordRank(b) })
	switch n := len(words); n {
	case 0:
		return ""
	case 1:
		return words[0]
	default:
		return strings.Join(words[:n-1], ", ") + " or " + words[n-1]
	}
}

// wordRank orders the words of an expectation: a keyword, a token type or
// a group first, then a punctuation mark, then the end of what is parsed.
func wordRank(w string) int {
	switch {
	case strings.HasPrefix(w, "the end of "):
		return 2
	case strings.HasPrefix(w, `"`):
		return 1
	}
	return 0
}

// containsAll reports whether every one of want is in have.
func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// badCharacter describes the text at offset of src, where the lexer found
// no token, and returns how many bytes to skip to lex on: the rest of the
// line for a string that is not terminated, else the one character.
func badCharacter(src []byte, offset int) (string, int) {
	if offset < 0 || offset >= len(src) {
		return "syntax error: unexpected end of file", 0
	}
	r, size := utf8.DecodeRune(src[offset:])
	if r == '"' {
		n := bytes.IndexByte(src[offset:], '\n')
		if n < 0 {
			n = len(src) - offset
		}
		return "syntax error: string literal not terminated", n
	}
	return fmt.Sprintf("syntax error: invalid character %q", r), size
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
	var children func(sd *StateDecl)
	children = func(sd *StateDecl) {
		for _, c := range sd.Children {
			c.Doc = docAbove(c.Pos)
			if c.State != nil {
				children(c.State)
			}
		}
	}
	for _, m := range f.Machines {
		m.Doc = docAbove(m.Pos)
		for _, it := range m.Items {
			it.Doc = docAbove(it.Pos)
			if it.State != nil {
				children(it.State)
			}
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

// maxDuration is the longest duration: about 2562047h, or 106751d.
const maxDuration = time.Duration(1<<63 - 1)

// durationUnits are the units of a duration and their lengths.
var durationUnits = map[string]time.Duration{
	"ns": time.Nanosecond,
	"us": time.Microsecond,
	"µs": time.Microsecond, // U+00B5 micro sign
	"μs": time.Microsecond, // U+03BC Greek small letter mu
	"ms": time.Millisecond,
	"s":  time.Second,
	"m":  time.Minute,
	"h":  time.Hour,
	"d":  24 * time.Hour,
}

// ParseDuration parses a duration as the .fsm language writes it: Go's
// time.ParseDuration syntax plus the unit d for 24 hours (7d, 1d12h),
// without a sign. A duration longer than the longest a time.Duration holds
// (about 2562047h) is refused as too long.
func ParseDuration(s string) (time.Duration, error) {
	invalid := fmt.Errorf("invalid duration %q", s)
	tooLong := fmt.Errorf("duration %q is too long; the longest is 2562047h (106751d)", s)
	if s == "" {
		return 0, invalid
	}
	isDigit := func(c byte) bool { return c >= '0' && c <= '9' }
	var total uint64
	for rest := s; rest != ""; {
		i := 0
		for i < len(rest) && isDigit(rest[i]) {
			i++
		}
		whole := rest[:i]
		rest = rest[i:]
		frac := ""
		if rest != "" && rest[0] == '.' {
			j := 1
			for j < len(rest) && isDigit(rest[j]) {
				j++
			}
			frac, rest = rest[1:j], rest[j:]
		}
		if whole == "" && frac == "" {
			return 0, invalid
		}
		j := 0
		for j < len(rest) && rest[j] != '.' && !isDigit(rest[j]) {
			j++
		}
		unit, ok := durationUnits[rest[:j]]
		if !ok {
			return 0, invalid
		}
		rest = rest[j:]
		var v uint64
		for k := 0; k < len(whole); k++ {
			if v > uint64(maxDuration)/10 {
				return 0, tooLong
			}
			v = v*10 + uint64(whole[k]-'0')
		}
		if v > uint64(maxDuration)/uint64(unit) {
			return 0, tooLong
		}
		v *= uint64(unit)
		if frac != "" {
			f, err := strconv.ParseFloat("0."+frac, 64)
			if err != nil {
				return 0, invalid
			}
			v += uint64(f * float64(unit))
		}
		if v > uint64(maxDuration) || total > uint64(maxDuration)-v {
			return 0, tooLong
		}
		total += v
	}
	return time.Duration(total), nil
}

// errTooLarge is the error of parseCount for a number too large to hold.
var errTooLarge = errors.New("the number is too large")

// parseCount parses a whole number as a .fsm file writes it (a version, a
// number of attempts), telling a number too large to hold from one that
// is not a whole number.
func parseCount(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Errorf("%s: %w; at most %d", s, errTooLarge, math.MaxInt)
	}
	return n, err
}
