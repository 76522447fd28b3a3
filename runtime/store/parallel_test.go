package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime"
)

// reviewDef is a machine with a parallel state, its table flattened as a
// generator lists it:
//
//	initial DRAFT wait
//	state Open parallel {
//	    state Review { initial Pending wait; state Approved wait }
//	    state Checks { initial Queued wait; state Running wait; final Passed wait }
//	}
//	final Merged succeeded
//	final Broken failed
//	state Ready wait
//
//	DRAFT -> Open on Submit
//	Pending -> Approved on Go, Approve
//	Queued -> Running on Go
//	Running -> Passed on Pass
//	Running -> Broken on Crash        // leaves Open from a region's leaf
//	Open -> Merged on Merge           // on the parallel state
//	Open -> Open on Reset             // leaves Open and enters it again
//	Open -> Ready on done
func reviewDef() runtime.Definition {
	leaf := func(name, parent string) runtime.StateSpec {
		return runtime.StateSpec{Name: name, Status: runtime.StatusRunning, Wait: true, Parent: parent}
	}
	d := runtime.Definition{
		Machine: "Review", Type: "review", Version: 1, Initial: "DRAFT",
		States: []runtime.StateSpec{
			{Name: "DRAFT", Initial: true, Status: runtime.StatusRunning, Wait: true},
			leaf("Pending", "Review"), leaf("Approved", "Review"),
			leaf("Queued", "Checks"), leaf("Running", "Checks"), leaf("Passed", "Checks"),
			{Name: "Merged", Status: runtime.StatusSucceeded}, {Name: "Broken", Status: runtime.StatusFailed}, leaf("Ready", ""),
		},
		Composites: []runtime.CompositeSpec{
			{Name: "Open", Parallel: true},
			{Name: "Review", Parent: "Open", Initial: "Pending"},
			{Name: "Checks", Parent: "Open", Initial: "Queued"},
		},
		Events: []runtime.EventSpec{{Name: "Submit"}, {Name: "Go"}, {Name: "Approve"}, {Name: "Pass"}, {Name: "Crash"}, {Name: "Merge"}, {Name: "Reset"}},
	}
	enter := []string{"Open", "Review", "Pending", "Checks", "Queued"}
	d.Transitions = []runtime.TransitionSpec{
		{From: "DRAFT", Event: "Submit", To: "Pending|Queued", Exit: []string{"DRAFT"}, Enter: enter},
		{From: "Pending", Event: "Go", To: "Approved", Exit: []string{"Pending"}, Enter: []string{"Approved"}},
		{From: "Pending", Event: "Approve", To: "Approved", Exit: []string{"Pending"}, Enter: []string{"Approved"}},
		{From: "Queued", Event: "Go", To: "Running", Exit: []string{"Queued"}, Enter: []string{"Running"}},
		{From: "Running", Event: "Pass", To: "Passed", Exit: []string{"Running"}, Enter: []string{"Passed"}},
		{From: "Running", Event: "Crash", To: "Broken"},
		{From: "Open", Event: "Merge", To: "Merged"},
		{From: "Open", Event: "Reset", To: "Pending|Queued", Enter: enter},
		{From: "Open", To: "Ready", Done: true},
	}
	return d
}

// parallelMove is the transition of reviewDef from one persisted state to
// another on event, exiting and entering the states named.
func parallelMove(from, event, to string, exited, entered []string) runtime.Transition {
	d := reviewDef()
	st, _ := d.StateOf(to)
	return runtime.Transition{Machine: d.Type, Version: d.Version, From: from, To: to, Event: event, Status: st.Status,
		Exited: exited, Entered: entered}
}

// startReview registers reviewDef and starts a run of it with key.
func startReview(t *testing.T, e env, key string) runtime.Run {
	t.Helper()
	if err := e.st.Register(e.ctx, reviewDef()); err != nil {
		t.Fatal(err)
	}
	res, err := e.st.Start(e.ctx, runtime.StartRequest{Type: "review", Version: 1, IdempotencyKey: key, Owner: runtime.Owner{TenantID: "t1"}})
	if err != nil {
		t.Fatal(err)
	}
	return res.Run
}

