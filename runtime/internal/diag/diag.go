// Package diag shapes the text of inputs and errors for diagnostics: the
// store and the engine quote at most a short prefix of an input in their
// error messages, and make the error codes and details they store storable.
package diag

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// QuoteLen is how much of an input an error message quotes, in bytes.
const QuoteLen = 32

// Quote quotes at most the first QuoteLen bytes of s (whole runes), with
// "…" after it when s is longer.
func Quote(s string) string {
	if len(s) <= QuoteLen {
		return strconv.Quote(s)
	}
	cut := QuoteLen
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "…"
}

// Short is s for an error's operation name: as is when it is short and
// plain, else quoted by Quote.
func Short(s string) string {
	if len(s) <= QuoteLen && utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return s
	}
	return Quote(s)
}

// Sanitize makes diagnostic text (an error's code or detail) storable as
// it is: invalid UTF-8 and NUL bytes become U+FFFD. The store applies it to
// a result's error code and detail, and the engine to the errors it logs,
// rather than refuse a failure for the text of its error.
func Sanitize(s string) string {
	if utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}
