package dsl

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// v1 is version 1 of a machine that the cases below upgrade from: a
// driven state, a wait state with a timer, an event with a payload.
const v1 = `machine JobV1 {
    type "job"
    version 1
    initial QUEUED
    state WORKING
    state WAITING wait after 1h Expired
    final DONE succeeded
    final FAILED failed
    event Begin { who string }
    event Finish
    event Settled { ref string }
    event Expired
    QUEUED -> WORKING on Begin
    WORKING -> WAITING on Finish
    WAITING -> DONE on Settled
    WAITING -> FAILED on Expired
}
`

// v2 returns version 2 of the machine with the upgrade block upgrade and
// the declarations of v1 changed by the replacements old, new, ...
func v2(upgrade string, replace ...string) string {
	body := `machine Job {
    type "job"
    version 2
` + upgrade + `
    initial QUEUED
    state WORKING
    state WAITING wait after 1h Expired
    final DONE succeeded
    final FAILED failed
    event Begin { who string }
    event Finish
    event Settled { ref string }
    event Expired
    QUEUED -> WORKING on Begin
    WORKING -> WAITING on Finish
    WAITING -> DONE on Settled
    WAITING -> FAILED on Expired
}
`
	return v1 + strings.NewReplacer(replace...).Replace(body)
}

// The v2 machine starts at line 18; a one-line upgrade block is line 21.

