package enginestore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/internal/enginestore"
	"github.com/fsmgen/fsmgen/runtime/internal/pgerr"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// chain: A -> B -> C (succeeded), A and B driven.
func chain() runtime.Definition {
	return runtime.Definition{Machine: "chain", Type: "chain", Version: 1, Initial: "A",
		States: []runtime.StateSpec{
			{Name: "A", Status: runtime.StatusRunning, Initial: true},
			{Name: "B", Status: runtime.StatusRunning},
			{Name: "C", Status: runtime.StatusSucceeded, Outcome: "done"},
		},
		Events:      []runtime.EventSpec{{Name: "Next"}, {Name: "Done"}},
		Transitions: []runtime.TransitionSpec{{From: "A", Event: "Next", To: "B"}, {From: "B", Event: "Done", To: "C"}},
	}
}

type env struct {
	ctx  context.Context
	pool *pgxpool.Pool
	st   *store.Store
	es   *enginestore.Store
}

func newEnv(t *testing.T) env {
	t.Helper()
	pool := pgtest.NewPool(t)
	st := store.New(pool)
	ctx := context.Background()
	if err := st.Register(ctx, chain()); err != nil {
		t.Fatal(err)
	}
	return env{ctx: ctx, pool: pool, st: st, es: enginestore.New(st)}
}

// claimed starts n runs and claims them all.
func (e env) claimed(t *testing.T, n int) []enginestore.Claim {
	t.Helper()
	for i := range n {
		if _, err := e.st.Start(e.ctx, runtime.StartRequest{Type: "chain", Version: 1, IdempotencyKey: fmt.Sprint(i), Owner: runtime.Owner{TenantID: "t"}}); err != nil {
			t.Fatal(err)
		}
	}
	cs, err := e.es.Claim(e.ctx, enginestore.ClaimParams{Owner: "w1", Kinds: []enginestore.Kind{{Type: "chain", Version: 1}}, Limit: n, TTL: time.Minute})
	if err != nil || len(cs) != n {
		t.Fatalf("claimed %d of %d: %v", len(cs), n, err)
	}
	return cs
}

func next(c enginestore.Claim) enginestore.BatchItem {
	return enginestore.BatchItem{RunID: c.Run.ID, Params: enginestore.AdvanceParams{
		Lease: &c.Lease, RowVersion: c.Run.RowVersion, KeepLease: true,
		Transition: runtime.Transition{Machine: "chain", Version: 1, From: "A", To: "B", Event: "Next", Payload: map[string]int{"n": 1}},
	}}
}

func done(c enginestore.Claim, rowVersion int64) enginestore.BatchItem {
	return enginestore.BatchItem{RunID: c.Run.ID, Params: enginestore.AdvanceParams{
		Lease: &c.Lease, RowVersion: rowVersion, Result: &runtime.Result{Output: []byte(`{"x":1}`), CostUSD: 0.5},
		Transition: runtime.Transition{Machine: "chain", Version: 1, From: "B", To: "C", Event: "Done"},
	}}
}

