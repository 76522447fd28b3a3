package problems_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	rog "github.com/fsmgen/fsmgen/machines/problems/retrieveorgenerate"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// admitAll is a Guards that admits every event.
type admitAll struct{}

func (admitAll) IdempotencyCheckPassed(context.Context, rog.Start) bool      { return true }
func (admitAll) SignatureComputed(context.Context, rog.MediaNormalized) bool { return true }
func (admitAll) AtOrAboveThreshold(context.Context, rog.RetrievalHit) bool   { return true }
func (admitAll) BelowThreshold(context.Context, rog.RetrievalMiss) bool      { return true }
func (admitAll) HTMLAvailable(context.Context, rog.SolveSucceeded) bool      { return true }
func (admitAll) NearMissAvailable(context.Context, rog.SolveFailed) bool     { return true }
func (admitAll) AssetsPersisted(context.Context, rog.AssetsRegistered) bool  { return true }
func (admitAll) UserOwnsRun(context.Context, rog.Cancel) bool                { return true }

// load rebuilds the generated machine of a stored run, bound to its recorder.
func load(t *testing.T, st *store.Store, id string) *rog.Machine {
	t.Helper()
	run, rec, err := st.Load(context.Background(), id, rog.Definition())
	if err != nil {
		t.Fatal(err)
	}
	state, err := rog.ParseState(run.State)
	if err != nil {
		t.Fatal(err)
	}
	return rog.New(admitAll{}, rog.WithState(state), rog.WithRecorder(rec))
}

// TestGeneratedMachinesOnTheStore binds generated machines to the Postgres
// store: machines loaded from the same run fire, exactly one transition
// lands, another transition gets the conflict error with its state
// unchanged, and the same transition again is recognised as applied; a
// machine loaded again (as after a restart) resumes where the
// log says, and a machine that holds a state the table forbids cannot be
// written through.
func TestGeneratedMachinesOnTheStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := store.New(pgtest.NewPool(t))
	if err := st.Register(ctx, rog.Definition()); err != nil {
		t.Fatal(err)
	}
	res, err := st.Start(ctx, runtime.StartRequest{Type: rog.Type, Version: rog.Version, IdempotencyKey: "k-1", Owner: runtime.Owner{TenantID: "acme"}})
	if err != nil {
		t.Fatal(err)
	}
	id := res.Run.ID

	a, b, same := load(t, st, id), load(t, st, id), load(t, st, id)
	if err := a.Start(ctx, rog.Start{}); err != nil {
		t.Fatalf("first machine: %v", err)
	}
	// Another transition from the same read loses.
	err = b.Cancel(ctx, rog.Cancel{UserID: "u-1"})
	if !errors.Is(err, runtime.ErrConflict) {
		t.Fatalf("second machine: error %v, want runtime.ErrConflict", err)
	}
	if got := b.State(); got != rog.StateInitiated {
		t.Errorf("the losing machine moved to %s", got)
	}
	// The very same transition from the same read (as when a commit's
	// acknowledgement was lost and the call is made again) is recognised as
	// applied: no second log row, and the machine agrees with the database.
	if err := same.Start(ctx, rog.Start{}); err != nil {
		t.Fatalf("repeated transition: %v", err)
	}
	if got := same.State(); got != rog.StateIngesting {
		t.Errorf("after the repeated transition the machine is in %s", got)
	}

	// After a restart the run is loaded again and goes on from INGESTING.
	c := load(t, st, id)
	if got := c.State(); got != rog.StateIngesting {
		t.Fatalf("reloaded machine in %s, want INGESTING", got)
	}
	if err := c.MediaNormalized(ctx, rog.MediaNormalized{ProblemSignature: "sig"}); err != nil {
		t.Fatal(err)
	}
	// A machine built in a state the run is not in writes nothing: the
	// database holds the run where its log says.
	stale := rog.New(admitAll{}, rog.WithState(rog.StateIndexing), rog.WithRecorder(func() runtime.Recorder {
		_, rec, err := st.Load(ctx, id, rog.Definition())
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}()))
	if err := stale.DocumentIndexed(ctx, rog.DocumentIndexed{}); err == nil {
		t.Fatal("a transition from a state the run is not in was recorded")
	}

	history, err := st.History(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var moves [][3]string
	for _, h := range history {
		if h.Kind == store.KindTransition {
			moves = append(moves, [3]string{h.From, h.To, h.Event})
		}
	}
	want := [][3]string{
		{"INITIATED", "INGESTING", "Start"},
		{"INGESTING", "RETRIEVING", "MediaNormalized"},
	}
	if diff := cmp.Diff(want, moves); diff != "" {
		t.Errorf("transitions in the log (-want +got):\n%s", diff)
	}
}
