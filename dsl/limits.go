package dsl

import (
	"fmt"
	"unicode/utf8"

	"github.com/alecthomas/participle/v2/lexer"
)

// The limits of a .fsm file. Parse refuses a file beyond any of them with
// one positioned diagnostic, before the parser builds anything, so that the
// memory a file takes stays linear in its size and small.
const (
	// MaxFileSize is the largest .fsm file, in bytes (4 MiB).
	MaxFileSize = 4 << 20
	// MaxNameLength is the longest name (of a machine, state, event, guard
	// or field), in bytes.
	MaxNameLength = 255
	// MaxStringLength is the longest string literal, in bytes, quotes
	// included.
	MaxStringLength = 4096
	// MaxTokens is the most tokens (comments and white space apart) a
	// file may hold.
	MaxTokens = 250_000
	// MaxItems is the most declarations and transition rows a file may
	// hold, all machines together.
	MaxItems = 50_000
	// MaxNesting is the deepest nesting of braces: the language nests two
	// deep (a machine, an event's fields or an upgrade block).
	MaxNesting = 4
	// MaxErrors is the most invalid characters, and the most syntax
	// errors, reported: reading stops after them.
	MaxErrors = 100
)

// itemKeywords are the keywords that start a declaration.
var itemKeywords = map[string]bool{
	"type": true, "version": true, "package": true, "cancel": true, "initial": true, "state": true,
	"final": true, "event": true, "guard": true, "upgrade": true,
}

// overLimit returns the diagnostic of the first limit src exceeds. It lexes
// src once, in linear time and constant memory; a character the lexer
// cannot read is skipped, the parser reports it.
func overLimit(filename string, src []byte) (Diagnostic, bool) {
	pos := lexer.Position{Filename: filename, Line: 1, Column: 1}
	if len(src) > MaxFileSize {
		return Diagnostic{Pos: pos, Message: fmt.Sprintf("file of %d bytes exceeds the limit of %d bytes", len(src), MaxFileSize)}, true
	}
	text := string(src)
	depth, tokens, items := 0, 0, 0
	for rest := text; len(rest) > 0; {
		rule, n := match(rest)
		if n == 0 {
			_, n = utf8.DecodeRuneInString(rest)
		}
		span := rest[:n]
		at := pos
		pos.Advance(span)
		rest = rest[n:]
		fail := ""
		switch rule {
		case ruleWhitespace, ruleComment:
			continue
		case ruleIdent:
			if len(span) > MaxNameLength {
				fail = fmt.Sprintf("name of %d bytes exceeds the limit of %d bytes", len(span), MaxNameLength)
			} else if depth == 1 && itemKeywords[span] {
				items++
			}
		case ruleString:
			if len(span) > MaxStringLength {
				fail = fmt.Sprintf("string of %d bytes exceeds the limit of %d bytes", len(span), MaxStringLength)
			}
		case ruleArrow:
			if depth == 1 {
				items++
			}
		case rulePunct:
			switch span {
			case "{":
				if depth++; depth > MaxNesting {
					fail = fmt.Sprintf("blocks nested deeper than %d", MaxNesting)
				}
			case "}":
				depth = max(depth-1, 0)
			}
		}
		if tokens++; tokens > MaxTokens {
			fail = fmt.Sprintf("more than %d tokens in the file", MaxTokens)
		}
		if items > MaxItems {
			fail = fmt.Sprintf("more than %d declarations and rows in the file", MaxItems)
		}
		if fail != "" {
			return Diagnostic{Pos: at, Message: fail}, true
		}
	}
	return Diagnostic{}, false
}
