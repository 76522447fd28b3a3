package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/db"
	"github.com/fsmgen/fsmgen/runtime/evidence"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
)

// roleEnv is a database whose schema the test's owner pool owns, with the
// store driven by a runtime role (db.RoleRuntime).
type roleEnv struct {
	env
	dsn   string
	owner *pgxpool.Pool
}

func newRoleEnv(t *testing.T) roleEnv {
	t.Helper()
	dsn := pgtest.NewDatabase(t)
	owner, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(owner.Close)
	rt := pgtest.RolePool(t, dsn, db.RoleRuntime)
	return roleEnv{env: newEnvPool(t, rt), dsn: dsn, owner: owner}
}

// linkChild makes run child a child of run parent, whose end is the
// parent's event, as the engine links the runs it starts (written by the
// owner with the triggers off: no role may set a run's parent link).
func (e roleEnv) linkChild(t *testing.T, parent, child, event string) {
	t.Helper()
	ctx := context.Background()
	err := pgx.BeginFunc(ctx, e.owner, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL session_replication_role = replica`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE workflow_runs SET parent_run_id = $1, parent_event = $2 WHERE id = $3`, parent, event, child)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// refused runs sqls in one transaction on pool and checks that the last
// fails with SQLSTATE code and message msg (the others must succeed).
func refused(t *testing.T, pool *pgxpool.Pool, code, msg string, sqls []string, args ...any) {
	t.Helper()
	ctx := context.Background()
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		for i, s := range sqls {
			var a []any
			if i == len(sqls)-1 {
				a = args
			}
			if _, err := tx.Exec(ctx, s, a...); err != nil {
				if i < len(sqls)-1 {
					t.Fatalf("set-up statement %s: %v", s, err)
				}
				return err
			}
		}
		return nil
	})
	var pg *pgconn.PgError
	if !errors.As(err, &pg) {
		t.Fatalf("got %v, want SQLSTATE %s: %s", err, code, msg)
	}
	if diff := cmp.Diff([]string{code, msg}, []string{pg.Code, pg.Message}); diff != "" {
		t.Errorf("refusal mismatch (-want +got):\n%s", diff)
	}
}

// Temporary tables of the session do not stand in for the schema's tables
// in the database's functions: the guard reads the registered definition,
// not a forged one.
func TestRuntimeRoleTemporaryTablesDoNotShadowTheSchema(t *testing.T) {
	t.Parallel()
	e := newRoleEnv(t)
	run := e.start(t, "k").Run
	run = e.record(t, run, "INITIATED", "Begin", "WORKING")
	refused(t, e.pool, "FS003",
		"run "+run.ID+": attempt_no and definition_version change only when a failed run is reset to its initial state with attempt_no + 1 (was WORKING in running, attempt 1; asked NOWHERE in 1, attempt 2)",
		[]string{
			`CREATE TEMP TABLE workflow_definitions (workflow_type text, version int, initial_state text)`,
			`INSERT INTO workflow_definitions VALUES ('order', 1, 'NOWHERE')`,
			`CREATE TEMP TABLE workflow_states (workflow_type text, version int, state text, status text)`,
			`INSERT INTO workflow_states VALUES ('order', 1, 'WORKING', 'failed')`,
			`WITH moved AS (
    UPDATE workflow_runs SET attempt_no = attempt_no + 1, current_state = 'NOWHERE' WHERE id = $1
    RETURNING id, workflow_type, attempt_no, current_state, row_version, definition_version
)
INSERT INTO workflow_step_logs (workflow_run_id, workflow_type, attempt_no, step_name, state_before, state_after,
    kind, event, row_version, definition_version)
SELECT m.id, m.workflow_type, m.attempt_no, 'restart', 'WORKING', m.current_state, 'restarted', NULL, m.row_version, m.definition_version
FROM moved m`,
		}, run.ID)
	if got := e.get(t, run.ID); got.State != "WORKING" || got.Attempt != 1 {
		t.Errorf("run is %s at attempt %d, want WORKING at attempt 1", got.State, got.Attempt)
	}
}

