package dsl

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// diagStrings renders diagnostics the way the command line prints them.
func diagStrings(ds Diagnostics) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.String())
	}
	return out
}

// checkCase is a source and the exact diagnostics Load must report for it.
type checkCase struct {
	name string
	src  string
	want []string
}

func runCheckCases(t *testing.T, cases []checkCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec, ds := Load("t.fsm", []byte(tc.src))
			if diff := cmp.Diff(tc.want, diagStrings(ds)); diff != "" {
				t.Errorf("diagnostics (-want +got):\n%s", diff)
			}
			if ds.HasErrors() != (spec == nil) {
				t.Errorf("HasErrors() = %v but spec nil = %v", ds.HasErrors(), spec == nil)
			}
		})
	}
}

// Each case below is a complete, otherwise valid machine with one problem,
// so that the diagnostics show that problem and nothing else.

func TestCheckUnknownNames(t *testing.T) {
	t.Parallel()
	runCheckCases(t, []checkCase{
		{
			name: "state close",
			src: `machine M {
    initial A
    final DONE succeeded
    event Go
    A -> DNOE on Go
}`,
			want: []string{"t.fsm:5:10: unknown state DNOE; did you mean DONE?"},
		},
		{
			name: "state far",
			src: `machine M {
    initial A
    final DONE succeeded
    event Go
    A -> ELSEWHERE on Go
}`,
			want: []string{"t.fsm:5:10: unknown state ELSEWHERE"},
		},
		{
			name: "state in from list, case differs",
			src: `machine M {
    initial A
    final DONE succeeded
    event Go
    A, done -> DONE on Go
}`,
			want: []string{"t.fsm:5:8: unknown state done; did you mean DONE?"},
		},
		{
			name: "event close",
			src: `machine M {
    initial A
    final DONE succeeded
    event Finish
    A -> DONE on Finsh
}`,
			want: []string{
				"t.fsm:5:18: unknown event Finsh; did you mean Finish?",
			},
		},
		{
			name: "event far",
			src: `machine M {
    initial A
    final DONE succeeded
    event Finish
    A -> DONE on Go
}`,
			want: []string{
				"t.fsm:5:18: unknown event Go",
			},
		},
		{
			name: "guard close",
			src: `machine M {
    initial A
    final DONE succeeded
    event Go
    guard Allowed
    A -> DONE on Go when Alowed
}`,
			want: []string{
				"t.fsm:6:26: unknown guard Alowed; did you mean Allowed?",
			},
		},
		{
			name: "guard far, negated",
			src: `machine M {
    initial A
    final DONE succeeded
    event Go
    A -> DONE on Go unless Paid
}`,
			want: []string{"t.fsm:5:28: unknown guard Paid"},
		},
		{
			name: "retry preset close",
			src: `machine M {
    initial A retry datbase
    final DONE succeeded
    event Go
    A -> DONE on Go
}`,
			want: []string{"t.fsm:2:21: unknown retry policy datbase; did you mean database?"},
		},
		{
			name: "retry preset far",
			src: `machine M {
    initial A retry forever
    final DONE succeeded
    event Go
    A -> DONE on Go
}`,
			want: []string{"t.fsm:2:21: unknown retry policy forever; want a number of attempts or one of validation, database, externalService, payment, background"},
		},
		{
			name: "field type close",
			src: `machine M {
    initial A
    final DONE succeeded
    event Go { name strng; tags []sting }
    A -> DONE on Go
}`,
			want: []string{
				"t.fsm:4:21: unknown type strng; did you mean string?",
				"t.fsm:4:33: unknown type sting; did you mean string?",
			},
		},
		{
			name: "field type far",
			src: `machine M {
    initial A
    final DONE succeeded
    event Go { amount Money }
    A -> DONE on Go
}`,
			want: []string{`t.fsm:4:23: unknown type Money; want a Go scalar type, time.Time, time.Duration or "import/path".Money`},
		},
		{
			name: "qualified field type",
			src: `machine M {
    initial A
    final DONE succeeded
    event Go { at time.Tim; amount money.Amount; x "example.com/money".amount; y "a b".T; z "x".Y.Z }
    A -> DONE on Go
}`,
			want: []string{
				"t.fsm:4:19: unknown type time.Tim; did you mean time.Time?",
				`t.fsm:4:36: unknown type money.Amount; only time.Time and time.Duration are known by name, write other types as "import/path".Amount`,
				`t.fsm:4:52: type "example.com/money".amount is not exported`,
				`t.fsm:4:82: invalid import path "a b"`,
				`t.fsm:4:93: type "x".Y.Z: write a quoted import path, a dot and one type name`,
			},
		},
		{
			// The go command's rules: each of these it refuses to import.
			name: "import paths Go refuses",
			src: `machine M {
    initial A
    final DONE succeeded
    event Go { a "a\nb".T; b "../evil".T; c "/abs".T; d "a//b".T; e "a/./b".T; f "x/".T; g "ok.example/money".T }
    A -> DONE on Go
}`,
			want: []string{
				`t.fsm:4:18: invalid import path "a\nb"`,
				`t.fsm:4:30: invalid import path "../evil"`,
				`t.fsm:4:45: invalid import path "/abs"`,
				`t.fsm:4:57: invalid import path "a//b"`,
				`t.fsm:4:69: invalid import path "a/./b"`,
				`t.fsm:4:82: invalid import path "x/"`,
			},
		},
	})
}

