package admin_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/admin"
	"github.com/fsmgen/fsmgen/runtime/evidence"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// shop is a small machine with a cancel event, as the shop's order but
// without its code: PENDING -> PAID -> DONE, and Cancel from both.
var shop = runtime.Definition{
	Machine: "Shop", Type: "shop", Version: 1, Initial: "PENDING", Cancel: "Cancel",
	States: []runtime.StateSpec{
		{Name: "PENDING", Initial: true, Status: runtime.StatusRunning, Wait: true},
		{Name: "PAID", Status: runtime.StatusRunning, Wait: true},
		{Name: "DONE", Status: runtime.StatusSucceeded},
		{Name: "FAILED", Status: runtime.StatusFailed},
		{Name: "CANCELLED", Status: runtime.StatusCancelled},
	},
	Events: []runtime.EventSpec{{Name: "Pay"}, {Name: "Ship"}, {Name: "Fail"}, {Name: "Cancel"}},
	Transitions: []runtime.TransitionSpec{
		{From: "PENDING", Event: "Pay", To: "PAID"},
		{From: "PAID", Event: "Ship", To: "DONE"},
		{From: "PAID", Event: "Fail", To: "FAILED"},
		{From: "PENDING", Event: "Cancel", To: "CANCELLED"},
		{From: "PAID", Event: "Cancel", To: "CANCELLED"},
	},
}

// audit is the same machine under another type, which has no retention
// policy.
var audit = func() runtime.Definition { d := shop; d.Type = "audit"; d.Machine = "Audit"; return d }()

