package shipping_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/machines/shipping"
	"github.com/fsmgen/fsmgen/machines/shipping/shipment"
	"github.com/fsmgen/fsmgen/machines/shipping/shipmentv1"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
	"github.com/fsmgen/fsmgen/runtime/enginetest"
	"github.com/fsmgen/fsmgen/runtime/fsmtest"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const owner = "00000000-0000-4000-8000-00000000a11c"

type env struct {
	ctx   context.Context
	pool  *pgxpool.Pool
	clock *fsmtest.Clock
	st    *store.Store
	eng   *engine.Engine
}

func newEnv(t *testing.T) *env {
	t.Helper()
	pool := pgtest.NewPool(t)
	c := fsmtest.NewClock(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	st := store.New(pool, store.WithClock(c.Now))
	eng, err := engine.New(st, engine.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), BatchSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	return &env{ctx: context.Background(), pool: pool, clock: c, st: st, eng: eng}
}

func (v *env) start(t *testing.T, key string, o shipping.Order) runtime.Run {
	t.Helper()
	res, err := v.eng.Start(v.ctx, runtime.StartRequest{Type: shipment.Type, IdempotencyKey: key, Owner: runtime.Owner{TenantID: "t", UserID: owner}, Input: o})
	if err != nil {
		t.Fatal(err)
	}
	return res.Run
}

// signal fires evs on run id: a caller's event with Signal, a driven
// state's event, which callers may not send, through the store as the
// state's handler would, to put the run in the state a test needs.
func (v *env) signal(t *testing.T, id string, evs ...runtime.Event) runtime.Run {
	t.Helper()
	var run runtime.Run
	for _, ev := range evs {
		run = v.get(t, id)
		d := shipping.DriverV1()
		if run.Version == 2 {
			d = shipping.DriverV2()
		}
		def := d.Definition()
		var err error
		if def.CallerRefusal(run.State, ev.EventName()) == "" {
			run, err = v.eng.Signal(v.ctx, id, ev)
		} else {
			var rec *store.Recorder
			if run, rec, err = v.st.Load(v.ctx, id, def); err == nil {
				rt := run
				err = d.Fire(v.ctx, &rt, run.State, ev, rec)
				run = v.get(t, id)
			}
		}
		if err != nil {
			t.Fatalf("signal %s: %v", ev.EventName(), err)
		}
	}
	return run
}

func (v *env) get(t *testing.T, id string) runtime.Run {
	t.Helper()
	run, err := v.st.Get(v.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// runDue drives every due run until none is left.
func (v *env) runDue(t *testing.T) {
	t.Helper()
	for {
		n, err := v.eng.RunDue(v.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
	}
}

// changes lists the state changes of a run's log as "kind event from->to vN".
func (v *env) changes(t *testing.T, id string) []string {
	t.Helper()
	steps, err := v.st.History(v.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range steps {
		if s.Kind == store.KindStep {
			continue
		}
		out = append(out, string(s.Kind)+" "+s.Name+" "+s.From+"->"+s.To+" v"+itoa(s.Version))
	}
	return out
}

func itoa(n int) string { return json.Number(json.RawMessage(mustJSON(n))).String() }

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// live is the set of version 1 runs the test upgrades, one per state of
// version 1 that a run can be in, plus the forms a run takes there.
type live struct {
	created, retrying, leased, labeling, returned, held, awaiting, finished runtime.Run
}

// setUp starts runs on version 1 only, as the release before the change
// did, and brings one into each state.
func setUp(t *testing.T, v *env) live {
	t.Helper()
	if err := v.eng.Register(v.ctx, shipping.DriverV1()); err != nil {
		t.Fatal(err)
	}
	var l live
	// Retrying: its first packing try failed, the next is due in 1s.
	l.retrying = v.start(t, "retrying", shipping.Order{Parcels: 1, PackFailures: 1})
	v.runDue(t)
	l.retrying = v.get(t, l.retrying.ID)
	if l.retrying.State != "PACKING" || l.retrying.StepAttempt != 2 {
		t.Fatalf("retrying run: %s, try %d; want PACKING, try 2", l.retrying.State, l.retrying.StepAttempt)
	}
	l.created = v.start(t, "created", shipping.Order{Parcels: 1})
	l.leased = v.start(t, "leased", shipping.Order{Parcels: 2})
	v.signal(t, l.leased.ID, shipmentv1.Start{})
	var err error
	if l.leased, err = enginestest(v, l.leased.ID); err != nil {
		t.Fatal(err)
	}
	l.labeling = v.start(t, "labeling", shipping.Order{Parcels: 3})
	l.labeling = v.signal(t, l.labeling.ID, shipmentv1.Start{}, shipmentv1.Packed{Parcels: 3})
	l.returned = v.start(t, "returned", shipping.Order{Parcels: 4})
	l.returned = v.signal(t, l.returned.ID, shipmentv1.Start{}, shipmentv1.Packed{Parcels: 4},
		shipmentv1.Labeled{Carrier: "ups"}, shipmentv1.Returned{})
	l.held = v.start(t, "held", shipping.Order{Parcels: 5, Hold: true})
	l.held = v.signal(t, l.held.ID, shipmentv1.Start{}, shipmentv1.Packed{Parcels: 5}, shipmentv1.Held{})
	l.awaiting = v.start(t, "awaiting", shipping.Order{Parcels: 6})
	l.awaiting = v.signal(t, l.awaiting.ID, shipmentv1.Start{}, shipmentv1.Packed{Parcels: 6}, shipmentv1.Labeled{Carrier: "ups"})
	l.finished = v.start(t, "finished", shipping.Order{Parcels: 7})
	l.finished = v.signal(t, l.finished.ID, shipmentv1.Start{}, shipmentv1.Packed{Parcels: 7}, shipmentv1.Labeled{Carrier: "ups"}, shipmentv1.Delivered{})
	for _, r := range []runtime.Run{l.created, l.labeling, l.returned, l.held, l.awaiting} {
		l := v.get(t, r.ID)
		if l.Version != 1 || l.Lease.Owner != "" {
			t.Fatalf("run %s: v%d leased by %q", l.IdempotencyKey, l.Version, l.Lease.Owner)
		}
	}
	return l
}

// enginestest leases a run as a worker that died right after claiming it.
func enginestest(v *env, id string) (runtime.Run, error) {
	return enginetest.AbandonClaim(v.ctx, v.st, "dead-worker", id, time.Hour)
}

func describePlan(p store.UpgradePlan) ([]string, []string) {
	var moves, stuck []string
	for _, m := range p.Moves {
		moves = append(moves, store.DescribeRule(m.Rule)+": "+itoa(m.Runs)+" runs, "+itoa(m.Leased)+" leased")
	}
	for _, s := range p.Stuck {
		stuck = append(stuck, s.State+": "+s.Reason)
	}
	sort.Strings(stuck)
	return moves, stuck
}

// TestUpgradeLiveRunsInEveryState is the whole change: runs of version 1
// in every state, planned, upgraded (the leased one once its lease is
// gone), checked against the invariants, and finished on version 2, while
// the held run drains on version 1 and a new run starts on version 2.
func TestUpgradeLiveRunsInEveryState(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	l := setUp(t, v)

	// The new release registers both versions: the upgrade comes with v2.
	if err := shipping.Register(v.ctx, v.eng); err != nil {
		t.Fatal(err)
	}
	fresh := v.start(t, "fresh", shipping.Order{Parcels: 9, Grams: 250})
	if fresh.Version != 2 {
		t.Fatalf("a new run starts on v%d, want v2", fresh.Version)
	}

	plan, err := v.st.PlanUpgrade(v.ctx, shipment.Type, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	moves, stuck := describePlan(plan)
	wantMoves := []string{
		"CREATED -> CREATED: 1 runs, 0 leased",
		"PACKING -> PACKING: 2 runs, 1 leased",
		"LABELING -> LABELING when Returned: 1 runs, 0 leased",
		"LABELING -> WEIGHING: 1 runs, 0 leased",
		"HELD drain: 1 runs, 0 leased",
		"AWAITING -> AWAITING timers keep: 1 runs, 0 leased",
	}
	if diff := cmp.Diff(wantMoves, moves); diff != "" {
		t.Errorf("plan's moves (-want +got):\n%s", diff)
	}
	wantStuck := []string{
		`HELD: "HELD drain": it finishes on v1`,
		"PACKING: leased by dead-worker until 2026-05-01T13:00:00.000Z: it moves once the lease is given up",
	}
	if diff := cmp.Diff(wantStuck, stuck); diff != "" {
		t.Errorf("plan's stuck runs (-want +got):\n%s", diff)
	}
	if plan.Live != 7 || plan.Movable() != 5 {
		t.Errorf("plan: %d live, %d movable; want 7 and 5", plan.Live, plan.Movable())
	}

	rep, err := v.st.Upgrade(v.ctx, shipment.Type, 1, 2, store.UpgradeOptions{BatchSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(store.UpgradeReport{Moved: plan.Movable(), Leased: 1, Drained: 1}, rep); diff != "" {
		t.Errorf("first pass (-want +got):\n%s", diff)
	}
	// The dead worker's lease runs out; the next pass moves its run.
	v.clock.Advance(time.Hour + time.Second)
	rep, err = v.st.Upgrade(v.ctx, shipment.Type, 1, 2, store.UpgradeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(store.UpgradeReport{Moved: 1, Drained: 1}, rep); diff != "" {
		t.Errorf("second pass (-want +got):\n%s", diff)
	}
	// Again: nothing left to move, nothing moved twice.
	rep, err = v.st.Upgrade(v.ctx, shipment.Type, 1, 2, store.UpgradeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(store.UpgradeReport{Drained: 1}, rep); diff != "" {
		t.Errorf("third pass (-want +got):\n%s", diff)
	}
	if err := pgtest.CheckInvariants(v.ctx, v.pool); err != nil {
		t.Fatal(err)
	}

	type where struct {
		State   string
		Version int
		Attempt int
	}
	got := map[string]where{}
	for _, r := range []runtime.Run{l.created, l.retrying, l.leased, l.labeling, l.returned, l.held, l.awaiting, l.finished} {
		r2 := v.get(t, r.ID)
		got[r.IdempotencyKey] = where{r2.State, r2.Version, r2.StepAttempt}
	}
	want := map[string]where{
		"created":  {"CREATED", 2, 1},
		"retrying": {"PACKING", 2, 2}, // the retry under way goes on
		"leased":   {"PACKING", 2, 1},
		"labeling": {"WEIGHING", 2, 1},
		"returned": {"LABELING", 2, 1},
		"held":     {"HELD", 1, 1},
		"awaiting": {"AWAITING", 2, 1},
		"finished": {"DELIVERED", 1, 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("runs after the upgrade (-want +got):\n%s", diff)
	}
	// The timer of the awaiting run counts from its entry into AWAITING
	// (timers keep), with version 2's three days.
	aw := v.get(t, l.awaiting.ID)
	if want := l.awaiting.UpdatedAt.Add(72 * time.Hour); !aw.NextRunAt.Equal(want) || !aw.UpdatedAt.Equal(l.awaiting.UpdatedAt) {
		t.Errorf("awaiting run: due %v, entered %v; want due %v, entered %v", aw.NextRunAt, aw.UpdatedAt, want, l.awaiting.UpdatedAt)
	}
	if diff := cmp.Diff([]string{
		"created start ->CREATED v1",
		"transition Start CREATED->PACKING v1",
		"transition Packed PACKING->LABELING v1",
		"migrated migrated LABELING->WEIGHING v2",
	}, v.changes(t, l.labeling.ID)); diff != "" {
		t.Errorf("log of the labeling run (-want +got):\n%s", diff)
	}

	// Version 1 cannot be let go while its held run lives.
	err = v.eng.Deregister(v.ctx, shipment.Type, 1)
	if !errors.Is(err, runtime.ErrLiveRuns) {
		t.Fatalf("deregister v1 with a live run: %v, want ErrLiveRuns", err)
	}
	const wantDereg = "engine: deregister shipment v1: the version has live runs: 1 runs of shipment v1 are not finished; upgrade them (fsmctl versions plan shipment 1 N) or let them drain (fsmctl versions status shipment) first"
	if err.Error() != wantDereg {
		t.Errorf("deregister error:\n got %s\nwant %s", err, wantDereg)
	}

	// Everything finishes: the upgraded runs on version 2, the held one on
	// version 1, the new one on version 2.
	v.clock.Advance(2 * time.Second) // the retry falls due
	v.signal(t, l.held.ID, shipmentv1.Released{})
	v.runDue(t)
	for _, r := range []runtime.Run{l.created, l.retrying, l.leased, l.labeling, l.returned, l.held, l.awaiting, fresh} {
		cur := v.get(t, r.ID)
		if cur.State != "AWAITING" {
			t.Fatalf("run %s: %s at v%d, want AWAITING", r.IdempotencyKey, cur.State, cur.Version)
		}
		var err error
		if cur.Version == 2 {
			_, err = v.eng.Signal(v.ctx, r.ID, shipment.Delivered{})
		} else {
			_, err = v.eng.Signal(v.ctx, r.ID, shipmentv1.Delivered{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range []runtime.Run{l.created, l.retrying, l.leased, l.labeling, l.returned, l.held, l.awaiting, fresh} {
		cur := v.get(t, r.ID)
		wantV := 2
		if r.ID == l.held.ID {
			wantV = 1
		}
		if cur.State != "DELIVERED" || cur.Version != wantV {
			t.Errorf("run %s: %s at v%d, want DELIVERED at v%d", r.IdempotencyKey, cur.State, cur.Version, wantV)
		}
	}
	// The run packed under version 1 was weighed with the upgrade's
	// default; the run of version 2 with its own reading.
	for id, want := range map[string]string{l.labeling.ID: `{"grams": 1000}`, l.created.ID: `{"grams": 0}`, fresh.ID: `{"grams": 250}`} {
		steps, err := v.st.History(v.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		for _, s := range steps {
			if s.Event == "Weighed" {
				got = string(s.Payload)
			}
		}
		if got != want {
			t.Errorf("run %s weighed %s, want %s", id, got, want)
		}
	}
	if err := pgtest.CheckInvariants(v.ctx, v.pool); err != nil {
		t.Fatal(err)
	}
	if err := v.eng.Deregister(v.ctx, shipment.Type, 1); err != nil {
		t.Fatalf("deregister the drained v1: %v", err)
	}
	vs, err := v.st.Versions(v.ctx, shipment.Type)
	if err != nil {
		t.Fatal(err)
	}
	var status []string
	for _, s := range vs {
		status = append(status, "v"+itoa(s.Version)+" live "+itoa(int(s.Live))+" finished "+itoa(int(s.Finished)))
	}
	if diff := cmp.Diff([]string{"v1 live 0 finished 2", "v2 live 0 finished 7"}, status); diff != "" {
		t.Errorf("versions (-want +got):\n%s", diff)
	}
}

// TestDatabaseRefusesUndeclaredUpgrades moves runs between versions by
// hand: the guard refuses what the registered upgrade does not declare.
func TestDatabaseRefusesUndeclaredUpgrades(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	l := setUp(t, v)
	if err := shipping.Register(v.ctx, v.eng); err != nil {
		t.Fatal(err)
	}
	move := func(id, to string) error {
		tx, err := v.pool.Begin(v.ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(v.ctx)
		_, err = tx.Exec(v.ctx, `UPDATE workflow_runs SET definition_version = 2, current_state = $2 WHERE id = $1`, id, to)
		return store.Translate(err)
	}
	tests := []struct {
		name, id, to, want string
	}{
		{"drained", l.held.ID, "LABELING", "run " + l.held.ID + " of shipment/v1: the migration to v2 leaves runs in HELD to drain on v1 (SQLSTATE FS001)"},
		{"other target", l.returned.ID, "WEIGHING", "run " + l.returned.ID + " of shipment/v1: the migration to v2 moves this run from LABELING to LABELING, not to WEIGHING (SQLSTATE FS001)"},
		{"finished", l.finished.ID, "DELIVERED", "run " + l.finished.ID + " of shipment/v1: it is succeeded in DELIVERED: only a live run migrates to another version (SQLSTATE FS001)"},
	}
	for _, tt := range tests {
		err := move(tt.id, tt.to)
		if !errors.Is(err, runtime.ErrTransitionRefused) {
			t.Errorf("%s: %v, want ErrTransitionRefused", tt.name, err)
			continue
		}
		if msg := err.Error(); msg != "transition refused: ERROR: "+tt.want {
			t.Errorf("%s:\n got %s\nwant transition refused: ERROR: %s", tt.name, msg, tt.want)
		}
	}
	// The declared move goes through, with its log row written in the same
	// transaction; without it, the deferred check refuses the commit.
	if err := move(l.labeling.ID, "WEIGHING"); !errors.Is(err, runtime.ErrUnlogged) {
		t.Errorf("declared move without its log row: %v, want ErrUnlogged", err)
	}
}

// TestOldRunKeepsVersionBesideNew: a run started on version 1 is driven on
// version 1 to its end while runs of version 2 start and finish beside it
// in one engine, without any upgrade.
func TestOldRunKeepsVersionBesideNew(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	if err := v.eng.Register(v.ctx, shipping.DriverV1()); err != nil {
		t.Fatal(err)
	}
	old := v.start(t, "old", shipping.Order{Parcels: 1})
	if err := v.eng.Register(v.ctx, shipping.DriverV2()); err != nil {
		t.Fatal(err)
	}
	young := v.start(t, "young", shipping.Order{Parcels: 2, Grams: 90})
	v.runDue(t)
	v.signal(t, old.ID, shipmentv1.Delivered{})
	v.signal(t, young.ID, shipment.Delivered{})
	if diff := cmp.Diff([]string{
		"created start ->CREATED v1",
		"transition Start CREATED->PACKING v1",
		"transition Packed PACKING->LABELING v1",
		"transition Labeled LABELING->AWAITING v1",
		"transition Delivered AWAITING->DELIVERED v1",
	}, v.changes(t, old.ID)); diff != "" {
		t.Errorf("v1 run (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{
		"created start ->CREATED v2",
		"transition Start CREATED->PACKING v2",
		"transition Packed PACKING->WEIGHING v2",
		"transition Weighed WEIGHING->LABELING v2",
		"transition Labeled LABELING->AWAITING v2",
		"transition Delivered AWAITING->DELIVERED v2",
	}, v.changes(t, young.ID)); diff != "" {
		t.Errorf("v2 run (-want +got):\n%s", diff)
	}
	// An engine of the new release that no longer registers v1 says what
	// to do about the v1 run.
	other, err := engine.New(store.New(v.pool), engine.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Register(v.ctx, shipping.DriverV2()); err != nil {
		t.Fatal(err)
	}
	v1run := v.startV1(t, "v1-late")
	_, err = other.Signal(v.ctx, v1run.ID, shipment.Start{})
	want := "engine: signal Start run " + v1run.ID + ": definition not registered with this engine: shipment v1 (this engine drives v2); keep registering v1's driver beside v2 until its runs drain, or upgrade them: fsmctl versions plan shipment 1 2"
	if !errors.Is(err, runtime.ErrNotRegistered) || err.Error() != want {
		t.Errorf("signal a v1 run on an engine without v1:\n got %v\nwant %s", err, want)
	}
}

func (v *env) startV1(t *testing.T, key string) runtime.Run {
	t.Helper()
	res, err := v.eng.Start(v.ctx, runtime.StartRequest{Type: shipment.Type, Version: 1, IdempotencyKey: key, Owner: runtime.Owner{TenantID: "t", UserID: owner}, Input: shipping.Order{Parcels: 1}})
	if err != nil {
		t.Fatal(err)
	}
	return res.Run
}
