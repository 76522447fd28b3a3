package dsl

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
)

// Syntax errors, several per file.
//
// The grammar in ast.go parses every valid file. When it rejects one,
// diagnoseSyntax reports every error it can find, in three steps:
//
//  1. The source is lexed again, going on after each character the lexer
//     cannot read, so that a bad character late in the file hides nothing
//     before it.
//  2. The tokens are split, for synchronisation only: each machine block
//     into its items, a new item starting on a line whose first token
//     starts a declaration (a keyword such as state or event) or a
//     transition row (the line holds ->), unless the line before ended in
//     "," or "->"; what lies outside the blocks (their headers and closing
//     braces) is kept as one stream.
//  3. Each item, and that stream, is parsed alone by the grammar. Where the
//     grammar rejects a token, expectedAt asks the grammar which tokens it
//     would have accepted there, and participleDiagnostic says so in the
//     language's words.

// itemParser parses one item of a machine block with the grammar's own
// rules. It is built on first use, by a file with a syntax error or the
// language server: building a parser costs about as much as parsing a file
// of a few hundred lines, which every run of fsmgen would otherwise pay.
var itemParser = sync.OnceValue(func() *participle.Parser[Item] { return buildItemParser(lookahead) })

// probeParser parses one item as itemParser does, but commits to a branch
// of the grammar at its first token: where itemParser, looking ahead,
// backtracks out of what it cannot finish and reports the token it
// backtracked to, probeParser reports the token that does not fit. It
// locates errors and tries what the grammar expects; whether an item is
// valid is itemParser's to say.
var probeParser = sync.OnceValue(func() *participle.Parser[Item] { return buildItemParser(0) })

// buildItemParser builds a parser of one item that looks ahead n tokens.
func buildItemParser(n int) *participle.Parser[Item] {
	return participle.MustBuild[Item](
		participle.Lexer(fsmLexer),
		participle.Elide("Whitespace", "Comment"),
		participle.UseLookahead(n),
	)
}

var (
	identToken    = fsmLexer.Symbols()["Ident"]
	stringToken   = fsmLexer.Symbols()["String"]
	numberToken   = fsmLexer.Symbols()["Number"]
	durationToken = fsmLexer.Symbols()["Duration"]
	arrowToken    = fsmLexer.Symbols()["Arrow"]
	punctToken    = fsmLexer.Symbols()["Punct"]
	commentToken  = fsmLexer.Symbols()["Comment"]
	spaceToken    = fsmLexer.Symbols()["Whitespace"]
)

// literalToken is the type of the tokens that stand for the grammar's
// literals when expectedAt tries them: a literal of the grammar matches
// it, a token type (a name) does not, so that a keyword is expected only
// where the grammar has it, not where any name would do.
const literalToken lexer.TokenType = lexer.EOF - 2

// lineEnd is the type of the token a diagnostic reports when an item ends
// with its line where the grammar wanted more: no lexer returns it.
const lineEnd lexer.TokenType = lexer.EOF - 1

// declKeywords are the words that start a declaration, where the splitter
// starts a new item. TestDeclKeywordsStartItems holds them to the grammar.
var declKeywords = []string{"type", "version", "package", "cancel", "initial", "state", "final", "event", "guard", "action", "deep", "history", "upgrade"}

// childKeywords are the declaration keywords that a state's block holds
// too: a line inside a block left open that starts with another keyword
// ends the block.
var childKeywords = []string{"initial", "state", "final", "deep", "history"}

// retiredUpgrade is the word that opened an upgrade block before it was
// named upgrade: a line that starts "migrate from" is reported as such.
const retiredUpgrade = "migrate"