func TestCheckDuplicates(t *testing.T) {
	t.Parallel()
	runCheckCases(t, []checkCase{
		{
			name: "machine",
			src: `machine M {
    initial A
    final DONE succeeded
    event Go
    A -> DONE on Go
}
machine M {
    initial A
    final DONE succeeded
    event Go
    A -> DONE on Go
}`,
			want: []string{"t.fsm:7:1: machine M declared twice (first at 1:1)"},
		},
		{
			name: "state",
			src: `machine M {
    initial A
    final DONE succeeded
    state A
    event Go
    A -> DONE on Go
}`,
			want: []string{"t.fsm:4:11: state A declared twice (first at 2:13)"},
		},
		{
			name: "event",
			src: `machine M {
    initial A
    final DONE succeeded
    event Go
    event Go { x int }
    A -> DONE on Go
}`,
			want: []string{"t.fsm:5:11: event Go declared twice (first at 4:11)"},
		},
		{
			name: "guard",
			src: `machine M {
    initial A
    final DONE succeeded
    event Go
    guard Ok
    guard Ok
    A -> DONE on Go when Ok
    A -> DONE on Go
}`,
			want: []string{"t.fsm:6:11: guard Ok declared twice (first at 5:11)"},
		},
		{
			name: "field",
			src: `machine M {
    initial A
    final DONE succeeded
    event Go { id string; id int }
    A -> DONE on Go
}`,
			want: []string{"t.fsm:4:27: field id of event Go declared twice (first at 4:16)"},
		},
		{
			name: "field Go name",
			src: `machine M {
    initial A
    final DONE succeeded
    event Go { id string; ID int }
    A -> DONE on Go
}`,
			want: []string{"t.fsm:4:27: fields id and ID of event Go both become Go field ID"},
		},
		{
			name: "type",
			src: `machine M {
    type "m"
    type "n"
    initial A
    final DONE succeeded
    event Go
    A -> DONE on Go
}`,
			want: []string{"t.fsm:3:5: type declared twice (first at 2:5)"},
		},
		{
			name: "version",
			src: `machine M {
    version 1
    version 2
    initial A
    final DONE succeeded
    event Go
    A -> DONE on Go
}`,
			want: []string{"t.fsm:3:5: version declared twice (first at 2:5)"},
		},
		{
			name: "package",
			src: `machine M {
    package m
    package n
    initial A
    final DONE succeeded
    event Go
    A -> DONE on Go
}`,
			want: []string{"t.fsm:3:5: package declared twice (first at 2:5)"},
		},
		{
			name: "package of two machines",
			src: `machine M {
    initial A
    final DONE succeeded
    event Go
    A -> DONE on Go
}
machine N {
    package m
    initial A
    final DONE succeeded
    event Go
    A -> DONE on Go
}`,
			want: []string{`t.fsm:7:1: machine N would generate package m, as does the machine at 1:1; give one of them another "package NAME"`},
		},
		{
			name: "type name of two machines",
			src: `machine M {
    initial A
    final DONE succeeded
    event Go
    A -> DONE on Go
}
machine N {
    type "m"
    initial A
    final DONE succeeded
    event Go
    A -> DONE on Go
}`,
			want: []string{`t.fsm:7:1: machine N has type name "m" and version 1, as does the machine at 1:1; give one of them another "type", or the newer one another "version"`},
		},
	})
}

func TestCheckStates(t *testing.T) {
	t.Parallel()
	runCheckCases(t, []checkCase{
		{
			name: "no initial state",
			src: `machine M {
    state A
    final DONE succeeded
    event Go
    A -> DONE on Go
}`,
			want: []string{`t.fsm:1:1: machine M has no initial state; declare one with "initial NAME"`},
		},
		{
			name: "two initial states",
			src: `machine M {
    initial A
    initial B
    final DONE succeeded
    event Go
    A, B -> DONE on Go
}`,
			want: []string{"t.fsm:3:13: second initial state B (the initial state is A, at 2:13)"},
		},
		{
			name: "final without status",
			src: `machine M {
    initial A
    final DONE
    event Go
    A -> DONE on Go
}`,
			want: []string{"t.fsm:3:11: final state DONE needs a status: succeeded, failed or cancelled"},
		},
		{
			name: "status on a non-final state",
			src: `machine M {
    initial A
    state B failed
    final DONE succeeded
    event Go
    A -> B on Go
    B -> DONE on Go
}`,
			want: []string{"t.fsm:3:13: state B cannot have a status; only final states do"},
		},
		{
			name: "status on the initial state",
			src: `machine M {
    initial A succeeded outcome "x"
    final DONE succeeded
    event Go
    A -> DONE on Go
}`,
			want: []string{"t.fsm:2:15: initial state A cannot have a status; only final states do"},
		},
		{
			name: "options on a final state",
			src: `machine M {
    initial A
    final DONE succeeded retry 3 wait
    event Go
    A -> DONE on Go
}`,
			want: []string{
				"t.fsm:3:26: final state DONE cannot take options; it is never left",
				"t.fsm:3:34: final state DONE cannot take options; it is never left",
			},
		},
		{
			name: "no final state is a machine that never ends",
			src: `machine M {
    initial A
    state B
    event Go
    event Back
    A -> B on Go
    B -> A on Back
}`,
		},
		{
			name: "unreachable state",
			src: `machine M {
    initial A
    state LOST
    final DONE succeeded
    event Go
    A -> DONE on Go
    LOST -> DONE on Go
}`,
			want: []string{"t.fsm:3:11: state LOST is unreachable from the initial state A"},
		},
		{
			name: "a wait state whose events no caller may send and no timer of its own fires",
			src: `machine M {
    initial A
    state HOLD wait
    state COOL wait after 1m Tick
    state WORK retry 2 else GaveUp
    final DONE succeeded
    final FAILED failed
    event Go
    event Tick
    event GaveUp
    A -> HOLD on Go
    HOLD -> COOL on Tick
    HOLD -> FAILED on GaveUp
    COOL -> WORK on Tick
    WORK -> DONE on Go
    WORK -> FAILED on GaveUp
}`,
			want: []string{"t.fsm:3:11: warning: state HOLD waits, but has no timer and callers may not send its events (Tick is sent by the timer of COOL, GaveUp is sent by the retry policy of WORK): a run there waits for ever; declare one of them external"},
		},
		{
			name: "a wait state with one event callers may send, or an external one, does not warn",
			src: `machine M {
    initial A
    state HOLD wait
    state PARK wait
    state COOL wait after 1m Tick
    final DONE succeeded
    event Go
    event Tick
    event Free external
    A -> HOLD on Go
    HOLD -> COOL on Tick
    HOLD -> DONE on Go
    A -> PARK on Free
    PARK -> COOL on Tick
    PARK -> DONE on Free
    COOL -> DONE on Tick
}`,
		},
		{
			name: "state that cannot reach a final state",
			src: `machine M {
    initial A
    state LOOP
    final DONE succeeded
    event Go
    event Again
    A -> DONE on Go
    A -> LOOP on Again
    LOOP -> LOOP on Again
}`,
			want: []string{"t.fsm:3:11: warning: no final state can be reached from state LOOP; a run that gets there never ends"},
		},
		{
			name: "empty outcome",
			src: `machine M {
    initial A
    final DONE succeeded outcome ""
    event Go
    A -> DONE on Go
}`,
			want: []string{"t.fsm:3:34: empty outcome; leave the outcome out instead"},
		},
		{
			name: "no transitions",
			src: `machine Lone {
    type "lone"
    version 1
    initial A
}`,
			want: []string{`t.fsm:1:1: machine Lone has no transitions: a run could never leave its initial state A; add one, such as "A -> DONE on EVENT"`},
		},
		{
			name: "no transitions, only final states besides the initial",
			src: `machine M {
    initial A wait
    final B succeeded
    final C failed
}`,
			want: []string{`t.fsm:1:1: machine M has no transitions: a run could never leave its initial state A; add one, such as "A -> DONE on EVENT"`},
		},
		{
			name: "no transitions, an event declared",
			src: `machine M {
    initial A
    event Go
}`,
			want: []string{
				`t.fsm:1:1: machine M has no transitions: a run could never leave its initial state A; add one, such as "A -> DONE on EVENT"`,
				"t.fsm:3:11: event Go is never used",
			},
		},
	})
}

