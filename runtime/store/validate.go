package store

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits bounds what the store accepts from callers, so that a bad payload
// fails at once with ErrInvalidInput instead of in the database, or worse,
// being stored and reloaded at every step of the run.
type Limits struct {
	// MaxPayload is the size in bytes of one JSON document once encoded: a
	// run's input or policy snapshot, an event's payload, a step's or a
	// message's payload, a result's output. Default 1 MiB.
	MaxPayload int
	// MaxKey is the size in bytes of an idempotency key, and of the other
	// names a caller gives: type, tenant id, step name, topic, error code.
	// Default 512.
	MaxKey int
}

// The default limits.
const (
	DefaultMaxPayload = 1 << 20
	DefaultMaxKey     = 512
)

// WithLimits sets the store's limits; a zero field keeps its default.
func WithLimits(l Limits) Option {
	return func(s *Store) {
		if l.MaxPayload > 0 {
			s.limits.MaxPayload = l.MaxPayload
		}
		if l.MaxKey > 0 {
			s.limits.MaxKey = l.MaxKey
		}
	}
}

var defaultLimits = Limits{MaxPayload: DefaultMaxPayload, MaxKey: DefaultMaxKey}

// quoteLen is how much of an input an error message quotes.
const quoteLen = 32

// quote quotes at most the first quoteLen bytes of s (whole runes), with
// "…" after it when s is longer.
func quote(s string) string {
	if len(s) <= quoteLen {
		return strconv.Quote(s)
	}
	cut := quoteLen
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "…"
}

// short is s for an error's operation name: as is when it is short and
// plain, else quoted by quote.
func short(s string) string {
	if len(s) <= quoteLen && utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return s
	}
	return quote(s)
}

// checkText checks a name or key the caller gives: no longer than
// MaxKey, valid UTF-8, and free of NUL bytes, which PostgreSQL's text type
// cannot hold.
func (s *Store) checkText(what, v string) error {
	switch {
	case len(v) > s.limits.MaxKey:
		return fmt.Errorf("%w: %s is %d bytes, over the limit of %d: %s", ErrInvalidInput, what, len(v), s.limits.MaxKey, quote(v))
	case !utf8.ValidString(v):
		return fmt.Errorf("%w: %s is not valid UTF-8: %s", ErrInvalidInput, what, quote(v))
	case strings.IndexByte(v, 0) >= 0:
		return fmt.Errorf("%w: %s holds a NUL byte, which PostgreSQL cannot store: %s", ErrInvalidInput, what, quote(v))
	}
	return nil
}

// encodeJSON encodes v for a JSONB column (see marshalJSON) and checks the
// result against the store's limits and what PostgreSQL can store: valid
// UTF-8 and no NUL character (\u0000) in any string.
func (s *Store) encodeJSON(what string, v any) ([]byte, error) {
	b, err := marshalJSON(what, v)
	if err != nil || b == nil {
		return b, err
	}
	if err := s.checkJSON(what, b); err != nil {
		return nil, err
	}
	return b, nil
}

func (s *Store) checkJSON(what string, b []byte) error {
	if len(b) > s.limits.MaxPayload {
		return fmt.Errorf("%w: %s is %d bytes of JSON, over the limit of %d: %s", ErrInvalidInput, what, len(b), s.limits.MaxPayload, quote(string(b)))
	}
	if !utf8.Valid(b) {
		return fmt.Errorf("%w: %s is not valid UTF-8: %s", ErrInvalidInput, what, quote(string(b)))
	}
	if at := nulEscape(b); at >= 0 {
		return fmt.Errorf("%w: %s holds a NUL character (\\u0000), which PostgreSQL cannot store, at byte %d: %s",
			ErrInvalidInput, what, at, quote(string(b[at:])))
	}
	return nil
}

// nulEscape returns the offset of the first \u0000 escape in the JSON
// text b, or -1. A backslash escaped itself ("\\u0000") is no NUL.
func nulEscape(b []byte) int {
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], '\\')
		if j < 0 {
			return -1
		}
		i += j
		if i+1 >= len(b) {
			return -1
		}
		if b[i+1] == 'u' && i+6 <= len(b) && string(b[i+2:i+6]) == "0000" {
			return i
		}
		i += 2 // skip the escaped character
	}
}

// sanitize makes diagnostic text (an error's code or detail) storable as
// it is: invalid UTF-8 and NUL bytes become U+FFFD. The store applies it to
// Result.ErrorCode and Result.ErrorDetail, and the engine to the errors it
// logs, rather than refuse a failure for the text of its error.
func sanitize(s string) string {
	if utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}
