package changing_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	rog "github.com/fsmgen/fsmgen/machines/problems/changing/retrieveorgenerate"
	rogv1 "github.com/fsmgen/fsmgen/machines/problems/changing/retrieveorgeneratev1"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

type admitV1 struct{}

func (admitV1) IdempotencyCheckPassed(context.Context, rogv1.Start) bool      { return true }
func (admitV1) SignatureComputed(context.Context, rogv1.MediaNormalized) bool { return true }
func (admitV1) AtOrAboveThreshold(context.Context, rogv1.RetrievalHit) bool   { return true }
func (admitV1) BelowThreshold(context.Context, rogv1.RetrievalMiss) bool      { return true }
func (admitV1) HTMLAvailable(context.Context, rogv1.SolveSucceeded) bool      { return true }
func (admitV1) NearMissAvailable(context.Context, rogv1.SolveFailed) bool     { return false }
func (admitV1) AssetsPersisted(context.Context, rogv1.AssetsRegistered) bool  { return true }
func (admitV1) UserOwnsRun(context.Context, rogv1.Cancel) bool                { return true }

type admitV2 struct{}

func (admitV2) IdempotencyCheckPassed(context.Context, rog.Start) bool      { return true }
func (admitV2) SignatureComputed(context.Context, rog.MediaNormalized) bool { return true }
func (admitV2) AtOrAboveThreshold(context.Context, rog.RetrievalHit) bool   { return true }
func (admitV2) BelowThreshold(context.Context, rog.RetrievalMiss) bool      { return true }
func (admitV2) HTMLAvailable(context.Context, rog.SolveSucceeded) bool      { return true }
func (admitV2) NearMissAvailable(context.Context, rog.SolveFailed) bool     { return false }
func (admitV2) AssetsPersisted(context.Context, rog.AssetsRegistered) bool  { return true }
func (admitV2) UserOwnsRun(context.Context, rog.Cancel) bool                { return true }

// v1Path and v2Path are the events that take a run from its initial state
// to SUCCEEDED with a new solution, on each version.
var v1Path = []rogv1.Event{
	rogv1.Start{},
	rogv1.MediaNormalized{ProblemSignature: "sig"},
	rogv1.RetrievalMiss{BestConfidence: 0.2},
	rogv1.SolveSucceeded{StorageKey: "k"},
	rogv1.AssetsRegistered{AssetVersionID: "av"},
	rogv1.DocumentIndexed{AssetVersionID: "av"},
}

var v2Path = map[rog.State][]rog.Event{}

func init() {
	rest := []rog.Event{
		rog.Start{},
		rog.MediaNormalized{ProblemSignature: "sig", Language: "en"},
		rog.RetrievalMiss{BestConfidence: 0.2},
		rog.SolveSucceeded{StorageKey: "k"},
		rog.AssetsRegistered{AssetVersionID: "av"},
		rog.Embedded{AssetVersionID: "av", Model: "m"},
		rog.DocumentIndexed{AssetVersionID: "av"},
	}
	for i, s := range []rog.State{rog.StateInitiated, rog.StateIngesting, rog.StateRetrieving, rog.StateGeneratingSolution, rog.StateRegistering, rog.StateEmbedding, rog.StateIndexing} {
		v2Path[s] = rest[i:]
	}
}

// TestChangingRetrieveOrGenerate is the README's "Changing a machine": runs
// of version 1 in every state, version 2 deployed beside it, the plan,
// the upgrade, every run finished on version 2, version 1 drained.
func TestChangingRetrieveOrGenerate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	st := store.New(pool)
	if err := st.Register(ctx, rogv1.Definition()); err != nil {
		t.Fatal(err)
	}
	// One v1 run per state: run i has fired the first i events.
	var ids []string
	for i := range len(v1Path) + 1 {
		res, err := st.Start(ctx, runtime.StartRequest{Type: rogv1.Type, Version: rogv1.Version, IdempotencyKey: string(rune('a' + i)), Owner: runtime.Owner{TenantID: "acme"}})
		if err != nil {
			t.Fatal(err)
		}
		run, rec, err := st.Load(ctx, res.Run.ID, rogv1.Definition())
		if err != nil {
			t.Fatal(err)
		}
		s, err := rogv1.ParseState(run.State)
		if err != nil {
			t.Fatal(err)
		}
		m := rogv1.New(admitV1{}, rogv1.WithState(s), rogv1.WithRecorder(rec))
		for _, ev := range v1Path[:i] {
			if err := m.Fire(ctx, ev); err != nil {
				t.Fatal(err)
			}
		}
		ids = append(ids, res.Run.ID)
	}

	// Version 2 is deployed: its definition and its upgrade from 1.
	def := rog.Definition()
	if err := st.Register(ctx, def); err != nil {
		t.Fatal(err)
	}
	if err := st.RegisterUpgrade(ctx, def.Upgrades[0]); err != nil {
		t.Fatal(err)
	}
	plan, err := st.PlanUpgrade(ctx, rog.Type, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range plan.Moves {
		got = append(got, store.DescribeRule(m.Rule)+": "+string(rune('0'+m.Runs)))
	}
	want := []string{
		"INITIATED -> INITIATED: 1", "INGESTING -> INGESTING: 1", "RETRIEVING -> RETRIEVING: 1",
		"GENERATING_SOLUTION -> GENERATING_SOLUTION: 1", "REGISTERING -> REGISTERING: 1", "INDEXING -> EMBEDDING: 1",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("plan (-want +got):\n%s", diff)
	}
	if plan.Live != 6 || plan.Movable() != 6 || len(plan.Stuck) != 0 {
		t.Errorf("plan: %d live, %d movable, stuck %v; want 6, 6, none", plan.Live, plan.Movable(), plan.Stuck)
	}
	rep, err := st.Upgrade(ctx, rog.Type, 1, 2, store.UpgradeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(store.UpgradeReport{Moved: 6}, rep); diff != "" {
		t.Errorf("upgrade (-want +got):\n%s", diff)
	}

	// Every upgraded run finishes on version 2, through EMBEDDING.
	for _, id := range ids[:6] {
		run, rec, err := st.Load(ctx, id, def)
		if err != nil {
			t.Fatal(err)
		}
		s, err := rog.ParseState(run.State)
		if err != nil {
			t.Fatal(err)
		}
		m := rog.New(admitV2{}, rog.WithState(s), rog.WithRecorder(rec))
		for _, ev := range v2Path[s] {
			if err := m.Fire(ctx, ev); err != nil {
				t.Fatalf("run in %s: %v", s, err)
			}
		}
		if m.State() != rog.StateSucceeded {
			t.Errorf("run %s ended in %s", id, m.State())
		}
	}
	if err := pgtest.CheckInvariants(ctx, pool); err != nil {
		t.Fatal(err)
	}
	vs, err := st.Versions(ctx, rog.Type)
	if err != nil {
		t.Fatal(err)
	}
	type left struct{ Version, Live, Finished int64 }
	var have []left
	for _, v := range vs {
		have = append(have, left{int64(v.Version), v.Live, v.Finished})
	}
	if diff := cmp.Diff([]left{{1, 0, 1}, {2, 0, 6}}, have); diff != "" {
		t.Errorf("versions (-want +got):\n%s", diff)
	}
}
