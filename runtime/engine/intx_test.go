package engine_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
)

// TestInTx: what a handler writes with engine.InTx commits with its
// transition, told the run's new row version; an error from it refuses the
// transition, which is then retried like a failed try; outside the engine
// InTx is ErrNoEngine.
func TestInTx(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	v := newEnv(t)
	v.asOwner(t, `CREATE TABLE intx_marks (run_id UUID, row_version BIGINT, try INT)`)
	v.asOwner(t, `GRANT SELECT, INSERT ON intx_marks TO `+v.role)
	policy := &runtime.RetryPolicy{MaxAttempts: 3, InitialInterval: 0, Coefficient: 1}
	d := &driver{def: jobDef("intx", policy, "GiveUp"), guards: ownerGuard(), handlers: map[string]handler{
		"QUEUED": constant(event("Begin")),
		"WORKING": func(_ context.Context, run *runtime.Run) (runtime.Event, error) {
			try := run.StepAttempt
			err := engine.InTx(run, func(ctx context.Context, tx pgx.Tx, c engine.Committed) error {
				if try == 1 {
					return errors.New("the first try's write fails")
				}
				_, err := tx.Exec(ctx, `INSERT INTO intx_marks VALUES ($1, $2, $3)`, c.RunID, c.RowVersion, try)
				return err
			})
			if err != nil {
				return nil, err
			}
			return event("Finish"), nil
		},
	}}
	e := v.engine(t, engine.Config{}, d)
	run := v.start(t, e, "intx", "k1")
	for {
		r, err := e.Drive(ctx, run.ID)
		if err != nil {
			t.Fatal(err)
		}
		if r.Terminal() {
			run = r
			break
		}
	}
	if run.State != "DONE" {
		t.Fatalf("run ended in %s, want DONE", run.State)
	}
	var marks [][2]int64
	rows, err := v.pool.Query(ctx, `SELECT row_version, try FROM intx_marks WHERE run_id = $1`, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var m [2]int64
		if err := rows.Scan(&m[0], &m[1]); err != nil {
			t.Fatal(err)
		}
		marks = append(marks, m)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([][2]int64{{run.RowVersion, 2}}, marks); diff != "" {
		t.Errorf("marks (row version, try) (-want +got):\n%s", diff)
	}
	if err := engine.InTx(&runtime.Run{ID: "x"}, func(context.Context, pgx.Tx, engine.Committed) error { return nil }); !errors.Is(err, runtime.ErrNoEngine) {
		t.Errorf("outside the engine: err = %v, want ErrNoEngine", err)
	}
}