func TestCheckTransitions(t *testing.T) {
	t.Parallel()
	runCheckCases(t, []checkCase{
		{
			name: "out of a final state",
			src: `machine M {
    initial A
    final DONE succeeded
    event Go
    A -> DONE on Go
    DONE -> A on Go
}`,
			want: []string{"t.fsm:6:5: transition out of final state DONE; a final state is never left"},
		},
		{
			name: "state listed twice",
			src: `machine M {
    initial A
    final DONE succeeded
    event Go
    A, A -> DONE on Go
}`,
			want: []string{"t.fsm:5:8: state A listed twice"},
		},
		{
			name: "state listed next to star",
			src: `machine M {
    initial A
    final DONE succeeded
    event Go
    A, * -> DONE on Go
}`,
			want: []string{"t.fsm:5:5: state A listed next to *, which already includes it"},
		},
		{
			name: "star listed twice",
			src: `machine M {
    initial A
    final DONE succeeded
    event Go
    *, * -> DONE on Go
}`,
			want: []string{"t.fsm:5:8: * listed twice"},
		},
		{
			name: "two unguarded transitions",
			src: `machine M {
    initial A
    final DONE succeeded
    final FAILED failed
    event Go
    A -> DONE on Go
    A -> FAILED on Go
}`,
			want: []string{
				"t.fsm:4:11: state FAILED is unreachable from the initial state A",
				"t.fsm:7:5: two unguarded transitions from A on Go (the other at 6:5)",
			},
		},
		{
			name: "guarded after unguarded",
			src: `machine M {
    initial A
    final DONE succeeded
    event Go
    guard Ok
    A -> DONE on Go
    A -> DONE on Go when Ok
}`,
			want: []string{"t.fsm:7:5: transition from A on Go can never fire: the unguarded one at 6:5 comes first"},
		},
		{
			name: "same guard twice",
			src: `machine M {
    initial A
    final DONE succeeded
    final FAILED failed
    event Go
    guard Ok
    A -> DONE on Go when Ok
    A -> FAILED on Go when Ok
    A -> FAILED on Go
}`,
			want: []string{"t.fsm:8:5: transition from A on Go can never fire: the one at 7:5 has the same guard and comes first"},
		},
		{
			name: "same negated guard written two ways",
			src: `machine M {
    initial A
    final DONE succeeded
    final FAILED failed
    event Go
    guard Ok
    A -> DONE on Go unless Ok
    A -> FAILED on Go when !Ok
    A -> FAILED on Go
}`,
			want: []string{"t.fsm:8:5: transition from A on Go can never fire: the one at 7:5 has the same guard and comes first"},
		},
		{
			name: "after G and not G",
			src: `machine M {
    initial A
    final DONE succeeded
    final FAILED failed
    event Go
    guard Ok
    guard Other
    A -> DONE on Go when Ok
    A -> FAILED on Go unless Ok
    A -> FAILED on Go when Other
}`,
			want: []string{"t.fsm:10:5: transition from A on Go can never fire: the transitions on Ok and !Ok before it admit every event"},
		},
		{
			name: "double negation",
			src: `machine M {
    initial A
    final DONE succeeded
    event Go
    guard Ok
    A -> DONE on Go unless !Ok
}`,
			want: []string{`t.fsm:6:21: "unless !Ok" is a double negation; write "when Ok"`},
		},
		{
			name: "outcome on a transition to a non-final state",
			src: `machine M {
    initial A
    state B
    final DONE succeeded
    event Go
    A -> B on Go outcome "hit"
    B -> DONE on Go
}`,
			want: []string{"t.fsm:6:26: outcome on a transition to B, which is not final"},
		},
		{
			name: "contradicting outcomes",
			src: `machine M {
    initial A
    final DONE succeeded outcome "new"
    event Go
    A -> DONE on Go outcome "hit"
}`,
			want: []string{`t.fsm:5:29: outcome "hit" contradicts the outcome "new" of state DONE`},
		},
		{
			name: "same outcome twice is fine",
			src: `machine M {
    initial A
    final DONE succeeded outcome "new"
    event Go
    A -> DONE on Go outcome "new"
}`,
		},
	})
}

func TestCheckGuardFallbackWarning(t *testing.T) {
	t.Parallel()
	runCheckCases(t, []checkCase{
		{
			name: "two guarded alternatives",
			src: `machine M {
    initial A
    final DONE succeeded
    final FAILED failed
    event Go
    guard Ok
    guard Bad
    A -> DONE on Go when Ok
    A -> FAILED on Go when Bad
}`,
			want: []string{"t.fsm:9:5: warning: every transition from A on Go is guarded: when no guard admits the event, it is rejected; add an unguarded one last if that is not intended"},
		},
		{
			name: "single guarded row",
			src: `machine M {
    initial A
    final DONE succeeded
    event Go
    guard Ok
    A -> DONE on Go when Ok
}`,
		},
		{
			name: "guard and its negation",
			src: `machine M {
    initial A
    final DONE succeeded
    final FAILED failed
    event Go
    guard Ok
    A -> DONE on Go when Ok
    A -> FAILED on Go unless Ok
}`,
		},
		{
			name: "guarded alternatives with a fallback",
			src: `machine M {
    initial A
    final DONE succeeded
    final FAILED failed
    event Go
    guard Ok
    guard Bad
    A -> DONE on Go when Ok
    A -> FAILED on Go when Bad
    A -> FAILED on Go
}`,
		},
		{
			name: "a shadowed row is not an alternative",
			src: `machine M {
    initial A
    final DONE succeeded
    event Go
    guard Ok
    A -> DONE on Go when Ok
    A -> DONE on Go when Ok
}`,
			want: []string{"t.fsm:7:5: transition from A on Go can never fire: the one at 6:5 has the same guard and comes first"},
		},
	})
}

func TestCheckUnused(t *testing.T) {
	t.Parallel()
	runCheckCases(t, []checkCase{
		{
			name: "event",
			src: `machine M {
    initial A
    final DONE succeeded
    event Go
    event Spare { why string }
    A -> DONE on Go
}`,
			want: []string{"t.fsm:5:11: event Spare is never used"},
		},
		{
			name: "guard",
			src: `machine M {
    initial A
    final DONE succeeded
    event Go
    guard Spare
    A -> DONE on Go
}`,
			want: []string{"t.fsm:5:11: guard Spare is never used"},
		},
	})
}

