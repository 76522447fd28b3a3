package admin

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fsmgen/fsmgen/runtime"
)

// ErrPayload is matched by errors.Is when an event's payload does not fit
// the fields the registered definition declares for the event.
var ErrPayload = errors.New("payload does not fit the event")

// CheckPayload checks payload, the JSON of an event's payload, against the
// fields ev declares, as the machine's generated decoder would read it: an
// empty payload or null is the event without fields; otherwise it must be
// one JSON object, each key one of the event's fields (spelt as declared),
// each value of the field's Go type: a string for string, a number in range
// for the integer and float types (an integer literal for the integers,
// nanoseconds for time.Duration), true or false for bool, an RFC 3339
// string for time.Time, base64 for []byte, an array of such values for []T,
// and any JSON for json.RawMessage. null is accepted for every field, as
// Go's decoder does (the field keeps its zero value), and so is a field
// left out. A field of a named type from another package
// ("example.com/money".Amount) cannot be checked without its Go code: a
// value for it is refused, and the event must be signalled from the
// machine's process. The error names the event and the field.
func CheckPayload(ev runtime.EventSpec, payload []byte) error {
	if len(bytes.TrimSpace(payload)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("%w: event %s: not JSON: %v", ErrPayload, ev.Name, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: event %s: unexpected data after the payload's JSON value", ErrPayload, ev.Name)
	}
	if v == nil {
		return nil
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("%w: event %s: want a JSON object of its fields, got %s", ErrPayload, ev.Name, kindOf(v))
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		i := slices.IndexFunc(ev.Fields, func(f runtime.FieldSpec) bool { return f.Name == k })
		if i < 0 {
			return fmt.Errorf("%w: event %s has no field %q (%s)", ErrPayload, ev.Name, k, fieldList(ev))
		}
		f := ev.Fields[i]
		if err := checkValue(f.Type, obj[k]); err != nil {
			return fmt.Errorf("%w: event %s: field %s (%s): %v", ErrPayload, ev.Name, f.Name, f.Type, err)
		}
	}
	return nil
}

// fieldList names an event's fields for an error message.
func fieldList(ev runtime.EventSpec) string {
	if len(ev.Fields) == 0 {
		return "it has none"
	}
	names := make([]string, len(ev.Fields))
	for i, f := range ev.Fields {
		names[i] = f.Name + " " + f.Type
	}
	return "its fields: " + strings.Join(names, ", ")
}

// intBits are the integer types and their sizes; unsigned ones are
// marked by a negative size.
var intBits = map[string]int{
	"int": 64, "int8": 8, "int16": 16, "int32": 32, "int64": 64, "rune": 32, "time.Duration": 64,
	"uint": -64, "uint8": -8, "uint16": -16, "uint32": -32, "uint64": -64, "byte": -8,
}

func checkValue(typ string, v any) error {
	if v == nil {
		return nil // Go's decoder leaves the field as it is
	}
	if elem, ok := strings.CutPrefix(typ, "[]"); ok {
		if elem == "byte" || elem == "uint8" {
			s, ok := v.(string)
			if !ok {
				return fmt.Errorf("want a base64 string, got %s", kindOf(v))
			}
			if _, err := base64.StdEncoding.DecodeString(s); err != nil {
				return fmt.Errorf("want a base64 string: %v", err)
			}
			return nil
		}
		arr, ok := v.([]any)
		if !ok {
			return fmt.Errorf("want an array, got %s", kindOf(v))
		}
		for i, e := range arr {
			if err := checkValue(elem, e); err != nil {
				return fmt.Errorf("element %d: %v", i, err)
			}
		}
		return nil
	}
	switch typ {
	case "string":
		if _, ok := v.(string); !ok {
			return fmt.Errorf("want a string, got %s", kindOf(v))
		}
	case "bool":
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("want true or false, got %s", kindOf(v))
		}
	case "float32", "float64":
		n, ok := v.(json.Number)
		if !ok {
			return fmt.Errorf("want a number, got %s", kindOf(v))
		}
		bits := 64
		if typ == "float32" {
			bits = 32
		}
		if _, err := strconv.ParseFloat(string(n), bits); err != nil {
			return fmt.Errorf("%s is out of range", n)
		}
	case "time.Time":
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("want an RFC 3339 time string, got %s", kindOf(v))
		}
		if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
			return fmt.Errorf("want an RFC 3339 time such as 2026-03-14T09:26:53Z, got %q", s)
		}
	case "json.RawMessage":
		// any JSON value
	default:
		bits, ok := intBits[typ]
		if !ok {
			return fmt.Errorf("a value of type %s cannot be checked without the machine's Go code: leave the field out, or signal the event from the machine's process", typ)
		}
		n, ok := v.(json.Number)
		if !ok {
			return fmt.Errorf("want an integer, got %s", kindOf(v))
		}
		var err error
		if bits < 0 {
			_, err = strconv.ParseUint(string(n), 10, -bits)
		} else {
			_, err = strconv.ParseInt(string(n), 10, bits)
		}
		if err != nil {
			if errors.Is(err, strconv.ErrRange) {
				return fmt.Errorf("%s is out of range", n)
			}
			return fmt.Errorf("want an integer, got %s", n)
		}
	}
	return nil
}

// kindOf names the JSON kind of a decoded value.
func kindOf(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return strconv.FormatBool(v)
	case json.Number:
		return "the number " + string(v)
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