// TestParallelMoves: a run of the runtime's role moves into a parallel
// state, moves two regions in one step and one in another, leaves and
// enters the parallel state again, and leaves it for a final state; each
// step is one log row from configuration to configuration, naming the
// states it exited and entered.
func TestParallelMoves(t *testing.T) {
	t.Parallel()
	e := newRoleEnv(t)
	run := startReview(t, e.env, "k")
	for _, m := range []runtime.Transition{
		parallelMove("DRAFT", "Submit", "Pending|Queued", []string{"DRAFT"}, []string{"Open", "Review", "Pending", "Checks", "Queued"}),
		parallelMove("Pending|Queued", "Go", "Approved|Running", []string{"Pending", "Queued"}, []string{"Approved", "Running"}),
		parallelMove("Approved|Running", "Reset", "Pending|Queued", []string{"Approved", "Review", "Running", "Checks", "Open"},
			[]string{"Open", "Review", "Pending", "Checks", "Queued"}),
		parallelMove("Pending|Queued", "Approve", "Approved|Queued", []string{"Pending"}, []string{"Approved"}),
		parallelMove("Approved|Queued", "Merge", "Merged", []string{"Approved", "Review", "Queued", "Checks", "Open"}, []string{"Merged"}),
	} {
		if _, err := e.st.Record(e.ctx, run.ID, run.RowVersion, m); err != nil {
			t.Fatalf("%s -> %s on %s: %v", m.From, m.To, m.Event, err)
		}
		run = e.get(t, run.ID)
		if run.State != m.To || run.Status != m.Status {
			t.Fatalf("after %s: %s %s, want %s %s", m.Event, run.State, run.Status, m.To, m.Status)
		}
	}
	var got []string
	for _, s := range e.history(t, run.ID) {
		got = append(got, fmt.Sprintf("%s %s->%s exited %v entered %v", s.Event, s.From, s.To, s.Exited, s.Entered))
	}
	want := []string{
		" ->DRAFT exited [] entered []",
		"Submit DRAFT->Pending|Queued exited [DRAFT] entered [Open Review Pending Checks Queued]",
		"Go Pending|Queued->Approved|Running exited [Pending Queued] entered [Approved Running]",
		"Reset Approved|Running->Pending|Queued exited [Approved Review Running Checks Open] entered [Open Review Pending Checks Queued]",
		"Approve Pending|Queued->Approved|Queued exited [Pending] entered [Approved]",
		"Merge Approved|Queued->Merged exited [Approved Review Queued Checks Open] entered [Merged]",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
}

// TestParallelRefusedByStore: the store refuses, before any write, a move
// the table does not have, saying why (runtime.Definition.Refusal):
// across regions, of a wrong arity, along no row, or naming a state the
// machine lacks.
func TestParallelRefusedByStore(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	run := startReview(t, e, "k")
	run = e.recordMove(t, run, parallelMove("DRAFT", "Submit", "Pending|Queued", []string{"DRAFT"}, []string{"Open", "Review", "Pending", "Checks", "Queued"}))
	for _, tt := range []struct {
		name string
		t    runtime.Transition
		want error
		msg  string
	}{
		{"across regions", parallelMove("Pending|Queued", "Go", "Running|Queued", nil, nil), runtime.ErrTransitionRefused,
			"review v1 has no transition Pending|Queued -> Running|Queued on Go: Running|Queued is not a configuration of Open: leaf 1, Running, is not in region Review"},
		{"wrong arity", parallelMove("Pending|Queued", "Go", "Approved|Running|Passed", nil, nil), runtime.ErrTransitionRefused,
			"review v1 has no transition Pending|Queued -> Approved|Running|Passed on Go: Approved|Running|Passed is not a configuration of Open: 3 leaves for 2 regions"},
		{"region move on another event", parallelMove("Pending|Queued", "Approve", "Approved|Running", nil, nil), runtime.ErrTransitionRefused,
			`review v1 has no transition Pending|Queued -> Approved|Running on Approve: region Checks of Open: no row Queued -> Running on "Approve"`},
		{"leaving along no row", parallelMove("Pending|Queued", "Crash", "Broken", nil, nil), runtime.ErrTransitionRefused,
			`review v1 has no transition Pending|Queued -> Broken on Crash: no row from Open or its leaves to Broken on "Crash"`},
		{"unknown state entered", parallelMove("Pending|Queued", "Approve", "Approved|Queued", []string{"Pending"}, []string{"Nope"}), runtime.ErrUnknownState,
			`review v1: transition Pending|Queued -> Approved|Queued names unknown state "Nope"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.st.Record(e.ctx, run.ID, run.RowVersion, tt.t)
			if !errors.Is(err, tt.want) || err.Error() != "store: record run "+run.ID+": "+tt.want.Error()+": "+tt.msg {
				t.Errorf("Record: %v, want %v: %s", err, tt.want, tt.msg)
			}
		})
	}
}

func (e env) recordMove(t *testing.T, run runtime.Run, m runtime.Transition) runtime.Run {
	t.Helper()
	if _, err := e.st.Record(e.ctx, run.ID, run.RowVersion, m); err != nil {
		t.Fatal(err)
	}
	return e.get(t, run.ID)
}

// TestParallelGuard: the database refuses, from the runtime's role, the
// moves of raw SQL that no row allows: a region's leaf moved into another
// region, a configuration of the wrong arity, a region move the table
// lacks, one logged on an event its row does not have, a configuration
// entered that no row enters, and a parallel state left along no row. A
// legal move of two regions passes, with its status and no
// previous_state.
func TestParallelGuard(t *testing.T) {
	t.Parallel()
	e := newRoleEnv(t)
	run := startReview(t, e.env, "k")
	draft := startReview(t, e.env, "draft")
	run = e.recordMove(t, run, parallelMove("DRAFT", "Submit", "Pending|Queued", []string{"DRAFT"}, []string{"Open", "Review", "Pending", "Checks", "Queued"}))
	move := func(to string) string {
		return `UPDATE workflow_runs SET current_state = '` + to + `', row_version = row_version + 1 WHERE id = $1`
	}
	refusal := func(id, from, to, why string) string {
		return "run " + id + " of review/v1: no transition " + from + " -> " + to + " in the registered table: " + why
	}
	for _, tt := range []struct {
		name, id, sql, msg string
	}{
		{"leaf of another region", run.ID, move("Running|Queued"), refusal(run.ID, "Pending|Queued", "Running|Queued",
			"Running|Queued is not a configuration: one leaf of each region of a parallel state, in region order")},
		{"wrong arity", run.ID, move("Pending|Queued|Passed"), refusal(run.ID, "Pending|Queued", "Pending|Queued|Passed",
			"Pending|Queued|Passed is not a configuration: one leaf of each region of a parallel state, in region order")},
		{"region move not in the table", run.ID, move("Pending|Passed"), refusal(run.ID, "Pending|Queued", "Pending|Passed",
			"region 2 of Open: no row Queued -> Passed")},
		{"configuration no row enters", draft.ID, move("Approved|Queued"), refusal(draft.ID, "DRAFT", "Approved|Queued",
			"no row from DRAFT to Approved|Queued")},
		{"leaving along no row", run.ID, move("DRAFT"), refusal(run.ID, "Pending|Queued", "DRAFT",
			"no row from Open or its leaves to DRAFT")},
		{"region move on the wrong event", run.ID, `WITH moved AS (
    UPDATE workflow_runs SET current_state = 'Approved|Running', row_version = row_version + 1 WHERE id = $1
    RETURNING id, workflow_type, attempt_no, current_state, row_version, definition_version
)
INSERT INTO workflow_step_logs (workflow_run_id, workflow_type, attempt_no, step_name, state_before, state_after,
    kind, event, row_version, definition_version)
SELECT m.id, m.workflow_type, m.attempt_no, 'Approve', 'Pending|Queued', m.current_state, 'transition', 'Approve',
    m.row_version, m.definition_version
FROM moved m`, "run " + run.ID + " of review/v1: no transition Pending|Queued -[Approve]-> Approved|Running in the registered table: region 2 of Open: no row Queued -> Running"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			refused(t, e.pool, "FS001", tt.msg, []string{tt.sql}, tt.id)
		})
	}
	// The legal move of two regions on Go, written by hand with its log row.
	ctx := context.Background()
	_, err := e.pool.Exec(ctx, `WITH moved AS (
    UPDATE workflow_runs SET current_state = 'Approved|Running', previous_state = current_state, row_version = row_version + 1 WHERE id = $1
    RETURNING id, workflow_type, attempt_no, current_state, row_version, definition_version
)
INSERT INTO workflow_step_logs (workflow_run_id, workflow_type, attempt_no, step_name, state_before, state_after,
    kind, event, row_version, definition_version)
SELECT m.id, m.workflow_type, m.attempt_no, 'Go', 'Pending|Queued', m.current_state, 'transition', 'Go',
    m.row_version, m.definition_version
FROM moved m`, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	var state, status string
	var previous *string
	if err := e.pool.QueryRow(ctx, `SELECT current_state, status, previous_state FROM workflow_runs WHERE id = $1`, run.ID).Scan(&state, &status, &previous); err != nil {
		t.Fatal(err)
	}
	if state != "Approved|Running" || status != "running" || previous != nil {
		t.Errorf("after Go: %s %s previous %v, want Approved|Running running previous NULL", state, status, previous)
	}
}