// diagnoseSyntax returns every syntax error of src, which the parser
// rejected with err, sorted by position. It returns at least one.
func diagnoseSyntax(filename string, src []byte, err error) Diagnostics {
	toks, diags := lexRecover(filename, src)
	badLines := map[int]bool{}
	for _, d := range diags {
		badLines[d.Pos.Line] = true
	}
	sc := &syntaxScanner{toks: toks}
	sc.file()
	diags = append(diags, sc.diags...)
	if !hasBadLine(badLines, sc.outer) {
		if err := parseOuter(sc.outer); err != nil {
			diags = append(diags, participleDiagnostic(filename, src, err))
		}
	}
	reported := len(sc.diags)
	for _, ch := range sc.chunks {
		if hasBadLine(badLines, ch.toks) {
			continue // the bad character is reported; the rest of the item would only echo it
		}
		if reported >= MaxErrors {
			diags = append(diags, Diagnostic{Pos: ch.toks[0].Pos, Message: fmt.Sprintf("syntax error: too many errors (%d); the rest of the file is not read", MaxErrors)})
			break
		}
		if _, err := parseChunk(ch); err != nil {
			diags = append(diags, participleDiagnostic(filename, src, err))
			reported++
		}
	}
	if len(diags) == 0 {
		diags = append(diags, participleDiagnostic(filename, src, err))
	}
	for i := range diags {
		if diags[i].Pos.Filename == "" {
			diags[i].Pos.Filename = filename
		}
	}
	diags.sort()
	return slices.CompactFunc(diags, func(a, b Diagnostic) bool { return a.Pos == b.Pos })
}

// hasBadLine reports whether a token of toks is on a line with a character
// the lexer cannot read.
func hasBadLine(bad map[int]bool, toks []lexer.Token) bool {
	for _, t := range toks {
		if bad[t.Pos.Line] {
			return true
		}
	}
	return false
}

// lexRecover returns the tokens of src other than whitespace and comments,
// ending with EOF, and a diagnostic for each character the lexer cannot
// read; lexing goes on after it.
func lexRecover(filename string, src []byte) ([]lexer.Token, Diagnostics) {
	var toks []lexer.Token
	var diags Diagnostics
	base := lexer.Position{Filename: filename, Line: 1, Column: 1}
	text := string(src) // once: each restart lexes a slice of it
	for {
		if len(diags) == MaxErrors {
			diags = append(diags, Diagnostic{Pos: base, Message: fmt.Sprintf("syntax error: too many invalid characters (%d); the rest of the file is not read", MaxErrors)})
			return append(toks, lexer.Token{Type: lexer.EOF, Pos: base}), diags
		}
		lx, err := fsmLexer.LexString(filename, text[base.Offset:])
		if err != nil {
			diags = append(diags, Diagnostic{Pos: base, Message: "syntax error: " + err.Error()})
			return append(toks, eofAt(src, base)), diags
		}
		for {
			tok, err := lx.Next()
			if err != nil {
				pos := base
				var lexErr *lexer.Error
				if errors.As(err, &lexErr) {
					pos = addPos(base, lexErr.Pos)
				}
				msg, skip := badCharacter(src, pos.Offset)
				diags = append(diags, Diagnostic{Pos: pos, Message: msg})
				if skip <= 0 {
					return append(toks, eofAt(src, pos)), diags
				}
				base = pos
				base.Advance(string(src[pos.Offset : pos.Offset+skip]))
				break
			}
			tok.Pos = addPos(base, tok.Pos)
			if tok.EOF() {
				return append(toks, tok), diags
			}
			if tok.Type != spaceToken && tok.Type != commentToken {
				toks = append(toks, tok)
			}
		}
	}
}

// addPos returns the position p, relative to a lexer started at base, in
// the whole source.
func addPos(base, p lexer.Position) lexer.Position {
	out := base
	out.Offset += p.Offset
	out.Line += p.Line - 1
	if p.Line > 1 {
		out.Column = p.Column
	} else {
		out.Column += p.Column - 1
	}
	return out
}

// eofAt is the EOF token of src, lexed on from position from.
func eofAt(src []byte, from lexer.Position) lexer.Token {
	pos := from
	pos.Advance(string(src[from.Offset:]))
	return lexer.Token{Type: lexer.EOF, Pos: pos}
}

// describeToken names a token in a message: token "x", string "x", end of
// line or end of file.
func describeToken(t lexer.Token) string {
	switch {
	case t.EOF():
		return "end of file"
	case t.Type == lineEnd:
		return "end of line"
	case t.Type == stringToken:
		return "string " + t.Value
	}
	return fmt.Sprintf("token %q", t.Value)
}

func isWord(t lexer.Token, word string) bool { return t.Type == identToken && t.Value == word }
func isPunct(t lexer.Token, p string) bool   { return t.Type == punctToken && t.Value == p }

// endOf is the position just after token t.
func endOf(t lexer.Token) lexer.Position {
	p := t.Pos
	p.Advance(t.Value)
	return p
}

