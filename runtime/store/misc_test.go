package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/db"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/fsmtest"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

func TestMigrateIsIdempotentAcrossProcesses(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t, pgtest.Empty())
	ctx := context.Background()
	// Four "processes", each with its own pool, migrate at once, twice.
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pool, err := pgxpool.New(ctx, dsn)
			if err != nil {
				errs[i] = err
				return
			}
			defer pool.Close()
			errs[i] = db.Migrate(ctx, pool)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("migrator %d: %v", i, err)
		}
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := db.Migrate(ctx, conn); err != nil {
		t.Fatalf("migrate again: %v", err)
	}
	migrations, err := db.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	var want, got []string
	for _, m := range migrations {
		want = append(want, fmt.Sprintf("%d %s %s", m.Version, m.Name, m.Checksum))
	}
	rows, _ := conn.Query(ctx, "SELECT version || ' ' || name || ' ' || checksum FROM fsmgen_migrations ORDER BY version")
	if got, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("fsmgen_migrations mismatch (-want +got):\n%s", diff)
	}
	// An applied migration whose text changed is reported.
	if _, err := conn.Exec(ctx, "UPDATE fsmgen_migrations SET checksum = 'x' WHERE version = 1"); err != nil {
		t.Fatal(err)
	}
	if err := db.Migrate(ctx, conn); err == nil {
		t.Error("migrate accepted a changed migration")
	}
}

func TestRegister(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t, pgtest.MaxConns(8))
	ctx := context.Background()
	// Eight processes register the same definition at once.
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = store.New(pool).Register(ctx, orderDef(1))
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("register %d: %v", i, err)
		}
	}
	var states, moves int
	if err := pool.QueryRow(ctx, "SELECT (SELECT count(*) FROM workflow_states), (SELECT count(*) FROM workflow_transitions)").Scan(&states, &moves); err != nil {
		t.Fatal(err)
	}
	if states != 5 || moves != 6 {
		t.Errorf("%d states and %d transitions registered, want 5 and 6", states, moves)
	}
	// Docs and the Go name may change, and so may the order of the
	// declarations, but not the rows' order within one (state, event).
	same := orderDef(1)
	same.Doc = "changed doc"
	same.Machine = "Renamed"
	slices.Reverse(same.States)
	slices.Reverse(same.Events)
	same.Transitions = append(same.Transitions[4:], same.Transitions[:4]...)
	if err := store.New(pool).Register(ctx, same); err != nil {
		t.Errorf("register with a new doc: %v", err)
	}
	changed := orderDef(1)
	changed.Transitions = append(changed.Transitions, runtime.TransitionSpec{From: "WORKING", To: "WORKING", Event: "Begin"})
	if err := store.New(pool).Register(ctx, changed); !errors.Is(err, runtime.ErrDefinitionConflict) {
		t.Errorf("register of a changed table: %v, want ErrDefinitionConflict", err)
	}
	broken := orderDef(3)
	broken.Initial = "WORKING"
	if err := store.New(pool).Register(ctx, broken); !errors.Is(err, runtime.ErrInvalidDefinition) {
		t.Errorf("register of an invalid definition: %v, want ErrInvalidDefinition", err)
	}
	// A process that did not register it still finds it.
	got, err := store.New(pool).Definition(ctx, "order", 1)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(orderDef(1), got); diff != "" {
		t.Errorf("stored definition mismatch (-want +got):\n%s", diff)
	}
	if _, err := store.New(pool).Definition(ctx, "order", 5); !errors.Is(err, runtime.ErrUnknownDefinition) {
		t.Errorf("unregistered version: %v, want ErrUnknownDefinition", err)
	}
}