func TestCheckStateOptions(t *testing.T) {
	t.Parallel()
	runCheckCases(t, []checkCase{
		{
			name: "timer on an event the state does not handle",
			src: `machine M {
    initial A after 1h Timeout
    state B
    final DONE succeeded
    event Go
    event Timeout
    A -> B on Go
    B -> DONE on Timeout
}`,
			want: []string{"t.fsm:2:24: timer fires Timeout in state A, which has no transition on Timeout"},
		},
		{
			name: "timer event with payload",
			src: `machine M {
    initial A wait after 7d Timeout
    final DONE succeeded
    event Timeout { at time.Time }
    A -> DONE on Timeout
}`,
			want: []string{"t.fsm:2:29: timer event Timeout has payload fields; a timer fires its event without a payload"},
		},
		{
			name: "timer on an unknown event",
			src: `machine M {
    initial A wait after 7d Timeot
    final DONE succeeded
    event Timeout
    A -> DONE on Timeout
}`,
			want: []string{"t.fsm:2:29: unknown event Timeot; did you mean Timeout?"},
		},
		{
			name: "two timers with the same event",
			src: `machine M {
    initial A wait after 1h Timeout after 2h Timeout
    final DONE succeeded
    event Timeout
    A -> DONE on Timeout
}`,
			want: []string{"t.fsm:2:46: state A has two timers firing Timeout (the other at 2:20)"},
		},
		{
			name: "timer duration zero",
			src: `machine M {
    initial A wait after 0s Timeout
    final DONE succeeded
    event Timeout
    A -> DONE on Timeout
}`,
			want: []string{"t.fsm:2:26: timer duration 0s must be positive"},
		},
		{
			name: "invalid durations",
			src: `machine M {
    initial A wait after 9999999999h Timeout
    state B retry 3 backoff 200000d
    final DONE succeeded
    event Timeout
    event Go
    A -> B on Timeout
    B -> DONE on Go
}`,
			want: []string{
				`t.fsm:2:26: duration "9999999999h" is too long; the longest is 2562047h (106751d)`,
				`t.fsm:3:29: duration "200000d" is too long; the longest is 2562047h (106751d)`,
			},
		},
		{
			name: "wait and retry",
			src: `machine M {
    initial A wait retry 3
    state B retry database wait
    final DONE succeeded
    event Go
    A -> B on Go
    B -> DONE on Go
}`,
			want: []string{
				"t.fsm:2:20: state A both waits and has a retry policy; only a driven state, whose handler runs, is retried",
				"t.fsm:3:28: state B both waits and has a retry policy; only a driven state, whose handler runs, is retried",
			},
		},
		{
			name: "retry exhaustion event not handled or unknown",
			src: `machine M {
    initial A retry 3 else Boom
    state B retry database else Nope
    state C retry 2 else Bom
    final F failed
    final G succeeded
    event Go
    event Boom
    event Nope
    A -> B on Go
    A -> F on Boom
    B -> C on Go
    C -> G on Go
}`,
			want: []string{
				"t.fsm:3:33: retries of state B end with Nope, but B has no transition on Nope",
				"t.fsm:4:26: unknown event Bom; did you mean Boom?",
			},
		},
		{
			name: "options twice",
			src: `machine M {
    initial A wait wait
    state B retry 3 retry 4
    final DONE succeeded
    event Go
    A -> B on Go
    B -> DONE on Go
}`,
			want: []string{
				"t.fsm:2:20: wait given twice for state A",
				"t.fsm:3:21: state B has two retry policies (the other at 3:13)",
			},
		},
		{
			name: "retry numbers",
			src: `machine M {
    initial A retry 0 factor 0.5 jitter 1.5
    state B retry 3 backoff 2s max 1s nonretryable "", "X", "X"
    state C retry 1.5 max 500ms
    state D retry 3 backoff 0s
    final DONE succeeded
    event Go
    A -> B on Go
    B -> C on Go
    C -> D on Go
    D -> DONE on Go
}`,
			want: []string{
				"t.fsm:2:21: retry 0: want a whole number of attempts >= 1",
				"t.fsm:2:30: factor 0.5: want a number >= 1",
				"t.fsm:2:41: jitter 1.5: want a fraction between 0 and 1",
				"t.fsm:3:36: max 1s is shorter than backoff 2s",
				`t.fsm:3:52: empty non-retryable code`,
				`t.fsm:3:61: non-retryable code "X" listed twice`,
				"t.fsm:4:19: retry 1.5: want a whole number of attempts >= 1",
				"t.fsm:4:27: max 500ms is shorter than the default backoff 1s",
				"t.fsm:5:29: backoff 0s must be positive",
			},
		},
	})
}

func TestCheckHeader(t *testing.T) {
	t.Parallel()
	runCheckCases(t, []checkCase{
		{
			name: "bad type name",
			src: `machine M {
    type "9 lives"
    initial A
    final DONE succeeded
    event Go
    A -> DONE on Go
}`,
			want: []string{`t.fsm:2:5: invalid type name "9 lives": want letters, digits, '_', '-' and '.', starting with a letter`},
		},
		{
			name: "bad package name",
			src: `machine M {
    package Rog
    initial A
    final DONE succeeded
    event Go
    A -> DONE on Go
}`,
			want: []string{"t.fsm:2:5: invalid package name Rog: want a lower-case Go identifier other than a keyword, _ or main"},
		},
		{
			name: "package keyword",
			src: `machine M {
    package func
    initial A
    final DONE succeeded
    event Go
    A -> DONE on Go
}`,
			want: []string{"t.fsm:2:5: invalid package name func: want a lower-case Go identifier other than a keyword, _ or main"},
		},
		{
			name: "default package a keyword",
			src: `machine Select {
    initial A
    final DONE succeeded
    event Go
    A -> DONE on Go
}`,
			want: []string{`t.fsm:1:1: machine Select would generate package select, a Go keyword; add "package NAME"`},
		},
		{
			name: "default package main",
			src: `machine Main {
    initial A
    final DONE succeeded
    event Go
    A -> DONE on Go
}`,
			want: []string{`t.fsm:1:1: machine Main would generate package main, which is a command, not a library; add "package NAME"`},
		},
		{
			name: "version 0",
			src: `machine M {
    version 0
    initial A
    final DONE succeeded
    event Go
    A -> DONE on Go
}`,
			want: []string{"t.fsm:2:5: version 0: want a whole number >= 1"},
		},
		{
			name: "fractional version",
			src: `machine M {
    version 1.5
    initial A
    final DONE succeeded
    event Go
    A -> DONE on Go
}`,
			want: []string{"t.fsm:2:5: version 1.5: want a whole number >= 1"},
		},
		{
			name: "no machine",
			src:  "// nothing here yet\n",
			want: []string{`t.fsm:1:1: no machine declared; a file holds one or more "machine Name { ... }" blocks`},
		},
		{
			name: "empty file",
			src:  "",
			want: []string{`t.fsm:1:1: no machine declared; a file holds one or more "machine Name { ... }" blocks`},
		},
	})
}

