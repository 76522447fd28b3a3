package runtime_test

import (
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
//	    state Checks { initial Queued; state Running; final Passed wait }
//	}
//	final Merged succeeded
//	state Ready wait
//
//	DRAFT -> Open on Submit
//	Pending -> Approved on Approve
//	Queued -> Running on CheckStarted
//	Running -> Passed on CheckSucceeded
//	Open -> Merged on Merge
//	Open -> Ready on done
func reviewDef() runtime.Definition {
	leaf := func(name, parent string, wait bool) runtime.StateSpec {
		return runtime.StateSpec{Name: name, Status: runtime.StatusRunning, Wait: wait, Parent: parent}
	}
	d := runtime.Definition{
		Machine: "Review", Type: "review", Version: 1, Initial: "DRAFT",
		States: []runtime.StateSpec{
			{Name: "DRAFT", Initial: true, Status: runtime.StatusRunning, Wait: true},
			leaf("Pending", "Review", true), leaf("Approved", "Review", true),
			leaf("Queued", "Checks", false), leaf("Running", "Checks", false), leaf("Passed", "Checks", true),
			{Name: "Merged", Status: runtime.StatusSucceeded}, leaf("Ready", "", true),
		},
		Composites: []runtime.CompositeSpec{
			{Name: "Open", Parallel: true},
			{Name: "Review", Parent: "Open", Initial: "Pending"},
			{Name: "Checks", Parent: "Open", Initial: "Queued"},
		},
		Events: []runtime.EventSpec{{Name: "Submit"}, {Name: "Approve"}, {Name: "CheckStarted"}, {Name: "CheckSucceeded"}, {Name: "Merge"}},
		Transitions: []runtime.TransitionSpec{
			{From: "DRAFT", Event: "Submit", To: "Pending|Queued", Exit: []string{"DRAFT"}, Enter: []string{"Open", "Review", "Pending", "Checks", "Queued"}},
			{From: "Pending", Event: "Approve", To: "Approved", Exit: []string{"Pending"}, Enter: []string{"Approved"}},
			{From: "Queued", Event: "CheckStarted", To: "Running", Exit: []string{"Queued"}, Enter: []string{"Running"}},
			{From: "Running", Event: "CheckSucceeded", To: "Passed", Exit: []string{"Running"}, Enter: []string{"Passed"}},
			{From: "Open", Event: "Merge", To: "Merged"},
			{From: "Open", To: "Ready", Done: true},
		},
	}
	return d
}

func TestParallelHelpers(t *testing.T) {
	t.Parallel()
	d := reviewDef()
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"Review", "Checks"}, d.Regions("Open")); diff != "" {
		t.Errorf("Regions(Open) (-want +got):\n%s", diff)
	}
	if got := d.Regions("Review"); got != nil {
		t.Errorf("Regions(Review) = %v, want nil: Review is no parallel state", got)
	}
	if diff := cmp.Diff([]string{"Pending", "Running"}, d.Configuration("Pending|Running")); diff != "" {
		t.Errorf("Configuration (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"DRAFT"}, d.Configuration("DRAFT")); diff != "" {
		t.Errorf("Configuration of a leaf (-want +got):\n%s", diff)
	}
	if got := d.JoinConfiguration([]string{"Approved", "Passed"}); got != "Approved|Passed" {
		t.Errorf("JoinConfiguration = %q", got)
	}
	for state, want := range map[string]runtime.StateSpec{
		"Pending|Queued":  {Name: "Pending|Queued", Status: runtime.StatusRunning},
		"Approved|Passed": {Name: "Approved|Passed", Status: runtime.StatusRunning, Wait: true},
		"DRAFT":           d.States[0],
	} {
		got, ok := d.StateOf(state)
		if diff := cmp.Diff(want, got); !ok || diff != "" {
			t.Errorf("StateOf(%s) %t (-want +got):\n%s", state, ok, diff)
		}
	}
	if _, ok := d.StateOf("Pending|Nope"); ok {
		t.Error("StateOf a configuration with an unknown leaf")
	}
	// Merge, on the parallel state, is a caller's; CheckStarted is the
	// handler's of Queued in any configuration that holds it.
	if got := d.CallerRefusal("Pending|Queued", "Merge"); got != "" {
		t.Errorf("CallerRefusal(Merge) = %q", got)
	}
	const want = "returned by the handler of Queued; declare it external to let callers send it"
	if got := d.CallerRefusal("Approved|Queued", "CheckStarted"); got != want {
		t.Errorf("CallerRefusal(CheckStarted) = %q, want %q", got, want)
	}
}

