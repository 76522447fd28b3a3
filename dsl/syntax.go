package dsl

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
)

// Syntax errors in the language's own terms.
//
// The grammar in ast.go parses every valid file. When it rejects one,
// diagnoseSyntax finds out why, and where, in three steps:
//
//  1. The source is lexed again, going on after each character the lexer
//     cannot read, so that a bad character late in the file hides nothing
//     before it.
//  2. Each machine block is split into its items: a new item starts on a
//     line whose first token starts a declaration (a keyword such as state
//     or event) or a transition row (the line holds ->), unless the line
//     before ended in "," or "->". A field block ends at its "}" or at a
//     line that starts a declaration or a row.
//  3. Each item is parsed alone by the grammar. Only an item the grammar
//     rejects is reported, with what the language expected at the first
//     token that does not fit: that check runs over the item's tokens and
//     knows every declaration's syntax.
//
// Errors are thus reported once per item, and resumed from at the next
// item or machine.

// chunkParser parses the items of one chunk with the grammar's own rules.
// It is built on first use, by a file with a syntax error or the language
// server: building a parser costs about as much as parsing a file of a
// few hundred lines, which every run of fsmgen would otherwise pay.
var chunkParser = sync.OnceValue(func() *participle.Parser[itemList] {
	return participle.MustBuild[itemList](
		participle.Lexer(fsmLexer),
		participle.Elide("Whitespace", "Comment"),
		participle.UseLookahead(4),
	)
})

