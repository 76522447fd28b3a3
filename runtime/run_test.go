package runtime_test

import (
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
