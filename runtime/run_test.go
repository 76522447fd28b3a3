package runtime_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime"
)

// children is a runtime.Effects that can start children.
type children struct {
	runtime.Effects
	started []runtime.Child
}

func (c *children) StartChild(ch runtime.Child) error {
	c.started = append(c.started, ch)
	return nil
}

func TestStartChild(t *testing.T) {
	fx := &children{}
	run := &runtime.Run{ID: "p1", Attempt: 2, Effects: fx}
	if err := runtime.StartChild(run, runtime.Child{Type: "kid", Event: "KidDone", Input: 7}); err != nil {
		t.Fatal(err)
	}
	if err := runtime.StartChild(run, runtime.Child{Type: "kid", IdempotencyKey: "k", Event: "KidDone"}); err != nil {
		t.Fatal(err)
	}
	want := []runtime.Child{
		{Type: "kid", IdempotencyKey: "p1/kid/2", Input: 7, Event: "KidDone"},
		{Type: "kid", IdempotencyKey: "k", Event: "KidDone"},
	}
	if diff := cmp.Diff(want, fx.started); diff != "" {
		t.Errorf("children started (-want +got):\n%s", diff)
	}

	for _, tc := range []struct {
		name string
		run  *runtime.Run
		c    runtime.Child
		is   error
		msg  string
	}{
		{"no backend", &runtime.Run{ID: "p1"}, runtime.Child{Type: "kid", Event: "KidDone"}, runtime.ErrNoEngine,
			"start child kid: run is not driven by an engine"},
		{"no type", run, runtime.Child{Event: "KidDone"}, runtime.ErrInvalidInput,
			"start child: invalid input: a child needs a type and an event"},
		{"no event", run, runtime.Child{Type: "kid"}, runtime.ErrInvalidInput,
			"start child: invalid input: a child needs a type and an event"},
	} {
		err := runtime.StartChild(tc.run, tc.c)
		if !errors.Is(err, tc.is) || err.Error() != tc.msg {
			t.Errorf("%s: err = %v, want %q (%v)", tc.name, err, tc.msg, tc.is)
		}
	}
	if len(fx.started) != 2 {
		t.Errorf("refused children were started: %v", fx.started)
	}
}

// TestEncodeJSON: a run's input, policy or payload is encoded as the
// PostgreSQL store and contrib/temporal's Runner store it, with the one
// error message of each refusal.
func TestEncodeJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    any
		want string
		err  string
	}{
		{"nil", nil, "", ""},
		{"nil raw", json.RawMessage(nil), "", ""},
		{"raw", json.RawMessage(`{"a": 1}`), `{"a": 1}`, ""},
		{"value", map[string]int{"a": 1}, `{"a":1}`, ""},
		{"raw not JSON", json.RawMessage(`{"a":`), "", "bad payload: input is not valid JSON"},
		{"no encoding", func() {}, "", "bad payload: input of type func() does not encode to JSON: json: unsupported type: func()"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := runtime.EncodeJSON("input", tc.v)
			var gotErr string
			if err != nil {
				gotErr = err.Error()
				if !errors.Is(err, runtime.ErrPayload) {
					t.Errorf("error %v does not match runtime.ErrPayload", err)
				}
			}
			if diff := cmp.Diff([2]string{tc.want, tc.err}, [2]string{string(got), gotErr}); diff != "" {
				t.Errorf("EncodeJSON (-want +got):\n%s", diff)
			}
			if tc.want == "" && got != nil {
				t.Errorf("EncodeJSON = %q, want nil", got)
			}
		})
	}
}
