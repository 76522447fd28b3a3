package fsmtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/fsmtest"
)

// A door, written by hand the way fsmgen writes machines:
//
//	CLOSED -> OPEN on Open; OPEN -> CLOSED on Close;
//	CLOSED, OPEN -> BROKEN on Kick when Hard (BROKEN is final, failed).
var door = runtime.Definition{
	Machine: "Door", Type: "door", Version: 1, Initial: "CLOSED",
	States: []runtime.StateSpec{
		{Name: "CLOSED", Initial: true, Status: runtime.StatusRunning},
		{Name: "OPEN", Status: runtime.StatusRunning},
		{Name: "BROKEN", Status: runtime.StatusFailed},
	},
	Events: []runtime.EventSpec{{Name: "Open"}, {Name: "Close"}, {Name: "Kick", Fields: []runtime.FieldSpec{{Name: "force", Type: "int"}}}},
	Guards: []string{"Hard"},
	Transitions: []runtime.TransitionSpec{
		{From: "CLOSED", To: "OPEN", Event: "Open"},
		{From: "OPEN", To: "CLOSED", Event: "Close"},
		{From: "CLOSED", To: "BROKEN", Event: "Kick", Guard: "Hard"},
		{From: "OPEN", To: "BROKEN", Event: "Kick", Guard: "Hard"},
	},
}

type open struct{}
type closeEv struct{}
type kick struct {
	Force int `json:"force"`
}

func (open) EventName() string    { return "Open" }
func (closeEv) EventName() string { return "Close" }
func (kick) EventName() string    { return "Kick" }

// bugs turn the door into a faulty one, one way each.
type bugs struct {
	wrongTarget   bool // Close leads to BROKEN
	applyFirst    bool // the state moves before recording
	leaveFinal    bool // Open leaves BROKEN
	lenientDecode bool // unknown payload fields are accepted
	noGuardError  bool // a refused guard gives a plain error
}

type doorMachine struct {
	state string
	hard  bool
	rec   runtime.Recorder
	bugs  bugs
}

func (d *doorMachine) State() string { return d.state }

func (d *doorMachine) Fire(ctx context.Context, e runtime.Event) error {
	to, outcome := "", ""
	switch {
	case d.state == "CLOSED" && e.EventName() == "Open":
		to = "OPEN"
	case d.state == "OPEN" && e.EventName() == "Close":
		to = "CLOSED"
		if d.bugs.wrongTarget {
			to = "BROKEN"
		}
	case d.state == "BROKEN" && e.EventName() == "Open" && d.bugs.leaveFinal:
		to = "OPEN"
	case d.state != "BROKEN" && e.EventName() == "Kick":
		if !d.hard {
			if d.bugs.noGuardError {
				return errors.New("no")
			}
			return &runtime.TransitionError{Machine: "door", State: d.state, Event: "Kick", Guards: []string{"Hard"}, Err: runtime.ErrGuardRejected}
		}
		to = "BROKEN"
	default:
		return &runtime.TransitionError{Machine: "door", State: d.state, Event: e.EventName(), Err: runtime.ErrIllegalTransition}
	}
	from := d.state
	if d.bugs.applyFirst {
		d.state = to
	}
	if d.rec != nil {
		status := runtime.StatusRunning
		if to == "BROKEN" {
			status = runtime.StatusFailed
		}
		if err := d.rec.Record(ctx, runtime.Transition{Machine: "door", Version: 1, From: from, To: to, Event: e.EventName(), Payload: e, Status: status, Outcome: outcome}); err != nil {
			return err
		}
	}
	d.state = to
	return nil
}

func machine(b bugs) fsmtest.Machine {
	return fsmtest.Machine{
		Definition: door,
		Events:     []runtime.Event{open{}, closeEv{}, kick{}},
		New: func(state string, admit map[string]bool, rec runtime.Recorder) (fsmtest.Instance, error) {
			if _, ok := door.State(state); !ok {
				return nil, fmt.Errorf("no state %s", state)
			}
			// admit is read at each Fire, as generated guards read their map.
			return &liveDoor{doorMachine: doorMachine{state: state, rec: rec, bugs: b}, admit: admit}, nil
		},
		Decode: func(name string, payload []byte) (runtime.Event, error) {
			var e runtime.Event
			switch name {
			case "Open":
				e = open{}
			case "Close":
				e = closeEv{}
			case "Kick":
				var k kick
				if len(payload) > 0 {
					dec := json.NewDecoder(bytes.NewReader(payload))
					if !b.lenientDecode {
						dec.DisallowUnknownFields()
					}
					if err := dec.Decode(&k); err != nil {
						return nil, err
					}
				}
				return k, nil
			default:
				return nil, fmt.Errorf("door: %w %q", runtime.ErrUnknownEvent, name)
			}
			if len(payload) > 0 && !b.lenientDecode && string(payload) != "{}" {
				return nil, fmt.Errorf("door: event %s has no fields", name)
			}
			return e, nil
		},
	}
}

// liveDoor asks the admit map at each Fire.
type liveDoor struct {
	doorMachine
	admit map[string]bool
}

