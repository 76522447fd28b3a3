package runtime_test

import (
	"testing"

	"github.com/fsmgen/fsmgen/runtime"
)

func TestDefinitionAllows(t *testing.T) {
	t.Parallel()
	def := runtime.Definition{
		Type: "order", Version: 1, Initial: "NEW",
		States: []runtime.StateSpec{{Name: "NEW", Initial: true}, {Name: "PAID"}, {Name: "DONE", Status: runtime.StatusSucceeded}},
		Events: []runtime.EventSpec{{Name: "Pay"}, {Name: "Ship"}},
		Transitions: []runtime.TransitionSpec{
			{From: "NEW", To: "PAID", Event: "Pay", Guard: "Funded"},
			{From: "NEW", To: "NEW", Event: "Pay", Guard: "Funded", Negated: true},
			{From: "PAID", To: "DONE", Event: "Ship"},
		},
	}
	tests := []struct {
		from, event, to string
		want            bool
	}{
		{"NEW", "Pay", "PAID", true}, // guarded rows count, whatever the guard says
		{"NEW", "Pay", "NEW", true},
		{"PAID", "Ship", "DONE", true},
		{"NEW", "Ship", "DONE", false},  // no row from NEW on Ship
		{"PAID", "Pay", "PAID", false},  // no row on Pay from PAID
		{"NEW", "Pay", "DONE", false},   // Pay leads elsewhere
		{"DONE", "Ship", "DONE", false}, // nothing leaves a final state
		{"", "", "", false},
	}
	for _, tt := range tests {
		if got := def.Allows(tt.from, tt.event, tt.to); got != tt.want {
			t.Errorf("Allows(%q, %q, %q) = %t, want %t", tt.from, tt.event, tt.to, got, tt.want)
		}
	}
	var empty runtime.Definition
	if empty.Allows("NEW", "Pay", "PAID") {
		t.Error("an empty definition allows a move")
	}
}