// chunk is one item of a machine block, or several on one line, as the
// scanner split them: its tokens, and the token after them.
type chunk struct {
	toks []lexer.Token
	next lexer.Token
}

// syntaxScanner finds the machine blocks of a token stream and splits
// their bodies into chunks. It knows of the language only where a block
// opens and closes and which words start a declaration.
type syntaxScanner struct {
	toks  []lexer.Token // ends with EOF
	i     int
	diags Diagnostics
	// outer holds the tokens outside the machine blocks' bodies, ending
	// with EOF: the machines' headers and closing braces, and any token
	// between machines.
	outer  []lexer.Token
	chunks []chunk
	// machines records each machine block found, for ParsePartial.
	machines []scannedMachine
}

// scannedMachine is a machine block as the scanner found it: its keyword's
// position, its name ("" when missing), the chunks of its body
// (chunks[first:last]) and where the block ends.
type scannedMachine struct {
	pos         lexer.Position
	name        string
	first, last int
	end         lexer.Position
}

func (s *syntaxScanner) at(i int) lexer.Token {
	if i >= len(s.toks) {
		return s.toks[len(s.toks)-1]
	}
	return s.toks[i]
}

func (s *syntaxScanner) peek() lexer.Token { return s.at(s.i) }

// take moves the next token to the outer stream.
func (s *syntaxScanner) take() lexer.Token {
	t := s.peek()
	s.outer = append(s.outer, t)
	s.i++
	return t
}

// startsLine reports whether token i is the first of its line.
func (s *syntaxScanner) startsLine(i int) bool {
	return i == 0 || s.at(i-1).Pos.Line != s.at(i).Pos.Line
}

// lineHasArrow reports whether the line of token i holds -> at or after it.
func (s *syntaxScanner) lineHasArrow(i int) bool {
	line := s.at(i).Pos.Line
	for j := i; j < len(s.toks) && s.toks[j].Pos.Line == line; j++ {
		if s.toks[j].Type == arrowToken {
			return true
		}
	}
	return false
}

// startsMachine reports whether token i reads machine NAME {.
func (s *syntaxScanner) startsMachine(i int) bool {
	return isWord(s.at(i), "machine") && s.at(i+1).Type == identToken && isPunct(s.at(i+2), "{")
}

// startsDecl reports whether t, followed by next, starts a declaration.
func startsDecl(t, next lexer.Token) bool {
	if isWord(t, "deep") {
		return isWord(next, "history")
	}
	return t.Type == identToken && slices.Contains(declKeywords, t.Value)
}

// startsItem reports whether token i, the first of its line, starts a new
// item of a machine block rather than continuing the one before.
func (s *syntaxScanner) startsItem(i int) bool {
	if prev := s.at(i - 1); prev.Type == arrowToken || isPunct(prev, ",") {
		return false
	}
	t := s.at(i)
	if startsDecl(t, s.at(i+1)) {
		return true
	}
	return (t.Type == identToken || isPunct(t, "*")) && s.lineHasArrow(i)
}

// balanced reports whether the braces from token i to the end of its
// machine block (the next line that starts a machine, or the end of the
// file) close every brace they open and then the machine's.
func (s *syntaxScanner) balanced(i int) bool {
	depth := 0
	for j := i; j < len(s.toks) && !s.toks[j].EOF(); j++ {
		if j > i && s.startsMachine(j) && s.startsLine(j) {
			break
		}
		switch {
		case isPunct(s.toks[j], "{"):
			depth++
		case isPunct(s.toks[j], "}"):
			depth--
		}
	}
	return depth == -1
}

// file splits the whole stream: the tokens outside machine blocks go to
// the outer stream as they are, for the grammar to report.
func (s *syntaxScanner) file() {
	for !s.peek().EOF() {
		if isWord(s.peek(), "machine") {
			s.machine()
		} else {
			s.take()
		}
	}
	s.outer = append(s.outer, s.peek())
}