// The evidence chain is written by the log's trigger only: the runtime role
// can neither add a record nor remove one, nor reach the trigger's function
// from a table of its own.
func TestRuntimeRoleCannotForgeEvidence(t *testing.T) {
	t.Parallel()
	e := newRoleEnv(t)
	ctx := context.Background()
	if err := evidence.Enable(ctx, e.pool, "order"); err != nil {
		t.Fatal(err)
	}
	run := e.start(t, "k").Run
	run = e.record(t, run, "INITIATED", "Begin", "WORKING")
	run = e.record(t, run, "WORKING", "Finish", "SUCCEEDED")
	v, err := evidence.Verify(ctx, e.pool, run.ID)
	if err != nil || v.Records != 3 {
		t.Fatalf("verify: %+v, %v; want 3 records", v, err)
	}
	t.Run("append a record that names no log row", func(t *testing.T) {
		refused(t, e.pool, "42501", "permission denied for table evidence_records", []string{`
INSERT INTO evidence_records (workflow_run_id, workflow_type, seq, kind, step_log_id, content, content_hash, prev_hash, hash, recorded_at)
SELECT h.workflow_run_id, 'order', 4, 'transition', 999999, c.c, encode(sha256(convert_to(c.c::text, 'UTF8')), 'hex'), h.hash,
    encode(sha256(convert_to(h.hash || encode(sha256(convert_to(c.c::text, 'UTF8')), 'hex'), 'UTF8')), 'hex'), now()
FROM evidence_heads h, LATERAL (SELECT jsonb_build_object('run_id', h.workflow_run_id, 'seq', 4, 'kind', 'transition') AS c) c
WHERE h.workflow_run_id = $1`}, run.ID)
	})
	t.Run("delete the last record under a forged write mark", func(t *testing.T) {
		refused(t, e.pool, "42501", "permission denied for table evidence_records", []string{
			`SELECT set_config('fsmgen.write', pg_current_xact_id()::text, true)`,
			`DELETE FROM evidence_records WHERE workflow_run_id = $1 AND seq = 3`,
		}, run.ID)
	})
	t.Run("move the head", func(t *testing.T) {
		refused(t, e.pool, "42501", "permission denied for table evidence_heads",
			[]string{`UPDATE evidence_heads SET records = 2 WHERE workflow_run_id = $1`}, run.ID)
	})
	t.Run("call the trigger's function from a table of its own", func(t *testing.T) {
		refused(t, e.pool, "42501", "permission denied for function fsmgen_evidence_append", []string{
			`CREATE TEMP TABLE fake (LIKE workflow_step_logs)`,
			`CREATE TRIGGER fake_evidence AFTER INSERT ON fake FOR EACH ROW EXECUTE FUNCTION fsmgen_evidence_append()`,
		})
	})
	if v, err := evidence.Verify(ctx, e.pool, run.ID); err != nil || v.Records != 3 {
		t.Errorf("verify after the attacks: %+v, %v; want 3 records", v, err)
	}
}

