package pgstore_test

import (
	"testing"
	"time"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/internal/pgstore"
)

// TestFlatDigestUnchanged holds a flat machine's digest to the one it had
// before machines could nest: registered definitions are compared by it,
// and re-registering an unchanged flat machine must be no conflict.
func TestFlatDigestUnchanged(t *testing.T) {
	t.Parallel()
	def := runtime.Definition{Machine: "M", Type: "m", Version: 1, Initial: "A",
		States: []runtime.StateSpec{
			{Name: "A", Initial: true, Retry: runtime.RetryDatabase.Clone(), Timers: []runtime.Timer{{After: time.Second, Event: "Ping"}}},
			{Name: "B", Wait: true},
			{Name: "DONE", Status: runtime.StatusSucceeded},
		},
		Events:      []runtime.EventSpec{{Name: "Ping", Fields: []runtime.FieldSpec{{Name: "n", Type: "int"}}}},
		Transitions: []runtime.TransitionSpec{{From: "A", To: "B", Event: "Ping", Guard: "G"}, {From: "B", To: "DONE", Event: "Ping", Outcome: "ok"}},
	}
	const want = "f2a9b229684039c294e16caecab369dfb2647c207dbb1d1a8e54e6715aa5d0d6"
	got, err := pgstore.Digest(def)
	if err != nil || got != want {
		t.Errorf("Digest = %s, %v; want %s", got, err, want)
	}
	// Nesting is part of the identity.
	nested := def.Clone()
	nested.Composites = []runtime.CompositeSpec{{Name: "C", Initial: "B"}}
	nested.States[1].Parent = "C"
	if d, _ := pgstore.Digest(nested); d == want {
		t.Error("a nested machine has its flat form's digest")
	}
}