// machine takes a machine block: its header (up to a "{" on the line of
// the keyword or the next, or the line's end) and its closing brace go to the outer
// stream, its body to chunks. A body left open is reported here, where
// its opening brace is known.
func (s *syntaxScanner) machine() {
	kw := s.take()
	name, open := "", lexer.Token{}
	for t := s.peek(); !t.EOF() && t.Pos.Line == kw.Pos.Line && open.Value == ""; t = s.peek() {
		if isPunct(t, "{") {
			open = t
		} else if name == "" && t.Type == identToken {
			name = t.Value
		}
		s.take()
	}
	switch {
	case open.Value == "" && isPunct(s.peek(), "{"):
		open = s.take() // on a line of its own
	case open.Value == "" && !s.peek().EOF():
		// Without "{", the grammar reports the token where it belongs;
		// the body is read as if it were there.
		s.outer = append(s.outer, s.peek())
	}
	first := len(s.chunks)
	end := s.body(name, open)
	s.machines = append(s.machines, scannedMachine{pos: kw.Pos, name: name, first: first, last: len(s.chunks), end: end})
}

// body splits a machine's body into chunks up to its closing brace, and
// returns where the block ends.
func (s *syntaxScanner) body(name string, open lexer.Token) lexer.Position {
	balanced := s.balanced(s.i)
	for {
		t := s.peek()
		switch {
		case isPunct(t, "}"):
			s.take()
			return endOf(t)
		case t.EOF() || s.startsMachine(s.i) && s.startsLine(s.i):
			s.unclosed(name, open, t)
			return t.Pos
		}
		s.chunk(balanced)
	}
}

// unclosed reports a machine block that token t ends without its "}", and
// closes it in the outer stream, so that the grammar does not report it
// again.
func (s *syntaxScanner) unclosed(name string, open, t lexer.Token) {
	close := lexer.Token{Type: punctToken, Value: "}", Pos: t.Pos}
	s.outer = append(s.outer, close)
	if open.Value == "" {
		return // the missing "{" is reported
	}
	what := "machine " + name
	if name == "" {
		what = "the machine"
	}
	s.diags = append(s.diags, Diagnostic{Pos: t.Pos, Message: fmt.Sprintf("syntax error: unexpected %s, expected \"}\" to close %s (opened at %s)", describeToken(t), what, short(open.Pos))})
}

// chunk takes the tokens of one item (or of several on one line) of a
// machine block. Inside a block of its own, an item goes on to the block's
// "}"; when the machine's braces show a block left open, a line that
// starts a declaration other than a child state's ends it. An item that
// starts with the word upgrade blocks had before is reported, not kept.
func (s *syntaxScanner) chunk(balanced bool) {
	start := s.i
	retired := isWord(s.peek(), retiredUpgrade) && isWord(s.at(s.i+1), "from") && s.startsLine(s.i)
	depth := 0
	for {
		switch t := s.peek(); {
		case isPunct(t, "{"):
			depth++
		case isPunct(t, "}"):
			depth--
		}
		s.i++
		next := s.peek()
		if next.EOF() || s.startsLine(s.i) && (s.startsMachine(s.i) || isWord(next, retiredUpgrade)) {
			break
		}
		if depth <= 0 {
			if isPunct(next, "}") || s.startsLine(s.i) && s.startsItem(s.i) {
				break
			}
		} else if !balanced && s.startsLine(s.i) && s.startsItem(s.i) && !slices.Contains(childKeywords, next.Value) {
			break
		}
	}
	if retired {
		s.diags = append(s.diags, Diagnostic{Pos: s.toks[start].Pos, Message: `syntax error: "migrate from" is now "upgrade from": write upgrade from VERSION { ... } or upgrade from VERSION drain`})
		return
	}
	s.chunks = append(s.chunks, chunk{toks: s.toks[start:s.i], next: s.peek()})
}

// tokenLexer hands the parser a slice of tokens that ends with EOF.
type tokenLexer struct {
	toks []lexer.Token
	i    int
}

// Next implements lexer.Lexer.
func (l *tokenLexer) Next() (lexer.Token, error) {
	if l.i >= len(l.toks) {
		return l.toks[len(l.toks)-1], nil
	}
	l.i++
	return l.toks[l.i-1], nil
}

// withEOF returns toks followed by an EOF token at pos.
func withEOF(toks []lexer.Token, pos lexer.Position) []lexer.Token {
	return append(slices.Clip(toks), lexer.Token{Type: lexer.EOF, Pos: pos})
}

