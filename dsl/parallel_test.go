package dsl

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// review is a machine with a parallel state Open of two regions, Review
// and Checks, its declarations on lines 2 to 21; extra lines follow.
func review(extra ...string) string {
	return door(append([]string{
		"initial Draft wait",
		"state Open parallel {",
		"    state Review {",
		"        initial Pending wait",
		"        state Approved wait",
		"        final Accepted",
		"    }",
		"    state Checks {",
		"        initial Queued wait",
		"        final Passed",
		"    }",
		"}",
		"final Merged succeeded",
		"event Submit",
		"event Approve",
		"event Accept",
		"event Pass",
		"event Merge",
		"Draft -> Open on Submit",
		"Pending -> Approved on Approve",
		"Approved -> Accepted on Accept",
		"Queued -> Passed on Pass",
		"Open -> Merged on Merge",
	}, extra...)...)
}

func TestParallelModel(t *testing.T) {
	t.Parallel()
	spec, ds := Load("t.fsm", []byte(review("Open -> Merged on done", "Approved -> Pending on Pass when In(Queued)")))
	if len(ds) > 0 {
		t.Fatalf("diagnostics: %v", diagStrings(ds))
	}
	m := spec.Machines[0]
	open := m.Composites[0]
	if diff := cmp.Diff([]string{"Open"}, names(m.Parallels)); diff != "" {
		t.Errorf("Parallels (-want +got):\n%s", diff)
	}
	if !open.Parallel || open.InitialChild != nil {
		t.Errorf("Open: Parallel %v, InitialChild %v; want true, nil", open.Parallel, open.InitialChild)
	}
	type row struct {
		From, To, Event   string
		Config, Exit, Ent []string
		In                string
		Done              bool
	}
	var got []row
	for _, tr := range m.Transitions {
		r := row{From: tr.From.Name, To: tr.To.Name, Config: names(tr.Config), Exit: names(tr.Exit), Ent: names(tr.Enter), Done: tr.Done}
		if tr.Event != nil {
			r.Event = tr.Event.Name
		}
		if tr.In != nil {
			r.In = tr.In.Name
		}
		got = append(got, r)
	}
	want := []row{
		{From: "Pending", To: "Approved", Event: "Approve", Exit: []string{"Pending"}, Ent: []string{"Approved"}},
		{From: "Approved", To: "Accepted", Event: "Accept", Exit: []string{"Approved"}, Ent: []string{"Accepted"}},
		{From: "Queued", To: "Passed", Event: "Pass", Exit: []string{"Queued"}, Ent: []string{"Passed"}},
		{From: "Approved", To: "Pending", Event: "Pass", Exit: []string{"Approved"}, Ent: []string{"Pending"}, In: "Queued"},
		{From: "Draft", To: "Pending", Event: "Submit", Config: []string{"Pending", "Queued"}, Exit: []string{"Draft"}, Ent: []string{"Open", "Review", "Pending", "Checks", "Queued"}},
		{From: "Open", To: "Merged", Event: "Merge", Exit: []string{"Open"}, Ent: []string{"Merged"}},
		{From: "Open", To: "Merged", Exit: []string{"Open"}, Ent: []string{"Merged"}, Done: true},
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("transitions (-want +got):\n%s", diff)
	}
}