type world struct {
	pool *pgxpool.Pool
	a    *admin.Admin
	old  *store.Store // writes 40 days ago
	now  *store.Store
	ids  map[string]string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	w := &world{pool: pool, now: store.New(pool), ids: map[string]string{}}
	ago := time.Now().Add(-40 * 24 * time.Hour)
	w.old = store.New(pool, store.WithClock(func() time.Time { return ago }))
	w.a = admin.New(w.now)
	for _, d := range []runtime.Definition{shop, audit} {
		if err := w.now.Register(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	if err := evidence.Enable(ctx, pool, "shop"); err != nil {
		t.Fatal(err)
	}
	return w
}

// run starts a run of def named name through st and fires events on it.
func (w *world) run(t *testing.T, st *store.Store, def runtime.Definition, name string, events ...string) string {
	t.Helper()
	ctx := context.Background()
	res, err := st.Start(ctx, runtime.StartRequest{Type: def.Type, Version: 1, IdempotencyKey: name, Owner: runtime.Owner{TenantID: "t"}})
	if err != nil {
		t.Fatal(err)
	}
	w.ids[name] = res.Run.ID
	w.fire(t, st, def, res.Run.ID, events...)
	return res.Run.ID
}

// fire records events on the run id, in order.
func (w *world) fire(t *testing.T, st *store.Store, def runtime.Definition, id string, events ...string) {
	t.Helper()
	ctx := context.Background()
	run, err := st.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range events {
		var row runtime.TransitionSpec
		for _, r := range def.Transitions {
			if r.From == run.State && r.Event == ev {
				row = r
			}
		}
		to, _ := def.State(row.To)
		rec, err := st.Record(ctx, run.ID, run.RowVersion, runtime.Transition{Machine: def.Type, Version: 1, From: run.State, To: row.To, Event: ev, Status: to.Status})
		if err != nil {
			t.Fatal(err)
		}
		run.State, run.RowVersion = row.To, rec.RowVersion
	}
}

func (w *world) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	if _, err := w.pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// link runs sql, which makes a run the child of another, with the
// database's triggers off (the link of a run is fixed when it is created;
// these runs were started without one).
func (w *world) link(t *testing.T, sql string, args ...any) {
	t.Helper()
	ctx := context.Background()
	err := pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL session_replication_role = replica`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, sql, args...)
		return err
	})
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// counts counts the rows of the tables retention touches.
func (w *world) counts(t *testing.T) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, q := range []string{
		"workflow_runs", "workflow_step_logs", "evidence_records", "workflow_outbox",
		"workflow_outbox WHERE published_at IS NULL", "workflow_runs WHERE status = 'running'",
	} {
		var n int64
		if err := w.pool.QueryRow(context.Background(), "SELECT count(*) FROM "+q).Scan(&n); err != nil {
			t.Fatal(err)
		}
		out[q] = n
	}
	return out
}

func (w *world) remaining(t *testing.T) []string {
	t.Helper()
	rows, err := w.pool.Query(context.Background(), `SELECT id::text FROM workflow_runs`)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for name, id := range w.ids {
		if slices.Contains(ids, id) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// populate makes every kind of run retention must tell apart.
func (w *world) populate(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	// Finished 40 days ago: removed.
	w.run(t, w.old, shop, "done-old", "Pay", "Ship")
	w.run(t, w.old, shop, "cancelled-old", "Cancel")
	w.run(t, w.old, shop, "failed-old", "Pay", "Fail")
	// Finished 40 days ago with a published message: removed with it.
	pub := w.run(t, w.old, shop, "published-old", "Pay")
	if _, err := w.old.Emit(ctx, pub, "shop.shipped", map[string]any{"n": 1}); err != nil {
		t.Fatal(err)
	}
	w.fire(t, w.old, shop, pub, "Ship")
	w.exec(t, `UPDATE workflow_outbox SET published_at = now() WHERE workflow_run_id = $1`, pub)
	// Finished 40 days ago with a message not published yet: held.
	unpub := w.run(t, w.old, shop, "unpublished-old", "Pay")
	if _, err := w.old.Emit(ctx, unpub, "shop.shipped", map[string]any{"n": 2}); err != nil {
		t.Fatal(err)
	}
	w.fire(t, w.old, shop, unpub, "Ship")
	// Started 40 days ago, still running: kept.
	running := w.run(t, w.old, shop, "running-old", "Pay")
	// A finished child whose running parent has not had its event: held.
	child := w.run(t, w.old, shop, "child-undelivered", "Cancel")
	w.link(t, `UPDATE workflow_runs SET parent_run_id = $1, parent_event = 'Ship' WHERE id = $2`, running, child)
	// A finished parent with a running child: held, the child kept.
	parent := w.run(t, w.old, shop, "parent-of-running", "Pay", "Ship")
	kid := w.run(t, w.old, shop, "running-kid")
	w.link(t, `UPDATE workflow_runs SET parent_run_id = $1, parent_event = 'Ship' WHERE id = $2`, parent, kid)
	// A finished parent whose finished child had its event delivered: both go.
	parent2 := w.run(t, w.old, shop, "parent-done", "Pay", "Ship")
	kid2 := w.run(t, w.old, shop, "kid-done", "Cancel")
	w.link(t, `UPDATE workflow_runs SET parent_run_id = $1, parent_event = 'Ship', parent_delivered_at = now() WHERE id = $2`, parent2, kid2)
	// Finished today: kept.
	w.run(t, w.now, shop, "done-today", "Pay", "Ship")
	// Finished 40 days ago, of a type without a policy: kept.
	w.run(t, w.old, audit, "audit-old", "Pay", "Ship")
	if _, err := w.a.SetRetention(ctx, "shop", 30); err != nil {
		t.Fatal(err)
	}
}

func TestCleanup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	w.populate(t)
	before := w.counts(t)

	dry, err := w.a.Cleanup(ctx, admin.CleanupOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, w.counts(t)); diff != "" {
		t.Fatalf("the dry run changed the tables (-before +after):\n%s", diff)
	}
	// done-old 3 log rows, cancelled-old 2, failed-old 3, published-old 3,
	// parent-done 3, kid-done 2: 16 rows, as many evidence records; one
	// outbox row.
	want := admin.CleanupReport{DryRun: true, Batches: 1,
		Types: []admin.Removed{{Type: "shop", Runs: 6, StepLogs: 16, Evidence: 16, Outbox: 1, Held: 3}},
		Total: admin.Removed{Type: "total", Runs: 6, StepLogs: 16, Evidence: 16, Outbox: 1, Held: 3}}
	if diff := cmp.Diff(want, dry); diff != "" {
		t.Errorf("dry run (-want +got):\n%s", diff)
	}

	real, err := w.a.Cleanup(ctx, admin.CleanupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	real.DryRun = true
	if diff := cmp.Diff(dry, real); diff != "" {
		t.Errorf("the real run's counts differ from the dry run's (-dry +real):\n%s", diff)
	}
	wantLeft := []string{"audit-old", "child-undelivered", "done-today", "parent-of-running", "running-kid", "running-old", "unpublished-old"}
	if diff := cmp.Diff(wantLeft, w.remaining(t)); diff != "" {
		t.Errorf("runs left (-want +got):\n%s", diff)
	}
	after := w.counts(t)
	for _, k := range []string{"workflow_outbox WHERE published_at IS NULL", "workflow_runs WHERE status = 'running'"} {
		if before[k] != after[k] {
			t.Errorf("%s: %d before, %d after", k, before[k], after[k])
		}
	}
	if got, want := before["workflow_step_logs"]-after["workflow_step_logs"], int64(16); got != want {
		t.Errorf("%d log rows removed, the report says %d", got, want)
	}
	if err := pgtest.CheckInvariants(ctx, w.pool); err != nil {
		t.Error(err)
	}
	for _, name := range []string{"running-old", "unpublished-old", "done-today"} {
		if _, err := evidence.Verify(ctx, w.pool, w.ids[name]); err != nil {
			t.Errorf("evidence of %s: %v", name, err)
		}
	}
	// Nothing more is due: a second cleanup removes nothing.
	again, err := w.a.Cleanup(ctx, admin.CleanupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if again.Total.Runs != 0 || again.Total.Held != 3 {
		t.Errorf("second cleanup: %+v", again)
	}
	// Once the message is published and the run's parent done, they go.
	w.exec(t, `UPDATE workflow_outbox SET published_at = now() WHERE published_at IS NULL`)
	third, err := w.a.Cleanup(ctx, admin.CleanupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if third.Total.Runs != 1 || third.Total.Outbox != 1 || third.Total.Held != 2 {
		t.Errorf("after publishing: %+v", third.Total)
	}
}

func TestCleanupInBatches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	w.populate(t)
	dry, err := w.a.Cleanup(ctx, admin.CleanupOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	got, err := w.a.Cleanup(ctx, admin.CleanupOptions{BatchSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got.Batches < 3 {
		t.Errorf("%d batches of 2 for 6 runs", got.Batches)
	}
	got.DryRun, got.Batches = true, 1 // the batches add up to the dry run
	if diff := cmp.Diff(dry, got); diff != "" {
		t.Errorf("in batches (-dry +batched):\n%s", diff)
	}
	if err := pgtest.CheckInvariants(ctx, w.pool); err != nil {
		t.Error(err)
	}
}

// TestLogStaysAppendOnly holds every other path to the log, the evidence
// and the runs shut, before and after a purge, and a forged write mark to
// finished runs.
func TestLogStaysAppendOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	w.populate(t)
	if _, err := w.a.Cleanup(ctx, admin.CleanupOptions{}); err != nil {
		t.Fatal(err)
	}
	running := w.ids["running-old"]
	done := w.ids["done-today"]
	tests := []struct {
		sql  string
		arg  string
		code string
	}{
		{`DELETE FROM workflow_step_logs WHERE workflow_run_id = $1`, done, "FS002"},
		{`UPDATE workflow_step_logs SET payload = '{}' WHERE workflow_run_id = $1`, done, "FS002"},
		{`TRUNCATE workflow_step_logs CASCADE`, "", "FS002"},
		{`DELETE FROM evidence_records WHERE workflow_run_id = $1`, done, "FS007"},
		{`UPDATE evidence_records SET hash = 'x' WHERE workflow_run_id = $1`, done, "FS007"},
		{`TRUNCATE evidence_records`, "", "FS007"},
		{`DELETE FROM workflow_runs WHERE id = $1`, done, "FS008"},
		// The mark set by hand admits only what retention does: finished runs.
		{`SELECT set_config('fsmgen.write', pg_current_xact_id()::text, true); DELETE FROM evidence_records WHERE workflow_run_id = '` + running + `'`, "", "FS008"},
		{`SELECT set_config('fsmgen.write', pg_current_xact_id()::text, true); DELETE FROM workflow_step_logs WHERE workflow_run_id = '` + running + `'`, "", "FS008"},
		// The mark of another transaction admits nothing.
		{`SELECT set_config('fsmgen.write', '1', false); DELETE FROM workflow_step_logs WHERE workflow_run_id = '` + done + `'`, "", "FS002"},
	}
	for _, tt := range tests {
		var err error
		if tt.arg != "" {
			_, err = w.pool.Exec(ctx, tt.sql, tt.arg)
		} else {
			err = pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
				_, err := tx.Exec(ctx, tt.sql)
				return err
			})
		}
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != tt.code {
			t.Errorf("%s: got %v, want SQLSTATE %s", tt.sql, err, tt.code)
		}
	}
	if err := pgtest.CheckInvariants(ctx, w.pool); err != nil {
		t.Error(err)
	}
}

func TestRetentionPolicies(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	if _, err := w.a.SetRetention(ctx, "shop", 30); err != nil {
		t.Fatal(err)
	}
	if _, err := w.a.SetRetention(ctx, "audit", 400); err != nil {
		t.Fatal(err)
	}
	if _, err := w.a.SetRetention(ctx, "shop", 7); err != nil {
		t.Fatal(err)
	}
	got, err := w.a.Retention(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var pairs []string
	for _, p := range got {
		pairs = append(pairs, p.Type+"="+time.Duration(p.KeepDays).String())
	}
	if diff := cmp.Diff([]string{"audit=400ns", "shop=7ns"}, pairs); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, tt := range []struct {
		typ  string
		days int
		err  string
	}{
		{"nothing", 3, "admin: set retention of nothing: unknown definition: no version of nothing is registered"},
		{"shop", -1, "admin: set retention of shop: invalid input: -1 days: want 0 or more"},
		{"shop", math.MaxInt32 + 1, "admin: set retention of shop: invalid input: 2147483648 days: want at most 2147483647"},
	} {
		if _, err := w.a.SetRetention(ctx, tt.typ, tt.days); err == nil || err.Error() != tt.err {
			t.Errorf("SetRetention(%s, %d): %v, want %s", tt.typ, tt.days, err, tt.err)
		}
	}
	if had, err := w.a.ClearRetention(ctx, "audit"); err != nil || !had {
		t.Errorf("ClearRetention(audit): %v, %v", had, err)
	}
	if had, err := w.a.ClearRetention(ctx, "audit"); err != nil || had {
		t.Errorf("ClearRetention(audit) again: %v, %v", had, err)
	}
}

// TestConcurrentCleanups runs two cleanups at once: together they remove
// what one would, each run once.
func TestConcurrentCleanups(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	w.populate(t)
	dry, err := w.a.Cleanup(ctx, admin.CleanupOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	reps := make(chan admin.CleanupReport, 2)
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			rep, err := w.a.Cleanup(ctx, admin.CleanupOptions{BatchSize: 1})
			reps <- rep
			errs <- err
		}()
	}
	var sum admin.Removed
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
		rep := <-reps
		sum.Runs += rep.Total.Runs
		sum.StepLogs += rep.Total.StepLogs
		sum.Evidence += rep.Total.Evidence
		sum.Outbox += rep.Total.Outbox
	}
	want := dry.Total
	want.Type, want.Held = "", 0
	if diff := cmp.Diff(want, sum); diff != "" {
		t.Errorf("two cleanups together (-one dry run +sum):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"audit-old", "child-undelivered", "done-today", "parent-of-running", "running-kid", "running-old", "unpublished-old"}, w.remaining(t)); diff != "" {
		t.Errorf("runs left (-want +got):\n%s", diff)
	}
}
