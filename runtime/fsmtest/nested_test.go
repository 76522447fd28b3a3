package fsmtest_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/fsmtest"
)

// A nested job, written by hand: IDLE -> WORK on Start (entering RUN),
// RUN -> F on Finish, where F is WORK's final child, WORK -> END on done,
// and WORK -> IDLE on Stop from each of its leaves.
var job = runtime.Definition{
	Machine: "Job", Type: "job", Version: 1, Initial: "IDLE",
	States: []runtime.StateSpec{
		{Name: "IDLE", Initial: true, Status: runtime.StatusRunning, Wait: true},
		{Name: "RUN", Status: runtime.StatusRunning, Wait: true, Parent: "WORK"},
		{Name: "F", Status: runtime.StatusRunning, Wait: true, Parent: "WORK"},
		{Name: "END", Status: runtime.StatusSucceeded},
	},
	Events: []runtime.EventSpec{{Name: "Start"}, {Name: "Finish"}, {Name: "Stop"}},
	Transitions: []runtime.TransitionSpec{
		{From: "IDLE", To: "RUN", Event: "Start", Exit: []string{"IDLE"}, Enter: []string{"WORK", "RUN"}},
		{From: "RUN", To: "F", Event: "Finish", Exit: []string{"RUN"}, Enter: []string{"F"}},
		{From: "RUN", To: "IDLE", Event: "Stop", Exit: []string{"RUN", "WORK"}, Enter: []string{"IDLE"}},
		{From: "F", To: "END", Exit: []string{"F", "WORK"}, Enter: []string{"END"}, Done: true},
		{From: "F", To: "IDLE", Event: "Stop", Exit: []string{"F", "WORK"}, Enter: []string{"IDLE"}},
	},
	Composites: []runtime.CompositeSpec{{Name: "WORK", Initial: "RUN"}},
}

type startJob struct{}
type finish struct{}
type stop struct{}

func (startJob) EventName() string { return "Start" }
func (finish) EventName() string   { return "Finish" }
func (stop) EventName() string     { return "Stop" }

// jobMachine is the job's code; noCompletion forgets the completion row.
type jobMachine struct {
	state        string
	rec          runtime.Recorder
	noCompletion bool
}

func (j *jobMachine) State() string { return j.state }

func (j *jobMachine) move(ctx context.Context, row int, e runtime.Event) error {
	r := job.Transitions[row]
	if j.rec != nil {
		t := runtime.Transition{Machine: "job", Version: 1, From: r.From, To: r.To, Status: runtime.StatusRunning, Exited: r.Exit, Entered: r.Enter}
		if r.To == "END" {
			t.Status = runtime.StatusSucceeded
		}
		if e != nil {
			t.Event, t.Payload = e.EventName(), e
		}
		if err := j.rec.Record(ctx, t); err != nil {
			return err
		}
	}
	j.state = r.To
	return nil
}

func (j *jobMachine) Fire(ctx context.Context, e runtime.Event) error {
	row := -1
	switch {
	case j.state == "IDLE" && e.EventName() == "Start":
		row = 0
	case j.state == "RUN" && e.EventName() == "Finish":
		row = 1
	case j.state == "RUN" && e.EventName() == "Stop":
		row = 2
	case j.state == "F" && e.EventName() == "Stop":
		row = 4
	default:
		return &runtime.TransitionError{Machine: "job", State: j.state, Event: e.EventName(), Err: runtime.ErrIllegalTransition}
	}
	if err := j.move(ctx, row, e); err != nil {
		return err
	}
	if j.state == "F" && !j.noCompletion {
		return j.move(ctx, 3, nil)
	}
	return nil
}

func jobSpec(noCompletion bool) fsmtest.Machine {
	return fsmtest.Machine{
		Definition: job,
		Events:     []runtime.Event{startJob{}, finish{}, stop{}},
		New: func(state string, _ map[string]bool, rec runtime.Recorder) (fsmtest.Instance, error) {
			return &jobMachine{state: state, rec: rec, noCompletion: noCompletion}, nil
		},
		Decode: func(name string, payload []byte) (runtime.Event, error) {
			if len(payload) > 0 && string(payload) != "{}" {
				return nil, errors.New("no fields")
			}
			for _, e := range []runtime.Event{startJob{}, finish{}, stop{}} {
				if e.EventName() == name {
					return e, nil
				}
			}
			return nil, runtime.ErrUnknownEvent
		},
	}
}

// TestCheckNested: the checks of a nested machine expect the completion
// row after the row that enters a final child, with the states exited and
// entered; a final child that completes at once need not be reachable.
func TestCheckNested(t *testing.T) {
	t.Parallel()
	if errs := fsmtest.Check(jobSpec(false)); len(errs) != 0 {
		t.Fatalf("a correct nested machine failed the checks:\n%v", errors.Join(errs...))
	}
	errs := fsmtest.Check(jobSpec(true))
	joined := errors.Join(errs...).Error()
	for _, want := range []string{
		"EveryStateEventAndGuardOutcome: RUN on Finish with guards map[]: state F, want END",
		"ShortestPathToEveryState: path to END: row 1: state F, want END",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("the checks of a machine without its completion row do not say %q:\n%s", want, joined)
		}
	}
}

// booting is the job with a first state BOOT that an eventless row leaves
// for IDLE: the checks reach everything through the instance's Settle.
func booting() fsmtest.Machine {
	m := jobSpec(false)
	d := m.Definition
	d.Initial = "BOOT"
	d.States = append([]runtime.StateSpec{{Name: "BOOT", Initial: true, Status: runtime.StatusRunning, Wait: true}}, d.States...)
	d.States[1].Initial = false
	d.Transitions = append(d.Transitions, runtime.TransitionSpec{From: "BOOT", To: "IDLE", Exit: []string{"BOOT"}, Enter: []string{"IDLE"}})
	m.Definition = d
	m.New = func(state string, _ map[string]bool, rec runtime.Recorder) (fsmtest.Instance, error) {
		return &bootMachine{jobMachine{state: state, rec: rec}}, nil
	}
	return m
}

type bootMachine struct{ jobMachine }

func (b *bootMachine) Settle(ctx context.Context) error {
	if b.state != "BOOT" {
		return nil
	}
	if b.rec != nil {
		if err := b.rec.Record(ctx, runtime.Transition{Machine: "job", Version: 1, From: "BOOT", To: "IDLE", Status: runtime.StatusRunning, Exited: []string{"BOOT"}, Entered: []string{"IDLE"}}); err != nil {
			return err
		}
	}
	b.state = "IDLE"
	return nil
}

// TestCheckSettles: a machine whose first state has only an eventless row
// is checked through its instance's Settle.
func TestCheckSettles(t *testing.T) {
	t.Parallel()
	if errs := fsmtest.Check(booting()); len(errs) != 0 {
		t.Fatalf("a machine that settles out of its first state failed the checks:\n%v", errors.Join(errs...))
	}
}
