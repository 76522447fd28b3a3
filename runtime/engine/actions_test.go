package engine_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
)

// TestActionsRunInTheTransition: the engine calls a transition's entry and
// exit actions inside the transaction that records it, with the
// transaction in their context (engine.Tx): what they write commits with
// the transition, and their error rolls it back: a signal returns it and
// the run stays where it was; a driven transition is retried like a
// failing handler.
func TestActionsRunInTheTransition(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	v.asOwner(t, `CREATE TABLE clock_log (what text NOT NULL); GRANT INSERT, SELECT ON clock_log TO `+v.role)
	boom := errors.New("clock broke")
	d := approvalDriver()
	d.def.States[2].Retry = &runtime.RetryPolicy{MaxAttempts: 3}
	d.actions = func(ctx context.Context, tr runtime.Transition) error {
		tx, ok := engine.Tx(ctx)
		if !ok {
			return errors.New("no transaction in the actions' context")
		}
		if _, err := tx.Exec(ctx, `INSERT INTO clock_log VALUES ($1)`, tr.From+"->"+tr.To); err != nil {
			return err
		}
		if tr.To == "DONE" {
			return boom
		}
		return nil
	}
	e := v.engine(t, engine.Config{}, d)
	run := v.start(t, e, "approval", "k")
	runDue(t, e, 1)
	ctx := context.Background()
	if _, err := e.Signal(ctx, run.ID, event("Approve", "by", "ops")); err != nil {
		t.Fatal(err)
	}
	// FINISHING -> DONE fails in its actions: the try fails and is retried.
	runDue(t, e, 1)
	got := v.get(t, run.ID)
	if want := "store: advance run " + run.ID + ": clock broke"; got.State != "FINISHING" || got.StepAttempt != 2 || got.LastError != want {
		t.Errorf("after failing actions: %s try %d error %q, want FINISHING try 2 error %q", got.State, got.StepAttempt, got.LastError, want)
	}
	var logged []string
	rows, err := v.owner.Query(ctx, `SELECT what FROM clock_log ORDER BY what`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		logged = append(logged, s)
	}
	if diff := cmp.Diff([]string{"AWAIT->FINISHING", "QUEUED->AWAIT"}, logged); diff != "" {
		t.Errorf("actions' writes (-want +got):\n%s", diff)
	}
}
