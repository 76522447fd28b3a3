package pgstore

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/internal/diag"
)

// Limits bounds what the store accepts from callers, so that a bad payload
// fails at once with runtime.ErrInvalidInput instead of in the
// database, or worse, being stored and reloaded at every step of the run.
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

var defaultLimits = Limits{MaxPayload: DefaultMaxPayload, MaxKey: DefaultMaxKey}

// CheckText checks a name or key the caller gives: no longer than
// MaxKey, valid UTF-8, and free of NUL bytes, which PostgreSQL's text type
// cannot hold.
func (db *DB) CheckText(what, v string) error {
	switch {
	case len(v) > db.limits.MaxKey:
		return fmt.Errorf("%w: %s is %d bytes, over the limit of %d: %s", runtime.ErrInvalidInput, what, len(v), db.limits.MaxKey, diag.Quote(v))
	case !utf8.ValidString(v):
		return fmt.Errorf("%w: %s is not valid UTF-8: %s", runtime.ErrInvalidInput, what, diag.Quote(v))
	case strings.IndexByte(v, 0) >= 0:
		return fmt.Errorf("%w: %s holds a NUL byte, which PostgreSQL cannot store: %s", runtime.ErrInvalidInput, what, diag.Quote(v))
	}
	return nil
}

// EncodeJSON encodes v for a JSONB column (runtime.EncodeJSON) and checks the
// result against the store's limits and what PostgreSQL can store: valid
// UTF-8 and no NUL character (\u0000) in any string.
func (db *DB) EncodeJSON(what string, v any) ([]byte, error) {
	b, err := runtime.EncodeJSON(what, v)
	if err != nil || b == nil {
		return b, err
	}
	// encoding/json writes a string that is not UTF-8 with U+FFFD in
	// place of its bad bytes: refuse it rather than store another text.
	if bad, ok := invalidString(reflect.ValueOf(v), 0); ok {
		return nil, fmt.Errorf("%w: %s holds a string that is not valid UTF-8: %s", runtime.ErrInvalidInput, what, diag.Quote(bad))
	}
	if err := db.CheckJSON(what, b); err != nil {
		return nil, err
	}
	return b, nil
}

func (db *DB) CheckJSON(what string, b []byte) error {
	if len(b) > db.limits.MaxPayload {
		return fmt.Errorf("%w: %s is %d bytes of JSON, over the limit of %d: %s", runtime.ErrInvalidInput, what, len(b), db.limits.MaxPayload, diag.Quote(string(b)))
	}
	if !utf8.Valid(b) {
		return fmt.Errorf("%w: %s is not valid UTF-8: %s", runtime.ErrInvalidInput, what, diag.Quote(string(b)))
	}
	if at := nulEscape(b); at >= 0 {
		return fmt.Errorf("%w: %s holds a NUL character (\\u0000), which PostgreSQL cannot store, at byte %d: %s",
			runtime.ErrInvalidInput, what, at, diag.Quote(string(b[at:])))
	}
	if at := loneSurrogate(b); at >= 0 {
		return fmt.Errorf("%w: %s holds a \\u escape of a lone UTF-16 surrogate, which is no character, at byte %d: %s",
			runtime.ErrInvalidInput, what, at, diag.Quote(string(b[at:])))
	}
	return nil
}

// loneSurrogate returns the offset of the first \u escape in the JSON text
// b of a UTF-16 surrogate that is not half of a pair (a high one followed
// by a low one), or -1. PostgreSQL refuses such a document.
func loneSurrogate(b []byte) int {
	hex4 := func(i int) (rune, bool) {
		if i+6 > len(b) || b[i] != '\\' || b[i+1] != 'u' {
			return 0, false
		}
		n, err := strconv.ParseUint(string(b[i+2:i+6]), 16, 16)
		return rune(n), err == nil
	}
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], '\\')
		if j < 0 {
			return -1
		}
		i += j
		r, ok := hex4(i)
		switch {
		case !ok:
			i += 2 // skip the escaped character
			continue
		case 0xD800 <= r && r <= 0xDBFF:
			if lo, ok := hex4(i + 6); ok && 0xDC00 <= lo && lo <= 0xDFFF {
				i += 12
				continue
			}
			return i
		case 0xDC00 <= r && r <= 0xDFFF:
			return i
		}
		i += 6
	}
}

// invalidString returns the first string in v (a value about to be encoded
// to JSON: its strings, map keys and the fields of its structs, through
// pointers, interfaces, slices and arrays) that is not valid UTF-8. A value
// that encodes itself (json.Marshaler, encoding.TextMarshaler) is not
// looked into: its output is checked as JSON text.
func invalidString(v reflect.Value, depth int) (string, bool) {
	if !v.IsValid() || depth > 64 {
		return "", false
	}
	if v.Type().Implements(marshalerType) || v.Type().Implements(textMarshalerType) {
		return "", false
	}
	switch v.Kind() {
	case reflect.String:
		if s := v.String(); !utf8.ValidString(s) {
			return s, true
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return invalidString(v.Elem(), depth+1)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				if s, bad := invalidString(v.Field(i), depth+1); bad {
					return s, true
				}
			}
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			if s, bad := invalidString(it.Key(), depth+1); bad {
				return s, true
			}
			if s, bad := invalidString(it.Value(), depth+1); bad {
				return s, true
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return "", false // []byte: base64
		}
		for i := range v.Len() {
			if s, bad := invalidString(v.Index(i), depth+1); bad {
				return s, true
			}
		}
	}
	return "", false
}

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

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