func TestValidateParallel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(d *runtime.Definition)
		want   string
	}{
		{"row across regions", func(d *runtime.Definition) { d.Transitions[1].To = "Running" },
			"definition review v1: transition Pending -> Running crosses from region Review to region Checks of parallel state Open"},
		{"row into a region leaf", func(d *runtime.Definition) { d.Transitions[0].To, d.Transitions[0].Enter = "Pending", nil },
			"definition review v1: transition DRAFT -> Pending enters region Review of parallel state Open: a row entering it targets the whole configuration"},
		{"row from the parallel state into a region leaf", func(d *runtime.Definition) { d.Transitions[4].To = "Approved" },
			"definition review v1: transition Open -> Approved enters region Review of parallel state Open: a row entering it targets the whole configuration"},
		{"configuration of wrong arity", func(d *runtime.Definition) {
			d.Transitions[0].To, d.Transitions[0].Enter = "Pending|Queued|Passed", nil
		},
			"definition review v1: transition DRAFT -> Pending|Queued|Passed: Pending|Queued|Passed is not a configuration of Open: 3 leaves for 2 regions"},
		{"configuration out of order", func(d *runtime.Definition) { d.Transitions[0].To, d.Transitions[0].Enter = "Queued|Pending", nil },
			"definition review v1: transition DRAFT -> Queued|Pending: Queued|Pending is not a configuration of Open: leaf 1, Queued, is not in region Review"},
		{"configuration outside", func(d *runtime.Definition) { d.Transitions[0].To, d.Transitions[0].Enter = "DRAFT|Ready", nil },
			"definition review v1: transition DRAFT -> DRAFT|Ready: DRAFT|Ready is not a configuration: DRAFT is in no parallel state"},
		{"enters elsewhere last", func(d *runtime.Definition) { d.Transitions[0].Enter = []string{"Open", "Review", "Pending"} },
			"definition review v1: transition DRAFT -> Pending|Queued enters Pending last, want Queued"},
		{"initial child", func(d *runtime.Definition) { d.Composites[0].Initial = "Review" },
			"definition review v1: parallel state Open has initial child Review: its regions are all entered"},
		{"one region", func(d *runtime.Definition) {
			d.Composites = d.Composites[:2]
			d.States[3].Parent, d.States[4].Parent, d.States[5].Parent = "Review", "Review", "Review"
			d.Transitions = d.Transitions[1:]
		}, "definition review v1: parallel state Open has 1 region, want at least 2"},
		{"leaf child", func(d *runtime.Definition) { d.States[7].Parent = "Open" },
			"definition review v1: parallel state Open: child Ready is a leaf: the children of a parallel state are its regions, composites"},
		{"parallel inside a region", func(d *runtime.Definition) {
			d.Composites = append(d.Composites,
				runtime.CompositeSpec{Name: "Inner", Parent: "Checks", Parallel: true},
				runtime.CompositeSpec{Name: "X", Parent: "Inner", Initial: "X1"}, runtime.CompositeSpec{Name: "Y", Parent: "Inner", Initial: "Y1"})
			d.States = append(d.States, runtime.StateSpec{Name: "X1", Parent: "X"}, runtime.StateSpec{Name: "Y1", Parent: "Y"})
		}, "definition review v1: parallel state Inner is inside parallel state Open: parallel states do not nest"},
		{"history in a region", func(d *runtime.Definition) { d.Composites[1].History = []runtime.HistorySpec{{Name: "H"}} },
			"definition review v1: composite Review: history H: history of, in or above parallel state Open is not supported"},
		{"separator in a name", func(d *runtime.Definition) { d.States[7].Name = "Re|ady"; d.Transitions[5].To = "Re|ady" },
			`definition review v1: state "Re|ady": a name holds no |, which joins the leaves of a configuration`},
		{"row from a region", func(d *runtime.Definition) { d.Transitions[4].From = "Review" },
			"definition review v1: transition from composite state Review: rows are listed from each leaf"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := reviewDef()
			tt.change(&d)
			err := d.Validate()
			if err == nil || err.Error() != tt.want {
				t.Errorf("Validate() = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestParallelRefusal: Allows answers for configurations, and Refusal
// says why a step is not in the table.
func TestParallelRefusal(t *testing.T) {
	t.Parallel()
	d := reviewDef()
	d.Transitions = append(d.Transitions,
		runtime.TransitionSpec{From: "Approved", Event: "Approve", To: "Approved"},
		runtime.TransitionSpec{From: "Passed", Event: "Submit", To: "Pending|Queued"})
	tests := []struct {
		from, event, to string
		want            string
	}{
		{"DRAFT", "Submit", "Pending|Queued", ""},                 // entering whole
		{"Pending|Queued", "Approve", "Approved|Queued", ""},      // one region moves
		{"Pending|Queued", "CheckStarted", "Pending|Running", ""}, // the other
		{"Approved|Passed", "Merge", "Merged", ""},                // a row on the parallel state
		{"Approved|Passed", "Submit", "Pending|Queued", ""},       // a leaf's row leaving and entering again
		{"Approved|Queued", "Approve", "Approved|Queued", ""},     // a leaf's row to itself
		{"DRAFT", "Approve", "Approved", `no row DRAFT -> Approved on "Approve"`},
		{"DRAFT", "Submit", "Approved|Queued", `no row DRAFT -> Approved|Queued on "Submit"`},
		{"Pending|Queued", "Approve", "Approved|Running", `region Checks of Open: no row Queued -> Running on "Approve"`},
		{"Pending|Queued", "Approve", "Pending|Queued", `no row on "Approve" from a leaf of Open to itself`},
		{"Pending|Queued", "Approve", "Ready", `no row from Open or its leaves to Ready on "Approve"`},
		{"Pending|Queued", "Approve", "Running|Queued", "Running|Queued is not a configuration of Open: leaf 1, Running, is not in region Review"},
		{"Pending|Nope", "Approve", "Approved|Nope", "Pending|Nope is not a configuration of Open: unknown leaf Nope"},
		{"Pending|Queued", "Approve", "Approved|Queued|Passed", "Approved|Queued|Passed is not a configuration of Open: 3 leaves for 2 regions"},
		{"DRAFT|Ready", "Merge", "Merged", "DRAFT|Ready is not a configuration: DRAFT is in no parallel state"},
	}
	for _, tt := range tests {
		if got := d.Refusal(tt.from, tt.event, tt.to); got != tt.want {
			t.Errorf("Refusal(%s, %s, %s) = %q, want %q", tt.from, tt.event, tt.to, got, tt.want)
		}
		if got := d.Allows(tt.from, tt.event, tt.to); got != (tt.want == "") {
			t.Errorf("Allows(%s, %s, %s) = %t, want %t", tt.from, tt.event, tt.to, got, tt.want == "")
		}
	}
}

// TestParallelStep: Step offers an event to each region in region order
// and makes one transition of their rows; rows on the parallel state
// apply when no region took it; Accepts and Sources see the rows of a
// configuration's leaves and of its parallel state.
func TestParallelStep(t *testing.T) {
	t.Parallel()
	d := reviewDef()
	first := func(_ string, rows []runtime.TransitionSpec) (runtime.TransitionSpec, bool, error) {
		return rows[0], true, nil
	}
	tests := []struct {
		state, event string
		want         runtime.Transition
	}{
		{"Pending|Queued", "Approve", runtime.Transition{From: "Pending|Queued", To: "Approved|Queued", Exited: []string{"Pending"}, Entered: []string{"Approved"}}},
		{"Approved|Running", "Merge", runtime.Transition{From: "Approved|Running", To: "Merged", Status: runtime.StatusSucceeded,
			Exited: []string{"Approved", "Review", "Running", "Checks", "Open"}}},
		{"DRAFT", "Submit", runtime.Transition{From: "DRAFT", To: "Pending|Queued", Exited: []string{"DRAFT"}, Entered: []string{"Open", "Review", "Pending", "Checks", "Queued"}}},
	}
	for _, tt := range tests {
		got, ok, err := d.Step(tt.state, tt.event, first)
		tt.want.Machine, tt.want.Version, tt.want.Event = "review", 1, tt.event
		if tt.want.Status == "" {
			tt.want.Status = runtime.StatusRunning
		}
		if diff := cmp.Diff(tt.want, got); !ok || err != nil || diff != "" {
			t.Errorf("Step(%s, %s) %t %v (-want +got):\n%s", tt.state, tt.event, ok, err, diff)
		}
	}
	if _, ok, err := d.Step("Approved|Passed", "Approve", first); ok || err != nil {
		t.Errorf("Step on an event no region takes: %t %v", ok, err)
	}
	if diff := cmp.Diff([]string{"Approved", "Queued", "Review", "Open"}, d.Sources("Approved|Queued")); diff != "" {
		t.Errorf("Sources (-want +got):\n%s", diff)
	}
	if !d.Accepts("Approved|Queued", "Merge") || !d.Accepts("Approved|Queued", "CheckStarted") || d.Accepts("Approved|Queued", "Approve") {
		t.Error("Accepts: want Merge and CheckStarted, not Approve")
	}
}

// startInOpen is reviewDef starting in Open, at Pending|Queued, with
// entry actions on Open, its regions and their initial leaves.
func startInOpen() runtime.Definition {
	d := reviewDef()
	d.Initial = "Pending|Queued"
	d.States[0].Initial, d.States[1].Initial = false, true
	d.Actions = []string{"OpenA", "ReviewA", "PendingA", "ChecksA", "QueuedA"}
	d.Composites[0].Entry, d.Composites[1].Entry, d.Composites[2].Entry = []string{"OpenA"}, []string{"ReviewA"}, []string{"ChecksA"}
	d.States[1].Entry, d.States[3].Entry = []string{"PendingA"}, []string{"QueuedA"}
	return d
}

// TestStartInParallel: a run may start in a configuration, whose start
// actions are the parallel state's, then each region's down to its leaf.
func TestStartInParallel(t *testing.T) {
	t.Parallel()
	d := startInOpen()
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"OpenA", "ReviewA", "PendingA", "ChecksA", "QueuedA"}, d.StartActions()); diff != "" {
		t.Errorf("StartActions (-want +got):\n%s", diff)
	}
	for _, c := range []struct {
		initial, want string
	}{
		{"Queued|Pending", "definition review v1: initial state: Queued|Pending is not a configuration of Open: leaf 1, Queued, is not in region Review"},
		{"Pending|Running", "definition review v1: initial state Running is not the initial leaf of Checks"},
	} {
		d := startInOpen()
		d.Initial = c.initial
		if c.initial[0] == 'Q' {
			d.States[1].Initial, d.States[3].Initial = false, true
		}
		if err := d.Validate(); err == nil || err.Error() != c.want {
			t.Errorf("Validate with Initial %s = %v, want %q", c.initial, err, c.want)
		}
	}
}

// TestParallelStepAbove: a row written above the parallel state, on a
// composite that contains it, exits every region, the parallel state and
// then the composites the row leaves above it; one written internal stays
// in the configuration and exits nothing.
func TestParallelStepAbove(t *testing.T) {
	t.Parallel()
	d := reviewDef()
	d.Composites[0].Parent = "Live"
	d.Composites = append(d.Composites, runtime.CompositeSpec{Name: "Live", Initial: "Open"})
	d.Events = append(d.Events, runtime.EventSpec{Name: "Close"}, runtime.EventSpec{Name: "Ping"})
	d.Transitions = append(d.Transitions,
		runtime.TransitionSpec{From: "Open", Event: "Close", To: "Merged", Exit: []string{"Open", "Live"}, Enter: []string{"Merged"}},
		runtime.TransitionSpec{From: "Open", Event: "Ping", To: "Open", Internal: true})
	first := func(_ string, rows []runtime.TransitionSpec) (runtime.TransitionSpec, bool, error) {
		return rows[0], true, nil
	}
	for _, want := range []runtime.Transition{
		{Event: "Close", To: "Merged", Status: runtime.StatusSucceeded,
			Exited: []string{"Approved", "Review", "Running", "Checks", "Open", "Live"}, Entered: []string{"Merged"}},
		{Event: "Ping", To: "Approved|Running", Status: runtime.StatusRunning},
	} {
		got, ok, err := d.Step("Approved|Running", want.Event, first)
		want.Machine, want.Version, want.From = "review", 1, "Approved|Running"
		if diff := cmp.Diff(want, got); !ok || err != nil || diff != "" {
			t.Errorf("Step(Approved|Running, %s) %t %v (-want +got):\n%s", want.Event, ok, err, diff)
		}
	}
}

// TestParallelStepForeignRow: choose must return one of the rows it is
// given.
func TestParallelStepForeignRow(t *testing.T) {
	t.Parallel()
	d := reviewDef()
	_, ok, err := d.Step("Pending|Queued", "Approve", func(_ string, rows []runtime.TransitionSpec) (runtime.TransitionSpec, bool, error) {
		r := rows[0]
		r.To = "Ready"
		return r, true, nil
	})
	if want := `row Pending -> Ready on "Approve" is not one of the rows of Pending on it`; ok || err == nil || err.Error() != want {
		t.Errorf("Step with a row not offered: %t %v, want %q", ok, err, want)
	}
}