func TestCheckNames(t *testing.T) {
	t.Parallel()
	runCheckCases(t, []checkCase{
		{
			name: "lower-case machine, event and guard",
			src: `machine m {
    initial A
    final DONE succeeded
    event go
    guard ok
    A -> DONE on go when ok
}`,
			want: []string{
				"t.fsm:1:1: machine name m must start with an upper-case letter",
				"t.fsm:4:11: event name go must start with an upper-case letter",
				"t.fsm:5:11: guard name ok must start with an upper-case letter",
			},
		},
		{
			name: "states with one Go name",
			src: `machine M {
    initial FOO_BAR
    state FooBar
    final DONE succeeded
    event Go
    FOO_BAR -> FooBar on Go
    FooBar -> DONE on Go
}`,
			want: []string{"t.fsm:3:11: state FooBar would be named StateFooBar in Go, which is taken by state FOO_BAR at 2:13"},
		},
		{
			name: "event named like generated identifiers",
			src: `machine M {
    initial A
    final DONE succeeded
    event Machine
    event Fire
    A -> DONE on Machine
    A -> DONE on Fire
}`,
			want: []string{
				"t.fsm:4:11: event Machine would be named Machine in Go, a name the generated package declares itself",
				"t.fsm:5:11: event Fire would be named Fire in Go, a name the generated package declares itself",
			},
		},
		{
			name: "event named like a generated test",
			src: `machine M {
    initial A
    final DONE succeeded
    event TestFSM
    event TestFSMViews
    event TestFSMStateNames
    A -> DONE on TestFSM
    A -> DONE on TestFSMViews
    A -> DONE on TestFSMStateNames
}`,
			want: []string{
				"t.fsm:4:11: event TestFSM would be named TestFSM in Go, a name the generated package declares itself",
				"t.fsm:5:11: event TestFSMViews would be named TestFSMViews in Go, a name the generated package declares itself",
				"t.fsm:6:11: event TestFSMStateNames would be named TestFSMStateNames in Go, a name the generated package declares itself",
			},
		},
		{
			name: "event named like a state view",
			src: `machine M {
    initial INGESTING
    final DONE succeeded
    event InIngesting
    INGESTING -> DONE on InIngesting
}`,
			want: []string{"t.fsm:4:11: event InIngesting would be named InIngesting in Go, which is taken by the view of state INGESTING at 2:13"},
		},
		{
			name: "event named like a state's event set",
			src: `machine M {
    initial WORK
    final DONE succeeded
    event WorkEvent
    WORK -> DONE on WorkEvent
}`,
			want: []string{"t.fsm:4:11: event WorkEvent would be named WorkEvent in Go, which is taken by the event set of state WORK at 2:13"},
		},
		{
			name: "event named like a state constant",
			src: `machine M {
    initial A
    final DONE succeeded
    event StateDone
    A -> DONE on StateDone
}`,
			want: []string{"t.fsm:4:11: event StateDone would be named StateDone in Go, which is taken by state DONE at 3:11"},
		},
		{
			name: "guards with one Go name",
			src: `machine M {
    initial A
    final DONE succeeded
    final FAILED failed
    event Go
    guard Is_Ok
    guard IsOk
    A -> DONE on Go when Is_Ok
    A -> FAILED on Go when IsOk
    A -> FAILED on Go
}`,
			want: []string{"t.fsm:7:11: guard IsOk would be named IsOk in Go, which is taken by guard Is_Ok at 6:11"},
		},
		{
			name: "field named like the event method",
			src: `machine M {
    initial A
    final DONE succeeded
    event Go { eventName string }
    A -> DONE on Go
}`,
			want: []string{"t.fsm:4:16: field eventName of event Go would be named EventName in Go, which is taken by the method every event has"},
		},
	})
}

// TestCheckOddInput feeds the checker sources that parse but make little
// sense: it must report them without panicking.
func TestCheckOddInput(t *testing.T) {
	t.Parallel()
	runCheckCases(t, []checkCase{
		{
			name: "unknown state and unknown event on one row",
			src: `machine M {
    initial A
    final DONE succeeded
    event Go
    A -> DONE on Go
    NOWHERE -> ELSEWHERE on Nothing when Nobody
}`,
			want: []string{
				"t.fsm:6:5: unknown state NOWHERE",
				"t.fsm:6:16: unknown state ELSEWHERE",
				"t.fsm:6:29: unknown event Nothing",
				"t.fsm:6:42: unknown guard Nobody",
			},
		},
		{
			name: "star with no non-terminal state",
			src: `machine M {
    final DONE succeeded
    event Go
    * -> DONE on Go
}`,
			want: []string{`t.fsm:1:1: machine M has no initial state; declare one with "initial NAME"`},
		},
		{
			name: "only final states",
			src: `machine M {
    final DONE succeeded
    final FAILED failed
}`,
			want: []string{`t.fsm:1:1: machine M has no initial state; declare one with "initial NAME"`},
		},
		{
			name: "empty machine",
			src:  `machine M {}`,
			want: []string{`t.fsm:1:1: machine M has no initial state; declare one with "initial NAME"`},
		},
		{
			name: "empty event braces",
			src: `machine M {
    initial A
    final DONE succeeded
    event Go {}
    A -> DONE on Go
}`,
		},
		{
			name: "final without status, with options and an outcome row",
			src: `machine M {
    initial A
    final DONE after 1s Go
    event Go
    A -> DONE on Go outcome "x"
}`,
			want: []string{
				"t.fsm:3:11: final state DONE needs a status: succeeded, failed or cancelled",
				"t.fsm:3:16: final state DONE cannot take options; it is never left",
			},
		},
		{
			name: "options of a duplicate state",
			src: `machine M {
    initial A
    state A retry 3 after 1s Go
    final DONE succeeded
    event Go
    A -> DONE on Go
}`,
			want: []string{"t.fsm:3:11: state A declared twice (first at 2:13)"},
		},
		{
			name: "a loop on the initial state only",
			src: `machine M {
    initial A
    event Go
    A -> A on Go
}`,
		},
		{
			name: "a sink next to final states warns, a state that cannot be reached is an error",
			src: `machine M {
    initial A
    state SINK wait
    state LOST
    final DONE succeeded
    event Go
    event Drop
    A -> DONE on Go
    A -> SINK on Drop
    LOST -> SINK on Drop
}`,
			want: []string{
				"t.fsm:3:11: warning: no final state can be reached from state SINK; a run that gets there never ends",
				"t.fsm:4:11: state LOST is unreachable from the initial state A",
			},
		},
	})
}

// TestCheckReportsEverything checks that one run reports every problem of
// a file, sorted by position, across machines.
func TestCheckReportsEverything(t *testing.T) {
	t.Parallel()
	src := `machine M {
    initial A
    state B
    final DONE succeeded
    event Go
    event Spare
    guard Ok
    B -> DONE on Go when Ok
    A -> B on Go
    A -> DONE on Go
}

machine N {
    version 0
    initial A
    final DONE succeeded
    event Go
    A -> DONE on Go
    A -> DONE on Goo
}
`
	want := []string{
		"t.fsm:6:11: event Spare is never used",
		"t.fsm:10:5: two unguarded transitions from A on Go (the other at 9:5)",
		"t.fsm:14:5: version 0: want a whole number >= 1",
		"t.fsm:19:18: unknown event Goo; did you mean Go?",
	}
	spec, ds := Load("t.fsm", []byte(src))
	if diff := cmp.Diff(want, diagStrings(ds)); diff != "" {
		t.Errorf("diagnostics (-want +got):\n%s", diff)
	}
	if spec != nil {
		t.Errorf("Load returned a Spec for a file with errors")
	}
	if err := ds.Err(); err == nil || err.Error() != strings.Join(want, "\n") {
		t.Errorf("Err() = %v, want the four errors, one a line", err)
	}
}

