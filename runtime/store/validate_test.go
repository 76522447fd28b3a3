package store_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// Payloads and keys PostgreSQL cannot store, or that are over the limits,
// are refused before the database sees them, with ErrInvalidInput and a
// message that quotes a short prefix of the input at most.
func TestBadInputIsRefusedAtTheBoundary(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	run := e.start(t, "k").Run
	huge := strings.Repeat("x", 20<<20)
	bigKey := strings.Repeat("k", 1<<20)
	start := func(key string, input any) error {
		_, err := e.st.Start(e.ctx, runtime.StartRequest{Type: "order", Version: 1, IdempotencyKey: key, Owner: runtime.Owner{TenantID: "t1"}, Input: input})
		return err
	}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"NUL in a start's input", start("nul", map[string]string{"note": "a\x00b"}),
			`store: start order/nul: invalid input: input holds a NUL character (\u0000), which PostgreSQL cannot store, at byte 10: "\\u0000b\"}"`},
		{"NUL in a raw input", start("raw", json.RawMessage(`{"note":"\u0000"}`)),
			`store: start order/raw: invalid input: input holds a NUL character (\u0000), which PostgreSQL cannot store, at byte 9: "\\u0000\"}"`},
		{"invalid UTF-8 in a raw input", start("utf8", json.RawMessage("{\"note\":\"\xff\"}")),
			`store: start order/utf8: invalid input: input is not valid UTF-8: "{\"note\":\"\xff\"}"`},
		{"20 MB input", start("big", map[string]string{"blob": huge}),
			`store: start order/big: invalid input: input is 20971531 bytes of JSON, over the limit of 1048576: "{\"blob\":\"xxxxxxxxxxxxxxxxxxxxxxx"…`},
		{"1 MB key", start(bigKey, nil),
			`store: start order/"kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk"…: invalid input: idempotency key is 1048576 bytes, over the limit of 512: "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk"…`},
		{"NUL in a key", start("a\x00b", nil),
			`store: start order/"a\x00b": invalid input: idempotency key holds a NUL byte, which PostgreSQL cannot store: "a\x00b"`},
		{"NUL in an event", recordErr(e, run, map[string]string{"worker": "\x00"}),
			`store: record run ` + run.ID + `: invalid input: payload of Begin holds a NUL character (\u0000), which PostgreSQL cannot store, at byte 11: "\\u0000\"}"`},
		{"20 MB event", recordErr(e, run, map[string]string{"worker": huge}),
			`store: record run ` + run.ID + `: invalid input: payload of Begin is 20971533 bytes of JSON, over the limit of 1048576: "{\"worker\":\"xxxxxxxxxxxxxxxxxxxxx"…`},
		{"NUL in a step's payload", logStepErr(e, run.ID, "probe", "\x00"),
			`store: log step probe run ` + run.ID + `: invalid input: payload of step probe holds a NUL character (\u0000), which PostgreSQL cannot store, at byte 1: "\\u0000\""`},
		{"NUL in a message's payload", emitErr(e, run.ID, "topic", []string{"\x00"}),
			`store: emit topic run ` + run.ID + `: invalid input: payload of message topic holds a NUL character (\u0000), which PostgreSQL cannot store, at byte 2: "\\u0000\"]"`},
		{"NUL in a topic", emitErr(e, run.ID, "to\x00pic", nil),
			`store: emit "to\x00pic" run ` + run.ID + `: invalid input: topic holds a NUL byte, which PostgreSQL cannot store: "to\x00pic"`},
		{"lone high surrogate in a raw input", start("hi", json.RawMessage(`{"note":"\ud800"}`)),
			`store: start order/hi: invalid input: input holds a \u escape of a lone UTF-16 surrogate, which is no character, at byte 9: "\\ud800\"}"`},
		{"lone low surrogate in an event", recordErr(e, run, json.RawMessage(`{"worker":"x\udc00y"}`)),
			`store: record run ` + run.ID + `: invalid input: payload of Begin holds a \u escape of a lone UTF-16 surrogate, which is no character, at byte 12: "\\udc00y\"}"`},
		{"invalid UTF-8 in a Go string", start("gostr", map[string]string{"note": "a\xffb"}),
			`store: start order/gostr: invalid input: input holds a string that is not valid UTF-8: "a\xffb"`},
		{"invalid UTF-8 in a Go map key", logStepErr(e, run.ID, "probe", map[string]int{"\xfe": 1}),
			`store: log step probe run ` + run.ID + `: invalid input: payload of step probe holds a string that is not valid UTF-8: "\xfe"`},
		{"invalid UTF-8 in a struct field", emitErr(e, run.ID, "topic", struct{ Note *string }{&[]string{"\xc3"}[0]}),
			`store: emit topic run ` + run.ID + `: invalid input: payload of message topic holds a string that is not valid UTF-8: "\xc3"`},
		{"1 MB run id", getErr(e, bigKey),
			`store: get run "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk"…: malformed run id: run id "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk"… is not a UUID`},
	}
	for _, tt := range tests {
		if !errors.Is(tt.err, runtime.ErrInvalidInput) && !errors.Is(tt.err, runtime.ErrInvalidID) {
			t.Errorf("%s: %v, want ErrInvalidInput", tt.name, tt.err)
			continue
		}
		if diff := cmp.Diff(tt.want, tt.err.Error()); diff != "" {
			t.Errorf("%s: message (-want +got):\n%s", tt.name, diff)
		}
	}
	// Nothing was written: the run is where it was and no other run exists.
	if got := e.get(t, run.ID); got.State != "INITIATED" || got.RowVersion != 1 {
		t.Errorf("run in %s at row version %d, want INITIATED at 1", got.State, got.RowVersion)
	}
	var n int
	if err := e.pool.QueryRow(e.ctx, "SELECT count(*) FROM workflow_runs").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("%d runs, want 1", n)
	}
	// A surrogate pair is a character: it is stored.
	if _, err := e.st.LogStep(e.ctx, run.ID, "pair", json.RawMessage(`{"clef":"\ud834\udd1e"}`)); err != nil {
		t.Errorf("log a surrogate pair: %v", err)
	}
	// A backslash followed by u0000 is text, not NUL: it is stored.
	if _, err := e.st.Record(e.ctx, run.ID, 1, tr("INITIATED", "Begin", "WORKING", map[string]string{"worker": `\u0000`})); err != nil {
		t.Errorf("record an escaped backslash: %v", err)
	}
}

