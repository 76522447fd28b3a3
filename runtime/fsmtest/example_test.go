package fsmtest_test

import (
	"context"
	"fmt"
	"time"

	subs "github.com/fsmgen/fsmgen/machines/subscription/subscription"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/fsmtest"
)

// instance is a Subscription machine as the checks see it.
type instance struct{ m *subs.Machine }

func (i instance) Fire(ctx context.Context, e runtime.Event) error {
	ev, ok := e.(subs.Event)
	if !ok {
		return fmt.Errorf("not an event of Subscription: %T", e)
	}
	return i.m.Fire(ctx, ev)
}

func (i instance) State() string { return i.m.State().String() }

// subscription describes the generated Subscription machine to the checks,
// as the fsm_test.go fsmgen writes next to each machine does (a machine
// with guards also builds them from admit).
func subscription() fsmtest.Machine {
	return fsmtest.Machine{
		Definition: subs.Definition(),
		Events: []runtime.Event{
			subs.RenewalDue{}, subs.PaymentSucceeded{}, subs.PaymentFailed{},
			subs.CardUpdated{}, subs.GraceExpired{}, subs.Pause{}, subs.Resume{},
		},
		New: func(state string, _ map[string]bool, rec runtime.Recorder) (fsmtest.Instance, error) {
			s, err := subs.ParseState(state)
			if err != nil {
				return nil, err
			}
			opts := []subs.Option{subs.WithState(s)}
			if rec != nil {
				opts = append(opts, subs.WithRecorder(rec))
			}
			return instance{subs.New(opts...)}, nil
		},
		Decode: func(name string, payload []byte) (runtime.Event, error) {
			return subs.DecodeEvent(name, payload)
		},
	}
}

// Check fires every event in every state and compares what the machine's
// code does with its definition's table; a generated package's test calls
// Run, which does the same and reports the failures to a testing.T.
func ExampleCheck() {
	fmt.Println(len(fsmtest.Check(subscription())), "failures")
	// Output:
	// 0 failures
}

// Traces records what the machine does on event sequences that take every
// row and meet every refusal: each is the shortest path to a state, then
// one event there (here Pause in PAST_DUE).
func ExampleTraces() {
	f, err := fsmtest.Traces(subscription())
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, tr := range f.Traces {
		if tr.Name != "PAST_DUE on Pause" {
			continue
		}
		for _, s := range tr.Steps {
			by := "a caller"
			if s.TimerMS > 0 {
				by = "a timer, after " + (time.Duration(s.TimerMS) * time.Millisecond).String()
			}
			fmt.Printf("%s by %s -> %s\n", s.Event, by, s.State)
		}
	}
	// Output:
	// RenewalDue by a timer, after 720h0m0s -> CHARGING
	// PaymentFailed by a caller -> PAST_DUE
	// Pause by a caller -> PAUSED
}

// Clock is the clock a test gives to the store and the engines (their
// WithClock options), moved by Advance instead of sleeping.
func ExampleClock() {
	c := fsmtest.NewClock(time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC))
	c.Advance(30 * 24 * time.Hour)
	fmt.Println(c.Now().Format(time.DateTime))
	// Output:
	// 2026-12-27 09:00:00
}