// TestCheckCancel checks the cancel declaration, and the warning for a
// machine that leaves its cancel event to guesswork.
func TestCheckCancel(t *testing.T) {
	t.Parallel()
	runCheckCases(t, []checkCase{
		{
			name: "declared",
			src: `machine M {
    cancel Cancel
    initial A
    final DONE succeeded
    final CANCELLED cancelled
    event Go
    event Cancel { userID string }
    A -> DONE on Go
    A -> CANCELLED on Cancel
}`,
		},
		{
			name: "leading to a state that is not cancelled",
			src: `machine M {
    initial A
    state REFUNDING
    final DONE succeeded
    final CANCELLED cancelled
    event Go
    event Refunded
    event Cancel
    A -> DONE on Go
    A -> REFUNDING on Cancel
    REFUNDING -> CANCELLED on Refunded
    cancel Cancel
}`,
		},
		{
			name: "unknown event",
			src: `machine M {
    cancel Cancle
    initial A
    final DONE succeeded
    final CANCELLED cancelled
    event Go
    event Cancel
    A -> DONE on Go
    A -> CANCELLED on Cancel
}`,
			want: []string{"t.fsm:2:12: unknown event Cancle; did you mean Cancel?"},
		},
		{
			name: "declared twice",
			src: `machine M {
    cancel Cancel
    initial A
    final DONE succeeded
    final CANCELLED cancelled
    event Go
    event Cancel
    A -> DONE on Go
    A -> CANCELLED on Cancel
    cancel Go
}`,
			want: []string{"t.fsm:10:5: cancel declared twice (first at 2:5)"},
		},
		{
			name: "no transition",
			src: `machine M {
    cancel Stop
    initial A
    final DONE succeeded
    final ABORTED cancelled
    event Go
    event Stop
    event Abort
    A -> DONE on Go
    A -> ABORTED on Abort
}`,
			want: []string{"t.fsm:2:12: cancel event Stop has no transition; add one, such as \"* -> ABORTED on Stop\""},
		},
		{
			name: "no transition and no cancelled state",
			src: `machine M {
    cancel Stop
    initial A
    final DONE succeeded
    event Go
    event Stop
    A -> DONE on Go
}`,
			want: []string{"t.fsm:2:12: cancel event Stop has no transition; add one, such as \"* -> CANCELLED on Stop\""},
		},
		{
			name: "userID not a string",
			src: `machine M {
    cancel Cancel
    initial A
    final DONE succeeded
    final CANCELLED cancelled
    event Go
    event Cancel { userID int64 }
    A -> DONE on Go
    A -> CANCELLED on Cancel
}`,
			want: []string{"t.fsm:7:20: field userID of cancel event Cancel is int64; the runtime fills it with the cancelling user's id, a string"},
		},
		{
			name: "undeclared with several events into cancelled states",
			src: `machine Order {
    initial PENDING_PAYMENT wait after 20s PaymentExpired
    state REFUNDING retry 3
    final DELIVERED succeeded
    final CANCELLED cancelled
    final REFUNDED cancelled outcome "refunded"
    event Pay
    event PaymentExpired
    event Refunded
    event Cancel { userID string }
    PENDING_PAYMENT -> DELIVERED on Pay
    PENDING_PAYMENT -> CANCELLED on PaymentExpired
    PENDING_PAYMENT -> REFUNDING on Cancel
    REFUNDING -> REFUNDED on Refunded
    REFUNDING -> CANCELLED on Cancel
}`,
			want: []string{"t.fsm:1:1: warning: machine Order leads into a cancelled state on Refunded and Cancel and declares no cancel event, so its runs cannot be cancelled by their owner; name the one that cancels with \"cancel EVENT\""},
		},
		{
			name: "undeclared with one event into a cancelled state besides a timer and an else event",
			src: `machine M {
    initial A wait after 1h Expire
    state B retry 3 else GiveUp
    final DONE succeeded
    final CANCELLED cancelled
    event Go
    event Expire
    event GiveUp
    event Stop
    A -> B on Go
    B -> DONE on Go
    A -> CANCELLED on Expire
    B -> CANCELLED on GiveUp
    * -> CANCELLED on Stop
}`,
		},
		{
			name: "undeclared, resolved by the declaration",
			src: `machine M {
    initial A
    final DONE succeeded
    final CANCELLED cancelled
    event Go
    event Stop
    event Abort
    A -> DONE on Go
    A -> CANCELLED on Stop
    A -> CANCELLED on Abort
    cancel Abort
}`,
		},
	})
}

func TestCheckWarningsOnlyGiveASpec(t *testing.T) {
	t.Parallel()
	src := `machine M {
    initial A
    final DONE succeeded
    final FAILED failed
    event Go
    guard Ok
    guard Bad
    A -> DONE on Go when Ok
    A -> FAILED on Go when Bad
}
`
	spec, ds := Load("t.fsm", []byte(src))
	want := []string{"t.fsm:9:5: warning: every transition from A on Go is guarded: when no guard admits the event, it is rejected; add an unguarded one last if that is not intended"}
	if diff := cmp.Diff(want, diagStrings(ds)); diff != "" {
		t.Errorf("diagnostics (-want +got):\n%s", diff)
	}
	if spec == nil {
		t.Fatal("Load returned no Spec for a file with warnings only")
	}
	if ds.Err() != nil {
		t.Errorf("Err() = %v, want nil for warnings only", ds.Err())
	}
	if got := len(spec.Machines[0].Transitions); got != 2 {
		t.Errorf("spec has %d transitions, want 2", got)
	}
}