func recordErr(e env, run runtime.Run, payload any) error {
	_, err := e.st.Record(e.ctx, run.ID, run.RowVersion, tr("INITIATED", "Begin", "WORKING", payload))
	return err
}

func logStepErr(e env, id, name string, payload any) error {
	_, err := e.st.LogStep(e.ctx, id, name, payload)
	return err
}

func emitErr(e env, id, topic string, payload any) error {
	_, err := e.st.Emit(e.ctx, id, topic, payload)
	return err
}

func getErr(e env, id string) error {
	_, err := e.st.Get(e.ctx, id)
	return err
}

// WithLimits sets the limits; a zero field keeps the default.
func TestLimitsAreConfigurable(t *testing.T) {
	t.Parallel()
	e := newEnvPool(t, pgtest.NewPool(t), store.WithLimits(store.Limits{MaxPayload: 16, MaxKey: 8}))
	_, err := e.st.Start(e.ctx, runtime.StartRequest{Type: "order", Version: 1, IdempotencyKey: "abcdefghi", Owner: runtime.Owner{TenantID: "t1"}})
	if want := `store: start order/abcdefghi: invalid input: idempotency key is 9 bytes, over the limit of 8: "abcdefghi"`; err == nil || err.Error() != want {
		t.Errorf("start with a 9-byte key: %v, want %s", err, want)
	}
	_, err = e.st.Start(e.ctx, runtime.StartRequest{Type: "order", Version: 1, IdempotencyKey: "abcd", Owner: runtime.Owner{TenantID: "t1"}, Input: map[string]string{"a": "0123456789"}})
	if !errors.Is(err, runtime.ErrInvalidInput) {
		t.Errorf("start with a 20-byte input: %v, want ErrInvalidInput", err)
	}
	res, err := e.st.Start(e.ctx, runtime.StartRequest{Type: "order", Version: 1, IdempotencyKey: "abcd", Owner: runtime.Owner{TenantID: "t1"}, Input: map[string]string{"a": "b"}})
	if err != nil || res.Outcome != runtime.StartCreated {
		t.Errorf("start within the limits: %v, %v", res.Outcome, err)
	}
}
