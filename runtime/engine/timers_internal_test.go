package engine

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/internal/pgstore"
)

// TestNextTimerTieOutermostFirst: timers due at the same instant fire in
// the order their states were entered, the composite's before its leaf's,
// and one state's in declaration order.
func TestNextTimerTieOutermostFirst(t *testing.T) {
	def := runtime.Definition{
		Machine: "Auth", Type: "auth", Version: 1, Initial: "POLLING",
		States: []runtime.StateSpec{
			{Name: "POLLING", Status: runtime.StatusRunning, Wait: true, Parent: "AUTHORIZING"},
			{Name: "WAITING", Status: runtime.StatusRunning, Wait: true, Parent: "AUTHORIZING",
				Timers: []runtime.Timer{{After: time.Second, Event: "PollDue"}, {After: time.Second, Event: "Other"}}},
			{Name: "EXPIRED", Status: runtime.StatusFailed},
		},
		Composites: []runtime.CompositeSpec{{Name: "AUTHORIZING", Initial: "POLLING",
			Timers: []runtime.Timer{{After: time.Second, Event: "CodeExpired"}}}},
	}
	reg := &registered{def: def, nest: pgstore.NestingOf(def)}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	anchor := func(at time.Time, n int) runtime.TimerAnchor {
		a := runtime.TimerAnchor{At: at}
		for range n {
			a.After = append(a.After, time.Second)
		}
		return a
	}
	tests := []struct {
		name    string
		anchors map[string]runtime.TimerAnchor
		want    string
	}{
		{"entered together", map[string]runtime.TimerAnchor{"AUTHORIZING": anchor(at, 1), "WAITING": anchor(at, 2)}, "AUTHORIZING CodeExpired"},
		{"leaf due first", map[string]runtime.TimerAnchor{"AUTHORIZING": anchor(at.Add(time.Millisecond), 1), "WAITING": anchor(at, 2)}, "WAITING PollDue"},
		{"leaf alone", map[string]runtime.TimerAnchor{"AUTHORIZING": {At: at, After: []time.Duration{-1}}, "WAITING": anchor(at, 2)}, "WAITING PollDue"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next, ok := nextTimer(reg, runtime.Run{State: "WAITING", UpdatedAt: at, TimerAnchors: tt.anchors})
			if !ok {
				t.Fatal("no timer")
			}
			if diff := cmp.Diff(tt.want, next.state+" "+next.timer.Event); diff != "" {
				t.Errorf("next timer (-want +got):\n%s", diff)
			}
		})
	}
}
