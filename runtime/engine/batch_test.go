package engine_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
)

// fourStepDriver: S0 -> S1 -> S2 -> S3 -> END, every state driven, each
// handler answering at once.
func fourStepDriver(typ string) *driver {
	d := def(typ,
		[]runtime.StateSpec{running("S0"), running("S1"), running("S2"), running("S3"), final("END", runtime.StatusSucceeded)},
		[]string{"S0", "Go1", "S1"}, []string{"S1", "Go2", "S2"}, []string{"S2", "Go3", "S3"}, []string{"S3", "Go4", "END"},
	)
	return &driver{def: d, handlers: map[string]handler{
		"S0": constant(event("Go1")), "S1": constant(event("Go2", "n", 2)), "S2": constant(event("Go3")), "S3": constant(event("Go4")),
	}}
}

var chainMoves = []string{
	"created start ->S0", "transition Go1 S0->S1", "transition Go2 S1->S2", "transition Go3 S2->S3", "transition Go4 S3->END",
}

// driveChains starts n chains, lets e work them to the end and checks each
// run's log.
func driveChains(t *testing.T, v env, e *engine.Engine, n int) {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = v.start(t, e, "chain", fmt.Sprint(i)).ID
	}
	work(t, e)
	for _, id := range ids {
		if got := wait(t, e, id, time.Minute); got.State != "END" || got.RowVersion != 5 {
			t.Errorf("run %s ended in %s at row version %d", id, got.State, got.RowVersion)
		}
		if diff := cmp.Diff(chainMoves, v.moves(t, id)); diff != "" {
			t.Errorf("run %s's log (-want +got):\n%s", id, diff)
		}
	}
}

// TestGroupCommit: many runs driven at once end where they should, each
// transition logged once, and commits hold the transitions of several
// runs.
func TestGroupCommit(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	e := v.engine(t, engine.Config{Concurrency: 16, PollInterval: 10 * time.Millisecond}, fourStepDriver("chain"))
	driveChains(t, v, e, 120)
	var most int
	if err := v.pool.QueryRow(context.Background(), `SELECT max(n) FROM (
		SELECT count(*) AS n FROM workflow_step_logs WHERE kind = 'transition' GROUP BY xmin::text) c`).Scan(&most); err != nil {
		t.Fatal(err)
	}
	if most < 2 {
		t.Errorf("at most %d transition per transaction: no commit was shared", most)
	}
}

// TestGroupCommitWindow: with a batch window and a small batch size the
// runs end as well.
func TestGroupCommitWindow(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	e := v.engine(t, engine.Config{Concurrency: 8, BatchSize: 3, BatchWindow: time.Millisecond, PollInterval: 10 * time.Millisecond}, fourStepDriver("chain"))
	driveChains(t, v, e, 40)
}

// TestGroupCommitLostConnection: the connection of a batch is lost under
// its statement, which therefore did not commit. The sessions write their
// transitions again through the engine's retry of lost connections, and
// every transition is logged exactly once.
func TestGroupCommitLostConnection(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	v.asOwner(t, `
		CREATE SEQUENCE kills;
		GRANT USAGE, SELECT ON SEQUENCE kills TO `+v.role+`;
		CREATE FUNCTION kill_once() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN IF nextval('kills') = 3 THEN PERFORM pg_terminate_backend(pg_backend_pid()); END IF; RETURN NEW; END $$;
		CREATE TRIGGER kill_once BEFORE INSERT ON workflow_step_logs FOR EACH ROW
		WHEN (NEW.kind = 'transition') EXECUTE FUNCTION kill_once();`)
	e := v.engine(t, engine.Config{Concurrency: 8, PollInterval: 10 * time.Millisecond}, fourStepDriver("chain"))
	driveChains(t, v, e, 30)
	var kills int64
	if err := v.pool.QueryRow(ctx, "SELECT last_value FROM kills").Scan(&kills); err != nil {
		t.Fatal(err)
	}
	if kills < 3 {
		t.Errorf("the connection was never killed (%d transition rows tried)", kills)
	}
}

// TestGroupCommitOff: BatchSize 1 writes every transition alone.
func TestGroupCommitOff(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	e := v.engine(t, engine.Config{Concurrency: 8, BatchSize: 1, PollInterval: 10 * time.Millisecond}, fourStepDriver("chain"))
	driveChains(t, v, e, 20)
	var most int
	if err := v.pool.QueryRow(context.Background(), `SELECT max(n) FROM (
		SELECT count(*) AS n FROM workflow_step_logs WHERE kind = 'transition' GROUP BY xmin::text) c`).Scan(&most); err != nil {
		t.Fatal(err)
	}
	if most != 1 {
		t.Errorf("%d transitions in one transaction with batching off", most)
	}
}