// TestCheckSpec checks what a valid file turns into: expanded FROM lists,
// outcomes, retry defaults, timers and guard usage.
func TestCheckSpec(t *testing.T) {
	t.Parallel()
	src := `// M is a test machine.
machine Mach {
    initial A retry 3 backoff 2s
    state B wait after 1d12h Tick
    state C retry payment
    final WON succeeded outcome "won"
    final LOST failed
    final STOPPED cancelled

    event Go { id string; at time.Time; raw []byte; amount "example.com/money".Amount }
    event Tick external
    event Stop
    guard Ok

    A -> B on Go
    B -> C on Tick when Ok
    B -> LOST on Tick
    C -> WON on Go
    C -> LOST on Tick outcome "timeout"
    * -> STOPPED on Stop unless Ok
    cancel Stop
}
`
	spec, ds := Load("t.fsm", []byte(src))
	if len(ds) > 0 {
		t.Fatalf("unexpected diagnostics:\n%s", strings.Join(diagStrings(ds), "\n"))
	}
	m := spec.Machines[0]
	type summary struct {
		Name, Type, Package string
		Version             int
		Doc                 []string
		Initial             string
		States              []string
		Retries             map[string]Retry
		Timers              []string
		Fields              []string
		GuardEvents         []string
		Rows                []string
		Cancel              string
		External            []string
	}
	got := summary{Name: m.Name, Type: m.Type, Package: m.Package, Version: m.Version, Doc: m.Doc, Initial: m.Initial.Name, Retries: map[string]Retry{}}
	if m.Cancel != nil {
		got.Cancel = m.Cancel.Name
	}
	for _, e := range m.Events {
		if e.External {
			got.External = append(got.External, e.Name)
		}
	}
	for _, s := range m.States {
		got.States = append(got.States, s.GoName+"/"+s.Status+"/"+s.Outcome)
		if s.Retry != nil {
			got.Retries[s.Name] = *s.Retry
		}
		for _, tm := range s.Timers {
			got.Timers = append(got.Timers, s.Name+" "+tm.Text+" "+tm.After.String()+" "+tm.Event.Name)
		}
	}
	for _, f := range m.Events[0].Fields {
		got.Fields = append(got.Fields, f.GoName+" "+f.Type.String()+" "+f.Type.Path)
	}
	for _, e := range m.Guards[0].Events {
		got.GuardEvents = append(got.GuardEvents, e.Name)
	}
	for _, tr := range m.Transitions {
		row := tr.From.Name + " -> " + tr.To.Name + " on " + tr.Event.Name
		if tr.Guard != nil {
			if tr.Negated {
				row += " when !" + tr.Guard.Name
			} else {
				row += " when " + tr.Guard.Name
			}
		}
		if tr.Outcome != "" {
			row += " outcome " + tr.Outcome
		}
		got.Rows = append(got.Rows, row)
	}
	want := summary{
		Name: "Mach", Type: "mach", Package: "mach", Version: 1,
		Doc:     []string{"M is a test machine."},
		Initial: "A",
		States:  []string{"A//", "B//", "C//", "Won/succeeded/won", "Lost/failed/", "Stopped/cancelled/"},
		Retries: map[string]Retry{
			"A": {MaxAttempts: 3, Initial: 2e9, Factor: 2},
			"C": {Preset: "payment"},
		},
		Timers:      []string{"B 1d12h 36h0m0s Tick"},
		Fields:      []string{"ID string ", "At time.Time time", "Raw []byte ", "Amount money.Amount example.com/money"},
		GuardEvents: []string{"Tick", "Stop"},
		Rows: []string{
			"A -> B on Go",
			"B -> C on Tick when Ok",
			"B -> LOST on Tick",
			"C -> WON on Go outcome won",
			"C -> LOST on Tick outcome timeout",
			"A -> STOPPED on Stop when !Ok",
			"B -> STOPPED on Stop when !Ok",
			"C -> STOPPED on Stop when !Ok",
		},
		Cancel:   "Stop",
		External: []string{"Tick"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
}

// TestCheckMachines checks every .fsm file of the repository's machines:
// they must have no errors.
func TestCheckMachines(t *testing.T) {
	t.Parallel()
	var files []string
	err := filepath.WalkDir(filepath.Join("..", "machines"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".fsm") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Skip("no .fsm files under ../machines")
	}
	for _, path := range files {
		t.Run(filepath.ToSlash(path), func(t *testing.T) {
			t.Parallel()
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			_, ds := Load(path, src)
			for _, d := range ds {
				if d.Severity == Error {
					t.Error(d)
				} else {
					t.Log(d)
				}
			}
		})
	}
}

// TestDidYouMean pins down what counts as a likely typo.
func TestDidYouMean(t *testing.T) {
	t.Parallel()
	names := []string{"DONE", "FAILED", "INGESTING"}
	tests := []struct{ in, want string }{
		{"DNOE", "; did you mean DONE?"},    // two letters swapped
		{"done", "; did you mean DONE?"},    // case
		{"FAILD", "; did you mean FAILED?"}, // one letter missing
		{"INGESTNG", "; did you mean INGESTING?"},
		{"INGSTNG", "; did you mean INGESTING?"},
		{"INGSTG", ""}, // three edits are too many for six letters
		{"X", ""},
		{"RUNNING", ""},
	}
	for _, tc := range tests {
		if got := didYouMean(tc.in, names); got != tc.want {
			t.Errorf("didYouMean(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := didYouMean("x", nil); got != "" {
		t.Errorf("didYouMean with no candidates = %q, want none", got)
	}
}

// In a machine without final states, cycling for good is what runs do:
// the dead ends are the states without a row out of them and the states
// from which every path leads into one of those.
func TestCheckDeadEndsWithoutFinalStates(t *testing.T) {
	t.Parallel()
	runCheckCases(t, []checkCase{
		{
			name: "a cycle has no dead end",
			src: `machine Light {
    initial OFF
    state ON
    event Toggle
    OFF -> ON on Toggle
    ON -> OFF on Toggle
}`,
		},
		{
			name: "a state without a row out",
			src: `machine Light {
    initial OFF
    state ON
    state BROKEN
    event Toggle
    event Fail
    OFF -> ON on Toggle
    ON -> OFF on Toggle
    ON -> BROKEN on Fail
}`,
			want: []string{"t.fsm:4:11: warning: state BROKEN has no transition out, and machine Light has no final state: a run that gets there is stuck for good; declare BROKEN final if runs end there"},
		},
		{
			name: "a state whose every path leads into one",
			src: `machine Light {
    initial OFF
    state ON
    state DYING
    state BROKEN wait
    event Toggle
    event Fail
    event Die
    OFF -> ON on Toggle
    ON -> OFF on Toggle
    ON -> DYING on Fail
    DYING -> BROKEN on Die
}`,
			want: []string{
				"t.fsm:4:11: warning: every path from state DYING ends in BROKEN, which has no transition out: a run that gets there is stuck for good",
				"t.fsm:5:11: warning: state BROKEN has no transition out, and machine Light has no final state: a run that gets there is stuck for good; declare BROKEN final if runs end there",
			},
		},
		{
			name: "a state that can still move in place or back is no dead end",
			src: `machine Light {
    initial OFF
    state ON
    state FAULTY
    state BROKEN
    event Toggle
    event Fail
    event Ping
    event Repair
    OFF -> ON on Toggle
    ON -> OFF on Toggle
    ON -> FAULTY on Fail
    FAULTY -> BROKEN on Fail
    FAULTY -> OFF on Repair
    BROKEN -> BROKEN on Ping
}`,
		},
		{
			name: "paths into two states without a row out",
			src: `machine M {
    initial A
    state B
    state C
    event Go
    event Stop
    A -> B on Go
    A -> C on Stop
}`,
			want: []string{
				"t.fsm:2:13: warning: every path from state A ends in B or C, which have no transition out: a run that gets there is stuck for good",
				"t.fsm:3:11: warning: state B has no transition out, and machine M has no final state: a run that gets there is stuck for good; declare B final if runs end there",
				"t.fsm:4:11: warning: state C has no transition out, and machine M has no final state: a run that gets there is stuck for good; declare C final if runs end there",
			},
		},
		{
			name: "paths into more than three, named in the order declared",
			src: `machine M {
    initial A
    state MID
    state E
    state D
    state C
    state B
    event Go
    event Stop
    event Halt
    A -> MID on Go
    A -> B on Stop
    MID -> C on Go
    MID -> D on Stop
    MID -> E on Halt
}`,
			want: []string{
				"t.fsm:2:13: warning: every path from state A ends in E, D, C or other states without a transition out: a run that gets there is stuck for good",
				"t.fsm:3:11: warning: every path from state MID ends in E, D or C, which have no transition out: a run that gets there is stuck for good",
				"t.fsm:4:11: warning: state E has no transition out, and machine M has no final state: a run that gets there is stuck for good; declare E final if runs end there",
				"t.fsm:5:11: warning: state D has no transition out, and machine M has no final state: a run that gets there is stuck for good; declare D final if runs end there",
				"t.fsm:6:11: warning: state C has no transition out, and machine M has no final state: a run that gets there is stuck for good; declare C final if runs end there",
				"t.fsm:7:11: warning: state B has no transition out, and machine M has no final state: a run that gets there is stuck for good; declare B final if runs end there",
			},
		},
		{
			name: "an unreachable state is reported as such only",
			src: `machine Light {
    initial OFF
    state ON
    state SPARE
    event Toggle
    OFF -> ON on Toggle
    ON -> OFF on Toggle
}`,
			want: []string{"t.fsm:4:11: state SPARE is unreachable from the initial state OFF"},
		},
	})
}

// An unknown name is reported, and not what only follows from it: a row
// dropped for it leaves states without a row on its event, declarations
// unused, a timer gone. Each case would draw a second diagnostic about the
// same item otherwise.
func TestCheckCausesNotConsequences(t *testing.T) {
	t.Parallel()
	runCheckCases(t, []checkCase{
		{
			name: "timer row with an unknown target",
			src: `machine M {
    initial WAITING after 5s Expire
    final TERMINATED failed
    final DONE succeeded
    event Go
    event Expire
    WAITING -> DONE on Go
    WAITING -> TERMINATD on Expire
}`,
			want: []string{"t.fsm:8:16: unknown state TERMINATD; did you mean TERMINATED?"},
		},
		{
			name: "timer row from an unknown state",
			src: `machine M {
    initial WAITING after 5s Expire
    final TERMINATED failed
    final DONE succeeded
    event Go
    event Expire
    WAITING -> DONE on Go
    WATING -> TERMINATED on Expire
}`,
			want: []string{"t.fsm:8:5: unknown state WATING; did you mean WAITING?"},
		},
		{
			name: "timer row on an unknown event",
			src: `machine M {
    initial WAITING after 5s Expire
    final TERMINATED failed
    final DONE succeeded
    event Go
    event Expire
    WAITING -> DONE on Go
    WAITING -> TERMINATED on Expier
}`,
			want: []string{"t.fsm:8:30: unknown event Expier; did you mean Expire?"},
		},
		{
			name: "timer row with an unknown guard",
			src: `machine M {
    initial WAITING after 5s Expire
    final TERMINATED failed
    final DONE succeeded
    event Go
    event Expire
    guard Overdue
    WAITING -> DONE on Go
    WAITING -> TERMINATED on Expire when Ovredue
}`,
			want: []string{"t.fsm:9:42: unknown guard Ovredue; did you mean Overdue?"},
		},
		{
			name: "retry's else event on a row with an unknown target",
			src: `machine M {
    initial WORK retry 3 else GaveUp
    final FAILED failed
    final DONE succeeded
    event Go
    event GaveUp
    WORK -> DONE on Go
    WORK -> FIALED on GaveUp
}`,
			want: []string{"t.fsm:8:13: unknown state FIALED; did you mean FAILED?"},
		},
		{
			name: "unknown event in a timer of a wait state",
			src: `machine M {
    initial A after 1m Tick
    state HOLD wait after 5s Tikc
    final DONE succeeded
    event Tick
    A -> HOLD on Tick
    HOLD -> DONE on Tick
}`,
			want: []string{"t.fsm:3:30: unknown event Tikc; did you mean Tick?"},
		},
		{
			name: "unknown event in a timer, its event then unused",
			src: `machine M {
    initial A after 5s Tikc
    final DONE succeeded
    event Go
    event Tick
    A -> DONE on Go
}`,
			want: []string{"t.fsm:2:24: unknown event Tikc; did you mean Tick?"},
		},
		{
			name: "unknown event in retry's else",
			src: `machine M {
    initial A retry 3 else GaveUP
    final DONE succeeded
    event Go
    event GaveUp
    A -> DONE on Go
}`,
			want: []string{"t.fsm:2:28: unknown event GaveUP; did you mean GaveUp?"},
		},
		{
			name: "cancel event's row on an unknown event",
			src: `machine M {
    cancel Cancel
    initial A
    final DONE succeeded
    final CANCELLED cancelled
    event Go
    event Cancel
    A -> DONE on Go
    A -> CANCELLED on Cancle
}`,
			want: []string{"t.fsm:9:23: unknown event Cancle; did you mean Cancel?"},
		},
		{
			name: "cancel event's userID of an unknown type",
			src: `machine M {
    cancel Cancel
    initial A
    final DONE succeeded
    final CANCELLED cancelled
    event Go
    event Cancel { userID strng }
    A -> DONE on Go
    A -> CANCELLED on Cancel
}`,
			want: []string{"t.fsm:7:27: unknown type strng; did you mean string?"},
		},
		{
			name: "the fallback of guarded rows with an unknown guard",
			src: `machine M {
    initial A
    state B
    state C
    final DONE succeeded
    event Go
    event Next
    guard Fast
    guard Cheap
    A -> B on Go when Fast
    A -> C on Go when Cheap
    A -> DONE on Go unless Chaep
    B -> DONE on Next
    C -> DONE on Next
}`,
			want: []string{"t.fsm:12:28: unknown guard Chaep; did you mean Cheap?"},
		},
		{
			name: "an unknown name and an unrelated problem: both reported, in order",
			src: `machine M {
    initial WAITING after 5s Expire
    final TERMINATED failed
    final DONE succeeded
    event Go
    event Expire
    event Spare
    WAITING -> DONE on Go
    WAITING -> TERMINATD on Expire
}`,
			want: []string{
				"t.fsm:7:11: event Spare is never used",
				"t.fsm:9:16: unknown state TERMINATD; did you mean TERMINATED?",
			},
		},
	})
}
