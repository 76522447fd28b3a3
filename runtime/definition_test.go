package runtime_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

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

// cloneDef is a definition with every part that Clone copies.
var cloneDef = runtime.Definition{
	Machine: "M", Type: "m", Version: 1, Initial: "A",
	States: []runtime.StateSpec{
		{Name: "A", Initial: true, Status: runtime.StatusRunning, Retry: runtime.RetryDatabase.Clone(), Timers: []runtime.Timer{{After: time.Second, Event: "Ping"}}},
		{Name: "B", Status: runtime.StatusRunning},
		{Name: "DONE", Status: runtime.StatusSucceeded},
	},
	Events:      []runtime.EventSpec{{Name: "Ping", Fields: []runtime.FieldSpec{{Name: "n", Type: "int"}}}},
	Guards:      []string{"G"},
	Transitions: []runtime.TransitionSpec{{From: "A", To: "B", Event: "Ping", Guard: "G"}, {From: "B", To: "DONE", Event: "Ping", Outcome: "ok"}},
}

func TestDefinitionClone(t *testing.T) {
	t.Parallel()
	d := cloneDef.Clone()
	if diff := cmp.Diff(cloneDef, d); diff != "" {
		t.Fatalf("clone differs (-def +clone):\n%s", diff)
	}
	d.States[0].Retry.MaxAttempts = 99
	d.States[0].Retry.NonRetryable = append(d.States[0].Retry.NonRetryable, "X")
	d.States[0].Timers[0].Event = "X"
	d.Events[0].Fields[0].Name = "x"
	d.Guards[0] = "X"
	d.Transitions[0].To = "X"
	if cloneDef.States[0].Retry.MaxAttempts != 5 || len(cloneDef.States[0].Retry.NonRetryable) != 0 || cloneDef.States[0].Timers[0].Event != "Ping" ||
		cloneDef.Events[0].Fields[0].Name != "n" || cloneDef.Guards[0] != "G" || cloneDef.Transitions[0].To != "B" {
		t.Errorf("a change to the clone reached the original: %+v", cloneDef)
	}
	if runtime.RetryDatabase.MaxAttempts != 5 {
		t.Errorf("a change to a clone reached the preset: %+v", runtime.RetryDatabase)
	}
}

func TestStateSpecFirstTimer(t *testing.T) {
	for _, tc := range []struct {
		timers []runtime.Timer
		want   time.Duration
		ok     bool
	}{
		{nil, 0, false},
		{[]runtime.Timer{{After: time.Minute, Event: "A"}}, time.Minute, true},
		{[]runtime.Timer{{After: time.Hour, Event: "A"}, {After: time.Second, Event: "B"}, {After: time.Minute, Event: "C"}}, time.Second, true},
	} {
		got, ok := runtime.StateSpec{Name: "S", Wait: true, Timers: tc.timers}.FirstTimer()
		if got != tc.want || ok != tc.ok {
			t.Errorf("FirstTimer of %v = %v, %v; want %v, %v", tc.timers, got, ok, tc.want, tc.ok)
		}
	}
}
