package admin_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/admin"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// review is a machine with a parallel state, its table flattened as a
// generator lists it:
//
//	initial DRAFT wait
//	state Open parallel {
//	    state Review { initial Pending wait; state Approved wait }
//	    state Checks { initial Queued wait; state Running wait }
//	}
//	final Merged succeeded
//	final Closed cancelled
//
//	DRAFT -> Open on Submit
//	Pending -> Approved on Go, Approve
//	Queued -> Running on Go
//	Running -> Queued on Retry when Flaky
//	Running -> Running on Retry
//	Open -> Merged on Merge
//	DRAFT, Open -> Closed on Cancel
var review = func() runtime.Definition {
	leaf := func(name, parent string) runtime.StateSpec {
		return runtime.StateSpec{Name: name, Status: runtime.StatusRunning, Wait: true, Parent: parent}
	}
	move := func(from, event, to string) runtime.TransitionSpec {
		return runtime.TransitionSpec{From: from, Event: event, To: to, Exit: []string{from}, Enter: []string{to}}
	}
	d := runtime.Definition{
		Machine: "Review", Type: "review", Version: 1, Initial: "DRAFT", Cancel: "Cancel",
		States: []runtime.StateSpec{
			{Name: "DRAFT", Initial: true, Status: runtime.StatusRunning, Wait: true},
			leaf("Pending", "Review"), leaf("Approved", "Review"), leaf("Queued", "Checks"), leaf("Running", "Checks"),
			{Name: "Merged", Status: runtime.StatusSucceeded}, {Name: "Closed", Status: runtime.StatusCancelled},
		},
		Composites: []runtime.CompositeSpec{
			{Name: "Open", Parallel: true},
			{Name: "Review", Parent: "Open", Initial: "Pending"},
			{Name: "Checks", Parent: "Open", Initial: "Queued"},
		},
		Events: []runtime.EventSpec{{Name: "Submit"}, {Name: "Go"}, {Name: "Approve"}, {Name: "Retry"}, {Name: "Merge"}, {Name: "Cancel"}},
		Guards: []string{"Flaky"},
	}
	flaky := move("Running", "Retry", "Queued")
	flaky.Guard = "Flaky"
	d.Transitions = []runtime.TransitionSpec{
		{From: "DRAFT", Event: "Submit", To: "Pending|Queued", Exit: []string{"DRAFT"}, Enter: []string{"Open", "Review", "Pending", "Checks", "Queued"}},
		move("Pending", "Go", "Approved"), move("Pending", "Approve", "Approved"), move("Queued", "Go", "Running"),
		flaky, move("Running", "Retry", "Running"),
		{From: "Open", Event: "Merge", To: "Merged", Enter: []string{"Merged"}},
		{From: "DRAFT", Event: "Cancel", To: "Closed"},
		{From: "Open", Event: "Cancel", To: "Closed", Enter: []string{"Closed"}},
	}
	return d
}()

// startReview registers review and starts a run of it.
func startReview(t *testing.T, key string) (*admin.Admin, *store.Store, string) {
	t.Helper()
	ctx := context.Background()
	st := store.New(pgtest.NewPool(t))
	if err := st.Register(ctx, review); err != nil {
		t.Fatal(err)
	}
	res, err := st.Start(ctx, runtime.StartRequest{Type: "review", Version: 1, IdempotencyKey: key, Owner: runtime.Owner{TenantID: "t"}})
	if err != nil {
		t.Fatal(err)
	}
	return admin.New(st), st, res.Run.ID
}

