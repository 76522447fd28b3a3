package admin_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/db"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/admin"
	"github.com/fsmgen/fsmgen/runtime/evidence"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// roles is a database with the shop machine registered and evidence on,
// and pools of its owner, a runtime role and an operator role.
type roles struct {
	owner, rt, op *pgxpool.Pool
	opRole        string
}

func newRoles(t *testing.T) roles {
	t.Helper()
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	owner, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(owner.Close)
	if err := store.New(owner).Register(ctx, shop); err != nil {
		t.Fatal(err)
	}
	if err := evidence.Enable(ctx, owner, "shop"); err != nil {
		t.Fatal(err)
	}
	op := pgtest.RolePool(t, dsn, db.RoleOperator)
	return roles{owner: owner, rt: pgtest.RolePool(t, dsn, db.RoleRuntime), op: op, opRole: op.Config().ConnConfig.User}
}

// start starts a shop run through st and fires events on it.
func start(t *testing.T, st *store.Store, key string, events ...string) runtime.Run {
	t.Helper()
	w := &world{ids: map[string]string{}}
	id := w.run(t, st, shop, key, events...)
	run, err := st.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// sqlState runs stmts in one transaction on pool, rolled back, and returns
// the SQLSTATE and message of the error that ended it ("" when none did).
func sqlState(t *testing.T, pool *pgxpool.Pool, stmts ...string) (string, string) {
	t.Helper()
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // the test reads the statements' errors
	for _, s := range stmts {
		if _, err := tx.Exec(ctx, s); err != nil {
			var pe *pgconn.PgError
			if !errors.As(err, &pe) {
				t.Fatalf("%s: %v", s, err)
			}
			return pe.Code, pe.Message
		}
	}
	return "", ""
}

func TestTerminate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRoles(t)
	rtStore := store.New(r.rt)
	parent := start(t, rtStore, "parent", "Pay")
	child := start(t, rtStore, "child")
	grandchild := start(t, rtStore, "grandchild")
	done := start(t, rtStore, "done-child", "Cancel")
	other := start(t, rtStore, "other")
	w := &world{pool: r.owner}
	w.link(t, `UPDATE workflow_runs SET parent_run_id = $1, parent_event = 'Ship' WHERE id = ANY ($2)`, parent.ID, []string{child.ID, done.ID})
	w.link(t, `UPDATE workflow_runs SET parent_run_id = $1, parent_event = 'Ship' WHERE id = $2`, child.ID, grandchild.ID)

	// The runtime role may not terminate.
	_, err := admin.New(rtStore).Terminate(ctx, parent.ID, admin.TerminateOptions{Reason: "stuck", By: "mallory"})
	if pe, ok := errors.AsType[*pgconn.PgError](err); !ok || pe.Code != "42501" || pe.Message != "permission denied for function fsmgen_terminate_run" {
		t.Errorf("Terminate as the runtime role: %v, want permission denied (42501)", err)
	}

	a := admin.New(store.New(r.op))
	got, err := a.Terminate(ctx, parent.ID, admin.TerminateOptions{Reason: "stuck on a dead supplier", By: "oncall"})
	if err != nil {
		t.Fatal(err)
	}
	kids := []string{child.ID, grandchild.ID}
	slices.Sort(kids)
	if diff := cmp.Diff(kids, got.Descendants); diff != "" {
		t.Errorf("descendants (-want +got):\n%s", diff)
	}
	run := got.Run
	if run.State != "PAID" || run.Status != runtime.StatusCancelled || run.RowVersion != parent.RowVersion+1 || run.FinishedAt.IsZero() ||
		run.Result == nil || run.Result.ErrorCode != admin.TerminatedCode || run.Result.ErrorDetail != "terminated by oncall: stuck on a dead supplier" {
		t.Errorf("terminated run: %s %s v%d finished %v result %+v", run.State, run.Status, run.RowVersion, run.FinishedAt, run.Result)
	}
	for id, want := range map[string]runtime.Status{child.ID: runtime.StatusCancelled, grandchild.ID: runtime.StatusCancelled, done.ID: runtime.StatusCancelled, other.ID: runtime.StatusRunning} {
		got, err := a.Pool().Query(ctx, `SELECT status, coalesce(result->>'error_detail', '') FROM workflow_runs WHERE id = $1`, id)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := pgx.CollectRows(got, pgx.RowToStructByPos[struct{ Status, Detail string }])
		if err != nil {
			t.Fatal(err)
		}
		if rows[0].Status != string(want) {
			t.Errorf("run %s is %s, want %s", id, rows[0].Status, want)
		}
		if id == child.ID && rows[0].Detail != "terminated by oncall: stuck on a dead supplier (with its ancestor "+parent.ID+")" {
			t.Errorf("child's detail = %q", rows[0].Detail)
		}
	}

	hist, err := store.New(r.op).History(ctx, parent.ID)
	if err != nil {
		t.Fatal(err)
	}
	last := hist[len(hist)-1]
	var payload map[string]string
	if err := json.Unmarshal(last.Payload, &payload); err != nil {
		t.Fatal(err)
	}
	wantLog := map[string]string{"reason": "stuck on a dead supplier", "by": "oncall", "role": r.opRole, "root": parent.ID}
	if last.Kind != store.KindTerminated || last.From != "PAID" || last.To != "PAID" || last.Event != "" {
		t.Errorf("last log row: %s %s -> %s on %q", last.Kind, last.From, last.To, last.Event)
	}
	if diff := cmp.Diff(wantLog, payload); diff != "" {
		t.Errorf("terminate row's payload (-want +got):\n%s", diff)
	}
	v, err := evidence.Verify(ctx, r.owner, parent.ID)
	if err != nil || v.Records != len(hist) {
		t.Errorf("evidence: %+v, %v; want %d records", v, err, len(hist))
	}

	// A finished run: signals, cancels and terminates are refused.
	want := "admin: signal Ship run " + parent.ID + ": run is finished: it is cancelled in PAID"
	if _, err := a.Signal(ctx, parent.ID, "Ship", nil, admin.SignalOptions{}); !errors.Is(err, runtime.ErrRunFinished) || err.Error() != want {
		t.Errorf("Signal after the terminate:\n got %v\nwant %s", err, want)
	}
	if _, err := a.Cancel(ctx, parent.ID, admin.SignalOptions{}); !errors.Is(err, runtime.ErrRunFinished) {
		t.Errorf("Cancel after the terminate: %v, want ErrRunFinished", err)
	}
	want = "admin: terminate run " + parent.ID + ": run is finished: it is cancelled in PAID"
	if _, err := a.Terminate(ctx, parent.ID, admin.TerminateOptions{Reason: "again", By: "oncall"}); !errors.Is(err, runtime.ErrRunFinished) || err.Error() != want {
		t.Errorf("second Terminate:\n got %v\nwant %s", err, want)
	}
	want = "admin: terminate run " + other.ID + ": a terminate needs a reason and who gives it"
	if _, err := a.Terminate(ctx, other.ID, admin.TerminateOptions{By: "oncall"}); !errors.Is(err, admin.ErrNoReason) || err.Error() != want {
		t.Errorf("Terminate without a reason:\n got %v\nwant %s", err, want)
	}
	ext, err := rtStore.StartExternal(ctx, store.External{Executor: "temporal", ID: "00000000-0000-4000-8000-0000000000e1", Attempt: 1},
		runtime.StartRequest{Type: "shop", Version: 1, IdempotencyKey: "external", Owner: runtime.Owner{TenantID: "t"}})
	if err != nil {
		t.Fatal(err)
	}
	want = "admin: terminate run " + ext.Run.ID + ": run is executed by another runtime: ERROR: run " + ext.Run.ID + " is executed by temporal: terminate it there (SQLSTATE FS009)"
	if _, err := a.Terminate(ctx, ext.Run.ID, admin.TerminateOptions{Reason: "x", By: "oncall"}); !errors.Is(err, runtime.ErrOtherExecutor) || err.Error() != want {
		t.Errorf("Terminate of another runtime's run:\n got %v\nwant %s", err, want)
	}
	missing := "00000000-0000-4000-8000-000000000000"
	if _, err := a.Terminate(ctx, missing, admin.TerminateOptions{Reason: "x", By: "oncall"}); !errors.Is(err, runtime.ErrRunNotFound) {
		t.Errorf("Terminate of no run: %v, want ErrRunNotFound", err)
	}
	if err := pgtest.CheckInvariants(ctx, r.owner); err != nil {
		t.Error(err)
	}
}

