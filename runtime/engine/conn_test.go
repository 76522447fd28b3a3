package engine_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

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

// uncheckedEnv returns an env on a database of its own whose pool hands
// out idle connections without checking them, so that a statement is made
// on a lost connection however long it was idle; edit adjusts the pool's
// config further. It returns the database's connection string too.
func uncheckedEnv(t *testing.T, edit func(*pgxpool.Config)) (env, string) {
	t.Helper()
	dsn := pgtest.NewDatabase(t)
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return false }
	if edit != nil {
		edit(cfg)
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return env{pool: pool, st: store.New(pool)}, dsn
}

// TestLostConnectionNotCharged: the handler's work is done, but the
// connections the engine writes its transition on are lost. The engine
// writes it again on a new one: the run goes on, and the lost connection is
// not counted as a failed try, with a retry policy or without one.
func TestLostConnectionNotCharged(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		pol  *runtime.RetryPolicy
	}{
		{"no retry policy", nil},
		{"retry policy", &runtime.RetryPolicy{MaxAttempts: 3, InitialInterval: time.Millisecond, Coefficient: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v, dsn := uncheckedEnv(t, nil)
			var calls, killed atomic.Int32
			d := &driver{def: jobDef("job", tc.pol, "GiveUp"), guards: ownerGuard(), handlers: map[string]handler{
				"QUEUED": constant(event("Begin")),
				"WORKING": func(ctx context.Context, run *runtime.Run) (runtime.Event, error) {
					calls.Add(1)
					n, err := killBackends(ctx, dsn)
					if err != nil {
						t.Error(err)
					}
					killed.Add(int32(n))
					return event("Finish"), nil
				},
			}}
			e := v.engine(t, engine.Config{}, d)
			run := v.start(t, e, "job", "k")
			got, err := e.Drive(context.Background(), run.ID)
			if err != nil {
				t.Fatal(err)
			}
			if killed.Load() == 0 {
				t.Fatal("the handler killed no connection")
			}
			if got.State != "DONE" || calls.Load() != 1 {
				t.Errorf("run in %s after %d calls, want DONE after 1", got.State, calls.Load())
			}
			want := []string{"created start ->QUEUED", "transition Begin QUEUED->WORKING", "transition Finish WORKING->DONE"}
			if diff := cmp.Diff(want, v.moves(t, run.ID)); diff != "" {
				t.Errorf("log (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWaitRidesOutLostConnections: Wait goes on through connections lost
// under it, and returns the run once it is finished.
func TestWaitRidesOutLostConnections(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	connected := make(chan struct{}, 16)
	v, dsn := uncheckedEnv(t, func(cfg *pgxpool.Config) {
		cfg.AfterConnect = func(context.Context, *pgx.Conn) error {
			select {
			case connected <- struct{}{}:
			default:
			}
			return nil
		}
	})
	e := v.engine(t, engine.Config{PollInterval: 20 * time.Millisecond}, approvalDriver())
	run := v.start(t, e, "approval", "k")
	runDue(t, e, 1) // QUEUED -> AWAIT: waits for Approve

	waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	waited := make(chan error, 1)
	var last runtime.Run
	go func() {
		var err error
		last, err = e.Wait(waitCtx, run.ID)
		waited <- err
	}()
	drain := func() {
		for {
			select {
			case <-connected:
			default:
				return
			}
		}
	}
	// Three times, every connection of the pool is lost; Wait connects
	// again each time, and keeps waiting.
	for range 3 {
		drain()
		n, err := killBackends(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			t.Fatal("no connection to kill")
		}
		select {
		case err := <-waited:
			t.Fatalf("Wait returned while the run waits: %v", err)
		case <-connected:
		}
	}
	if _, err := e.Signal(ctx, run.ID, event("Approve")); err != nil {
		t.Fatal(err)
	}
	runDue(t, e, 1)
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	if last.State != "DONE" {
		t.Errorf("Wait returned the run in %s", last.State)
	}
}

// TestLostAcknowledgement: transitions commit, but their acknowledgement
// is lost with the connection. The engine's next try is refused (the run
// moved, or the lease went with a final transition); the engine finds its
// own transition in the log and goes on as if it had been acknowledged.
func TestLostAcknowledgement(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	var calls, lost atomic.Int32
	d := &driver{def: jobDef("job", nil, ""), guards: ownerGuard(), handlers: map[string]handler{
		"QUEUED": constant(event("Begin")),
		"WORKING": func(context.Context, *runtime.Run) (runtime.Event, error) {
			calls.Add(1)
			return event("Finish"), nil
		},
	}}
	e := v.engine(t, engine.Config{}, d)
	e.OnAdvanced(func(string) error {
		lost.Add(1)
		return &pgconn.PgError{Severity: "FATAL", Code: "57P01", Message: "terminating connection due to administrator command"}
	})
	run := v.start(t, e, "job", "k")
	got, err := e.Drive(context.Background(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != "DONE" || calls.Load() != 1 || lost.Load() != 2 {
		t.Errorf("run in %s after %d calls and %d lost acknowledgements, want DONE after 1 and 2", got.State, calls.Load(), lost.Load())
	}
	want := []string{"created start ->QUEUED", "transition Begin QUEUED->WORKING", "transition Finish WORKING->DONE"}
	if diff := cmp.Diff(want, v.moves(t, run.ID)); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
}

// TestWorkClaimsAfterLostConnections: Work's claim fails on connections
// lost under it; it claims again at once instead of a poll interval later.
func TestWorkClaimsAfterLostConnections(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	v, dsn := uncheckedEnv(t, nil)
	e := v.engine(t, engine.Config{PollInterval: time.Hour, DisableNotify: true}, chainDriver("chain"))
	run := v.start(t, e, "chain", "k")
	if n, err := killBackends(ctx, dsn); err != nil || n == 0 {
		t.Fatalf("killed %d connections: %v", n, err)
	}
	work(t, e)
	if got := wait(t, e, run.ID, 30*time.Second); got.State != "END" {
		t.Errorf("run in %s", got.State)
	}
}
