package store_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// reviewV2 is reviewDef with a third region in Open, Security { initial
// Scan; state Cleared }, which runs of version 1 enter at Scan.
func reviewV2() runtime.Definition {
	d := reviewDef()
	d.Version = 2
	d.States = append(slices.Clone(d.States),
		runtime.StateSpec{Name: "Scan", Status: runtime.StatusRunning, Wait: true, Parent: "Security"},
		runtime.StateSpec{Name: "Cleared", Status: runtime.StatusRunning, Wait: true, Parent: "Security"})
	d.Composites = append(slices.Clone(d.Composites), runtime.CompositeSpec{Name: "Security", Parent: "Open", Initial: "Scan"})
	enter := []string{"Open", "Review", "Pending", "Checks", "Queued", "Security", "Scan"}
	d.Transitions = slices.Clone(d.Transitions)
	for i, t := range d.Transitions {
		if t.To == "Pending|Queued" {
			d.Transitions[i].To, d.Transitions[i].Enter = "Pending|Queued|Scan", enter
		}
	}
	d.Upgrades = []runtime.Upgrade{{Type: "review", From: 1, To: 2, Rules: []runtime.UpgradeRule{
		{From: "DRAFT", To: "Open"}, // split into the parallel state
		{From: "Approved", To: "Ready", When: "Approve"},
		{From: "Approved", To: "Approved"},
		{From: "Running", To: "Queued"},
		{From: "Ready", To: "Ready"},
	}}}
	return d
}