// TestTerminateCannotBeForged: the runtime role cannot write a terminate
// itself, even with the write mark set, nor log a move as one, nor move
// a terminated run on.
func TestTerminateCannotBeForged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRoles(t)
	rtStore := store.New(r.rt)
	live := start(t, rtStore, "live")
	gone := start(t, rtStore, "gone", "Pay")
	if _, err := admin.New(store.New(r.op)).Terminate(ctx, gone.ID, admin.TerminateOptions{Reason: "test", By: "oncall"}); err != nil {
		t.Fatal(err)
	}
	mark := `SELECT set_config('fsmgen.write', pg_current_xact_id()::text, true)`
	deferred := `SET CONSTRAINTS ALL DEFERRED` // the move, then its log row
	logRow := func(id, kind, event, from, to string) string {
		return `INSERT INTO workflow_step_logs (workflow_run_id, workflow_type, attempt_no, step_name, state_before, state_after,
			kind, event, row_version, definition_version)
			SELECT id, workflow_type, attempt_no, 'x', '` + from + `', '` + to + `', '` + kind + `', ` + event + `, row_version, definition_version
			FROM workflow_runs WHERE id = '` + id + `'`
	}
	tests := []struct {
		name      string
		stmts     []string
		code, msg string
	}{
		{"the terminate function", []string{`SELECT * FROM fsmgen_terminate_run('` + live.ID + `', 'x', 'mallory')`},
			"42501", "permission denied for function fsmgen_terminate_run"},
		{"the terminate's write with the mark", []string{mark, `UPDATE workflow_runs SET previous_state = NULL, status = 'cancelled',
			row_version = row_version + 1, result = '{}', finished_at = now() WHERE id = '` + live.ID + `'`},
			"FS001", "run " + live.ID + " of shop/v1: no transition PENDING -> PENDING in the registered table"},
		{"a move logged as a terminate", []string{mark, deferred, `UPDATE workflow_runs SET current_state = 'PAID', previous_state = 'PENDING',
			row_version = row_version + 1 WHERE id = '` + live.ID + `'`, logRow(live.ID, "terminated", "NULL", "PENDING", "PAID")},
			"FS003", "run " + live.ID + ": a terminated row is written by fsmgen_terminate_run only"},
		{"a terminated run moved on", []string{deferred, `UPDATE workflow_runs SET current_state = 'DONE', previous_state = 'PAID', status = 'succeeded',
			row_version = row_version + 1 WHERE id = '` + gone.ID + `'`, logRow(gone.ID, "transition", "'Ship'", "PAID", "DONE")},
			"FS003", "run " + gone.ID + ": it was terminated in PAID: it changes state no more"},
	}
	for _, tt := range tests {
		code, msg := sqlState(t, r.rt, tt.stmts...)
		if code != tt.code || msg != tt.msg {
			t.Errorf("%s: got %s %q, want %s %q", tt.name, code, msg, tt.code, tt.msg)
		}
	}
	if err := pgtest.CheckInvariants(ctx, r.owner); err != nil {
		t.Error(err)
	}
}
