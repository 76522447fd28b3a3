package runtime_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime"
)

// playerDef is a nested machine:
//
//	STOPPED
//	ACTIVE after 30m IdleTimeout entry StartClock exit StopClock {
//	    initial PLAYING
//	    PAUSED after Paused.hold min 1s max 10m Stop
//	    history RESUME; deep history LAST
//	}
func playerDef() runtime.Definition {
	return runtime.Definition{
		Machine: "Player", Type: "player", Version: 1, Initial: "STOPPED",
		States: []runtime.StateSpec{
			{Name: "STOPPED", Initial: true, Status: runtime.StatusRunning, Wait: true},
			{Name: "PLAYING", Status: runtime.StatusRunning, Wait: true, Parent: "ACTIVE"},
			{Name: "PAUSED", Status: runtime.StatusRunning, Wait: true, Parent: "ACTIVE",
				Timers: []runtime.Timer{{After: time.Second, Event: "Stop", Field: "Pause.hold", Min: time.Second, Max: 10 * time.Minute}}},
			{Name: "OFF", Status: runtime.StatusSucceeded},
		},
		Composites: []runtime.CompositeSpec{{
			Name: "ACTIVE", Initial: "PLAYING", Timers: []runtime.Timer{{After: 30 * time.Minute, Event: "IdleTimeout"}},
			History: []runtime.HistorySpec{{Name: "RESUME"}, {Name: "LAST", Deep: true}},
			Entry:   []string{"StartClock"}, Exit: []string{"StopClock"},
		}},
		Actions: []string{"StartClock", "StopClock"},
		Events: []runtime.EventSpec{{Name: "Play"}, {Name: "Pause", Fields: []runtime.FieldSpec{{Name: "hold", Type: "time.Duration"}}},
			{Name: "Stop"}, {Name: "Resume"}, {Name: "Tick"}, {Name: "IdleTimeout"}},
		Transitions: []runtime.TransitionSpec{
			{From: "STOPPED", To: "PLAYING", Event: "Play", Enter: []string{"ACTIVE", "PLAYING"}},
			{From: "PLAYING", To: "PAUSED", Event: "Pause", Exit: []string{"PLAYING"}, Enter: []string{"PAUSED"}},
			{From: "PLAYING", To: "PLAYING", Event: "Tick", Internal: true},
			{From: "PLAYING", To: "STOPPED", Event: "Stop", Exit: []string{"PLAYING", "ACTIVE"}, Enter: []string{"STOPPED"}},
			{From: "PAUSED", To: "STOPPED", Event: "Stop", Exit: []string{"PAUSED", "ACTIVE"}, Enter: []string{"STOPPED"}},
			{From: "STOPPED", To: "PLAYING", Event: "Resume", History: "RESUME", Enter: []string{"ACTIVE", "PLAYING"}},
			{From: "STOPPED", To: "PAUSED", Event: "Resume", History: "RESUME", Enter: []string{"ACTIVE", "PAUSED"}},
			{From: "PAUSED", To: "OFF", Event: "", Exit: []string{"PAUSED", "ACTIVE"}, Enter: []string{"OFF"}},
		},
	}
}