// TestUpgradeConfigurations: as the runtime's role, Upgrade moves runs
// into and inside a parallel state leaf by leaf: a state split into the
// parallel state enters its initial configuration; a configuration's
// leaves move by their rules or keep their names, and the region the
// newer version added is entered at its initial leaf; PlanUpgrade counts
// them so beforehand. A configuration
// whose leaves map to states of no one configuration is refused, named
// in Upgrade's error and left untouched; the database refuses the same
// move written by hand.
func TestUpgradeConfigurations(t *testing.T) {
	t.Parallel()
	e := newRoleEnv(t)
	v1 := reviewDef()
	fire := func(run runtime.Run, events ...string) runtime.Run {
		t.Helper()
		for _, ev := range events {
			tr, ok, err := v1.Step(run.State, ev, func(_ string, rows []runtime.TransitionSpec) (runtime.TransitionSpec, bool, error) {
				return rows[0], true, nil
			})
			if !ok || err != nil {
				t.Fatalf("%s in %s: %t %v", ev, run.State, ok, err)
			}
			run = e.recordMove(t, run, tr)
		}
		return run
	}
	draft := startReview(t, e.env, "draft")
	kept := fire(startReview(t, e.env, "kept"), "Submit")
	moved := fire(startReview(t, e.env, "moved"), "Submit", "Go")
	refused := fire(startReview(t, e.env, "refused"), "Submit", "Approve")
	v2 := reviewV2()
	if err := e.st.Register(e.ctx, v2); err != nil {
		t.Fatal(err)
	}
	if err := e.st.RegisterUpgrade(e.ctx, v2.Upgrades[0]); err != nil {
		t.Fatal(err)
	}
	plan, err := e.st.PlanUpgrade(e.ctx, "review", 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	const why = "upgrade refused: Approved|Queued of v1 maps to Ready, Queued in v2: Ready is in no parallel state"
	var runs []int
	for _, mv := range plan.Moves {
		runs = append(runs, mv.Runs)
	}
	if diff := cmp.Diff([]any{[]int{1, 0, 1, 0, 0}, 1, 3, []store.StuckRun{{RunID: refused.ID, State: "Approved|Queued", Reason: why}}},
		[]any{runs, plan.KeptByName, plan.Movable(), plan.Stuck}); diff != "" {
		t.Errorf("plan: runs by rule, kept by name, movable, stuck (-want +got):\n%s", diff)
	}
	rep, err := e.st.Upgrade(e.ctx, "review", 1, 2, store.UpgradeOptions{})
	want := fmt.Sprintf("store: upgrade review from v1 to v2 run %s: %s", refused.ID, why)
	if !errors.Is(err, runtime.ErrUpgradeRefused) || err.Error() != want {
		t.Errorf("Upgrade: %v, want %s", err, want)
	}
	if diff := cmp.Diff(store.UpgradeReport{Moved: 3, Refused: 1}, rep); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
	for _, tt := range []struct {
		run     runtime.Run
		version int
		state   string
	}{
		{draft, 2, "Pending|Queued|Scan"},
		{kept, 2, "Pending|Queued|Scan"},
		{moved, 2, "Approved|Queued|Scan"},
		{refused, 1, "Approved|Queued"},
	} {
		got := e.get(t, tt.run.ID)
		if got.Version != tt.version || got.State != tt.state {
			t.Errorf("run in %s: v%d %s, want v%d %s", tt.run.State, got.Version, got.State, tt.version, tt.state)
		}
	}
	if got := e.get(t, refused.ID); got.RowVersion != refused.RowVersion {
		t.Errorf("refused run: row version %d, want %d", got.RowVersion, refused.RowVersion)
	}
	runErr := func(why string) string {
		return "run " + refused.ID + " of review/v1: the migration to v2 does not move this run from Approved|Queued to Approved|Queued|Scan: " + why
	}
	migrate := `UPDATE workflow_runs SET definition_version = 2, current_state = 'Approved|Queued|Scan' WHERE id = $1`
	refusedSQL(t, e, "FS001", runErr("its leaves map to Ready, Queued"), migrate, refused.ID)
	late := startReview(t, e.env, "late")
	refusedSQL(t, e, "FS001", "run "+late.ID+" of review/v1: the migration to v2 cannot leave this run in Open, a parallel state or a leaf of one of its regions: it moves to a configuration",
		`UPDATE workflow_runs SET definition_version = 2, current_state = 'Open' WHERE id = $1`, late.ID)
	refusedSQL(t, e, "FS001", "run "+late.ID+" of review/v1: the migration to v2 does not move this run from DRAFT to Approved|Queued|Scan: its leaves map to Pending, Queued, Scan",
		`UPDATE workflow_runs SET definition_version = 2, current_state = 'Approved|Queued|Scan' WHERE id = $1`, late.ID)
}

// refusedSQL runs sql with args as the runtime's role and checks that
// the database refuses it with SQLSTATE code and message msg.
func refusedSQL(t *testing.T, e roleEnv, code, msg, sql string, args ...any) {
	t.Helper()
	refused(t, e.st.Pool(), code, msg, []string{sql}, args...)
}

// TestUpgradeMap: Map's decisions without a database: a configuration
// whose leaves collapse onto one state moves to it; leaves mapped into
// one region, or across parallel and plain states, are refused; a leaf
// that drains drains the run, and one no rule admits leaves it unmatched.
func TestUpgradeMap(t *testing.T) {
	t.Parallel()
	from, to := reviewDef(), reviewV2()
	never := func(string) bool { return false }
	tests := []struct {
		name  string
		rules []runtime.UpgradeRule
		state string
		want  runtime.UpgradeMove
		err   string
	}{
		{"collapsed", []runtime.UpgradeRule{{From: "Pending", To: "Ready"}, {From: "Running", To: "Ready"}}, "Pending|Running",
			runtime.UpgradeMove{To: "Ready", Rules: []runtime.UpgradeRule{{From: "Pending", To: "Ready"}, {From: "Running", To: "Ready"}}}, ""},
		{"into one region", []runtime.UpgradeRule{{From: "Pending", To: "Running"}}, "Pending|Queued", runtime.UpgradeMove{},
			"upgrade refused: Pending|Queued of v1 maps to Running, Queued in v2: region Checks of Open would hold both Running and Queued"},
		{"leaf split into the parallel state", []runtime.UpgradeRule{{From: "DRAFT", To: "Pending"}}, "DRAFT",
			runtime.UpgradeMove{To: "Pending|Queued|Scan", Rules: []runtime.UpgradeRule{{From: "DRAFT", To: "Pending"}}}, ""},
		{"drained", []runtime.UpgradeRule{{From: "Running", Drain: true}}, "Pending|Running",
			runtime.UpgradeMove{Rules: []runtime.UpgradeRule{{From: "Running", Drain: true}}, Drain: true}, ""},
		{"unmatched", []runtime.UpgradeRule{{From: "Running", To: "Queued", When: "Pass"}}, "Pending|Running",
			runtime.UpgradeMove{Unmatched: "Running"}, ""},
		{"no state", []runtime.UpgradeRule{{From: "Running", To: "Broken"}}, "Pending|Running", runtime.UpgradeMove{},
			"upgrade refused: Pending|Running of v1 maps to Pending, Broken in v2: Broken is not in a region of Open"},
	}
	for _, tt := range tests {
		m := runtime.Upgrade{Type: "review", From: 1, To: 2, Rules: tt.rules}
		got, err := m.Map(from, to, tt.state, never)
		if tt.err != "" {
			if !errors.Is(err, runtime.ErrUpgradeRefused) || err.Error() != tt.err {
				t.Errorf("%s: Map = %v, want %s", tt.name, err, tt.err)
			}
			continue
		}
		if diff := cmp.Diff(tt.want, got); err != nil || diff != "" {
			t.Errorf("%s: Map %v (-want +got):\n%s", tt.name, err, diff)
		}
	}
}