// TestSignalConfiguration: an operator's events move a run into, inside
// and out of a parallel state, each as one transition naming what it
// exits and enters: an event two regions take moves both.
func TestSignalConfiguration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, st, id := startReview(t, "k")
	for _, sig := range []struct{ event, to, want string }{
		{"Submit", "", "Pending|Queued"},
		{"Go", "", "Approved|Running"},
		{"Retry", "Queued", "Approved|Queued"},
		{"Merge", "", "Merged"},
	} {
		run, err := a.Signal(ctx, id, sig.event, nil, admin.SignalOptions{To: sig.to})
		if err != nil {
			t.Fatalf("Signal(%s): %v", sig.event, err)
		}
		if run.State != sig.want {
			t.Fatalf("after %s: %s, want %s", sig.event, run.State, sig.want)
		}
	}
	h, err := st.History(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range h {
		if s.Kind == store.KindTransition {
			got = append(got, fmt.Sprintf("%s %s->%s exited %v entered %v", s.Event, s.From, s.To, s.Exited, s.Entered))
		}
	}
	want := []string{
		"Submit DRAFT->Pending|Queued exited [DRAFT] entered [Open Review Pending Checks Queued]",
		"Go Pending|Queued->Approved|Running exited [Pending Queued] entered [Approved Running]",
		"Retry Approved|Running->Approved|Queued exited [Running] entered [Queued]",
		"Merge Approved|Queued->Merged exited [Approved Review Queued Checks Open] entered [Merged]",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("transitions (-want +got):\n%s", diff)
	}
}

// TestSignalConfigurationRefused: in a configuration, an event no region
// and not the parallel state take, a region's guarded rows without a
// target, and a target the step does not reach are refused, the run
// unmoved; Cancel leaves the parallel state along its row.
func TestSignalConfigurationRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, _, id := startReview(t, "k")
	for _, ev := range []string{"Submit", "Go"} {
		if _, err := a.Signal(ctx, id, ev, nil, admin.SignalOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		event, to string
		want      error
		msg       string
	}{
		{"Approve", "", admin.ErrNoTransition,
			"state Approved|Running of review v1 has no transition on Approve (it accepts Retry, Merge, Cancel)"},
		{"Retry", "", admin.ErrGuarded,
			"state Running of review v1 decides Retry by guards, which only the machine's Go code evaluates (-> Queued [Flaky], -> Running): name the target state to fire its row without its guard"},
		{"Retry", "Merged", admin.ErrNoTransition,
			"state Approved|Running of review v1 has no transition to Merged on Retry (it accepts Retry, Merge, Cancel)"},
	} {
		_, err := a.Signal(ctx, id, tt.event, nil, admin.SignalOptions{To: tt.to})
		want := fmt.Sprintf("admin: signal %s run %s: %s: %s", tt.event, id, tt.want, tt.msg)
		if !errors.Is(err, tt.want) || err.Error() != want {
			t.Errorf("Signal(%s, to %q) = %v, want %s", tt.event, tt.to, err, want)
		}
	}
	run, err := a.Cancel(ctx, id, admin.SignalOptions{Reason: "abandoned"})
	if err != nil {
		t.Fatal(err)
	}
	if run.State != "Closed" || run.Status != runtime.StatusCancelled {
		t.Errorf("after Cancel: %s %s, want Closed cancelled", run.State, run.Status)
	}
}

// TestTerminateConfiguration: a run in a configuration of a parallel
// state is terminated in it, and stays there.
func TestTerminateConfiguration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, st, id := startReview(t, "k")
	if _, err := a.Signal(ctx, id, "Submit", nil, admin.SignalOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := a.Terminate(ctx, id, admin.TerminateOptions{Reason: "abandoned", By: "oncall"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Run.State != "Pending|Queued" || got.Run.Status != runtime.StatusCancelled {
		t.Errorf("terminated run in %s, %s; want Pending|Queued, cancelled", got.Run.State, got.Run.Status)
	}
	if _, err := a.Signal(ctx, id, "Go", nil, admin.SignalOptions{}); !errors.Is(err, runtime.ErrRunFinished) {
		t.Errorf("Signal after the terminate: %v, want ErrRunFinished", err)
	}
	if err := pgtest.CheckInvariants(ctx, st.Pool()); err != nil {
		t.Error(err)
	}
}
