package admin_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/admin"
)

func TestCheckPayload(t *testing.T) {
	t.Parallel()
	ev := runtime.EventSpec{Name: "E", Fields: []runtime.FieldSpec{
		{Name: "s", Type: "string"}, {Name: "n", Type: "int8"}, {Name: "u", Type: "uint"}, {Name: "f", Type: "float32"},
		{Name: "b", Type: "bool"}, {Name: "at", Type: "time.Time"}, {Name: "d", Type: "time.Duration"},
		{Name: "raw", Type: "[]byte"}, {Name: "tags", Type: "[]string"}, {Name: "doc", Type: "json.RawMessage"},
		{Name: "amount", Type: "money.Amount"},
	}}
	tests := []struct{ payload, err string }{
		{``, ""},
		{`null`, ""},
		{`{}`, ""},
		{`{"s":"x","n":-128,"u":7,"f":1.5,"b":true,"at":"2026-03-14T09:26:53Z","d":1000000000,"raw":"aGk=","tags":["a"],"doc":{"any":[1]},"amount":null}`, ""},
		{`{"s":null,"tags":null}`, ""},
		{`{"s":1}`, "payload does not fit the event: event E: field s (string): want a string, got the number 1"},
		{`{"n":128}`, "payload does not fit the event: event E: field n (int8): 128 is out of range"},
		{`{"n":1.5}`, "payload does not fit the event: event E: field n (int8): want an integer, got 1.5"},
		{`{"u":-1}`, "payload does not fit the event: event E: field u (uint): want an integer, got -1"},
		{`{"f":1e39}`, "payload does not fit the event: event E: field f (float32): 1e39 is out of range"},
		{`{"b":"yes"}`, "payload does not fit the event: event E: field b (bool): want true or false, got a string"},
		{`{"at":"yesterday"}`, `payload does not fit the event: event E: field at (time.Time): want an RFC 3339 time such as 2026-03-14T09:26:53Z, got "yesterday"`},
		{`{"d":"1s"}`, "payload does not fit the event: event E: field d (time.Duration): want an integer, got a string"},
		{`{"raw":"***"}`, "payload does not fit the event: event E: field raw ([]byte): want a base64 string: illegal base64 data at input byte 0"},
		{`{"tags":["a",2]}`, "payload does not fit the event: event E: field tags ([]string): element 1: want a string, got the number 2"},
		{`{"amount":{"units":1}}`, "payload does not fit the event: event E: field amount (money.Amount): a value of type money.Amount cannot be checked without the machine's Go code: leave the field out, or signal the event from the machine's process"},
		{`{"S":"x"}`, `payload does not fit the event: event E has no field "S" (its fields: s string, n int8, u uint, f float32, b bool, at time.Time, d time.Duration, raw []byte, tags []string, doc json.RawMessage, amount money.Amount)`},
		{`"x"`, "payload does not fit the event: event E: want a JSON object of its fields, got a string"},
		{`{} {}`, "payload does not fit the event: event E: unexpected data after the payload's JSON value"},
		{`{`, "payload does not fit the event: event E: not JSON: unexpected EOF"},
	}
	for _, tt := range tests {
		var got string
		if err := admin.CheckPayload(ev, []byte(tt.payload)); err != nil {
			got = err.Error()
		}
		if diff := cmp.Diff(tt.err, got); diff != "" {
			t.Errorf("CheckPayload(%s) (-want +got):\n%s", tt.payload, diff)
		}
	}
	if err := admin.CheckPayload(runtime.EventSpec{Name: "Bare"}, []byte(`{"x":1}`)); err == nil || err.Error() != `payload does not fit the event: event Bare has no field "x" (it has none)` {
		t.Errorf("an event without fields: %v", err)
	}
}