func (l *liveDoor) Fire(ctx context.Context, e runtime.Event) error {
	l.hard = l.admit["Hard"]
	return l.doorMachine.Fire(ctx, e)
}

func TestCheckPassesACorrectMachine(t *testing.T) {
	t.Parallel()
	if errs := fsmtest.Check(machine(bugs{})); len(errs) != 0 {
		t.Fatalf("a correct machine failed the checks:\n%v", errors.Join(errs...))
	}
	fsmtest.Run(t, machine(bugs{}))
}

func TestCheckFindsEachBug(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		bugs bugs
		want string // a failure that must be among those reported
	}{
		{"wrong target", bugs{wrongTarget: true}, "EveryStateEventAndGuardOutcome: OPEN on Close with guards map[]: state BROKEN, want CLOSED"},
		{"applied before recording", bugs{applyFirst: true}, "RecordsBeforeApplying: row 0: state moved to OPEN although recording failed"},
		{"leaves a final state", bugs{leaveFinal: true}, "FinalStatesRejectEveryEvent: BROKEN on Open: error <nil>, want ErrIllegalTransition"},
		{"lenient decoding", bugs{lenientDecode: true}, "DecodeEvent: decode Kick accepted an unknown field"},
		{"guard refusal without its sentinel", bugs{noGuardError: true}, "EveryStateEventAndGuardOutcome: CLOSED on Kick with guards map[Hard:false]: error no, want a *runtime.TransitionError matching rejected by guards"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			errs := fsmtest.Check(machine(tt.bugs))
			var got []string
			for _, err := range errs {
				got = append(got, err.Error())
				if err.Error() == tt.want {
					return
				}
			}
			t.Fatalf("the checks did not report %q; they reported:\n%s", tt.want, strings.Join(got, "\n"))
		})
	}
}

// A light switch that is never done: OFF -> ON on Toggle, ON -> OFF on
// Toggle, and no final state.
var light = runtime.Definition{
	Machine: "Light", Type: "light", Version: 1, Initial: "OFF",
	States: []runtime.StateSpec{
		{Name: "OFF", Initial: true, Status: runtime.StatusRunning},
		{Name: "ON", Status: runtime.StatusRunning},
	},
	Events: []runtime.EventSpec{{Name: "Toggle"}},
	Transitions: []runtime.TransitionSpec{
		{From: "OFF", To: "ON", Event: "Toggle"},
		{From: "ON", To: "OFF", Event: "Toggle"},
	},
}

type toggle struct{}

func (toggle) EventName() string { return "Toggle" }

type lightMachine struct {
	state string
	rec   runtime.Recorder
	stuck bool // ON stays ON
}

func (l *lightMachine) State() string { return l.state }

func (l *lightMachine) Fire(ctx context.Context, e runtime.Event) error {
	if e.EventName() != "Toggle" {
		return &runtime.TransitionError{Machine: "light", State: l.state, Event: e.EventName(), Err: runtime.ErrIllegalTransition}
	}
	to := "ON"
	if l.state == "ON" && !l.stuck {
		to = "OFF"
	}
	if l.rec != nil {
		if err := l.rec.Record(ctx, runtime.Transition{Machine: "light", Version: 1, From: l.state, To: to, Event: "Toggle", Payload: e, Status: runtime.StatusRunning}); err != nil {
			return err
		}
	}
	l.state = to
	return nil
}

func lightSwitch(stuck bool) fsmtest.Machine {
	return fsmtest.Machine{
		Definition: light,
		Events:     []runtime.Event{toggle{}},
		New: func(state string, _ map[string]bool, rec runtime.Recorder) (fsmtest.Instance, error) {
			return &lightMachine{state: state, rec: rec, stuck: stuck}, nil
		},
		Decode: func(name string, payload []byte) (runtime.Event, error) {
			if name != "Toggle" {
				return nil, fmt.Errorf("light: %w %q", runtime.ErrUnknownEvent, name)
			}
			if len(payload) > 0 && string(payload) != "{}" {
				return nil, fmt.Errorf("light: event %s has no fields", name)
			}
			return toggle{}, nil
		},
	}
}

// TestCheckMachineWithoutFinalStates checks that a machine that never
// ends passes, with nothing for the final-state check to reject, and that
// a fault in it is still found.
func TestCheckMachineWithoutFinalStates(t *testing.T) {
	t.Parallel()
	if errs := fsmtest.Check(lightSwitch(false)); len(errs) != 0 {
		t.Fatalf("a correct machine without final states failed the checks:\n%v", errors.Join(errs...))
	}
	fsmtest.Run(t, lightSwitch(false))

	got := map[string]bool{}
	for _, err := range fsmtest.Check(lightSwitch(true)) {
		got[err.Error()] = true
	}
	for _, want := range []string{
		"EveryStateEventAndGuardOutcome: ON on Toggle with guards map[]: state ON, want OFF",
		"PathsCoverEveryTransition: path through row 1: row 1: state ON, want OFF",
	} {
		if !got[want] {
			t.Errorf("the checks of a stuck light did not report %q; they reported %v", want, got)
		}
	}
}