// A chain changed around the database's guards (by a writer with the
// owner's rights and the triggers off) fails Verify: records removed from
// its end, and a record, correctly hashed, whose log row does not exist.
func TestVerifyFindsTruncatedAndDanglingChains(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tt := range []struct {
		name   string
		tamper []string
		want   string
	}{{
		name: "truncated",
		tamper: []string{
			`DELETE FROM evidence_records WHERE workflow_run_id = $1 AND seq = 3`,
		},
		want: "evidence: verify run RUN: record 2 (id ID2): the chain ends at record 2 with hash HASH2, its head says record 3 with hash HASH3",
	}, {
		name: "dangling",
		tamper: []string{`
WITH c AS (SELECT jsonb_build_object('run_id', h.workflow_run_id, 'seq', 4, 'kind', 'transition') AS c, h.hash AS prev
           FROM evidence_heads h WHERE h.workflow_run_id = $1),
ins AS (
    INSERT INTO evidence_records (workflow_run_id, workflow_type, seq, kind, step_log_id, content, content_hash, prev_hash, hash, recorded_at)
    SELECT $1, 'order', 4, 'transition', 999999, c.c, encode(sha256(convert_to(c.c::text, 'UTF8')), 'hex'), c.prev,
        encode(sha256(convert_to(c.prev || encode(sha256(convert_to(c.c::text, 'UTF8')), 'hex'), 'UTF8')), 'hex'), now()
    FROM c RETURNING hash)
UPDATE evidence_heads SET records = 4, hash = (SELECT hash FROM ins) WHERE workflow_run_id = $1`,
		},
		want: "evidence: verify run RUN: record 4 (id ID4): log row 999999 of the run does not exist",
	}} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newRoleEnv(t)
			if err := evidence.Enable(ctx, e.pool, "order"); err != nil {
				t.Fatal(err)
			}
			run := e.start(t, "k").Run
			run = e.record(t, run, "INITIATED", "Begin", "WORKING")
			run = e.record(t, run, "WORKING", "Finish", "SUCCEEDED")
			err := pgx.BeginFunc(ctx, e.owner, func(tx pgx.Tx) error {
				if _, err := tx.Exec(ctx, `SET LOCAL session_replication_role = replica`); err != nil {
					return err
				}
				for _, s := range tt.tamper {
					if _, err := tx.Exec(ctx, s, run.ID); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			recs, err := evidence.Records(ctx, e.owner, run.ID)
			if err != nil {
				t.Fatal(err)
			}
			want := tt.want
			r := strings.NewReplacer("RUN", run.ID, "ID2", fmt.Sprint(recs[1].ID), "HASH2", recs[1].Hash[:12])
			if len(recs) > 3 {
				r = strings.NewReplacer("RUN", run.ID, "ID4", fmt.Sprint(recs[3].ID))
			}
			want = r.Replace(want)
			if strings.Contains(want, "HASH3") {
				var head string
				if err := e.owner.QueryRow(ctx, `SELECT hash FROM evidence_heads WHERE workflow_run_id = $1`, run.ID).Scan(&head); err != nil {
					t.Fatal(err)
				}
				want = strings.ReplaceAll(want, "HASH3", head[:12])
			}
			_, err = evidence.Verify(ctx, e.pool, run.ID)
			if !errors.Is(err, evidence.ErrBroken) {
				t.Fatalf("verify: %v, want ErrBroken", err)
			}
			if diff := cmp.Diff(want, err.Error()); diff != "" {
				t.Errorf("verify error mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// A write mark set by a session counts for nothing: only
// fsmgen_purge_finished_runs, with its owner's rights, deletes, and only
// what the retention policy says.
func TestForgedPurgeMarkDeletesNothing(t *testing.T) {
	t.Parallel()
	e := newRoleEnv(t)
	ctx := context.Background()
	run := e.start(t, "k").Run
	run = e.record(t, run, "INITIATED", "Begin", "WORKING")
	run = e.record(t, run, "WORKING", "Finish", "SUCCEEDED")
	mark := `SELECT set_config('fsmgen.write', pg_current_xact_id()::text, true)`
	t.Run("runtime role", func(t *testing.T) {
		refused(t, e.pool, "42501", "permission denied for table workflow_step_logs",
			[]string{mark, `DELETE FROM workflow_step_logs WHERE workflow_run_id = $1`}, run.ID)
	})
	t.Run("role granted DELETE", func(t *testing.T) {
		careless := pgtest.RolePool(t, e.dsn, db.RoleRuntime)
		var name string
		if err := careless.QueryRow(ctx, `SELECT current_user`).Scan(&name); err != nil {
			t.Fatal(err)
		}
		if _, err := e.owner.Exec(ctx, `GRANT DELETE ON workflow_step_logs TO `+pgx.Identifier{name}.Sanitize()); err != nil {
			t.Fatal(err)
		}
		refused(t, careless, "FS002",
			"workflow_step_logs is append-only: DELETE refused (finished runs are removed by retention: fsmgen_purge_finished_runs)",
			[]string{mark, `DELETE FROM workflow_step_logs WHERE workflow_run_id = $1`}, run.ID)
	})
	t.Run("runtime role calls the purge", func(t *testing.T) {
		refused(t, e.pool, "42501", "permission denied for function fsmgen_purge_finished_runs",
			[]string{`SELECT * FROM fsmgen_purge_finished_runs()`})
	})
	t.Run("operator purges by the policy only", func(t *testing.T) {
		op := pgtest.RolePool(t, e.dsn, db.RoleOperator)
		if _, err := op.Exec(ctx, `SELECT * FROM fsmgen_purge_finished_runs()`); err != nil {
			t.Fatal(err)
		}
		if h := e.history(t, run.ID); len(h) != 3 {
			t.Errorf("history has %d rows after a purge without a retention policy, want 3", len(h))
		}
	})
}

// The facts of a run that the transitions do not set are fixed: by the
// runtime role's column privileges, and by the database's triggers for a
// role that may update every column.
func TestRuntimeRoleCannotRewriteRunFacts(t *testing.T) {
	t.Parallel()
	e := newRoleEnv(t)
	ctx := context.Background()
	live := e.start(t, "live").Run
	live = e.record(t, live, "INITIATED", "Begin", "WORKING")
	done := e.start(t, "done").Run
	done = e.record(t, done, "INITIATED", "Begin", "WORKING")
	done = e.record(t, done, "WORKING", "Finish", "SUCCEEDED")
	child := e.start(t, "child").Run
	// A run waiting for a child.
	e.linkChild(t, live.ID, child.ID, "Finish")
	careless := pgtest.RolePool(t, e.dsn, db.RoleRuntime)
	var name string
	if err := careless.QueryRow(ctx, `SELECT current_user`).Scan(&name); err != nil {
		t.Fatal(err)
	}
	if _, err := e.owner.Exec(ctx, `GRANT UPDATE ON workflow_runs TO `+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	fixed := "run " + live.ID + ": tenant_id, user_id, correlation_id, input, created_at, parent_run_id and parent_event are fixed when the run is created"
	finished := "run " + done.ID + ": it is succeeded in SUCCEEDED: the result, finish time and schedule of a finished run are fixed (a restart clears them)"
	for _, tt := range []struct {
		name       string
		pool       *pgxpool.Pool
		sql        string
		id         string
		code, want string
	}{
		{"tenant", e.pool, `UPDATE workflow_runs SET tenant_id = 'other' WHERE id = $1`, live.ID, "42501", "permission denied for table workflow_runs"},
		{"tenant, UPDATE granted", careless, `UPDATE workflow_runs SET tenant_id = 'other' WHERE id = $1`, live.ID, "FS003", fixed},
		{"user, UPDATE granted", careless, `UPDATE workflow_runs SET user_id = gen_random_uuid() WHERE id = $1`, live.ID, "FS003", fixed},
		{"input, UPDATE granted", careless, `UPDATE workflow_runs SET input = '{"x": 1}' WHERE id = $1`, live.ID, "FS003", fixed},
		{"policy snapshot", e.pool, `UPDATE workflow_runs SET policy_snapshot = '{"x": 1}' WHERE id = $1`, live.ID, "FS003",
			"run " + live.ID + ": policy_snapshot changes only when a failed run is restarted"},
		{"result of a finished run", e.pool, `UPDATE workflow_runs SET result = '{"status": "failed"}' WHERE id = $1`, done.ID, "FS003", finished},
		{"finish time of a finished run", e.pool, `UPDATE workflow_runs SET finished_at = finished_at - interval '1 year' WHERE id = $1`, done.ID, "FS003", finished},
		{"schedule of a finished run", e.pool, `UPDATE workflow_runs SET next_run_at = now() WHERE id = $1`, done.ID, "FS003", finished},
		{"lease epoch back", e.pool, `UPDATE workflow_runs SET lease_epoch = lease_epoch - 1 WHERE id = $1`, live.ID, "FS003",
			"run " + live.ID + ": lease_epoch 0 cannot become -1 with lease owner NULL: it grows by one with each claim"},
		{"lease taken without a claim", e.pool, `UPDATE workflow_runs SET lease_owner = 'thief', lease_expires_at = 'infinity' WHERE id = $1`, live.ID, "FS003",
			"run " + live.ID + ": lease_epoch 0 cannot become 0 with lease owner thief: it grows by one with each claim"},
		{"delivery of a running child", e.pool, `UPDATE workflow_runs SET parent_delivered_at = now() WHERE id = $1`, child.ID, "FS003",
			"run " + child.ID + ": it is running in INITIATED: parent_delivered_at is set when its parent has had the event of its end"},
		{"event the machine does not have", e.pool, rawMoveOn("Teleport"), live.ID, "FS001",
			"run " + live.ID + " of order/v1: no transition WORKING -[Teleport]-> SUCCEEDED in the registered table"},
		{"child's event while the child runs", e.pool, rawMoveOn("Finish"), live.ID, "FS001",
			"run " + live.ID + ": Finish is the event of the end of a child run: it is fired with the delivery of a finished child, in the same transaction"},
		{"step with an event", e.pool, `INSERT INTO workflow_step_logs (workflow_run_id, workflow_type, attempt_no, step_name, state_before, state_after,
    kind, event, row_version, definition_version)
SELECT id, workflow_type, attempt_no, 'note', current_state, current_state, 'step', 'Finish', row_version, definition_version
FROM workflow_runs WHERE id = $1`, live.ID, "23514",
			`new row for relation "workflow_step_logs" violates check constraint "workflow_step_logs_step_event_check"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			refused(t, tt.pool, tt.code, tt.want, []string{tt.sql}, tt.id)
		})
	}
	if got := e.get(t, live.ID); got.State != "WORKING" || got.TenantID != "t1" {
		t.Errorf("live run is %s of tenant %s, want WORKING of t1", got.State, got.TenantID)
	}
}

// rawMoveOn moves run $1 from WORKING to SUCCEEDED in one statement with
// its log row, on event ev.
func rawMoveOn(ev string) string {
	return `WITH moved AS (
    UPDATE workflow_runs SET current_state = 'SUCCEEDED', previous_state = 'WORKING', status = 'succeeded',
        row_version = row_version + 1, result = '{}'::jsonb, finished_at = now(), next_run_at = NULL
    WHERE id = $1
    RETURNING id, workflow_type, attempt_no, current_state, row_version, definition_version
)
INSERT INTO workflow_step_logs (workflow_run_id, workflow_type, attempt_no, step_name, state_before, state_after,
    kind, event, row_version, definition_version)
SELECT m.id, m.workflow_type, m.attempt_no, '` + ev + `', 'WORKING', m.current_state, 'transition', '` + ev + `',
    m.row_version, m.definition_version
FROM moved m`
}

// advanceRunsSQL calls fsmgen_advance_runs, the statement of the store's
// and the engine's group commits, for one run at row version $2, as a
// session of any role granted it may.
func advanceRunsSQL(from, event, to, status string, finish bool) string {
	return fmt.Sprintf(`SELECT busy FROM fsmgen_advance_runs(ARRAY[$1::uuid], ARRAY['%s'], ARRAY['%s'], ARRAY['%s'],
    ARRAY[$2::bigint], ARRAY['order'], ARRAY[1], ARRAY['%s'], ARRAY[NULL::jsonb], ARRAY[-1::bigint], ARRAY[false],
    ARRAY[false], ARRAY[''], ARRAY[0::bigint], ARRAY[%t], ARRAY['%s'], ARRAY[''], ARRAY[NULL::jsonb],
    ARRAY[0::float8], ARRAY[0::bigint], ARRAY[''], ARRAY[''], NULL)`, from, to, status, event, finish, status)
}

// The group commit's statement checks the runs it moved as the triggers it
// skips would, with their errors; its write mark counts inside it only, so
// a session that sets the mark by hand is checked as before, whatever its
// role.
func TestBatchedTransitionsAreChecked(t *testing.T) {
	t.Parallel()
	e := newRoleEnv(t)
	ctx := context.Background()
	live := e.start(t, "live").Run
	live = e.record(t, live, "INITIATED", "Begin", "WORKING")
	child := e.start(t, "child").Run
	// A run waiting for a child.
	e.linkChild(t, live.ID, child.ID, "Cancel")
	mark := `SELECT set_config('fsmgen.write', pg_current_xact_id()::text, true)`
	unlogged := "run " + live.ID + ": WORKING -> SUCCEEDED at row version 3 has no log row: a change of state and its log row are written together"
	for _, tt := range []struct {
		name       string
		pool       *pgxpool.Pool
		sqls       []string
		code, want string
	}{
		{"event the machine does not have", e.pool,
			[]string{advanceRunsSQL("WORKING", "Teleport", "SUCCEEDED", "succeeded", true)}, "FS001",
			"run " + live.ID + " of order/v1: no transition WORKING -[Teleport]-> SUCCEEDED in the registered table"},
		{"status of another state", e.pool,
			[]string{advanceRunsSQL("WORKING", "Fail", "FAILED", "succeeded", true)}, "23503",
			`insert or update on table "workflow_runs" violates foreign key constraint "workflow_runs_move_fkey"`},
		{"child's event while the child runs", e.pool,
			[]string{advanceRunsSQL("WORKING", "Cancel", "CANCELLED", "cancelled", true)}, "FS001",
			"run " + live.ID + ": Cancel is the event of the end of a child run: it is fired with the delivery of a finished child, in the same transaction"},
		{"write mark set by the runtime role", e.pool,
			[]string{mark, `UPDATE workflow_runs SET current_state = 'SUCCEEDED', result = '{}', finished_at = now() WHERE id = $1`},
			"FS005", unlogged},
		{"write mark set by the owner outside the function", e.owner,
			[]string{`UPDATE workflow_runs SET current_state = 'SUCCEEDED', result = '{}', finished_at = now() WHERE id = $1`},
			"FS005", unlogged},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := []any{live.ID}
			if strings.Contains(tt.sqls[len(tt.sqls)-1], "$2") {
				args = append(args, live.RowVersion)
			}
			refused(t, tt.pool, tt.code, tt.want, tt.sqls, args...)
		})
	}
	if got := e.get(t, live.ID); got.State != "WORKING" || got.RowVersion != live.RowVersion {
		t.Errorf("run is %s at row version %d, want WORKING at %d", got.State, got.RowVersion, live.RowVersion)
	}
	// The same statement with a registered transition moves the run and
	// logs the move.
	var busy bool
	if err := e.pool.QueryRow(ctx, advanceRunsSQL("WORKING", "Finish", "SUCCEEDED", "succeeded", true), live.ID, live.RowVersion).Scan(&busy); err != nil {
		t.Fatal(err)
	}
	if got := e.get(t, live.ID); busy || got.State != "SUCCEEDED" || got.RowVersion != live.RowVersion+1 {
		t.Errorf("run is %s at row version %d (busy %t), want SUCCEEDED at %d", got.State, got.RowVersion, busy, live.RowVersion+1)
	}
	h := e.history(t, live.ID)
	if last := h[len(h)-1]; last.Event != "Finish" || last.To != "SUCCEEDED" {
		t.Errorf("last log row %s -> %s on %s, want the Finish to SUCCEEDED", last.From, last.To, last.Event)
	}
}