// state is where a run is: state, status, row version, lease owner.
func (e env) state(t *testing.T, id string) string {
	t.Helper()
	r, err := e.st.Get(e.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%s/%s@%d lease %q", r.State, r.Status, r.RowVersion, r.Lease.Owner)
}

// TestAdvanceBatch: one statement moves the runs whose compare-and-set
// holds; a stale read gets ErrConflict, a lost lease ErrLeaseLost, a row
// the database refuses ErrTransitionRefused, and the others commit.
func TestAdvanceBatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cs := e.claimed(t, 6)
	// The database refuses any change of run 3 (raw SQL standing for a
	// guard that trips on one row of the batch).
	if _, err := e.pool.Exec(e.ctx, fmt.Sprintf(`
		CREATE FUNCTION refuse_one() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'run %%: refused by the test', NEW.id USING ERRCODE = 'FS001'; END $$;
		CREATE TRIGGER refuse_one BEFORE UPDATE ON workflow_runs FOR EACH ROW
		WHEN (NEW.id = '%s' AND NEW.current_state <> OLD.current_state) EXECUTE FUNCTION refuse_one();`, cs[3].Run.ID)); err != nil {
		t.Fatal(err)
	}
	items := []enginestore.BatchItem{next(cs[0]), next(cs[1]), next(cs[2]), next(cs[3]), next(cs[4]), next(cs[5])}
	items[1].Params.RowVersion = 7 // stale
	lost := cs[2].Lease
	lost.Epoch++
	items[2].Params.Lease = &lost
	items[5].Params.KeepLease = false
	// Run 0 twice: the second item goes after the first, from a row
	// version that is gone by then.
	items = append(items, next(cs[0]), done(cs[4], 2))
	res := e.es.AdvanceBatch(e.ctx, items)

	wantErr := []error{nil, runtime.ErrConflict, runtime.ErrLeaseLost, runtime.ErrTransitionRefused, nil, nil, runtime.ErrConflict, nil}
	for n, r := range res {
		if wantErr[n] == nil {
			if r.Err != nil {
				t.Errorf("item %d: %v", n, r.Err)
			}
			continue
		}
		if !errors.Is(r.Err, wantErr[n]) {
			t.Errorf("item %d: %v, want %v", n, r.Err, wantErr[n])
		}
		var re *runtime.RunError
		if !errors.As(r.Err, &re) || re.RunID != items[n].RunID {
			t.Errorf("item %d: error %v does not name run %s", n, r.Err, items[n].RunID)
		}
	}
	if got := res[0].Advanced.RowVersion; got != 2 {
		t.Errorf("run 0 at row version %d, want 2", got)
	}
	if res[0].Advanced.At.IsZero() {
		t.Error("run 0: no time of the transition")
	}
	got := make([]string, len(cs))
	for n, c := range cs {
		got[n] = e.state(t, c.Run.ID)
	}
	want := []string{
		`B/running@2 lease "w1"`,
		`A/running@1 lease "w1"`,
		`A/running@1 lease "w1"`,
		`A/running@1 lease "w1"`,
		`C/succeeded@3 lease ""`,
		`B/running@2 lease ""`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("runs after the batch (-want +got):\n%s", diff)
	}
	r4, err := e.st.Get(e.ctx, cs[4].Run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if r4.Result == nil || string(r4.Result.Output) != `{"x": 1}` || r4.Result.CostUSD != 0.5 || r4.Result.Outcome != "done" || r4.Result.Status != runtime.StatusSucceeded {
		t.Errorf("run 4's result: %+v", r4.Result)
	}
	h, err := e.st.History(e.ctx, cs[0].Run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 2 || h[1].Event != "Next" || string(h[1].Payload) != `{"n": 1}` || h[1].RowVersion != 2 {
		t.Errorf("run 0's log: %+v", h)
	}
}

// TestAdvanceBatchConnectionLost: a connection lost under the batch's
// statement gives every item a connection error and writes nothing; the
// same items sent again, once the killed backend let go of the rows,
// commit once.
func TestAdvanceBatchConnectionLost(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cs := e.claimed(t, 3)
	// The first transition row written kills its own connection, once.
	if _, err := e.pool.Exec(e.ctx, `
		CREATE SEQUENCE kills;
		CREATE FUNCTION kill_once() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN IF nextval('kills') = 1 THEN PERFORM pg_terminate_backend(pg_backend_pid()); END IF; RETURN NEW; END $$;
		CREATE TRIGGER kill_once BEFORE INSERT ON workflow_step_logs FOR EACH ROW
		WHEN (NEW.kind = 'transition') EXECUTE FUNCTION kill_once();`); err != nil {
		t.Fatal(err)
	}
	items := []enginestore.BatchItem{next(cs[0]), next(cs[1]), next(cs[2])}
	for n, r := range e.es.AdvanceBatch(e.ctx, items) {
		if !pgerr.Unavailable(r.Err) {
			t.Errorf("item %d: %v, want a connection error", n, r.Err)
		}
		if got := e.state(t, cs[n].Run.ID); got != `A/running@1 lease "w1"` {
			t.Errorf("run %d after the lost batch: %s", n, got)
		}
	}
	// The killed backend sends its error to the client before its exit
	// rolls its transaction back: until then it holds the runs' rows
	// locked, and a batch skips them as Busy (the engine then writes each
	// with Advance, which waits for the lock). Wait for the locks, so
	// that the batch sent again finds the rows free.
	ids := make([]string, len(cs))
	for n, c := range cs {
		ids[n] = c.Run.ID
	}
	if _, err := e.pool.Exec(e.ctx, "SELECT 1 FROM workflow_runs WHERE id = ANY($1::uuid[]) FOR UPDATE", ids); err != nil {
		t.Fatal(err)
	}
	for n, r := range e.es.AdvanceBatch(e.ctx, items) {
		if r.Err != nil || r.Advanced.RowVersion != 2 {
			t.Errorf("item %d sent again: %+v", n, r)
		}
	}
	// Sent a third time, the compare-and-set refuses them all.
	for n, r := range e.es.AdvanceBatch(e.ctx, items) {
		if !errors.Is(r.Err, runtime.ErrConflict) {
			t.Errorf("item %d sent a third time: %v, want ErrConflict", n, r.Err)
		}
	}
	for n, c := range cs {
		h, err := e.st.History(e.ctx, c.Run.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(h) != 2 {
			t.Errorf("run %d: %d log rows, want 2", n, len(h))
		}
	}
}

// TestAdvanceBatchBusy: a run whose row another transaction holds locked
// is skipped (Busy), not waited for, and the others commit.
func TestAdvanceBatchBusy(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cs := e.claimed(t, 3)
	locker, err := e.pool.Begin(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Rollback(e.ctx)
	if _, err := locker.Exec(e.ctx, "SELECT 1 FROM workflow_runs WHERE id = $1 FOR UPDATE", cs[1].Run.ID); err != nil {
		t.Fatal(err)
	}
	res := e.es.AdvanceBatch(e.ctx, []enginestore.BatchItem{next(cs[0]), next(cs[1]), next(cs[2])})
	got := []string{}
	for _, r := range res {
		got = append(got, fmt.Sprintf("busy %t err %v row version %d", r.Busy, r.Err, r.Advanced.RowVersion))
	}
	want := []string{"busy false err <nil> row version 2", "busy true err <nil> row version 0", "busy false err <nil> row version 2"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	if err := locker.Rollback(e.ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.state(t, cs[1].Run.ID); got != `A/running@1 lease "w1"` {
		t.Errorf("the busy run: %s", got)
	}
}

// A batch of one transition is written with the statement of one run,
// which costs less than the shared one for a single row
// (bench/store/group_statement.sh); from two on, with the shared one.
func TestAdvanceBatchOfOneWritesAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, count := pgtest.CountedPool(t, pgtest.NewDatabase(t))
	st := store.New(pool)
	if err := st.Register(ctx, chain()); err != nil {
		t.Fatal(err)
	}
	e := env{ctx: ctx, pool: pool, st: st, es: enginestore.New(st)}
	cs := e.claimed(t, 3)
	for _, tt := range []struct {
		items []enginestore.BatchItem
		want  []string
	}{
		{[]enginestore.BatchItem{next(cs[0])}, []string{"AdvanceRun"}},
		{[]enginestore.BatchItem{next(cs[1]), next(cs[2])}, []string{"AdvanceRuns"}},
	} {
		count.Take()
		for n, r := range e.es.AdvanceBatch(ctx, tt.items) {
			if r.Err != nil {
				t.Fatalf("item %d: %v", n, r.Err)
			}
		}
		if diff := cmp.Diff(tt.want, count.Take()); diff != "" {
			t.Errorf("statements of a batch of %d (-want +got):\n%s", len(tt.items), diff)
		}
	}
}
