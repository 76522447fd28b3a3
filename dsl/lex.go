package dsl

import (
	"fmt"
	"io"
	"strings"

	"github.com/alecthomas/participle/v2/lexer"
)

// lexRules are the tokens of the language, as regular expressions tried in
// order at each position (the first that matches wins). fsmLexer lexes
// them by hand, for speed; ruleLexer, built from the same rules by
// participle, is the reference that the tests hold fsmLexer to.
var lexRules = []lexer.SimpleRule{
	{Name: "Comment", Pattern: `//[^\n]*`},
	{Name: "String", Pattern: `"(\\.|[^"\\\n])*"`},
	{Name: "Duration", Pattern: `[0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h|d)([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h|d))*`},
	{Name: "Number", Pattern: `[0-9]+(\.[0-9]+)?`},
	{Name: "Ident", Pattern: `[A-Za-z_][A-Za-z0-9_]*`},
	{Name: "Arrow", Pattern: `->`},
	{Name: "Punct", Pattern: `[{}\[\]();,.*!]`},
	{Name: "Whitespace", Pattern: `[ \t\r\n]+`},
}

var ruleLexer = lexer.MustSimple(lexRules)

// fsmLexer is the lexer of .fsm files: the tokens of lexRules, with
// participle's token types, values, positions and errors.
var fsmLexer = newHandLexer(ruleLexer.Symbols())

func newHandLexer(symbols map[string]lexer.TokenType) *handLexer {
	d := &handLexer{symbols: symbols}
	for i, r := range lexRules {
		d.types[i] = symbols[r.Name]
	}
	return d
}

// The token types, in the order of lexRules.
const (
	ruleComment = iota
	ruleString
	ruleDuration
	ruleNumber
	ruleIdent
	ruleArrow
	rulePunct
	ruleWhitespace
)

type handLexer struct {
	symbols map[string]lexer.TokenType
	types   [ruleWhitespace + 1]lexer.TokenType // by rule
}

var (
	_ lexer.Definition       = (*handLexer)(nil)
	_ lexer.StringDefinition = (*handLexer)(nil)
	_ lexer.BytesDefinition  = (*handLexer)(nil)
)

func (d *handLexer) Symbols() map[string]lexer.TokenType { return d.symbols }

func (d *handLexer) Lex(filename string, r io.Reader) (lexer.Lexer, error) {
	var b strings.Builder
	if _, err := io.Copy(&b, r); err != nil {
		return nil, err
	}
	return d.LexString(filename, b.String())
}

func (d *handLexer) LexBytes(filename string, input []byte) (lexer.Lexer, error) {
	return d.LexString(filename, string(input))
}

func (d *handLexer) LexString(filename string, input string) (lexer.Lexer, error) {
	return &handLexerState{def: d, data: input, pos: lexer.Position{Filename: filename, Line: 1, Column: 1}}, nil
}

type handLexerState struct {
	def  *handLexer
	data string
	pos  lexer.Position
}

func isDigit(c byte) bool      { return '0' <= c && c <= '9' }
func isIdentStart(c byte) bool { return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isIdentPart(c byte) bool  { return isIdentStart(c) || isDigit(c) }

// digits returns the length of the run of digits at the start of s.
func digits(s string) int {
	n := 0
	for n < len(s) && isDigit(s[n]) {
		n++
	}
	return n
}

// number returns the length of [0-9]+(\.[0-9]+)? at the start of s, or 0.
func number(s string) int {
	n := digits(s)
	if n == 0 {
		return 0
	}
	if n+1 < len(s) && s[n] == '.' && isDigit(s[n+1]) {
		n += 1 + digits(s[n+1:])
	}
	return n
}

// unit returns the length of the first of ns, us, µs, ms, s, m, h and d
// that starts s, or 0.
func unit(s string) int {
	for _, u := range [...]string{"ns", "us", "µs", "ms", "s", "m", "h", "d"} {
		if strings.HasPrefix(s, u) {
			return len(u)
		}
	}
	return 0
}

// duration returns the length of a Duration token at the start of s, or 0:
// a number and a unit, repeated as long as both follow.
func duration(s string) int {
	total := 0
	for {
		n := number(s[total:])
		if n == 0 {
			return total
		}
		u := unit(s[total+n:])
		if u == 0 {
			return total
		}
		total += n + u
	}
}

// match returns the rule that matches at the start of s, first in the
// order of lexRules, and the length of its match; n is 0 when none does.
func match(s string) (rule, n int) {
	c := s[0]
	switch {
	case c == '/':
		if len(s) > 1 && s[1] == '/' {
			if i := strings.IndexByte(s, '\n'); i >= 0 {
				return ruleComment, i
			}
			return ruleComment, len(s)
		}
	case c == '"':
		for i := 1; i < len(s); i++ {
			switch s[i] {
			case '"':
				return ruleString, i + 1
			case '\n':
				return 0, 0
			case '\\':
				// \\. : any character but a newline after the backslash.
				if i+1 >= len(s) || s[i+1] == '\n' {
					return 0, 0
				}
				i++
				// Skip the rest of a multi-byte character.
				for i+1 < len(s) && s[i+1]&0xC0 == 0x80 {
					i++
				}
			}
		}
	case isDigit(c):
		if n := duration(s); n > 0 {
			return ruleDuration, n
		}
		return ruleNumber, number(s)
	case isIdentStart(c):
		n := 1
		for n < len(s) && isIdentPart(s[n]) {
			n++
		}
		return ruleIdent, n
	case c == '-':
		if len(s) > 1 && s[1] == '>' {
			return ruleArrow, 2
		}
	case strings.IndexByte("{}[]();,.*!", c) >= 0:
		return rulePunct, 1
	case c == ' ' || c == '\t' || c == '\r' || c == '\n':
		n := 1
		for n < len(s) && (s[n] == ' ' || s[n] == '\t' || s[n] == '\r' || s[n] == '\n') {
			n++
		}
		return ruleWhitespace, n
	}
	return 0, 0
}

func (l *handLexerState) Next() (lexer.Token, error) {
	if len(l.data) == 0 {
		return lexer.EOFToken(l.pos), nil
	}
	rule, n := match(l.data)
	if n == 0 {
		// The first 16 characters: a conversion of the whole rest
		// would cost the length of the input per error.
		sample, i := l.data, 0
		for k := range sample {
			if i == 16 {
				sample = sample[:k] + "..."
				break
			}
			i++
		}
		return lexer.Token{}, &lexer.Error{Msg: fmt.Sprintf("lexer: invalid input text %q", sample), Pos: l.pos}
	}
	span := l.data[:n]
	l.data = l.data[n:]
	pos := l.pos
	l.pos.Advance(span)
	return lexer.Token{Type: l.def.types[rule], Value: span, Pos: pos}, nil
}