func TestCheckUpgrades(t *testing.T) {
	t.Parallel()
	runCheckCases(t, []checkCase{
		{
			name: "identical versions, every state kept by name",
			src:  v2("    upgrade from 1 {\n    }"),
		},
		{
			name: "drain",
			src:  v2("    upgrade from 1 drain"),
		},
		{
			name: "the old keyword, drain",
			src:  v2("    migrate from 1 drain"),
			want: []string{`t.fsm:21:5: syntax error: "migrate from" is now "upgrade from": write upgrade from VERSION { ... } or upgrade from VERSION drain`},
		},
		{
			name: "the old keyword, a block of rules",
			src:  v2("    migrate from 1 {\n        WORKING -> WAITING when Begin\n        default Begin.lang \"en\"\n    }"),
			want: []string{`t.fsm:21:5: syntax error: "migrate from" is now "upgrade from": write upgrade from VERSION { ... } or upgrade from VERSION drain`},
		},
		{
			name: "no such version",
			src:  v2("    upgrade from 3 drain", "version 2", "version 4"),
			want: []string{`t.fsm:21:18: upgrade from 3: no machine of type "job" has version 3 in this file (versions here: 1); keep version 3's machine block next to this one, renamed JobV3`},
		},
		{
			name: "from a newer version",
			src:  v2("    upgrade from 2 drain"),
			want: []string{"t.fsm:21:18: upgrade from 2: a machine upgrades runs from an older version, and Job is version 2"},
		},
		{
			name: "declared twice",
			src:  v2("    upgrade from 1 drain\n    upgrade from 1 drain"),
			want: []string{"t.fsm:22:5: upgrade from 1 declared twice (first at 21:5)"},
		},
		{
			name: "same type and version twice",
			src:  v2("", "version 2", "version 1"),
			want: []string{`t.fsm:18:1: machine Job has type name "job" and version 1, as does the machine at 1:1; give one of them another "type", or the newer one another "version"`},
		},
		{
			name: "state not mapped, did you mean",
			src:  v2("    upgrade from 1 {\n    }", "WORKING", "WORKNG"),
			want: []string{
				`t.fsm:21:5: state WORKING of version 1 is not mapped (which version 2 does not have): its runs would be stranded; add "WORKING -> WORKNG" or "WORKING drain"`,
				`t.fsm:21:5: warning: runs in WAITING stay in WAITING (kept by name), which version 2 enters from WORKNG rather than WORKING; write "WAITING -> WAITING" if that is intended, or map them to the state that now comes first`,
			},
		},
		{
			name: "state not mapped, final in the new version",
			src: v2("    upgrade from 1 {\n    }", "state WORKING", "final WORKING succeeded",
				"WORKING -> WAITING on Finish", "QUEUED -> WAITING on Finish"),
			want: []string{
				`t.fsm:21:5: state WORKING of version 1 is not mapped (which is final in version 2): its runs would be stranded; add "WORKING -> STATE" or "WORKING drain"`,
				`t.fsm:21:5: warning: runs in WAITING stay in WAITING (kept by name), which version 2 enters from QUEUED rather than WORKING; write "WAITING -> WAITING" if that is intended, or map them to the state that now comes first`,
			},
		},
		{
			name: "kept by name but entered from elsewhere",
			src: v2("    upgrade from 1 {\n    }", "state WORKING", "state WORKING\n    state CHECKING",
				"WORKING -> WAITING on Finish", "WORKING -> CHECKING on Finish\n    CHECKING -> WAITING on Finish"),
			want: []string{`t.fsm:21:5: warning: runs in WAITING stay in WAITING (kept by name), which version 2 enters from CHECKING rather than WORKING; write "WAITING -> WAITING" if that is intended, or map them to the state that now comes first`},
		},
		{
			name: "kept by name, written out",
			src: v2("    upgrade from 1 { WAITING -> WAITING }", "state WORKING", "state WORKING\n    state CHECKING",
				"WORKING -> WAITING on Finish", "WORKING -> CHECKING on Finish\n    CHECKING -> WAITING on Finish"),
		},
		{
			name: "unknown old state",
			src:  v2("    upgrade from 1 { WORKIN -> WORKING }"),
			want: []string{"t.fsm:21:22: unknown state WORKIN of version 1; did you mean WORKING?"},
		},
		{
			name: "unknown new state",
			src:  v2("    upgrade from 1 { WORKING -> WROKING }"),
			want: []string{"t.fsm:21:33: unknown state WROKING of version 2; did you mean WORKING?"},
		},
		{
			name: "from a final state",
			src:  v2("    upgrade from 1 { DONE -> WORKING }"),
			want: []string{"t.fsm:21:22: state DONE of version 1 is final: its runs are over and are never upgraded"},
		},
		{
			name: "into a final state",
			src:  v2("    upgrade from 1 { WORKING -> DONE }"),
			want: []string{"t.fsm:21:33: state DONE of version 2 is final; an upgrade moves live runs into a state they go on from"},
		},
		{
			name: "unknown condition event",
			src:  v2("    upgrade from 1 {\n        WORKING -> WAITING when Begni\n        WORKING drain\n    }"),
			want: []string{"t.fsm:22:33: unknown event Begni of version 1; did you mean Begin?; a condition names an event of the older version that the run's current attempt has fired"},
		},
		{
			name: "conditional rules without a fallback",
			src:  v2("    upgrade from 1 {\n        WORKING -> WAITING when Begin timers restart\n    }"),
			want: []string{`t.fsm:22:9: runs in WORKING that no condition admits are neither moved nor left to drain; add "WORKING -> STATE" or "WORKING drain" after the conditional rules`},
		},
		{
			name: "rule after an unconditional one",
			src:  v2("    upgrade from 1 {\n        WORKING drain\n        WORKING -> WORKING\n    }"),
			want: []string{"t.fsm:23:9: rule for WORKING can never apply: the one at 22:9 leaves every run in WORKING to drain"},
		},
		{
			name: "same condition twice",
			src:  v2("    upgrade from 1 {\n        WORKING -> WORKING unless Begin\n        WORKING -> WORKING unless Begin\n        WORKING drain\n    }"),
			want: []string{"t.fsm:23:9: rule for WORKING can never apply: the one at 22:9 has the same condition"},
		},
		{
			name: "awaited event gone",
			src: v2("    upgrade from 1 {\n    }", "event Settled { ref string }", "event Confirmed { ref string }",
				"WAITING -> DONE on Settled", "WAITING -> DONE on Confirmed"),
			want: []string{"t.fsm:21:5: runs in WAITING of version 1 wait for Settled, which version 2 does not declare: moved to WAITING (kept by name), they would wait for an event nobody can send"},
		},
		{
			name: "awaited event not taken by the target",
			src: v2("    upgrade from 1 { WAITING -> PAUSED timers restart }", "state WORKING", "state WORKING\n    state PAUSED wait after 1h Expired",
				"WORKING -> WAITING on Finish", "WORKING -> WAITING on Finish\n    PAUSED -> FAILED on Expired\n    WORKING -> PAUSED on Begin"),
			want: []string{"t.fsm:21:22: runs in WAITING of version 1 wait for Settled, but PAUSED of version 2 has no transition on it"},
		},
		{
			name: "new timers need a rule",
			src:  v2("    upgrade from 1 {\n    }", "after 1h Expired", "after 2h Expired"),
			want: []string{`t.fsm:21:5: state WAITING of version 2 (kept by name) has timers (after 2h Expired) that WAITING of version 1 does not: add "timers restart" to count them from the upgrade, or "timers keep" to count them from when the run entered WAITING`},
		},
		{
			name: "timers on a state without any",
			src:  v2("    upgrade from 1 { WORKING -> WORKING timers keep }"),
			want: []string{"t.fsm:21:48: timers keep: state WORKING of version 2 has no timers"},
		},
		{
			name: "timers neither keep nor restart",
			src:  v2("    upgrade from 1 { WAITING -> WAITING timers kep }"),
			want: []string{"t.fsm:21:48: timers kep: want keep (count from when the run entered WAITING) or restart (count from the upgrade); did you mean keep?"},
		},
		{
			name: "new payload field without a default",
			src:  v2("    upgrade from 1 {\n    }", "event Begin { who string }", "event Begin { who string; lang string }"),
			want: []string{`t.fsm:21:5: event Begin of version 2 has field lang (string), which version 1's Begin lacks and runs moved from WORKING (kept by name) carry: add "default Begin.lang VALUE" to the upgrade block`},
		},
		{
			name: "new payload field with a default",
			src:  v2("    upgrade from 1 { default Begin.lang \"en\" }", "event Begin { who string }", "event Begin { who string; lang string }"),
		},
		{
			name: "payload field of another type",
			src:  v2("    upgrade from 1 {\n    }", "event Begin { who string }", "event Begin { who int }"),
			want: []string{"t.fsm:21:5: field who of event Begin is string in version 1 and int in version 2: the Begin events that runs moved from WORKING (kept by name) carry would not decode"},
		},
		{
			name: "default of a field the old event has",
			src:  v2(`    upgrade from 1 { default Begin.who "x" }`),
			want: []string{"t.fsm:21:22: default Begin.who: version 1's Begin has field who already; a default fills a field that older payloads lack"},
		},
		{
			name: "default of an unknown field",
			src:  v2(`    upgrade from 1 { default Begin.wh "x" }`),
			want: []string{"t.fsm:21:36: event Begin of version 2 has no field wh; did you mean who?"},
		},
		{
			name: "default of the wrong type",
			src:  v2(`    upgrade from 1 { default Begin.lang 7 }`, "event Begin { who string }", "event Begin { who string; lang string }"),
			want: []string{"t.fsm:21:41: default Begin.lang: 7 is not a value of type string; want a quoted string"},
		},
	})
}