func TestValidateNested(t *testing.T) {
	t.Parallel()
	if d := playerDef(); d.Validate() != nil {
		err := d.Validate()
		t.Fatalf("valid nested definition: %v", err)
	}
	tests := []struct {
		name   string
		change func(d *runtime.Definition)
		want   string
	}{
		{"unknown parent", func(d *runtime.Definition) { d.States[1].Parent = "ACTIV" },
			"definition player v1: state PLAYING: unknown parent ACTIV"},
		{"composite named as a leaf", func(d *runtime.Definition) { d.Composites[0].Name = "PAUSED" },
			"definition player v1: composite PAUSED is also a leaf state"},
		{"own ancestor", func(d *runtime.Definition) { d.Composites[0].Parent = "ACTIVE" },
			"definition player v1: composite ACTIVE is its own ancestor"},
		{"initial not a child", func(d *runtime.Definition) { d.Composites[0].Initial = "STOPPED" },
			"definition player v1: composite ACTIVE: initial STOPPED is not its child"},
		{"unknown initial", func(d *runtime.Definition) { d.Composites[0].Initial = "NOPE" },
			"definition player v1: composite ACTIVE: unknown initial child NOPE"},
		{"history name taken", func(d *runtime.Definition) { d.Composites[0].History[0].Name = "OFF" },
			"definition player v1: history OFF of ACTIVE: the name is taken"},
		{"unknown action", func(d *runtime.Definition) { d.Actions = d.Actions[:1] },
			"definition player v1: state ACTIVE: unknown action StopClock"},
		{"timer field of no event", func(d *runtime.Definition) { d.States[2].Timers[0].Field = "Paws.hold" },
			"definition player v1: state PAUSED: timer field Paws.hold of unknown event Paws"},
		{"timer field not a duration", func(d *runtime.Definition) { d.Events[1].Fields[0].Type = "int" },
			"definition player v1: state PAUSED: timer field Pause.hold: event Pause has no time.Duration field hold"},
		{"timer field without bounds", func(d *runtime.Definition) { d.States[2].Timers[0].Max = 0 },
			"definition player v1: state PAUSED: timer field Pause.hold: bounds [1s, 0s], want 0 < min <= max"},
		{"composite timer of no event", func(d *runtime.Definition) { d.Composites[0].Timers[0].Event = "Idle" },
			"definition player v1: state ACTIVE: timer fires unknown event Idle"},
		{"row from a composite", func(d *runtime.Definition) { d.Transitions[3].From = "ACTIVE" },
			"definition player v1: transition from composite state ACTIVE: rows are listed from each leaf"},
		{"row to a composite", func(d *runtime.Definition) { d.Transitions[0].To = "ACTIVE" },
			"definition player v1: transition to composite state ACTIVE: rows are listed to the leaf entered"},
		{"unknown history", func(d *runtime.Definition) { d.Transitions[5].History = "RESUM" },
			"definition player v1: transition STOPPED -> PLAYING to unknown history RESUM"},
		{"enters an unknown state", func(d *runtime.Definition) { d.Transitions[0].Enter[0] = "ACTIV" },
			"definition player v1: transition STOPPED -> PLAYING exits or enters unknown state ACTIV"},
		{"enters elsewhere last", func(d *runtime.Definition) { d.Transitions[0].Enter = []string{"ACTIVE"} },
			"definition player v1: transition STOPPED -> PLAYING enters ACTIVE last, want PLAYING"},
		{"completion row with an event", func(d *runtime.Definition) { d.Transitions[7].Done, d.Transitions[7].Event = true, "Stop" },
			"definition player v1: completion row PAUSED -> OFF has event Stop, want none"},
		{"initial leaf not initial in its parent", func(d *runtime.Definition) {
			d.Initial, d.States[0].Initial, d.States[2].Initial = "PAUSED", false, true
		}, "definition player v1: initial state PAUSED is not the initial leaf of ACTIVE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := playerDef().Clone()
			tt.change(&d)
			err := d.Validate()
			if err == nil || err.Error() != tt.want {
				t.Errorf("Validate() = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestAncestors(t *testing.T) {
	t.Parallel()
	d := playerDef()
	d.Composites = append(d.Composites, runtime.CompositeSpec{Name: "OUTER", Initial: "ACTIVE"})
	d.Composites[0].Parent = "OUTER"
	for name, want := range map[string][]string{"PAUSED": {"ACTIVE", "OUTER"}, "ACTIVE": {"OUTER"}, "OUTER": nil, "STOPPED": nil, "NOPE": nil} {
		if diff := cmp.Diff(want, d.Ancestors(name)); diff != "" {
			t.Errorf("Ancestors(%s) (-want +got):\n%s", name, diff)
		}
	}
}

// TestFlatDefinitionJSON holds a flat machine's stored definition to its
// form before machines could nest: registered definitions are compared by
// it, and a flat machine's must not change.
func TestFlatDefinitionJSON(t *testing.T) {
	t.Parallel()
	raw, err := json.Marshal(cloneDef)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"Machine":"M","Doc":"","Type":"m","Version":1,"Initial":"A",` +
		`"States":[{"Name":"A","Initial":true,"Status":"running","Outcome":"","Wait":false,"Retry":{"Name":"database","MaxAttempts":5,"InitialInterval":500000000,"Coefficient":2,"MaxInterval":30000000000,"Jitter":0.2,"NonRetryable":null},"OnExhausted":"","Timers":[{"After":1000000000,"Event":"Ping"}]},` +
		`{"Name":"B","Initial":false,"Status":"running","Outcome":"","Wait":false,"Retry":null,"OnExhausted":"","Timers":null},` +
		`{"Name":"DONE","Initial":false,"Status":"succeeded","Outcome":"","Wait":false,"Retry":null,"OnExhausted":"","Timers":null}],` +
		`"Events":[{"Name":"Ping","Fields":[{"Name":"n","Type":"int"}],"External":false}],"Guards":["G"],` +
		`"Transitions":[{"From":"A","To":"B","Event":"Ping","Guard":"G","Negated":false,"Outcome":""},{"From":"B","To":"DONE","Event":"Ping","Guard":"","Negated":false,"Outcome":"ok"}],` +
		`"Cancel":""}`
	if diff := cmp.Diff(want, string(raw)); diff != "" {
		t.Errorf("flat definition JSON (-want +got):\n%s", diff)
	}
	// A nested definition survives the round trip through its JSON.
	raw, err = json.Marshal(playerDef())
	if err != nil {
		t.Fatal(err)
	}
	var back runtime.Definition
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(playerDef(), back); diff != "" {
		t.Errorf("nested definition after a JSON round trip (-want +got):\n%s", diff)
	}
}

func TestCloneNested(t *testing.T) {
	t.Parallel()
	def := playerDef()
	c := def.Clone()
	if diff := cmp.Diff(def, c); diff != "" {
		t.Fatalf("clone differs (-def +clone):\n%s", diff)
	}
	c.Composites[0].Timers[0].Event = "X"
	c.Composites[0].History[0].Name = "X"
	c.Composites[0].Entry[0] = "X"
	c.States[1].Parent = "X"
	c.Transitions[0].Enter[0] = "X"
	c.Actions[0] = "X"
	if diff := cmp.Diff(playerDef(), def); diff != "" {
		t.Errorf("a change to the clone reached the original (-want +got):\n%s", diff)
	}
}

func TestCallerRefusalCompositeTimer(t *testing.T) {
	t.Parallel()
	d := playerDef()
	const want = "fired by the timer of ACTIVE; declare it external to let callers send it"
	if got := d.CallerRefusal("PLAYING", "IdleTimeout"); got != want {
		t.Errorf("CallerRefusal = %q, want %q", got, want)
	}
	if !d.Nested() {
		t.Error("a definition with composites is not nested")
	}
	if flat := cloneDef; flat.Nested() {
		t.Error("a flat definition is nested")
	}
}

// TestTimerDurations: a timer runs for its After, or for the field of the
// event that entered its state, clamped to its bounds; for Min when
// another event entered it, the field is absent or not a duration.
func TestTimerDurations(t *testing.T) {
	t.Parallel()
	timers := []runtime.Timer{
		{After: time.Minute, Event: "Tick"},
		{After: time.Second, Event: "Expire", Field: "Ack.lease", Min: time.Second, Max: time.Hour},
	}
	for _, tc := range []struct {
		name, event, payload string
		want                 []time.Duration
	}{
		{"the field", "Ack", `{"lease": 600000000000}`, []time.Duration{time.Minute, 10 * time.Minute}},
		{"clamped to max", "Ack", `{"lease": 36000000000000}`, []time.Duration{time.Minute, time.Hour}},
		{"clamped to min", "Ack", `{"lease": 5}`, []time.Duration{time.Minute, time.Second}},
		{"no field", "Ack", `{}`, []time.Duration{time.Minute, time.Second}},
		{"not a duration", "Ack", `{"lease": "10m"}`, []time.Duration{time.Minute, time.Second}},
		{"another event", "Nak", `{"lease": 600000000000}`, []time.Duration{time.Minute, time.Second}},
		{"the start", "", "", []time.Duration{time.Minute, time.Second}},
	} {
		if diff := cmp.Diff(tc.want, runtime.TimerDurations(timers, tc.event, []byte(tc.payload))); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}