// itemList is one or more items of a machine block.
type itemList struct {
	Items []*Item `parser:"@@+"`
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

// declKeywords are the words that start a declaration.
var declKeywords = []string{"type", "version", "package", "cancel", "initial", "state", "final", "event", "guard", "action", "history", "upgrade"}

// stateKeywords are the words that start a state declaration, which may
// have a block of children.
var stateKeywords = []string{"initial", "state", "final"}

// machineKeywords are the words that start a declaration that belongs to
// the machine only: a line inside a state's block that starts with one
// ends the block, which was not closed.
var machineKeywords = []string{"type", "version", "package", "cancel", "event", "guard", "action", "upgrade"}

// retiredUpgrade is the word that opened an upgrade block before it was
// named upgrade: a line that starts "migrate from" is an item, reported
// as such.
const retiredUpgrade = "migrate"

// retryOptions are the options of a written-out retry policy, in the only
// order they may be given.
var retryOptions = []string{"backoff", "factor", "max", "jitter", "nonretryable"}

const (
	wantItem     = "a declaration (type, version, package, cancel, initial, state, final, history, event, guard, action or upgrade) or a transition row (FROM -> TO on EVENT)"
	wantChild    = `a child state (initial, state, final), a history (history NAME, deep history NAME) or "}"`
	wantOption   = `a state option (wait, retry N, after D EVENT, entry ACTION, exit ACTION) or "{" and its children`
	wantUpgrade  = "an upgrade rule (OLD -> NEW [when EVENT | unless EVENT] [timers keep|restart], OLD drain, or default EVENT.field VALUE) or \"}\""
	wantStatus   = "a status: succeeded, failed or cancelled"
	wantUnits    = "ms, s, m, h or d"
	wantRetry    = "the number of attempts, up to N, or a retry policy: validation, database, externalService, payment or background"
	supportTypes = `a Go scalar (bool, string, int, int8 to int64, uint, uint8 to uint64, float32, float64, byte, rune), time.Time, time.Duration, []T of one of these, or "import/path".Name`
)

// diagnoseSyntax returns every syntax error of src, which the parser
// rejected with err, sorted by position. It returns at least one.
func diagnoseSyntax(filename string, src []byte, err error) Diagnostics {
	toks, diags := lexRecover(filename, src)
	badLines := map[int]bool{}
	for _, d := range diags {
		badLines[d.Pos.Line] = true
	}
	sc := &syntaxScanner{src: src, toks: toks}
	sc.file()
	diags = append(diags, sc.diags...)
	for _, ch := range sc.chunks {
		first, last := ch.toks[0].Pos.Line, ch.toks[len(ch.toks)-1].Pos.Line
		if hasBadLine(badLines, first, last) {
			continue // the bad character is reported; the rest of the item would only echo it
		}
		if parseErr := parseChunk(ch); parseErr != nil {
			diags = append(diags, recognize(src, ch, parseErr))
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

func hasBadLine(bad map[int]bool, first, last int) bool {
	for l := first; l <= last; l++ {
		if bad[l] {
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

func eofAt(src []byte, from lexer.Position) lexer.Token {
	pos := from
	pos.Advance(string(src[from.Offset:]))
	return lexer.Token{Type: lexer.EOF, Pos: pos}
}

// describeToken names a token in a message: token "x", or end of file.
func describeToken(t lexer.Token) string {
	switch {
	case t.EOF():
		return "end of file"
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
// their bodies into chunks, reporting errors in the blocks' structure.
type syntaxScanner struct {
	src    []byte
	toks   []lexer.Token // ends with EOF
	i      int
	diags  Diagnostics
	chunks []chunk
	// machines records each machine block found, for ParsePartial.
	machines []scannedMachine
	// closedBody reports whether the braces of the machine block being
	// scanned balance: its states' blocks are then closed.
	closedBody bool
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

func (s *syntaxScanner) errorf(pos lexer.Position, format string, args ...any) {
	s.diags = append(s.diags, Diagnostic{Pos: pos, Message: "syntax error: " + fmt.Sprintf(format, args...)})
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

// startsItem reports whether token i, the first of its line, starts a new
// item of a machine block rather than continuing the one before.
func (s *syntaxScanner) startsItem(i int) bool {
	if prev := s.at(i - 1); prev.Type == arrowToken || isPunct(prev, ",") {
		return false
	}
	t := s.at(i)
	switch {
	case t.Type == identToken && slices.Contains(declKeywords, t.Value):
		return true
	case isWord(t, retiredUpgrade) && isWord(s.at(i+1), "from"):
		return true
	case isWord(t, "deep") && isWord(s.at(i+1), "history"):
		return true
	case t.Type == identToken || isPunct(t, "*"):
		return s.lineHasArrow(i) || s.startsMachine(i)
	}
	return false
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

// endsStateBlock reports whether token i, the first of its line inside a
// state's block, cannot be part of it: the line starts a machine or a
// declaration that only a machine holds, and the block was not closed.
// Rows stay in the block, to be reported there.
func (s *syntaxScanner) endsStateBlock(i int) bool {
	t := s.at(i)
	if s.startsMachine(i) {
		return true
	}
	return t.Type == identToken && slices.Contains(machineKeywords, t.Value) && !s.lineHasArrow(i)
}

// endsFieldBlock reports whether token i, the first of its line inside a
// field block, cannot start a field: the line is a declaration or a row,
// and the block was not closed.
func (s *syntaxScanner) endsFieldBlock(i int) bool {
	t, next := s.at(i), s.at(i+1)
	if s.lineHasArrow(i) || s.startsMachine(i) || isPunct(t, "*") {
		return true
	}
	if t.Type != identToken {
		return false
	}
	switch t.Value {
	case "cancel", "initial", "state", "final", "event", "guard":
		// A field's type never starts with an upper-case letter.
		r, _ := utf8.DecodeRuneInString(next.Value)
		return next.Type == identToken && unicode.IsUpper(r)
	case "type":
		return next.Type == stringToken && !isPunct(s.at(i+2), ".")
	case "version":
		return next.Type == numberToken
	}
	return false
}

// endsUpgradeBlock reports whether token i, the first of its line inside
// an upgrade block, cannot start a rule: the line is a declaration and the
// block was not closed.
func (s *syntaxScanner) endsUpgradeBlock(i int) bool {
	t, next := s.at(i), s.at(i+1)
	if s.startsMachine(i) {
		return true
	}
	if t.Type != identToken || !slices.Contains(declKeywords, t.Value) {
		return false
	}
	// A rule's second token is ->, drain or a dot.
	return next.Type == identToken && next.Value != "drain" || next.Type == stringToken || next.Type == numberToken
}

func (s *syntaxScanner) file() {
	for !s.peek().EOF() {
		t := s.peek()
		if isWord(t, "machine") {
			s.machine()
			continue
		}
		if isPunct(t, "}") {
			s.errorf(t.Pos, `unexpected token "}", no block is open`)
		} else {
			s.errorf(t.Pos, "unexpected %s, expected a machine: machine NAME { ... }", describeToken(t))
		}
		// Resume at the next machine.
		for s.i++; !s.peek().EOF() && !(isWord(s.peek(), "machine") && s.startsLine(s.i)); s.i++ {
		}
	}
}

func (s *syntaxScanner) machine() {
	kw := s.peek()
	s.i++
	name := ""
	first := len(s.chunks)
	defer func() {
		end := s.peek().Pos
		if s.i > 0 && isPunct(s.at(s.i-1), "}") {
			end = endOf(s.at(s.i - 1))
		}
		s.machines = append(s.machines, scannedMachine{pos: kw.Pos, name: name, first: first, last: len(s.chunks), end: end})
	}()
	if t := s.peek(); t.Type == identToken {
		name = t.Value
		s.i++
	} else {
		s.errorf(t.Pos, "unexpected %s, expected a machine name", describeToken(t))
		if !isPunct(t, "{") && !t.EOF() && t.Pos.Line == kw.Pos.Line {
			s.i++ // take it for the name
		}
	}
	open := s.peek()
	if !isPunct(open, "{") {
		if name != "" {
			s.errorf(open.Pos, "unexpected %s, expected \"{\" to open machine %s", describeToken(open), name)
		}
		// Resume after a "{" later on the line, or as if it were there.
		for j := s.i; j < len(s.toks) && s.toks[j].Pos.Line == kw.Pos.Line; j++ {
			if isPunct(s.toks[j], "{") {
				s.i, open = j, s.toks[j]
				break
			}
		}
		if open.EOF() {
			return
		}
	}
	if isPunct(s.peek(), "{") {
		s.i++
	}
	s.closedBody = s.balanced(s.i)
	what := "machine " + name
	if name == "" {
		what = "the machine"
	}
	for {
		t := s.peek()
		switch {
		case t.EOF():
			s.errorf(t.Pos, "unexpected end of file, expected \"}\" to close %s (opened at %s)", what, short(open.Pos))
			return
		case isPunct(t, "}"):
			s.i++
			return
		case s.startsMachine(s.i) && s.startsLine(s.i):
			s.errorf(t.Pos, "unexpected token \"machine\", expected \"}\" to close %s (opened at %s)", what, short(open.Pos))
			return
		}
		s.chunk()
	}
}

// chunk takes the tokens of one item (or of several on one line) of a
// machine block.
func (s *syntaxScanner) chunk() {
	start := s.i
	depth := 0 // of field blocks
	stateBlock := s.at(start).Type == identToken && slices.Contains(stateKeywords, s.at(start).Value)
	// A state's block that the machine's braces show to be closed keeps
	// the lines that do not belong in it, to report them there.
	closed := stateBlock && s.closedBody
	for {
		t := s.peek()
		switch {
		case isPunct(t, "{"):
			depth++
		case isPunct(t, "}"):
			depth--
		}
		s.i++
		next := s.peek()
		if next.EOF() {
			break
		}
		if depth <= 0 {
			if isPunct(next, "}") || (s.startsLine(s.i) && s.startsItem(s.i)) {
				break
			}
		} else if isWord(s.at(start), "upgrade") || isWord(s.at(start), retiredUpgrade) {
			if s.startsLine(s.i) && s.endsUpgradeBlock(s.i) {
				break
			}
		} else if stateBlock {
			if s.startsLine(s.i) && (s.startsMachine(s.i) || !closed && s.endsStateBlock(s.i)) {
				break
			}
		} else if s.startsLine(s.i) && s.endsFieldBlock(s.i) {
			break
		}
	}
	s.chunks = append(s.chunks, chunk{toks: s.toks[start:s.i], next: s.peek()})
}

// chunkLexer hands the parser a chunk's tokens.
type chunkLexer struct {
	toks []lexer.Token
	i    int
}

func (l *chunkLexer) Next() (lexer.Token, error) {
	if l.i >= len(l.toks) {
		return l.toks[len(l.toks)-1], nil
	}
	l.i++
	return l.toks[l.i-1], nil
}

// parseChunk parses a chunk with the grammar, and returns its error.
func parseChunk(ch chunk) error {
	_, err := parseChunkItems(ch)
	return err
}

// parseChunkItems parses a chunk with the grammar, and returns its items.
func parseChunkItems(ch chunk) (*itemList, error) {
	toks := append(slices.Clone(ch.toks), lexer.Token{Type: lexer.EOF, Pos: ch.next.Pos})
	peeker, err := lexer.Upgrade(&chunkLexer{toks: toks})
	if err != nil {
		return nil, err
	}
	return chunkParser().ParseFromLexer(peeker)
}

// recognize returns the syntax error of a chunk the grammar rejected with
// err: the first token that does not fit, and what the language expected
// there. It falls back on the grammar's error when it finds none.
func recognize(src []byte, ch chunk, err error) Diagnostic {
	r := &recognizer{src: src, toks: ch.toks, end: ch.next}
	r.items()
	if r.failed {
		return Diagnostic{Pos: r.pos, Message: "syntax error: " + r.msg}
	}
	return participleDiagnostic("", src, err)
}

// recognizer walks the tokens of one chunk by the language's syntax and
// records the first token that does not fit.
type recognizer struct {
	src    []byte
	toks   []lexer.Token
	end    lexer.Token // the token after the chunk
	i      int
	failed bool
	pos    lexer.Position
	msg    string
}

func (r *recognizer) atEnd() bool { return r.i >= len(r.toks) }

func (r *recognizer) peekAt(k int) lexer.Token {
	if r.i+k < len(r.toks) {
		return r.toks[r.i+k]
	}
	return r.end
}

func (r *recognizer) peek() lexer.Token { return r.peekAt(0) }

func (r *recognizer) take() lexer.Token {
	t := r.peek()
	if !r.atEnd() {
		r.i++
	}
	return t
}

func (r *recognizer) fail(pos lexer.Position, format string, args ...any) {
	if !r.failed {
		r.failed, r.pos, r.msg = true, pos, fmt.Sprintf(format, args...)
	}
}

// unexpected reports the next token, saying what was expected instead.
// Past the chunk's end on the same line, it is the token after the chunk;
// on a later line, the end of the line.
func (r *recognizer) unexpected(want string) {
	t := r.peek()
	if r.atEnd() && !t.EOF() && len(r.toks) > 0 {
		if last := r.toks[len(r.toks)-1]; t.Pos.Line != last.Pos.Line {
			r.fail(endOf(last), "unexpected end of line, expected %s", want)
			return
		}
	}
	r.fail(t.Pos, "unexpected %s, expected %s", describeToken(t), want)
}

// startsItem reports whether the next token starts another item on the
// same line.
func (r *recognizer) startsItem() bool {
	t, next := r.peek(), r.peekAt(1)
	rowNext := next.Type == arrowToken || isPunct(next, ",")
	if r.atEnd() {
		return false
	}
	if t.Type == identToken && slices.Contains(declKeywords, t.Value) {
		return true
	}
	return (t.Type == identToken || isPunct(t, "*")) && rowNext
}

func (r *recognizer) items() {
	for !r.atEnd() && !r.failed {
		follow := r.item()
		if r.failed || r.atEnd() {
			return
		}
		if !r.startsItem() {
			r.unexpected(follow)
		}
	}
}

// item checks one item and returns what could have followed it.
func (r *recognizer) item() string {
	t, next := r.peek(), r.peekAt(1)
	if isPunct(t, "*") || next.Type == arrowToken || isPunct(next, ",") {
		return r.row()
	}
	if t.Type != identToken {
		r.unexpected(wantItem)
		return ""
	}
	switch t.Value {
	case "type":
		r.take()
		r.expect(stringToken, `the persisted type name, a quoted string: type "name"`)
		return wantItem
	case "version":
		r.take()
		r.expect(numberToken, "the definition version, a whole number: version 2")
		return wantItem
	case "package":
		r.take()
		r.expect(identToken, "a Go package name")
		return wantItem
	case "cancel":
		r.take()
		r.expect(identToken, "the name of the event that cancels a run: cancel EVENT")
		return wantItem
	case "initial", "state", "final":
		return r.state()
	case "event":
		return r.event()
	case "guard":
		r.take()
		r.expect(identToken, "a guard name")
		return wantItem
	case "action":
		r.take()
		r.expect(identToken, "an action name")
		return wantItem
	case "history":
		return r.history()
	case "deep":
		if isWord(next, "history") {
			return r.history()
		}
	case "upgrade":
		return r.upgrade()
	case retiredUpgrade:
		if isWord(next, "from") {
			r.fail(t.Pos, `"migrate from" is now "upgrade from": write upgrade from VERSION { ... } or upgrade from VERSION drain`)
			return ""
		}
	}
	return r.row()
}

// expect takes a token of type typ, or reports the one there.
func (r *recognizer) expect(typ lexer.TokenType, want string) bool {
	if r.peek().Type != typ || r.atEnd() {
		r.unexpected(want)
		return false
	}
	r.take()
	return true
}

func (r *recognizer) state() string {
	kind := r.take().Value
	name := r.peek().Value
	if !r.expect(identToken, "a state name") {
		return ""
	}
	status, outcome := false, false
	if t := r.peek(); t.Type == identToken && slices.Contains([]string{"succeeded", "failed", "cancelled"}, t.Value) {
		r.take()
		status = true
		if isWord(r.peek(), "outcome") {
			r.take()
			if !r.expect(stringToken, `the outcome, a quoted string: outcome "name"`) {
				return ""
			}
			outcome = true
		}
	}
	options := false
options:
	for !r.failed && !r.atEnd() {
		switch t := r.peek(); {
		case isWord(t, "wait"):
			r.take()
		case isWord(t, "retry"):
			r.retry()
		case isWord(t, "after"):
			r.timer()
		case isWord(t, "entry"), isWord(t, "exit"):
			r.take()
			r.expect(identToken, fmt.Sprintf("the name of the action: %s ACTION", t.Value))
		default:
			break options
		}
		options = true
	}
	if r.failed {
		return ""
	}
	if isPunct(r.peek(), "{") && !r.atEnd() {
		return r.children(name)
	}
	switch {
	case kind != "final" || options:
		return wantOption
	case !status:
		return wantStatus
	case !outcome:
		return `outcome "name" or the end of the declaration`
	}
	return wantItem
}

// children checks the block of composite state name, from its "{".
func (r *recognizer) children(name string) string {
	open := r.take()
	for !r.failed {
		t := r.peek()
		switch {
		case r.atEnd():
			last := r.toks[len(r.toks)-1]
			r.fail(endOf(last), "unexpected %s, expected \"}\" to close the block of state %s (opened at %s)", describeToken(t), name, short(open.Pos))
			if t.Pos.Line != last.Pos.Line {
				r.msg = fmt.Sprintf("the block of state %s (opened at %s) is not closed; add \"}\" after its last child", name, short(open.Pos))
			}
			return ""
		case isPunct(t, "}"):
			r.take()
			return wantItem
		case t.Type == identToken && slices.Contains(stateKeywords, t.Value):
			follow := r.state()
			if n := r.peek(); !r.failed && !r.atEnd() && !isPunct(n, "}") && !r.startsChild() && n.Pos.Line == r.toks[r.i-1].Pos.Line {
				r.unexpected(follow)
			}
		case isWord(t, "history"), isWord(t, "deep") && isWord(r.peekAt(1), "history"):
			r.history()
			if n := r.peek(); !r.failed && !r.atEnd() && !isPunct(n, "}") && !r.startsChild() && n.Pos.Line == r.toks[r.i-1].Pos.Line {
				r.unexpected(wantChild)
			}
		case isPunct(t, "*") || r.peekAt(1).Type == arrowToken || isPunct(r.peekAt(1), ","):
			r.fail(t.Pos, "transition rows are written at the machine level, not in the block of state %s; move this row below the block", name)
		case t.Type == identToken && slices.Contains(declKeywords, t.Value):
			r.fail(t.Pos, "%s declarations are written at the machine level, not in the block of state %s; move it below the block", t.Value, name)
		default:
			r.unexpected(wantChild)
		}
	}
	return ""
}

// startsChild reports whether the next token starts a child of a state's
// block.
func (r *recognizer) startsChild() bool {
	t := r.peek()
	return t.Type == identToken && (slices.Contains(stateKeywords, t.Value) || t.Value == "history" ||
		t.Value == "deep" && isWord(r.peekAt(1), "history"))
}

// history checks history NAME and deep history NAME.
func (r *recognizer) history() string {
	if isWord(r.peek(), "deep") {
		r.take()
	}
	r.take()
	r.expect(identToken, "the name of the history: history NAME")
	return wantItem
}

func (r *recognizer) retry() {
	r.take()
	t := r.peek()
	if isWord(t, "up") && !r.atEnd() {
		r.take()
		if !isWord(r.peek(), "to") || r.atEnd() {
			r.unexpected(`to: retry up to N, N the most attempts a run's policy may choose`)
			return
		}
		r.take()
		if t = r.peek(); t.Type != numberToken || r.atEnd() {
			r.unexpected("the most attempts a run's policy may choose: retry up to N")
			return
		}
	}
	switch {
	case r.atEnd():
		r.unexpected(wantRetry)
		return
	case t.Type == identToken && !slices.Contains(retryOptions, t.Value) && t.Value != "else":
		r.take()
		if o := r.peek(); !r.atEnd() && o.Type == identToken && slices.Contains(retryOptions, o.Value) {
			r.fail(o.Pos, "unexpected token %q: retry %s names a preset policy, which takes no options; write retry N with options instead", o.Value, t.Value)
			return
		}
	case t.Type == numberToken:
		r.take()
		last := -1
		for !r.failed && !r.atEnd() {
			o := r.peek()
			k := slices.Index(retryOptions, o.Value)
			if o.Type != identToken || k < 0 {
				break
			}
			if k <= last {
				r.outOfOrder(o, retryOptions[last])
				return
			}
			last = k
			r.take()
			switch o.Value {
			case "backoff", "max":
				r.duration()
			case "factor":
				r.expect(numberToken, "the backoff factor, a number: factor 2")
			case "jitter":
				r.expect(numberToken, "the jitter, a fraction between 0 and 1: jitter 0.2")
			case "nonretryable":
				if r.expect(stringToken, `the codes not to retry, quoted: nonretryable "CODE", ...`) {
					for isPunct(r.peek(), ",") && !r.atEnd() {
						r.take()
						if !r.expect(stringToken, "another quoted code") {
							return
						}
					}
				}
			}
		}
	default:
		r.unexpected(wantRetry)
		return
	}
	if r.failed || !isWord(r.peek(), "else") || r.atEnd() {
		return
	}
	r.take()
	if !r.expect(identToken, "the event fired when the policy gives up: else EVENT") {
		return
	}
	if o := r.peek(); !r.atEnd() && o.Type == identToken && slices.Contains(retryOptions, o.Value) {
		r.outOfOrder(o, "else")
	}
}

func (r *recognizer) outOfOrder(o lexer.Token, after string) {
	if o.Value == after {
		r.fail(o.Pos, "retry option %s given twice", o.Value)
		return
	}
	r.fail(o.Pos, "retry options come in the order backoff, factor, max, jitter, nonretryable, else: %s must come before %s", o.Value, after)
}

func (r *recognizer) timer() {
	r.take()
	if t := r.peek(); t.Type == identToken && !r.atEnd() {
		// after EVENT.field min D max D EVENT
		const syntax = "after EVENT.field min D max D EVENT"
		r.take()
		if !isPunct(r.peek(), ".") || r.atEnd() {
			r.unexpected(`a duration, or "." and a field: ` + syntax)
			return
		}
		r.take()
		if !r.expect(identToken, "the event's time.Duration field: "+syntax) {
			return
		}
		for _, bound := range []string{"min", "max"} {
			if !isWord(r.peek(), bound) || r.atEnd() {
				r.unexpected(fmt.Sprintf("%s and a duration: %s", bound, syntax))
				return
			}
			r.take()
			if !r.duration() {
				return
			}
		}
	} else if !r.duration() {
		return
	}
	r.expect(identToken, "the event the timer fires: after D EVENT")
}

// duration takes a duration, or reports why the next token is not one: a
// number without a unit, or a unit the language does not know.
func (r *recognizer) duration() bool {
	t := r.peek()
	if r.atEnd() || (t.Type != durationToken && t.Type != numberToken) {
		r.unexpected("a duration, a number with a unit (" + wantUnits + ") as in 30s")
		return false
	}
	// The word the duration is part of: tokens written without a space.
	word, end := t.Value, endOf(t)
	for k := 1; ; k++ {
		n := r.peekAt(k)
		if r.i+k >= len(r.toks) || n.Pos.Offset != end.Offset || (n.Type != identToken && n.Type != numberToken && n.Type != durationToken) {
			break
		}
		word, end = word+n.Value, endOf(n)
	}
	if word != t.Value {
		r.fail(t.Pos, "unknown unit %q in duration %s; a duration's units are %s", unknownUnit(word), word, wantUnits)
		return false
	}
	if t.Type == numberToken {
		r.fail(t.Pos, "duration %s has no unit; add one of %s, as in %ss", t.Value, wantUnits, t.Value)
		return false
	}
	r.take()
	return true
}

// unknownUnit returns the first unit of word, a number and unit pairs,
// that a duration may not have.
func unknownUnit(word string) string {
	isNum := func(r rune) bool { return r >= '0' && r <= '9' || r == '.' }
	for rest := word; rest != ""; {
		rest = strings.TrimLeftFunc(rest, isNum)
		i := strings.IndexFunc(rest, isNum)
		if i < 0 {
			i = len(rest)
		}
		if _, ok := durationUnits[rest[:i]]; !ok {
			return rest[:i]
		}
		rest = rest[i:]
	}
	return word
}

func (r *recognizer) event() string {
	r.take()
	name := r.peek().Value
	if !r.expect(identToken, "an event name") {
		return ""
	}
	external := isWord(r.peek(), "external") && !r.atEnd()
	if external {
		r.take()
	}
	if !isPunct(r.peek(), "{") || r.atEnd() {
		if external {
			return `"{" and the payload fields, or the end of the declaration`
		}
		return `external, "{" and the payload fields, or the end of the declaration`
	}
	open := r.take()
	for !r.failed {
		t := r.peek()
		switch {
		case r.atEnd():
			r.fail(t.Pos, "unexpected %s, expected \"}\" to close the fields of event %s (opened at %s)", describeToken(t), name, short(open.Pos))
		case isPunct(t, "}"):
			r.take()
			return wantItem
		case t.Type == identToken:
			r.take()
			if r.fieldType() && (isPunct(r.peek(), ";") || isPunct(r.peek(), ",")) && !r.atEnd() {
				r.take()
			}
		default:
			r.unexpected(`a field name or "}"`)
		}
	}
	return ""
}

// fieldType takes a field's type or reports it.
func (r *recognizer) fieldType() bool {
	start := r.i
	t := r.peek()
	if isPunct(t, "[") && !r.atEnd() {
		r.take()
		if !isPunct(r.peek(), "]") || r.atEnd() {
			r.unsupported(start)
			return false
		}
		r.take()
		t = r.peek()
	}
	switch {
	case r.atEnd():
		r.unexpected("the field's type: " + supportTypes)
		return false
	case t.Type == stringToken:
		r.take()
		if !isPunct(r.peek(), ".") || r.atEnd() {
			r.unexpected(`"." and the type's name: "import/path".Name`)
			return false
		}
		r.take()
		if !r.expect(identToken, `the type's name: "import/path".Name`) {
			return false
		}
	case t.Type == identToken:
		if slices.Contains([]string{"map", "chan", "func", "struct", "interface"}, t.Value) {
			r.unsupported(start)
			return false
		}
		r.take()
		if isPunct(r.peek(), ".") && !r.atEnd() {
			r.take()
			if !r.expect(identToken, "the type's name: time.Time") {
				return false
			}
		}
	default:
		r.unsupported(start)
		return false
	}
	if n := r.peek(); !r.atEnd() && (n.Type == punctToken && !slices.Contains([]string{";", ",", "}"}, n.Value) || n.Type == arrowToken) {
		r.unsupported(start)
		return false
	}
	return true
}

// unsupported reports the field type that starts at token start.
func (r *recognizer) unsupported(start int) {
	first := r.toks[start]
	last, depth := first, 0
	for j := start; j < len(r.toks) && r.toks[j].Pos.Line == first.Pos.Line; j++ {
		t := r.toks[j]
		if depth == 0 && j > start && t.Type == punctToken && slices.Contains([]string{";", ",", "}"}, t.Value) {
			break
		}
		switch {
		case isPunct(t, "["), isPunct(t, "{"):
			depth++
		case isPunct(t, "]"), isPunct(t, "}"):
			depth--
		}
		last = t
	}
	text := string(r.src[first.Pos.Offset:endOf(last).Offset])
	r.fail(first.Pos, "unsupported field type %s; want %s", text, supportTypes)
}

func (r *recognizer) row() string {
	for {
		if t := r.peek(); r.atEnd() || (t.Type != identToken && !isPunct(t, "*")) {
			r.unexpected("a state name or *")
			return ""
		}
		r.take()
		if !isPunct(r.peek(), ",") || r.atEnd() {
			break
		}
		r.take()
	}
	const syntax = "FROM -> TO on EVENT"
	if r.peek().Type != arrowToken || r.atEnd() {
		r.unexpected(`"->": a transition row reads ` + syntax)
		return ""
	}
	r.take()
	// In A -> on Go, the target is missing rather than the on.
	if isWord(r.peek(), "on") && !isWord(r.peekAt(1), "on") {
		r.unexpected("the target state: " + syntax)
		return ""
	}
	if !r.expect(identToken, "the target state: "+syntax) {
		return ""
	}
	follow := `"on", when GUARD, unless GUARD, outcome "name", internal or the end of the row`
	if isWord(r.peek(), "on") && !r.atEnd() {
		r.take()
		if !r.expect(identToken, "an event name") {
			return ""
		}
		for isPunct(r.peek(), ",") && !r.atEnd() {
			r.take()
			if !r.expect(identToken, "another event name: on EVENT, EVENT") {
				return ""
			}
		}
		follow = `when GUARD, unless GUARD, outcome "name", internal or the end of the row`
	} else if t := r.peek(); !r.atEnd() && t.Type == identToken && !slices.Contains([]string{"when", "unless", "outcome", "internal"}, t.Value) {
		// A word where the row's clauses go: most likely its event.
		r.unexpected(`"on": a transition row reads ` + syntax)
		return ""
	}
	if t := r.peek(); (isWord(t, "when") || isWord(t, "unless")) && !r.atEnd() {
		r.take()
		if isPunct(r.peek(), "!") && !r.atEnd() {
			r.take()
		}
		if !r.expect(identToken, "a guard name") {
			return ""
		}
		follow = `outcome "name", internal or the end of the row`
	}
	if isWord(r.peek(), "outcome") && !r.atEnd() {
		r.take()
		if !r.expect(stringToken, `the outcome, a quoted string: outcome "name"`) {
			return ""
		}
		follow = "internal or the end of the row"
	}
	if isWord(r.peek(), "internal") && !r.atEnd() {
		r.take()
		follow = "the end of the row"
	}
	return follow
}

// upgrade checks upgrade from N { RULES } and upgrade from N drain.
func (r *recognizer) upgrade() string {
	r.take()
	if !isWord(r.peek(), "from") || r.atEnd() {
		r.unexpected(`"from": upgrade from VERSION { ... }`)
		return ""
	}
	r.take()
	if !r.expect(numberToken, "the version runs are upgraded from, a whole number: upgrade from 1 { ... }") {
		return ""
	}
	if isWord(r.peek(), "drain") && !r.atEnd() {
		r.take()
		return wantItem
	}
	if !isPunct(r.peek(), "{") || r.atEnd() {
		r.unexpected(`"{" to open the upgrade rules, or drain`)
		return ""
	}
	r.take()
	for !r.failed {
		t := r.peek()
		switch {
		case r.atEnd():
			r.unexpected(wantUpgrade)
			return ""
		case isPunct(t, "}"):
			r.take()
			return wantItem
		case isWord(t, "default"):
			r.take()
			if !r.expect(identToken, "an event name: default EVENT.field VALUE") {
				return ""
			}
			if !isPunct(r.peek(), ".") || r.atEnd() {
				r.unexpected(`"." and a field name: default EVENT.field VALUE`)
				return ""
			}
			r.take()
			if !r.expect(identToken, "a field name: default EVENT.field VALUE") {
				return ""
			}
			if v := r.peek(); r.atEnd() || !(v.Type == stringToken || v.Type == numberToken || v.Type == durationToken || isWord(v, "true") || isWord(v, "false")) {
				r.unexpected("the default value: a quoted string, a number, a duration, true or false")
				return ""
			}
			r.take()
		case t.Type == identToken:
			r.take()
			if isWord(r.peek(), "drain") && !r.atEnd() {
				r.take()
				continue
			}
			if r.peek().Type != arrowToken || r.atEnd() {
				r.unexpected(`"->" or drain: an upgrade rule reads OLD -> NEW or OLD drain`)
				return ""
			}
			r.take()
			if !r.expect(identToken, "the state of the new version: OLD -> NEW") {
				return ""
			}
			if c := r.peek(); (isWord(c, "when") || isWord(c, "unless")) && !r.atEnd() {
				r.take()
				if !r.expect(identToken, "an event of the old version") {
					return ""
				}
			}
			if isWord(r.peek(), "timers") && !r.atEnd() {
				r.take()
				if !r.expect(identToken, "keep or restart") {
					return ""
				}
			}
		default:
			r.unexpected(wantUpgrade)
			return ""
		}
	}
	return ""
}