// TestUpgradeSpec checks what an upgrade block resolves to: the rules of
// every old state in order, the implicit ones written out, timers and
// defaults resolved.
func TestUpgradeSpec(t *testing.T) {
	t.Parallel()
	src := v2("    upgrade from 1 {\n        WORKING -> WAITING when Begin timers restart\n        WORKING drain\n        default Begin.lang \"en\"\n    }",
		"event Begin { who string }", "event Begin { who string; lang string }")
	spec, ds := Load("t.fsm", []byte(src))
	if ds.HasErrors() {
		t.Fatal(ds.Err())
	}
	mg := spec.Machines[1].Upgrades[0]
	var got []string
	for _, r := range mg.Rules {
		s := r.From.Name
		if r.Drain {
			s += " drain"
		} else {
			s += " -> " + r.To.Name
		}
		if r.When != nil {
			s += " when " + r.When.Name
		}
		if r.Timers != "" {
			s += " timers " + r.Timers
		}
		if r.Implicit {
			s += " (implicit)"
		}
		got = append(got, s)
	}
	want := []string{"QUEUED -> QUEUED (implicit)", "WORKING -> WAITING when Begin timers restart", "WORKING drain", "WAITING -> WAITING timers keep (implicit)"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}
	if len(mg.Defaults) != 1 || mg.Defaults[0].Field.Name != "lang" || !json.Valid(mg.Defaults[0].Value) || string(mg.Defaults[0].Value) != `"en"` {
		t.Errorf("defaults: %+v", mg.Defaults)
	}
}

