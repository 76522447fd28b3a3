package dsl

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// nest wraps a machine body for the nested checks: the body's first line
// is line 2, indented four spaces.
func nest(lines ...string) string { return door(lines...) }

func TestCheckNested(t *testing.T) {
	t.Parallel()
	runCheckCases(t, []checkCase{
		{
			name: "composite without initial child",
			src:  nest("initial A {", "    state B wait", "}", "final Z succeeded", "event E", "A -> Z on E"),
			want: []string{`t.fsm:2:13: composite state A has no initial state; mark one of its children "initial"`},
		},
		{
			name: "composite with two initial children",
			src:  nest("initial A {", "    initial B wait", "    initial C wait", "}", "final Z succeeded", "event E", "A -> Z on E"),
			want: []string{"t.fsm:4:17: second initial state C of A (its initial state is B, at 3:17)"},
		},
		{
			name: "on done without a final child",
			src:  nest("initial A {", "    initial B wait", "}", "final Z succeeded", "event E", "A -> Z on E", "A -> Z on done"),
			want: []string{`t.fsm:8:15: "on done" on state A, which has no final state without a status; a completion row leaves a composite once its run reaches such a final child`},
		},
		{
			name: "internal row out of its source",
			src:  nest("initial A {", "    initial B wait", "}", "final Z succeeded", "event E", "A -> Z on E internal"),
			want: []string{`t.fsm:7:10: internal transition from A to Z: an internal row stays in its source, so its target is A or a state inside it`},
		},
		{
			name: "done is reserved",
			src:  nest("initial A wait", "final Z succeeded", "event done", "A -> Z on done"),
			want: []string{
				`t.fsm:4:11: done is a reserved word, not an event: a row "on done" is taken when its composite completes; name the event otherwise`,
				`t.fsm:5:15: "on done" on state A, which has no final state without a status; a completion row leaves a composite once its run reaches such a final child`,
			},
		},
		{
			name: "history outside a composite",
			src:  nest("initial A wait", "history H", "final Z succeeded", "event E", "A -> Z on E"),
			want: []string{"t.fsm:3:5: history H is not inside a composite state; declare it in the block of the state whose history it is"},
		},
		{
			name: "history as a source",
			src:  nest("initial A {", "    initial B wait", "    history H", "}", "final Z succeeded", "event E", "A -> Z on E", "H -> Z on E"),
			want: []string{"t.fsm:9:5: transition out of history H; a history is only ever a row's target"},
		},
		{
			name: "final without status at the top level",
			src:  nest("initial A wait", "final Z", "event E", "A -> Z on E"),
			want: []string{"t.fsm:3:11: final state Z needs a status: succeeded, failed or cancelled"},
		},
		{
			name: "unknown action",
			src:  nest("initial A wait entry StartClok", "final Z succeeded", "action StartClock", "event E", "A -> Z on E"),
			want: []string{"t.fsm:2:26: unknown action StartClok; did you mean StartClock?"},
		},
		{
			name: "unused action",
			src:  nest("initial A wait", "final Z succeeded", "action StartClock", "event E", "A -> Z on E"),
			want: []string{"t.fsm:4:12: warning: action StartClock is never used; name it in an entry or exit option, or remove it"},
		},
		{
			name: "composite cannot wait",
			src:  nest("initial A wait {", "    initial B wait", "}", "final Z succeeded", "event E", "A -> Z on E"),
			want: []string{"t.fsm:2:15: composite state A cannot take wait; only a leaf state waits or runs a handler"},
		},
		{
			name: "a leaf unreachable inside a composite",
			src:  nest("initial A {", "    initial B wait", "    state C wait", "}", "final Z succeeded", "event E", "A -> Z on E"),
			want: []string{"t.fsm:4:15: state C is unreachable from the initial state B"},
		},
		{
			// A history may lead to any leaf its composite has been in.
			name: "a history reaches every leaf of its composite",
			src: nest("initial S wait", "state A {", "    initial B wait", "    state C wait", "    history H", "}", "final Z succeeded",
				"event E", "event F", "event G", "S -> H on E", "B -> S on F", "A -> Z on G"),
		},
		{
			name: "a composite's row that every leaf shadows",
			src:  nest("initial A {", "    initial B wait", "    state C wait", "}", "final Z succeeded", "event E", "B -> C on E", "C -> B on E", "A -> Z on E"),
			want: []string{
				"t.fsm:3:17: warning: no final state can be reached from state B; a run that gets there never ends",
				"t.fsm:4:15: warning: no final state can be reached from state C; a run that gets there never ends",
				"t.fsm:6:11: state Z is unreachable from the initial state B",
				"t.fsm:10:5: transition from A on E can never fire: every state in A has a transition on E that is tried first (the one of B at 8:5)",
			},
		},
		{
			name: "a leaf's row in front of its composite's is bubbling, not an error",
			src:  nest("initial A {", "    initial B wait", "    state C wait", "}", "final Z succeeded", "event E", "B -> C on E", "A -> Z on E"),
		},
		{
			name: "two unguarded eventless rows",
			src:  nest("initial A", "final Y succeeded", "final Z succeeded", "A -> Y", "A -> Z"),
			want: []string{
				"t.fsm:4:11: state Z is unreachable from the initial state A",
				"t.fsm:6:5: two unguarded transitions from A without an event (the other at 5:5)",
			},
		},
		{
			name: "a loop of unguarded eventless rows",
			src:  nest("initial A wait", "state B", "state C", "final Z succeeded", "event E", "A -> B on E when G", "B -> C", "C -> B", "A -> Z on E", "guard G"),
			want: []string{
				"t.fsm:3:11: warning: no final state can be reached from state B; a run that gets there never ends",
				"t.fsm:4:11: warning: no final state can be reached from state C; a run that gets there never ends",
				"t.fsm:8:5: unguarded rows without an event loop for ever: B -> C -> B; guard one of them, or give it an event",
			},
		},
		{
			name: "a completion row behind an unguarded eventless row",
			src:  nest("initial A {", "    initial B wait", "    final F", "}", "final Y succeeded", "final Z succeeded", "event E", "B -> F on E", "A -> Y", "A -> Z on done"),
			want: []string{
				"t.fsm:11:5: transition from A on done can never fire: the unguarded one without an event at 10:5 leaves A first",
			},
		},
		{
			name: "a self row restarts a timer",
			src:  nest("initial A wait after 32s Timeout", "final Z succeeded", "event Retransmit", "event Timeout", "A -> A on Retransmit", "A -> Z on Timeout"),
			want: []string{`t.fsm:6:5: warning: state A: the row A -> A on Retransmit re-enters A and restarts its timer "after 32s Timeout"; add "internal" to keep it running`},
		},
		{
			name: "an internal self row keeps the timer",
			src:  nest("initial A wait after 32s Timeout", "final Z succeeded", "event Retransmit", "event Timeout", "A -> A on Retransmit internal", "A -> Z on Timeout"),
		},
		{
			name: "timer from an event field",
			src: nest("initial A wait", "state P wait after Polled.interval min 1s max 10m Tick", "final Z succeeded",
				"event Polled { interval time.Duration }", "event Tick", "A -> P on Polled", "P -> Z on Tick"),
		},
		{
			name: "timer field of the wrong type",
			src: nest("initial A wait", "state P wait after Polled.interval min 1s max 10m Tick", "final Z succeeded",
				"event Polled { interval int }", "event Tick", "A -> P on Polled", "P -> Z on Tick"),
			want: []string{"t.fsm:3:31: field interval of event Polled is int; a timer's duration is a time.Duration"},
		},
		{
			name: "timer field unknown",
			src: nest("initial A wait", "state P wait after Polled.intervl min 1s max 10m Tick", "final Z succeeded",
				"event Polled { interval time.Duration }", "event Tick", "A -> P on Polled", "P -> Z on Tick"),
			want: []string{"t.fsm:3:31: event Polled has no field intervl; did you mean interval?"},
		},
		{
			name: "timer bounds the wrong way round",
			src: nest("initial A wait", "state P wait after Polled.interval min 10m max 1s Tick", "final Z succeeded",
				"event Polled { interval time.Duration }", "event Tick", "A -> P on Polled", "P -> Z on Tick"),
			want: []string{"t.fsm:3:52: timer maximum 1s must be longer than its minimum 10m"},
		},
		{
			name: "timer field entered on another event",
			src: nest("initial A wait", "state P wait after Polled.interval min 1s max 10m Tick", "final Z succeeded",
				"event Polled { interval time.Duration }", "event Tick", "event Go", "A -> P on Polled", "A -> P on Go", "P -> Z on Tick"),
			want: []string{"t.fsm:9:5: the row A -> P on Go enters state P, whose timer takes its duration from Polled.interval; every row that enters P must be on Polled"},
		},
	})
}

// TestCheckMaxTransitions refuses a machine whose composite rows expand
// to more transitions than a machine may have.
func TestCheckMaxTransitions(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("machine Big {\n    initial A {\n        initial S0 wait\n")
	const leaves, rows = 600, 500
	for i := 1; i < leaves; i++ {
		fmt.Fprintf(&b, "        state S%d wait\n", i)
	}
	b.WriteString("    }\n")
	for i := range rows {
		fmt.Fprintf(&b, "    event E%d\n    A -> S%d on E%d\n", i, i, i)
	}
	b.WriteString("}\n")
	_, diags := Load("t.fsm", []byte(b.String()))
	want := []string{fmt.Sprintf("t.fsm:%d:5: machine Big has more than 250000 transitions once the rows of composite states are applied to each of their leaves; a machine has at most 250000", 5+leaves+2*(MaxTransitions/leaves))}
	if diff := cmp.Diff(want, diagStrings(diags)); diff != "" {
		t.Errorf("diagnostics (-want +got):\n%s", diff)
	}
}
