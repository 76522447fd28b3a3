package fsmimpl_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/fsmimpl"
)

type state uint16

type ping struct {
	N int `json:"n"`
}

func (ping) EventName() string { return "Ping" }

var def = runtime.Definition{
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

var ix = fsmimpl.NewIndex[state](&def)

func TestRecordFollowRefuse(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var got []runtime.Transition
	rec := runtime.RecorderFunc(func(_ context.Context, tr runtime.Transition) error {
		got = append(got, tr)
		return nil
	})
	s := state(1)
	if err := fsmimpl.Follow(ctx, ix, rec, &s, ping{N: 1}); err != nil || s != 2 {
		t.Fatalf("Follow from B: %v, state %d", err, s)
	}
	want := []runtime.Transition{{Machine: "m", Version: 1, From: "B", To: "DONE", Event: "Ping", Payload: ping{N: 1}, Status: runtime.StatusSucceeded, Outcome: "ok"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("recorded (-want +got):\n%s", diff)
	}
	boom := errors.New("boom")
	failing := runtime.RecorderFunc(func(context.Context, runtime.Transition) error { return boom })
	s = 1
	if err := fsmimpl.Record(ctx, &def, failing, &s, state(2), ping{}, ""); !errors.Is(err, boom) || s != 1 {
		t.Errorf("Record with a failing recorder: %v, state %d", err, s)
	}

	var te *runtime.TransitionError
	err := fsmimpl.Refuse(ix, state(0), ping{})
	if !errors.As(err, &te) || !errors.Is(err, runtime.ErrGuardRejected) || te.State != "A" || te.Event != "Ping" {
		t.Fatalf("Refuse in A: %v", err)
	}
	if diff := cmp.Diff([]string{"G"}, te.Guards); diff != "" {
		t.Errorf("guards (-want +got):\n%s", diff)
	}
	err = fsmimpl.Refuse(ix, state(2), ping{})
	if got, want := err.Error(), "m: illegal transition: state DONE has no transition on event Ping"; got != want || !errors.Is(err, runtime.ErrIllegalTransition) {
		t.Errorf("Refuse in DONE: %q, want %q", got, want)
	}
	s = 0
	if err := fsmimpl.Follow(ctx, ix, nil, &s, ping{}); !errors.Is(err, runtime.ErrGuardRejected) || s != 0 {
		t.Errorf("Follow on a guarded row: %v", err)
	}
	if got, want := fsmimpl.Refuse(ix, 0, nil).Error(), "m: illegal transition: nil event in state A"; got != want {
		t.Errorf("Refuse of nil: %q, want %q", got, want)
	}
}

func TestStates(t *testing.T) {
	t.Parallel()
	if s, err := fsmimpl.ParseState(ix, "DONE"); err != nil || s != 2 {
		t.Errorf("ParseState(DONE) = %d, %v", s, err)
	}
	if _, err := fsmimpl.ParseState(ix, "NOPE"); !errors.Is(err, runtime.ErrUnknownState) {
		t.Errorf("ParseState(NOPE): %v", err)
	}
	if got := fsmimpl.StateName(&def, state(7)); got != "State(7)" {
		t.Errorf("StateName(7) = %q", got)
	}
	if got := fsmimpl.StateSpecOf(&def, state(7)).Status; got != runtime.StatusRunning {
		t.Errorf("status of no state: %q", got)
	}
	var s state
	if err := fsmimpl.UnmarshalState(ix, &s, []byte("B")); err != nil || s != 1 {
		t.Errorf("UnmarshalState(B) = %d, %v", s, err)
	}
	if _, err := fsmimpl.MarshalState(&def, state(9)); !errors.Is(err, runtime.ErrUnknownState) {
		t.Errorf("MarshalState(9): %v", err)
	}
}

func TestDecoder(t *testing.T) {
	t.Parallel()
	d := fsmimpl.NewDecoder[runtime.Event](&def, ping{})
	if e, err := d.Decode("Ping", []byte(`{"n":3}`)); err != nil || e != (ping{N: 3}) {
		t.Errorf("Decode = %v, %v", e, err)
	}
	for payload, want := range map[string]string{
		`{"n":3}}`:      "m: decode event Ping: unexpected data after the payload's JSON value",
		`{"n":3} {}`:    "m: decode event Ping: unexpected data after the payload's JSON value",
		`{"x":3}`:       `m: decode event Ping: json: unknown field "x"`,
		`{"n":3} [junk`: "m: decode event Ping: unexpected data after the payload's JSON value",
		`{"N":3}`:       `m: decode event Ping: json: unknown field "N" (field names are case-sensitive)`,
		`{"n":1,"n":2}`: `m: decode event Ping: json: duplicate field "n"`,
		` null `:        "m: decode event Ping: the payload is null: want a JSON object of the event's fields",
	} {
		if e, err := d.Decode("Ping", []byte(payload)); err == nil || err.Error() != want || e != nil {
			t.Errorf("Decode(%s) = %v, %v; want %q", payload, e, err, want)
		}
	}
	if _, err := d.Decode("Pong", nil); !errors.Is(err, runtime.ErrUnknownEvent) {
		t.Errorf("Decode(Pong): %v", err)
	}
}

type pong struct{}

func (pong) EventName() string { return "Pong" }

// TestIndexRows follows and refuses, from each state, the first row on
// each event in table order, with rows of several states interleaved and a
// state's rows on one event apart from each other.
func TestIndexRows(t *testing.T) {
	t.Parallel()
	d := runtime.Definition{
		Machine: "M", Type: "m", Version: 1, Initial: "A",
		States: []runtime.StateSpec{
			{Name: "A", Initial: true, Status: runtime.StatusRunning},
			{Name: "B", Status: runtime.StatusRunning},
			{Name: "DONE", Status: runtime.StatusSucceeded, Outcome: "done"},
		},
		Events: []runtime.EventSpec{{Name: "Ping"}, {Name: "Pong"}},
		Guards: []string{"G", "H"},
		Transitions: []runtime.TransitionSpec{
			{From: "B", To: "DONE", Event: "Ping", Guard: "H"},
			{From: "A", To: "B", Event: "Pong", Outcome: "first"},
			{From: "B", To: "A", Event: "Pong"},
			{From: "B", To: "DONE", Event: "Ping", Guard: "G"},
			{From: "A", To: "DONE", Event: "Pong", Outcome: "never"},
			{From: "A", To: "DONE", Event: "Ping"},
		},
	}
	ix := fsmimpl.NewIndex[state](&d)
	ctx := context.Background()
	var got []runtime.Transition
	rec := runtime.RecorderFunc(func(_ context.Context, tr runtime.Transition) error {
		got = append(got, tr)
		return nil
	})
	for _, c := range []struct {
		from, to state
		e        runtime.Event
	}{{0, 1, pong{}}, {1, 0, pong{}}, {0, 2, ping{}}} {
		s := c.from
		if err := fsmimpl.Follow(ctx, ix, rec, &s, c.e); err != nil || s != c.to {
			t.Errorf("Follow %s from %d: %v, in %d; want %d", c.e.EventName(), c.from, err, s, c.to)
		}
	}
	want := []runtime.Transition{
		{Machine: "m", Version: 1, From: "A", To: "B", Event: "Pong", Payload: pong{}, Status: runtime.StatusRunning, Outcome: "first"},
		{Machine: "m", Version: 1, From: "B", To: "A", Event: "Pong", Payload: pong{}, Status: runtime.StatusRunning},
		{Machine: "m", Version: 1, From: "A", To: "DONE", Event: "Ping", Payload: ping{}, Status: runtime.StatusSucceeded},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("recorded (-want +got):\n%s", diff)
	}
	s := state(1)
	err := fsmimpl.Follow(ctx, ix, rec, &s, ping{})
	if want := "m: event Ping in state B rejected by guards [H G]"; err == nil || err.Error() != want || s != 1 {
		t.Errorf("Follow Ping from B: %v, in %d; want %q", err, s, want)
	}
	if got := fsmimpl.Refuse(ix, state(2), pong{}).Error(); got != "m: illegal transition: state DONE has no transition on event Pong" {
		t.Errorf("Refuse Pong in DONE: %q", got)
	}
	for i, name := range []string{"A", "B", "DONE"} {
		if s, err := fsmimpl.ParseState(ix, name); err != nil || s != state(i) {
			t.Errorf("ParseState(%s) = %d, %v; want %d", name, s, err, i)
		}
	}
	if _, err := fsmimpl.ParseState(ix, "a"); err == nil || err.Error() != `m: unknown state "a"` {
		t.Errorf("ParseState(a): %v", err)
	}
}