// A rule or row in error is reported, and not what only follows from it:
// the state of the rule left unmapped, a row of the newer version dropped.
func TestCheckUpgradeCausesNotConsequences(t *testing.T) {
	t.Parallel()
	// WORKING is BUSY in version 2, so that it must be mapped; rules
	// written below "WAITING -> WAITING" start at line 23.
	renamed := []string{"state WORKING", "state BUSY", "QUEUED -> WORKING on Begin\n    WORKING -> WAITING", "QUEUED -> BUSY on Begin\n    BUSY -> WAITING"}
	const keepWaiting = "    upgrade from 1 {\n        WAITING -> WAITING\n"
	runCheckCases(t, []checkCase{
		{
			name: "a rule into an unknown state",
			src:  v2(keepWaiting+"        WORKING -> BSY\n    }", renamed...),
			want: []string{"t.fsm:23:20: unknown state BSY of version 2; did you mean BUSY?"},
		},
		{
			name: "a rule from an unknown state",
			src:  v2(keepWaiting+"        WORKNG -> BUSY\n    }", renamed...),
			want: []string{"t.fsm:23:9: unknown state WORKNG of version 1; did you mean WORKING?"},
		},
		{
			name: "a rule into a final state",
			src:  v2(keepWaiting+"        WORKING -> DONE\n    }", renamed...),
			want: []string{"t.fsm:23:20: state DONE of version 2 is final; an upgrade moves live runs into a state they go on from"},
		},
		{
			name: "the fallback rule on an unknown event",
			src:  v2(keepWaiting+"        WORKING -> BUSY when Begin\n        WORKING -> BUSY unless Begni\n    }", renamed...),
			want: []string{"t.fsm:24:32: unknown event Begni of version 1; did you mean Begin?; a condition names an event of the older version that the run's current attempt has fired"},
		},
		{
			name: "the awaited event's row on an unknown event in the newer version",
			src:  v2("    upgrade from 1 {\n    }", "WAITING -> DONE on Settled", "WAITING -> DONE on Setled"),
			want: []string{"t.fsm:34:24: unknown event Setled; did you mean Settled?"},
		},
		{
			name: "timers keep on a state whose timer names an unknown event",
			src:  v2("    upgrade from 1 { WAITING -> WAITING timers keep }", "after 1h Expired", "after 1h Expird"),
			want: []string{"t.fsm:24:33: unknown event Expird; did you mean Expired?"},
		},
	})
}

// TestUpgradeAcrossNesting upgrades runs into a version where a state was
// split into a composite, and out of a composite: a rule to a composite,
// or a leaf kept by name that became one, moves runs to its initial leaf;
// a rule on an older composite applies to each of its leaves.
func TestUpgradeAcrossNesting(t *testing.T) {
	t.Parallel()
	nested := func(upgrade string) string {
		return v2(upgrade, "    state WORKING\n", "    state WORKING {\n        initial FETCHING\n        state   PARSING\n    }\n",
			"WORKING -> WAITING on Finish", "FETCHING -> PARSING on Begin\n    PARSING -> WAITING on Finish")
	}
	rules := func(src string) []string {
		spec, diags := Load("t.fsm", []byte(src))
		if spec == nil {
			t.Fatalf("diagnostics:\n%s", strings.Join(diagStrings(diags), "\n"))
		}
		var out []string
		for _, r := range spec.Machines[1].Upgrades[0].Rules {
			out = append(out, r.From.Name+" -> "+r.To.Name)
		}
		return out
	}
	if diff := cmp.Diff([]string{"QUEUED -> QUEUED", "WORKING -> FETCHING", "WAITING -> WAITING"}, rules(nested("    upgrade from 1 {\n    }"))); diff != "" {
		t.Errorf("kept by name (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"QUEUED -> FETCHING", "WORKING -> FETCHING", "WAITING -> WAITING"}, rules(nested("    upgrade from 1 {\n        QUEUED -> WORKING\n    }"))); diff != "" {
		t.Errorf("to a composite (-want +got):\n%s", diff)
	}
	// The other way: version 2 is the nested one, version 3 flat again.
	v3 := strings.Replace(strings.Replace(nested(""), "machine Job {", "machine JobV2 {", 1), "machine JobV1 {", "machine JobV1 {", 1) + `
machine Job {
    type "job"
    version 3
    upgrade from 2 {
        WORKING -> WORKING
    }
    initial QUEUED
    state WORKING
    state WAITING wait after 1h Expired
    final DONE succeeded
    final FAILED failed
    event Begin { who string }
    event Finish
    event Settled { ref string }
    event Expired
    QUEUED -> WORKING on Begin
    WORKING -> WAITING on Finish
    WAITING -> DONE on Settled
    WAITING -> FAILED on Expired
}
`
	spec, diags := Load("t.fsm", []byte(v3))
	if spec == nil {
		t.Fatalf("diagnostics:\n%s", strings.Join(diagStrings(diags), "\n"))
	}
	var got []string
	for _, r := range spec.Machines[2].Upgrades[0].Rules {
		got = append(got, r.From.Name+" -> "+r.To.Name)
	}
	if diff := cmp.Diff([]string{"QUEUED -> QUEUED", "FETCHING -> WORKING", "PARSING -> WORKING", "WAITING -> WAITING"}, got); diff != "" {
		t.Errorf("from a composite (-want +got):\n%s", diff)
	}
}
