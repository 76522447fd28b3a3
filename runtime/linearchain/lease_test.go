package linearchain_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/runtime/linearchain"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
)

// uncheckedEngine returns an engine on a fresh, migrated database whose
// pool hands out idle connections without checking them, so that a
// statement is sent on a lost connection; and the database's URL.
func uncheckedEngine(t *testing.T, defs ...linearchain.Definition) (*linearchain.Engine, *pgxpool.Pool, string) {
	t.Helper()
	dsn := pgtest.NewDatabase(t)
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return false }
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := linearchain.Migrate(context.Background(), pool); err != nil {
		t.Fatal(err)
	}
	e := linearchain.New(pool)
	for _, d := range defs {
		if err := e.Register(d); err != nil {
			t.Fatal(err)
		}
	}
	return e, pool, dsn
}

// killBackends terminates every other connection to the database of dsn,
// waiting until each is gone, and returns how many there were.
func killBackends(ctx context.Context, dsn string) (int, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var n int
	err = conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 5000))
		FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&n)
	return n, err
}

// TestLostConnectionIsNotCharged: the handler's work is done, but the
// connections its result would be written on are lost. The result is
// written on a new connection: the step goes on, and no attempt is spent
// on the lost connection (no LEASE_EXPIRED recovery later).
func TestLostConnectionIsNotCharged(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		result linearchain.Result
		want   []string
	}{
		{"completed", linearchain.Completed(), []string{"RUNNING", "DONE", "READY"}},
		{"waiting", linearchain.Waiting("paid", time.Hour, []byte(`{"n":1}`)), []string{"RUNNING", "WAITING", "PENDING"}},
		{"retry", linearchain.Retry(time.Hour, "busy"), []string{"RUNNING", "READY", "PENDING"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var dsn string
			killed := 0
			h := func(ctx context.Context, _ linearchain.Task) linearchain.Result {
				n, err := killBackends(ctx, dsn)
				if err != nil {
					t.Error(err)
				}
				killed += n
				return tc.result
			}
			d := linearchain.Definition{Type: "flow", Version: 1, Steps: []linearchain.Step{
				{Type: "A", MaxAttempts: 3, Handler: h}, {Type: "B", Handler: h},
			}}
			var e *linearchain.Engine
			e, _, dsn = uncheckedEngine(t, d)
			id := start(t, e, "flow", "k")
			task := claimOne(t, e, w1)
			a, err := e.Execute(context.Background(), task)
			if err != nil {
				t.Fatalf("Execute after a lost connection: %v", err)
			}
			if killed == 0 {
				t.Fatal("the handler killed no connection")
			}
			if a.Instance != "RUNNING" {
				t.Errorf("applied %+v, want the instance RUNNING", a)
			}
			in := wantStatuses(t, e, id, tc.want...)
			if le := in.Steps[0].LastError; le != nil && *le == "LEASE_EXPIRED" {
				t.Errorf("step 0 %+v: the lost connection was charged", in.Steps[0])
			}
		})
	}
}

// TestHeartbeatKeepsALongHandlersLease: a handler that runs longer than
// the lease keeps it, extended while it runs, and its result is written.
func TestHeartbeatKeepsALongHandlersLease(t *testing.T) {
	t.Parallel()
	var pool *pgxpool.Pool
	h := func(ctx context.Context, task linearchain.Task) linearchain.Result {
		// Run until the database's clock is past the lease the claim gave,
		// with the step still held.
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			var outlived bool
			err := pool.QueryRow(ctx, `SELECT workflow_now() > $3 AND status = 'RUNNING' AND locked_by = $4 AND locked_until >= workflow_now()
				FROM workflow_step WHERE instance_id = $1 AND step_seq = $2`, task.InstanceID, task.StepSeq, task.LockedUntil, task.WorkerID).Scan(&outlived)
			if err != nil {
				return linearchain.Dead(fmt.Sprintf("the handler's lease: %v", err))
			}
			if outlived {
				return linearchain.Completed()
			}
			select {
			case <-ctx.Done():
				return linearchain.Dead(fmt.Sprintf("the handler's context ended: %v", context.Cause(ctx)))
			case <-tick.C:
			}
		}
	}
	var e *linearchain.Engine
	e, pool = newEngine(t, linearchain.Definition{Type: "flow", Version: 1, Steps: []linearchain.Step{{Type: "A", Handler: h}}})
	id := start(t, e, "flow", "k")
	task := claimOne(t, e, linearchain.ClaimOptions{WorkerID: w1.WorkerID, Lease: 600 * time.Millisecond})
	a, err := e.Execute(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	if a.Instance != "COMPLETED" {
		t.Errorf("applied %+v, want the instance COMPLETED", a)
	}
	wantStatuses(t, e, id, "COMPLETED", "DONE")
}

// TestLostLeaseCancelsTheHandler: when another worker recovers the step of
// a running handler (its lease expired by the database's clock), the
// handler's context is cancelled with ErrLeaseLost at the next heartbeat,
// and nothing is written.
func TestLostLeaseCancelsTheHandler(t *testing.T) {
	t.Parallel()
	started, cause := make(chan struct{}), make(chan error, 1)
	h := func(ctx context.Context, _ linearchain.Task) linearchain.Result {
		close(started)
		select {
		case <-ctx.Done():
			cause <- context.Cause(ctx)
		case <-time.After(time.Minute):
			cause <- errors.New("the handler's context did not end within a minute")
		}
		return linearchain.Completed()
	}
	e, pool := newEngine(t, linearchain.Definition{Type: "flow", Version: 1, Steps: []linearchain.Step{{Type: "A", MaxAttempts: 3, Handler: h}}})
	id := start(t, e, "flow", "k")
	task := claimOne(t, e, linearchain.ClaimOptions{WorkerID: w1.WorkerID, Lease: time.Hour, Heartbeat: 10 * time.Millisecond})
	done := make(chan error, 1)
	go func() {
		_, err := e.Execute(context.Background(), task)
		done <- err
	}()
	<-started
	if err := linearchain.AdvanceClock(context.Background(), pool, 2*time.Hour); err != nil {
		t.Fatal(err)
	}
	if c := claimNone(t, e, linearchain.ClaimOptions{WorkerID: w2.WorkerID, Lease: time.Hour, Batch: 1}); c.Recovered != 1 {
		t.Fatalf("claim by %s: %+v, want the step recovered", w2.WorkerID, c)
	}
	if err := <-cause; !errors.Is(err, linearchain.ErrLeaseLost) {
		t.Errorf("the handler's context ended by %v, want ErrLeaseLost", err)
	}
	if err := <-done; !errors.Is(err, linearchain.ErrLeaseLost) {
		t.Errorf("Execute: %v, want ErrLeaseLost", err)
	}
	in := wantStatuses(t, e, id, "RUNNING", "READY")
	lastError := "-"
	if in.Steps[0].LastError != nil {
		lastError = *in.Steps[0].LastError
	}
	if diff := cmp.Diff([]any{1, "LEASE_EXPIRED"}, []any{in.Steps[0].Attempts, lastError}); diff != "" {
		t.Errorf("step 0 attempts and last error (-want +got):\n%s", diff)
	}
}
