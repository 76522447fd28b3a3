package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime/store"
)

// TestRecordRunsActionsInItsTransaction: a transition's Actions run inside
// the write, with its transaction in their context; what they write commits
// with the transition, and their error rolls the transition back and comes
// back from Record, as it does from a Recorder and from RecordTx.
func TestRecordRunsActionsInItsTransaction(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if _, err := e.pool.Exec(e.ctx, `CREATE TABLE clock_log (what text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("clock broke")
	write := func(what string, fail bool) func(context.Context) error {
		return func(ctx context.Context) error {
			tx, ok := store.Tx(ctx)
			if !ok {
				return errors.New("no transaction in the actions' context")
			}
			if _, err := tx.Exec(ctx, `INSERT INTO clock_log VALUES ($1)`, what); err != nil {
				return err
			}
			if fail {
				return boom
			}
			return nil
		}
	}
	logged := func() []string {
		t.Helper()
		rows, err := e.pool.Query(e.ctx, `SELECT what FROM clock_log ORDER BY what`)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		return out
	}

	run := e.start(t, "k").Run
	bad := tr("INITIATED", "Begin", "WORKING", nil)
	bad.Actions = write("failed", true)
	if _, err := e.st.Record(e.ctx, run.ID, run.RowVersion, bad); !errors.Is(err, boom) {
		t.Fatalf("Record with failing actions: %v, want %v", err, boom)
	}
	if got := e.get(t, run.ID); got.State != "INITIATED" || got.RowVersion != run.RowVersion {
		t.Errorf("after failing actions the run is in %s at row version %d, want INITIATED at %d", got.State, got.RowVersion, run.RowVersion)
	}
	if got := logged(); len(got) != 0 {
		t.Errorf("failing actions left %q", got)
	}

	// Through a Recorder, as a generated machine records.
	run, rec, err := e.st.Load(e.ctx, run.ID, orderDef(1))
	if err != nil {
		t.Fatal(err)
	}
	good := tr("INITIATED", "Begin", "WORKING", nil)
	good.Actions = write("entered WORKING", false)
	if err := rec.Record(e.ctx, good); err != nil {
		t.Fatal(err)
	}
	// In the caller's transaction: the caller's rollback takes both back.
	tx, err := e.pool.Begin(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	fin := tr("WORKING", "Finish", "SUCCEEDED", nil)
	fin.Actions = write("finished", true)
	if _, err := e.st.RecordTx(e.ctx, tx, run.ID, rec.RowVersion(), fin); !errors.Is(err, boom) {
		t.Fatalf("RecordTx with failing actions: %v, want %v", err, boom)
	}
	if err := tx.Rollback(e.ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.get(t, run.ID); got.State != "WORKING" {
		t.Errorf("run in %s, want WORKING", got.State)
	}
	if diff := cmp.Diff([]string{"entered WORKING"}, logged()); diff != "" {
		t.Errorf("actions' writes (-want +got):\n%s", diff)
	}
	if _, ok := store.Tx(e.ctx); ok {
		t.Error("store.Tx found a transaction in a plain context")
	}
}