func TestParallelEntersRegionState(t *testing.T) {
	t.Parallel()
	spec, ds := Load("t.fsm", []byte(review("event Skip", "Draft -> Passed on Skip")))
	if len(ds) > 0 {
		t.Fatalf("diagnostics: %v", diagStrings(ds))
	}
	for _, tr := range spec.Machines[0].Transitions {
		if tr.Event == nil || tr.Event.Name != "Skip" {
			continue
		}
		if tr.To.Name != "Passed" {
			t.Errorf("To = %s, want Passed", tr.To.Name)
		}
		if diff := cmp.Diff([]string{"Pending", "Passed"}, names(tr.Config)); diff != "" {
			t.Errorf("Config (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"Open", "Review", "Pending", "Checks", "Passed"}, names(tr.Enter)); diff != "" {
			t.Errorf("Enter (-want +got):\n%s", diff)
		}
	}
}

// TestParallelSpecs loads the machines with parallel states of
// testdata/parallel: each checks clean.
func TestParallelSpecs(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/parallel/*.fsm")
	if err != nil || len(files) < 2 {
		t.Fatalf("testdata/parallel: %v, %d files", err, len(files))
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		spec, ds := Load(f, src)
		if len(ds) > 0 || spec == nil {
			t.Errorf("%s: %v", f, diagStrings(ds))
			continue
		}
		if len(spec.Machines[0].Parallels) == 0 {
			t.Errorf("%s: no parallel state", f)
		}
	}
}

func TestCheckParallel(t *testing.T) {
	t.Parallel()
	runCheckCases(t, []checkCase{
		{
			name: "one region",
			src:  door("initial A parallel {", "    state R {", "        initial B wait", "    }", "}", "final Z succeeded", "event E", "A -> Z on E"),
			want: []string{"t.fsm:2:13: parallel state A has one region; a parallel state has two or more, each a composite state with an initial child"},
		},
		{
			name: "leaf region",
			src:  door("initial A parallel {", "    state R {", "        initial B wait", "    }", "    state L wait", "}", "final Z succeeded", "event E", "A -> Z on E"),
			want: []string{
				"t.fsm:2:13: parallel state A has one region; a parallel state has two or more, each a composite state with an initial child",
				"t.fsm:6:15: state L is a leaf, but the children of parallel state A are its regions: composite states, each with an initial child",
			},
		},
		{
			name: "region marked initial",
			src:  door("initial A parallel {", "    initial R {", "        initial B wait", "    }", "    state S {", "        initial C wait", "    }", "}", "final Z succeeded", "event E", "A -> Z on E"),
			want: []string{"t.fsm:3:17: region R of parallel state A is marked initial; every region of a parallel state is entered, so none is initial"},
		},
		{
			name: "parallel leaf",
			src:  door("initial A parallel wait", "final Z succeeded", "event E", "A -> Z on E"),
			want: []string{"t.fsm:2:15: state A is parallel but has no regions; declare two or more inside its braces, each a composite state with an initial child"},
		},
		{
			name: "parallel twice",
			src: door("initial A parallel parallel {", "    state R {", "        initial B wait", "    }", "    state S {", "        initial C wait", "    }", "}",
				"final Z succeeded", "event E", "A -> Z on E"),
			want: []string{"t.fsm:2:24: parallel given twice for state A"},
		},
		{
			name: "nested parallel",
			src: door("initial A parallel {", "    state R {", "        initial P parallel {", "            state X wait", "        }", "    }", "    state S {", "        initial C wait", "    }", "}",
				"final Z succeeded", "event E", "A -> Z on E"),
			want: []string{
				"t.fsm:4:21: parallel state P is inside region R of parallel state A; parallel states do not nest",
				"t.fsm:4:21: parallel state P has no region; a parallel state has two or more, each a composite state with an initial child",
				"t.fsm:5:23: state X is a leaf, but the children of parallel state P are its regions: composite states, each with an initial child",
			},
		},
		{
			name: "history in a region",
			src: door("initial A parallel {", "    state R {", "        initial B wait", "        history H", "    }", "    state S {", "        initial C wait", "    }", "}",
				"final Z succeeded", "event E", "A -> Z on E"),
			want: []string{"t.fsm:5:21: history H of R: history in, of or above parallel state A is not supported"},
		},
		{
			name: "history above",
			src: door("initial T {", "    initial A parallel {", "        state R {", "            initial B wait", "        }", "        state S {", "            initial C wait", "        }", "    }", "    history H", "}",
				"final Z succeeded", "event E", "T -> Z on E"),
			want: []string{"t.fsm:11:17: history H of T: history in, of or above parallel state A is not supported"},
		},
		{
			name: "row crossing regions",
			src:  review("Pending -> Queued on Pass"),
			want: []string{"t.fsm:25:16: transition from Pending to Queued crosses from region Review to region Checks of parallel state Open; a row stays in its region, or targets Open or a state outside it"},
		},
		{
			name: "on done without a final child in a region",
			src: door("initial A parallel {", "    state R {", "        initial B wait", "        final D", "    }", "    state S {", "        initial C wait", "    }", "}",
				"final Z succeeded", "event E", "B -> D on E", "A -> Z on done"),
			want: []string{`t.fsm:14:15: "on done" on parallel state A, whose region S has no final state without a status; a parallel state completes once every region reaches such a final child`},
		},
		{
			name: "internal row on a parallel state",
			src:  review("Open -> Pending on Pass internal"),
			want: []string{"t.fsm:25:13: internal transition from parallel state Open: an internal row on a parallel state is not supported; write it on a region or a state inside one"},
		},
		{
			name: "In of an unknown state",
			src:  review("Pending -> Approved on Pass when In(Queud)"),
			want: []string{"t.fsm:25:41: unknown state Queud; did you mean Queued?"},
		},
		{
			name: "In always true",
			src:  review("Pending -> Approved on Pass when In(Review)"),
			want: []string{"t.fsm:25:41: warning: guard In(Review) always holds on a row from Pending, which is in Review; leave it out"},
		},
		{
			name: "In never true",
			src:  review("Pending -> Approved on Pass when In(Approved)"),
			want: []string{"t.fsm:25:41: warning: guard In(Approved) never holds on a row from Pending: Approved is not active while Pending is"},
		},
		{
			name: "In double negation",
			src:  review("Pending -> Approved on Pass unless !In(Queued)"),
			want: []string{`t.fsm:25:33: "unless !In(Queued)" is a double negation; write "when In(Queued)"`},
		},
		{
			name: "In shadowed by the same test",
			src:  review("Pending -> Approved on Pass when In(Queued)", "Pending -> Accepted on Pass when In(Queued)"),
			want: []string{"t.fsm:26:5: transition from Pending on Pass can never fire: the one at 25:5 has the same guard and comes first"},
		},
		{
			name: "In and its negation cover every event",
			src:  review("Pending -> Approved on Pass when In(Queued)", "Pending -> Accepted on Pass unless In(Queued)", "Pending -> Pending on Pass"),
			want: []string{"t.fsm:27:5: transition from Pending on Pass can never fire: the transitions on In(Queued) and !In(Queued) before it admit every event"},
		},
		{
			name: "region leaf unreachable",
			src:  review("state Lost wait", "event Find", "Lost -> Draft on Find"),
			want: []string{"t.fsm:25:11: state Lost is unreachable from the initial state Draft"},
		},
		{
			name: "row of a parallel state that a region always takes first",
			src:  review("Pending -> Pending on Merge", "Approved -> Approved on Merge", "Accepted -> Pending on Merge", "Open -> Merged on done"),
			want: []string{"t.fsm:24:5: transition from Open on Merge can never fire: every state in its region Review has a transition on Merge that is tried first (the one of Pending at 25:5)"},
		},
		{
			name: "row of a parallel state that a region takes in some states only",
			src:  review("Pending -> Pending on Merge", "Approved -> Approved on Merge"),
			want: nil,
		},
		{
			name: "In guard is a guard",
			src:  review("Pending -> Approved on Pass when In(Queued)", "Pending -> Accepted on Pass"),
			want: nil,
		},
		{
			name: "eventless loop through a parallel state",
			src:  review("state Idle wait", "Open -> Idle", "Idle -> Open"),
			want: []string{"t.fsm:26:5: unguarded rows without an event loop for ever: Pending -> Idle -> Pending; guard one of them, or give it an event"},
		},
		{
			name: "upgrade rules of a parallel machine",
			src:  review() + "machine Door2 {\n    type \"door\"\n    version 2\n    upgrade from 1 { Draft -> Draft }\n    initial Draft wait\n    final Merged succeeded\n    event Merge\n    Draft -> Merged on Merge\n}\n",
			want: []string{`t.fsm:29:18: upgrade from 1: rules cannot move the runs of a machine with parallel states yet; write "upgrade from 1 drain"`},
		},
		{
			name: "a region stuck while another moves on, in a machine without final states",
			src:  door("initial A parallel {", "    state R {", "        initial B wait", "        state C wait", "    }", "    state S {", "        initial D wait", "        state F wait", "    }", "}", "event E", "event G", "B -> C on E", "D -> F on G", "F -> D on G"),
			want: nil,
		},
		{
			name: "every region stuck, in a machine without final states",
			src:  door("initial A parallel {", "    state R {", "        initial B wait", "        state C wait", "    }", "    state S {", "        initial D wait", "        state F wait", "    }", "}", "event E", "event G", "B -> C on E", "D -> F on G"),
			want: []string{
				"t.fsm:4:21: warning: every path from state B ends in C, which has no transition out: a run that gets there is stuck for good",
				"t.fsm:5:19: warning: state C has no transition out, and machine Door has no final state: a run that gets there is stuck for good; declare C final if runs end there",
				"t.fsm:8:21: warning: every path from state D ends in F, which has no transition out: a run that gets there is stuck for good",
				"t.fsm:9:19: warning: state F has no transition out, and machine Door has no final state: a run that gets there is stuck for good; declare F final if runs end there",
			},
		},
		{
			name: "timer of a parallel state taken by a region",
			src:  door("initial A parallel after 1h Late {", "    state R {", "        initial B wait", "        state C wait", "    }", "    state S {", "        initial D wait", "    }", "}", "final Z succeeded", "event E", "event Late", "A -> Z on E", "B -> C on Late", "C -> B on E"),
			want: nil,
		},
		{
			name: "timer of a parallel state taken by nothing",
			src:  door("initial A parallel after 1h Late {", "    state R {", "        initial B wait", "        state C wait", "    }", "    state S {", "        initial D wait", "    }", "}", "final Z succeeded", "event E", "event Late", "A -> Z on E", "B -> C on E"),
			want: []string{"t.fsm:2:33: timer of state A fires Late in parallel state A, where neither it nor a state of its regions has a transition on Late"},
		},
		{
			name: "timer of a leaf taken by its parallel state",
			src:  door("initial A parallel {", "    state R {", "        initial B wait after 1m Late", "    }", "    state S {", "        initial D wait", "    }", "}", "final Z succeeded", "event Late", "A -> Z on Late"),
			want: nil,
		},
	})
}
