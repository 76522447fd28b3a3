package linearchain_test

import (
	"context"
	"testing"

	"github.com/fsmgen/fsmgen/runtime/linearchain"
)

// Raw SQL that breaks either table's machine is refused by the guards that
// fsmgen sql generated from linear_chain.fsm; a same-state update of
// another column passes.
func TestRawSQLBreakingAMachineIsRefused(t *testing.T) {
	t.Parallel()
	e, pool := newEngine(t, def("flow", 3, abc, returns(linearchain.Completed()), returns(linearchain.Completed())))
	ctx := context.Background()
	id := start(t, e, "flow", "k")
	done := start(t, e, "flow", "done")
	one := w1
	one.Batch = 1
	execute(t, e, claimOne(t, e, one)) // "k" step 0 DONE, step 1 READY
	execute(t, e, claimOne(t, e, one)) // "done" step 0
	execute(t, e, claimOne(t, e, one)) // "k" done: COMPLETED
	wantStatuses(t, e, id, "COMPLETED", "DONE", "DONE")
	for _, tc := range []struct {
		sql  string
		args []any
		code string
		msg  string
	}{
		{`UPDATE workflow_step SET status = 'DONE' WHERE instance_id = $1 AND step_seq = 1`, []any{done}, "FS006",
			`machine Step (type "linear_chain_step" version 1): workflow_step.status may not move from READY to DONE`},
		{`UPDATE workflow_step SET status = 'READY' WHERE instance_id = $1 AND step_seq = 0`, []any{id}, "FS006",
			`machine Step (type "linear_chain_step" version 1): workflow_step.status may not move from DONE to READY`},
		{`UPDATE workflow_instance SET status = 'RUNNING' WHERE id = $1`, []any{id}, "FS006",
			`machine Instance (type "linear_chain_instance" version 1): workflow_instance.status may not move from COMPLETED to RUNNING`},
		{`INSERT INTO workflow_step (instance_id, step_seq, step_type, status, max_attempts, created_at, updated_at)
		  VALUES ($1, 9, 'X', 'READY', 1, now(), now())`, []any{done}, "FS006",
			`machine Step (type "linear_chain_step" version 1): a row of workflow_step is inserted in PENDING, not in READY`},
		{`UPDATE workflow_step SET status = 'RUNNING', locked_by = 'x', locked_until = now() WHERE instance_id = $1 AND step_seq = 1`, []any{done}, "", ""},
		{`UPDATE workflow_step SET status = 'READY' WHERE instance_id = $1 AND step_seq = 1`, []any{done}, "FS006",
			`machine Step (type "linear_chain_step" version 1): workflow_step.status moves from RUNNING to READY on one of RecoverLease, Retry; name it in setting fsmgen.event, not unset`},
		{`UPDATE workflow_step SET status = 'FINISHED' WHERE instance_id = $1 AND step_seq = 1`, []any{done}, "23514", ""},
		{`UPDATE workflow_step_status_log SET worker = 'me'`, nil, "FS002", "workflow_step_status_log is append-only: UPDATE refused"},
		{`DELETE FROM workflow_instance_status_log`, nil, "FS002", "workflow_instance_status_log is append-only: DELETE refused"},
		{`UPDATE workflow_step SET last_error = 'note', status = 'DONE' WHERE instance_id = $1 AND step_seq = 0`, []any{id}, "", ""},
	} {
		_, err := pool.Exec(ctx, tc.sql, tc.args...)
		if tc.code == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.sql, err)
			}
			continue
		}
		if got := pgCode(err); got != tc.code {
			t.Errorf("%s: error %v, want SQLSTATE %s", tc.sql, err, tc.code)
			continue
		}
		if tc.msg != "" && err.Error() != "ERROR: "+tc.msg+" (SQLSTATE "+tc.code+")" {
			t.Errorf("%s:\n got %s\nwant %s", tc.sql, err, tc.msg)
		}
	}
}

// Migrate applies a generated guard again when its text differs from the
// one the database recorded (the machine changed), so that a database
// migrated before the change gets the new guard; other migrations run once.
func TestMigrateAppliesAChangedGuardAgain(t *testing.T) {
	t.Parallel()
	_, pool := newEngine(t)
	ctx := context.Background()
	// A database whose step guard is an older one: no trigger, and
	// another checksum on record.
	if _, err := pool.Exec(ctx, `DROP TRIGGER workflow_step_status_fsm_update ON workflow_step;
		UPDATE workflow_chain_migrations SET checksum = 'older' WHERE version = 3`); err != nil {
		t.Fatal(err)
	}
	if err := linearchain.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	var triggers, clocks int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM pg_trigger WHERE tgname = 'workflow_step_status_fsm_update'),
		(SELECT count(*) FROM workflow_clock)`).Scan(&triggers, &clocks); err != nil {
		t.Fatal(err)
	}
	if triggers != 1 || clocks != 1 {
		t.Errorf("after Migrate: %d step guard triggers, %d clock rows; want 1 and 1", triggers, clocks)
	}
}