// parseTokens parses toks, which end with EOF, with p, and returns the
// result and the position of the first token not taken.
func parseTokens[G any](p *participle.Parser[G], toks []lexer.Token, opts ...participle.ParseOption) (*G, lexer.Position, error) {
	peeker, err := lexer.Upgrade(&tokenLexer{toks: toks})
	if err != nil {
		return nil, lexer.Position{}, err
	}
	v, err := p.ParseFromLexer(peeker, opts...)
	return v, peeker.Peek().Pos, err
}

// parseFunc parses tokens that end with EOF with one root of the grammar.
type parseFunc func([]lexer.Token) error

// probeItem parses toks as one item with probeParser.
func probeItem(toks []lexer.Token) error {
	_, _, err := parseTokens(probeParser(), toks)
	return err
}

// parseFile parses toks as a file.
func parseFile(toks []lexer.Token) error {
	_, _, err := parseTokens(fsmParser, toks)
	return err
}

// parseOuter parses the tokens outside the machine blocks' bodies, with
// each body left empty, and returns the grammar's error.
func parseOuter(toks []lexer.Token) error {
	toks, eof := toks[:len(toks)-1], toks[len(toks)-1]
	err := parseFile(withEOF(toks, eof.Pos))
	if err == nil {
		return nil
	}
	k := firstRejected(parseFile, toks, err)
	return unexpected(parseFile, toks[:k], at(toks, k, eof), "<end of file>")
}

// parseChunk parses the items of a chunk one by one with the grammar, and
// returns them or the first error: an UnexpectedTokenError at the first
// token the grammar rejects, that says what it expected there.
func parseChunk(ch chunk) ([]*Item, error) {
	var items []*Item
	for toks := ch.toks; len(toks) > 0; {
		item, _, err := parseTokens(itemParser(), withEOF(toks, ch.next.Pos))
		if err == nil {
			return append(items, item), nil
		}
		if perr := probeItem(withEOF(toks, ch.next.Pos)); perr != nil {
			err = perr
		}
		k := firstRejected(probeItem, toks, err)
		if k > 0 && k < len(toks) && (startsDecl(toks[k], at(toks, k+1, ch.next)) || startsRow(toks[k], at(toks, k+1, ch.next))) {
			// Another item on the line: the tokens before it are one.
			if item, _, err = parseTokens(itemParser(), withEOF(toks[:k], toks[k].Pos)); err == nil {
				items = append(items, item)
				toks = toks[k:]
				continue
			}
		}
		found := at(toks, k, ch.next)
		if k == len(toks) && !found.EOF() && found.Pos.Line != toks[k-1].Pos.Line {
			found = lexer.Token{Type: lineEnd, Pos: endOf(toks[k-1])}
		}
		return nil, unexpected(probeItem, toks[:k], found, endName(item))
	}
	return items, nil
}

// firstRejected returns the index in toks of the first token that parse
// rejects, len(toks) for the end, given err, the error of parsing toks:
// the token participle reports, or one after it when participle, having
// backtracked out of what it could not finish, reported an earlier token
// than the one that does not fit. Reading on stops at the first token that
// the parser cannot get past, within the parser's lookahead.
func firstRejected(parse parseFunc, toks []lexer.Token, err error) int {
	k := len(toks)
	var perr participle.Error
	if errors.As(err, &perr) {
		k = tokenIndex(toks, perr.Position())
	}
	for limit := k + lookahead; k < len(toks) && k < limit && parsesTo(parse, toks[:k+1]); k++ {
	}
	return k
}

// tokenIndex returns the index of the token of toks at pos, or len(toks)
// for a position after them.
func tokenIndex(toks []lexer.Token, pos lexer.Position) int {
	for i, t := range toks {
		if t.Pos.Offset >= pos.Offset {
			return i
		}
	}
	return len(toks)
}

// lookahead is how many tokens the parsers look ahead before they commit
// to a branch.
const lookahead = 4

// parsesTo reports whether parse reads all of prefix without an error:
// it fails at the end of the input at the earliest.
func parsesTo(parse parseFunc, prefix []lexer.Token) bool {
	end := endOf(prefix[len(prefix)-1])
	err := parse(withEOF(prefix, end))
	var perr participle.Error
	return err == nil || errors.As(err, &perr) && perr.Position().Offset >= end.Offset
}