func TestLogStepAndEmitShareTheStepsTransaction(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	run := e.start(t, "k").Run

	// Committed together.
	err := pgx.BeginFunc(e.ctx, e.pool, func(tx pgx.Tx) error {
		rec, err := e.st.RecordTx(e.ctx, tx, run.ID, run.RowVersion, tr("INITIATED", "Begin", "WORKING", nil))
		if err != nil {
			return err
		}
		if rec.RowVersion != 2 {
			return fmt.Errorf("row version %d, want 2", rec.RowVersion)
		}
		if _, err := e.st.LogStepTx(e.ctx, tx, run.ID, "charged", map[string]int{"cents": 250}); err != nil {
			return err
		}
		_, err = e.st.EmitTx(e.ctx, tx, run.ID, "order.charged", map[string]int{"cents": 250})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// Rolled back together.
	boom := errors.New("boom")
	err = pgx.BeginFunc(e.ctx, e.pool, func(tx pgx.Tx) error {
		if _, err := e.st.RecordTx(e.ctx, tx, run.ID, 2, tr("WORKING", "Finish", "SUCCEEDED", nil)); err != nil {
			return err
		}
		if _, err := e.st.LogStepTx(e.ctx, tx, run.ID, "shipped", nil); err != nil {
			return err
		}
		if _, err := e.st.EmitTx(e.ctx, tx, run.ID, "order.shipped", nil); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("rolled-back step: %v", err)
	}
	h := e.history(t, run.ID)
	want := []string{"created ->INITIATED/@1 a1", "transition INITIATED->WORKING/Begin@2 a1", "step WORKING->WORKING/@2 a1"}
	if diff := cmp.Diff(want, moves(h)); diff != "" {
		t.Errorf("history mismatch (-want +got):\n%s", diff)
	}
	if h[2].Name != "charged" || string(h[2].Payload) != `{"cents": 250}` {
		t.Errorf("step row %+v", h[2])
	}
	var v struct{ Cents string }
	if err := h[2].Decode(&v); !errors.Is(err, runtime.ErrPayload) || !strings.Contains(err.Error(), run.ID) && strings.Contains(err.Error(), "log row") {
		t.Errorf("decode into the wrong type: %v, want ErrPayload naming run and row", err)
	}
	msgs, err := e.st.Outbox(e.ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 || msgs[0].Topic != "order.charged" || string(msgs[0].Payload) != `{"cents": 250}` || msgs[0].Attempt != 1 {
		t.Errorf("outbox %+v, want one order.charged", msgs)
	}
	if _, err := e.st.Emit(e.ctx, run.ID, "", nil); !errors.Is(err, runtime.ErrInvalidInput) {
		t.Errorf("emit without topic: %v, want ErrInvalidInput", err)
	}
	if _, err := e.st.LogStep(e.ctx, run.ID, "bad", func() {}); !errors.Is(err, runtime.ErrPayload) {
		t.Errorf("step payload of a func: %v, want ErrPayload", err)
	}
}

func TestListFilters(t *testing.T) {
	t.Parallel()
	clk := fsmtest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	e := newEnv(t, store.WithClock(clk.Now))
	t0 := clk.Now()
	ids := map[string]string{}
	for _, spec := range []struct{ key, tenant, moveTo string }{
		{"a", "t1", ""}, {"b", "t1", "WORKING"}, {"c", "t2", "WORKING"}, {"d", "t2", "CANCELLED"}, {"e", "t1", ""},
	} {
		res, err := e.st.Start(e.ctx, runtime.StartRequest{Type: "order", Version: 1, IdempotencyKey: spec.key, Owner: runtime.Owner{TenantID: spec.tenant}})
		if err != nil {
			t.Fatal(err)
		}
		ids[spec.key] = res.Run.ID
		if spec.moveTo != "" {
			e.record(t, res.Run, "INITIATED", map[string]string{"WORKING": "Begin", "CANCELLED": "Cancel"}[spec.moveTo], spec.moveTo)
		}
		clk.Advance(time.Minute)
	}
	keysOf := func(runs []runtime.Run) []string {
		var out []string
		for _, r := range runs {
			out = append(out, r.IdempotencyKey)
		}
		return out
	}
	tests := []struct {
		name string
		f    store.Filter
		want []string
	}{
		{"all", store.Filter{}, []string{"a", "b", "c", "d", "e"}},
		{"type", store.Filter{Filter: runtime.Filter{Type: "order"}}, []string{"a", "b", "c", "d", "e"}},
		{"other type", store.Filter{Filter: runtime.Filter{Type: "nope"}}, nil},
		{"state", store.Filter{Filter: runtime.Filter{States: []string{"WORKING"}}}, []string{"b", "c"}},
		{"states", store.Filter{Filter: runtime.Filter{States: []string{"INITIATED", "CANCELLED"}}}, []string{"a", "d", "e"}},
		{"status", store.Filter{Filter: runtime.Filter{Status: runtime.StatusCancelled}}, []string{"d"}},
		{"tenant", store.Filter{Filter: runtime.Filter{TenantID: "t2"}}, []string{"c", "d"}},
		{"key", store.Filter{Filter: runtime.Filter{Type: "order", IdempotencyKey: "c"}}, []string{"c"}},
		{"other key", store.Filter{Filter: runtime.Filter{IdempotencyKey: "'c' OR true"}}, nil},
		{"time range", store.Filter{CreatedFrom: t0.Add(time.Minute), CreatedTo: t0.Add(3 * time.Minute)}, []string{"b", "c"}},
		{"tenant and state", store.Filter{Filter: runtime.Filter{TenantID: "t1", States: []string{"INITIATED"}}}, []string{"a", "e"}},
		{"page 1", store.Filter{Filter: runtime.Filter{Limit: 2}}, []string{"a", "b"}},
		{"page 2", store.Filter{Filter: runtime.Filter{Limit: 2}, After: ids["b"]}, []string{"c", "d"}},
		{"page before", store.Filter{Filter: runtime.Filter{Limit: 2}, Before: ids["d"]}, []string{"b", "c"}},
		{"page before the first", store.Filter{Filter: runtime.Filter{Limit: 2}, Before: ids["b"]}, []string{"a"}},
		{"newest", store.Filter{Newest: true}, []string{"e", "d", "c", "b", "a"}},
		{"newest page 1", store.Filter{Filter: runtime.Filter{Limit: 2}, Newest: true}, []string{"e", "d"}},
		{"newest page 2", store.Filter{Filter: runtime.Filter{Limit: 2}, Newest: true, After: ids["d"]}, []string{"c", "b"}},
		{"newest page before", store.Filter{Filter: runtime.Filter{Limit: 2}, Newest: true, Before: ids["b"]}, []string{"d", "c"}},
		{"newest page before the first", store.Filter{Filter: runtime.Filter{Limit: 2}, Newest: true, Before: ids["d"]}, []string{"e"}},
		{"newest tenant", store.Filter{Filter: runtime.Filter{TenantID: "t2"}, Newest: true}, []string{"d", "c"}},
		{"search key", store.Filter{Search: "c", Newest: true}, idsStartingWith(ids, "c")},
		{"search id", store.Filter{Search: ids["d"]}, []string{"d"}},
		{"search id in upper case", store.Filter{Search: strings.ToUpper(ids["d"])}, []string{"d"}},
		{"search id prefix", store.Filter{Search: ids["e"][:8]}, []string{"e"}},
		{"search id prefix and key", store.Filter{Search: "a", Newest: true}, idsStartingWith(ids, "a")},
		{"search nothing", store.Filter{Search: "zz"}, nil},
		{"search and tenant", store.Filter{Search: "c", Newest: true, Filter: runtime.Filter{TenantID: "t1"}},
			slices.DeleteFunc(idsStartingWith(ids, "c"), func(k string) bool { return k == "c" || k == "d" })},
	}
	for _, tt := range tests {
		runs, err := e.st.List(e.ctx, tt.f)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if diff := cmp.Diff(tt.want, keysOf(runs), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s mismatch (-want +got):\n%s", tt.name, diff)
		}
		// The count is of every page, whatever the order.
		f := tt.f
		f.Limit, f.After, f.Before = 0, "", ""
		all, err := e.st.List(e.ctx, f)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		n, err := e.st.Count(e.ctx, tt.f)
		if err != nil {
			t.Fatalf("%s: count: %v", tt.name, err)
		}
		if n != int64(len(all)) {
			t.Errorf("%s: count %d, want %d", tt.name, n, len(all))
		}
	}
	if _, err := e.st.List(e.ctx, store.Filter{After: ids["a"], Before: ids["b"]}); err == nil ||
		err.Error() != "store: list: invalid input: both after "+ids["a"]+" and before "+ids["b"] {
		t.Errorf("after and before: %v", err)
	}
	if _, err := e.st.List(e.ctx, store.Filter{Filter: runtime.Filter{Limit: -1}}); !errors.Is(err, runtime.ErrInvalidInput) {
		t.Errorf("negative limit: %v, want ErrInvalidInput", err)
	}
}

// idsStartingWith returns, newest first, the keys of the runs whose key
// is key or whose id starts with key: what a search for key finds.
func idsStartingWith(ids map[string]string, key string) []string {
	var out []string
	for _, k := range []string{"e", "d", "c", "b", "a"} {
		if k == key || strings.HasPrefix(ids[k], key) {
			out = append(out, k)
		}
	}
	return out
}

// A definition registered under a (type, version) can only be registered
// again unchanged: whatever changes behaviour or the stored data is named.
func TestRegisterConflictNamesWhatDiffers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	base := func() runtime.Definition {
		d := orderDef(1)
		d.States[1].Retry = &runtime.RetryPolicy{MaxAttempts: 3, InitialInterval: time.Second, Coefficient: 2, MaxInterval: time.Minute}
		d.States[1].OnExhausted = "Fail"
		d.States[1].Timers = []runtime.Timer{{After: time.Minute, Event: "Cancel"}}
		d.Events[0].Fields = []runtime.FieldSpec{{Name: "worker", Type: "string"}}
		d.Cancel = "Cancel"
		d.Type, d.Version = "changing", 1
		return d
	}
	if err := e.st.Register(e.ctx, base()); err != nil {
		t.Fatal(err)
	}
	const prefix = "store: register changing v1: registered definition differs: "
	tests := []struct {
		name   string
		change func(d *runtime.Definition)
		want   string
	}{
		{"retry attempts", func(d *runtime.Definition) { d.States[1].Retry.MaxAttempts = 1 },
			"state WORKING: retry 3 in the database, retry 1 here"},
		{"retry interval", func(d *runtime.Definition) { d.States[1].Retry.InitialInterval = 2 * time.Second },
			"state WORKING: retry 3 backoff 1s x2 max 1m0s jitter 0 in the database, retry 3 backoff 2s x2 max 1m0s jitter 0 here"},
		{"no retry", func(d *runtime.Definition) { d.States[1].Retry = nil },
			"state WORKING: retry 3 in the database, no retry here"},
		{"non-retryable codes", func(d *runtime.Definition) { d.States[1].Retry.NonRetryable = []string{"BAD"} },
			"state WORKING: retry 3 backoff 1s x2 max 1m0s jitter 0 in the database, retry 3 backoff 1s x2 max 1m0s jitter 0 nonretryable BAD here"},
		{"wait flag", func(d *runtime.Definition) { d.States[1].Wait = true },
			"state WORKING: wait false in the database, true here"},
		{"exhausted event", func(d *runtime.Definition) { d.States[1].OnExhausted = "" },
			"state WORKING: exhausted event Fail in the database, none here"},
		{"timer", func(d *runtime.Definition) { d.States[1].Timers[0].After = time.Hour },
			"state WORKING: timers after 1m0s Cancel in the database, after 1h0m0s Cancel here"},
		{"outcome", func(d *runtime.Definition) { d.States[2].Outcome = "finished" },
			"state SUCCEEDED: outcome done in the database, finished here"},
		{"event field type", func(d *runtime.Definition) { d.Events[0].Fields[0].Type = "int" },
			"event Begin: fields {worker string} in the database, {worker int} here"},
		{"event field name", func(d *runtime.Definition) { d.Events[0].Fields[0].Name = "workerID" },
			"event Begin: fields {worker string} in the database, {workerID string} here"},
		{"external flag", func(d *runtime.Definition) { d.Events[3].External = true },
			"event Cancel: external false in the database, true here"},
		{"cancel event", func(d *runtime.Definition) { d.Cancel = "" },
			"cancel event Cancel in the database, none here"},
		{"row outcome", func(d *runtime.Definition) { d.Transitions[1].Outcome = "other" },
			`transitions from WORKING on Finish: [WORKING -> SUCCEEDED on Finish outcome "done"] in the database, [WORKING -> SUCCEEDED on Finish outcome "other"] here`},
		{"guard", func(d *runtime.Definition) { d.Transitions[0].Guard = "Ready" },
			"transitions from INITIATED on Begin: [INITIATED -> WORKING on Begin] in the database, [INITIATED -> WORKING on Begin when Ready] here"},
		{"new state", func(d *runtime.Definition) {
			d.States = append(d.States, runtime.StateSpec{Name: "PAUSED", Status: runtime.StatusRunning})
			d.Transitions = append(d.Transitions, runtime.TransitionSpec{From: "WORKING", To: "PAUSED", Event: "Begin"})
		}, "state PAUSED: here, not in the database; transitions from WORKING on Begin: [] in the database, [WORKING -> PAUSED on Begin] here"},
		{"two changes", func(d *runtime.Definition) {
			d.States[1].Retry.MaxAttempts = 1
			d.States[1].Wait = true
		}, "state WORKING: wait false in the database, true here; state WORKING: retry 3 in the database, retry 1 here"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := base()
			tt.change(&d)
			// Another process (a store with nothing cached) registers it.
			err := store.New(e.pool).Register(e.ctx, d)
			if !errors.Is(err, runtime.ErrDefinitionConflict) {
				t.Fatalf("register: %v, want ErrDefinitionConflict", err)
			}
			if diff := cmp.Diff(prefix+tt.want+"; bump the version (version 2 in the .fsm file) and keep version 1's machine beside it, registered while its runs live; then upgrade or drain them (see docs/changing-a-machine.md)", err.Error()); diff != "" {
				t.Errorf("message (-want +got):\n%s", diff)
			}
		})
	}
	// The same definition again, from another process, is accepted.
	if err := store.New(e.pool).Register(e.ctx, base()); err != nil {
		t.Errorf("register the same definition again: %v", err)
	}
}

func TestLogStepAndEmitRefusedOnFinishedRuns(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, c := range []struct {
		key    string
		moves  [][3]string
		status runtime.Status
		state  string
	}{
		{"succeeded", [][3]string{{"INITIATED", "Begin", "WORKING"}, {"WORKING", "Finish", "SUCCEEDED"}}, runtime.StatusSucceeded, "SUCCEEDED"},
		{"failed", [][3]string{{"INITIATED", "Fail", "FAILED"}}, runtime.StatusFailed, "FAILED"},
		{"cancelled", [][3]string{{"INITIATED", "Cancel", "CANCELLED"}}, runtime.StatusCancelled, "CANCELLED"},
	} {
		t.Run(c.key, func(t *testing.T) {
			run := e.start(t, c.key).Run
			// Running, in INITIATED and WORKING: both are written.
			if _, err := e.st.LogStep(e.ctx, run.ID, "noted", nil); err != nil {
				t.Fatalf("log step on a running run: %v", err)
			}
			if _, err := e.st.Emit(e.ctx, run.ID, "order.noted", nil); err != nil {
				t.Fatalf("emit on a running run: %v", err)
			}
			for _, m := range c.moves {
				run = e.record(t, run, m[0], m[1], m[2])
			}
			if run.Status != c.status {
				t.Fatalf("status %s, want %s", run.Status, c.status)
			}
			before := e.history(t, run.ID)
			_, err := e.st.LogStep(e.ctx, run.ID, "late", map[string]int{"n": 1})
			want := fmt.Sprintf("store: log step late run %s: run is finished: it is %s in %s", run.ID, c.status, c.state)
			if !errors.Is(err, runtime.ErrRunFinished) || err.Error() != want {
				t.Errorf("log step on a %s run: %v, want %q", c.status, err, want)
			}
			err = pgx.BeginFunc(e.ctx, e.pool, func(tx pgx.Tx) error {
				_, err := e.st.LogStepTx(e.ctx, tx, run.ID, "late", nil)
				return err
			})
			if !errors.Is(err, runtime.ErrRunFinished) || err.Error() != want {
				t.Errorf("log step in a transaction on a %s run: %v, want %q", c.status, err, want)
			}
			_, err = e.st.Emit(e.ctx, run.ID, "order.late", nil)
			want = fmt.Sprintf("store: emit order.late run %s: run is finished: it is %s in %s", run.ID, c.status, c.state)
			if !errors.Is(err, runtime.ErrRunFinished) || err.Error() != want {
				t.Errorf("emit on a %s run: %v, want %q", c.status, err, want)
			}
			if diff := cmp.Diff(moves(before), moves(e.history(t, run.ID))); diff != "" {
				t.Errorf("log of the %s run changed (-before +after):\n%s", c.status, diff)
			}
			msgs, err := e.st.Outbox(e.ctx, run.ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(msgs) != 1 || msgs[0].Topic != "order.noted" {
				t.Errorf("outbox %+v, want only order.noted", msgs)
			}
		})
	}
}

func TestLogLinkOnAFinishedRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	run := e.start(t, "done").Run
	run = e.record(t, run, "INITIATED", "Begin", "WORKING")
	run = e.record(t, run, "WORKING", "Finish", "SUCCEEDED")
	next := e.start(t, "next").Run
	step, err := e.st.LogLink(e.ctx, run.ID, "rerun", next.ID)
	if err != nil {
		t.Fatal(err)
	}
	h := e.history(t, run.ID)
	last := h[len(h)-1]
	if last.ID != step.ID || last.Name != "rerun" || last.Kind != store.KindStep || string(last.Payload) != fmt.Sprintf(`{"run_id": "%s"}`, next.ID) {
		t.Errorf("link row %+v, want a rerun step naming %s", last, next.ID)
	}
	missing := "00000000-0000-4000-8000-000000000001"
	_, err = e.st.LogLink(e.ctx, run.ID, "rerun", missing)
	want := fmt.Sprintf("store: log link rerun run %s: run not found: run %s or the linked run %s", run.ID, run.ID, missing)
	if !errors.Is(err, runtime.ErrRunNotFound) || err.Error() != want {
		t.Errorf("link to a missing run: %v, want %q", err, want)
	}
}

func TestValidTraceParent(t *testing.T) {
	t.Parallel()
	for tp, want := range map[string]bool{
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01": true,
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0":  false,
		"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01": false,
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01": false,
		"00-4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7-01": false,
		"": false,
	} {
		if got := store.ValidTraceParent(tp); got != want {
			t.Errorf("ValidTraceParent(%q) = %t, want %t", tp, got, want)
		}
		ctx := store.WithTraceParent(context.Background(), tp)
		if got := store.TraceParent(ctx) != ""; got != want {
			t.Errorf("TraceParent of a context with %q: %q", tp, store.TraceParent(ctx))
		}
	}
}