// startsRow reports whether t, followed by next, starts a transition row
// on a line with items before it.
func startsRow(t, next lexer.Token) bool {
	return (t.Type == identToken || isPunct(t, "*")) && (next.Type == arrowToken || isPunct(next, ","))
}

// at returns toks[i], or after past their end.
func at(toks []lexer.Token, i int, after lexer.Token) lexer.Token {
	if i < len(toks) {
		return toks[i]
	}
	return after
}

// endName is what the end of item is called in a message.
func endName(item *Item) string {
	if item != nil && item.Transition != nil {
		return "<end of row>"
	}
	return "<end of declaration>"
}

// unexpected returns the error for found, the token the grammar rejected
// after prefix, with what parse accepts there written as participle writes
// alternatives: "x" | <ident> | ... The end of what parse parses is called
// end.
func unexpected(parse parseFunc, prefix []lexer.Token, found lexer.Token, end string) error {
	return &participle.UnexpectedTokenError{Unexpected: found, Expect: expectedAt(parse, prefix, end)}
}

// expectedAt returns the terms of the grammar that parse accepts after
// prefix: each literal and token type of the grammar is put there in turn,
// and accepted when the parser gets past it. end stands for the end of the
// input, when parse accepts prefix as it is.
func expectedAt(parse parseFunc, prefix []lexer.Token, end string) string {
	pos := lexer.Position{Line: 1, Column: 1}
	if len(prefix) > 0 {
		pos = endOf(prefix[len(prefix)-1])
	}
	after := pos
	after.Offset++
	try := func(t lexer.Token) bool {
		t.Pos = pos
		toks := append(append(slices.Clip(prefix), t), lexer.Token{Type: lexer.EOF, Pos: after})
		err := parse(toks)
		var perr participle.Error
		return err == nil || errors.As(err, &perr) && perr.Position().Offset > pos.Offset
	}
	var terms []string
	for _, c := range grammarTerms() {
		if !try(c.tok) {
			continue
		}
		if c.term == "<ident>" && len(prefix) > 0 {
			c.term = nameAfter(prefix[len(prefix)-1])
		}
		terms = append(terms, c.term)
	}
	if parse(withEOF(prefix, pos)) == nil {
		terms = append(terms, end)
	}
	return strings.Join(terms, " | ")
}

// nameAfter returns the grammar's fragment for a name after the literal
// t, such as "on" Name or "machine" <ident>, or <ident> when the grammar
// has none.
func nameAfter(t lexer.Token) string {
	for _, name := range []string{" Name", " <ident>"} {
		if frag := strconv.Quote(t.Value) + name; strings.Contains(grammarEBNF(), frag) {
			return frag
		}
	}
	return "<ident>"
}

// grammarEBNF is the grammar as participle writes it.
var grammarEBNF = sync.OnceValue(fsmParser.String)

// grammarTerm is a literal or a token type of the grammar, as its EBNF
// writes it, and a token that matches it.
type grammarTerm struct {
	term string
	tok  lexer.Token
}

// tokenSamples are tokens of each token type the grammar refers to.
var tokenSamples = map[string]lexer.Token{
	"<ident>":    {Type: identToken, Value: "name"},
	"<string>":   {Type: stringToken, Value: `"text"`},
	"<number>":   {Type: numberToken, Value: "1"},
	"<duration>": {Type: durationToken, Value: "1s"},
}

// grammarTerms returns the terms of the grammar's EBNF in the order they
// first occur in it.
var grammarTerms = sync.OnceValue(func() []grammarTerm {
	var out []grammarTerm
	seen := map[string]bool{}
	// The literals and token types of the grammar's EBNF.
	termPattern := regexp.MustCompile(`"(?:[^"\\]|\\.)*"|<[a-z]+>`)
	for _, term := range termPattern.FindAllString(grammarEBNF(), -1) {
		if seen[term] {
			continue
		}
		seen[term] = true
		if tok, ok := tokenSamples[term]; ok {
			out = append(out, grammarTerm{term: term, tok: tok})
			continue
		}
		lit, err := strconv.Unquote(term)
		if err != nil {
			panic(fmt.Sprintf("grammar literal %s: %v", term, err))
		}
		tok := lexer.Token{Type: literalToken, Value: lit}
		out = append(out, grammarTerm{term: term, tok: tok})
	}
	return out
})
