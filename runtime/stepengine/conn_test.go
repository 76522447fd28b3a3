package stepengine_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/stepengine"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// TestLostConnectionsAreRiddenOut: the connections the engine writes a
// run on are lost while a step runs (the server restarted, a proxy cut
// them). The engine writes again on new connections, as runtime/engine and
// the linear chain do: the run ends as it would have, in the database as
// on disk, rather than failing with the connection's error and waiting to
// be run again.
func TestLostConnectionsAreRiddenOut(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	// Idle connections are handed out unchecked, so the engine's next
	// statement is sent on a lost one.
	cfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return false }
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	st := store.New(pool)
	e := stepengine.New(st, stepengine.WithClock(stepClock()))
	ctx := context.Background()
	if err := e.Register(ctx); err != nil {
		t.Fatal(err)
	}
	killed := 0
	kill := func(ok bool) func(context.Context, stepengine.RunContext, *stepengine.RunState, *stepengine.Logger) (stepengine.StepResult, error) {
		return func(ctx context.Context, _ stepengine.RunContext, _ *stepengine.RunState, _ *stepengine.Logger) (stepengine.StepResult, error) {
			conn, err := pgx.Connect(ctx, dsn)
			if err != nil {
				return stepengine.StepResult{}, err
			}
			defer conn.Close(ctx)
			var n int
			if err := conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 5000))
				FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&n); err != nil {
				return stepengine.StepResult{}, err
			}
			killed += n
			if !ok {
				return stepengine.StepResult{Error: "rows missing"}, nil
			}
			return stepengine.StepResult{OK: true}, nil
		}
	}
	for _, tc := range []struct {
		name  string
		ok    bool
		want  []string
		state string
	}{
		{"succeeded", true, []string{"OK", "OK", "OK", "OK"}, "OK"},
		// The failure's transaction (the run FAILED, the third step
		// SKIPPED) is written on a new connection too.
		{"failed", false, []string{"FAILED", "OK", "FAILED", "SKIPPED"}, "FAILED"},
	} {
		killed = 0
		wf := stepengine.Workflow{Name: "report", Steps: []stepengine.Step{
			{Name: "first", Run: kill(true)}, {Name: "second", Run: kill(tc.ok)}, {Name: "third", Run: kill(true)},
		}}
		res, err := e.Run(ctx, wf, stepengine.RunOptions{RunsDir: t.TempDir()})
		if err != nil {
			t.Fatalf("%s: Run after lost connections: %v", tc.name, err)
		}
		if killed == 0 {
			t.Fatalf("%s: the steps killed no connection", tc.name)
		}
		if diff := cmp.Diff(tc.want, append([]string{res.Status}, res.StepStates...)); diff != "" {
			t.Errorf("%s: run and step statuses (-want +got):\n%s", tc.name, diff)
		}
		r, err := st.Get(ctx, res.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if r.State != tc.state || r.Attempt != 1 {
			t.Errorf("%s: run in the database: %s, attempt %d; want %s at attempt 1", tc.name, r.State, r.Attempt, tc.state)
		}
	}
}

// TestRunHeldIsNotTakenOver: while a Run runs a run id, a Run of the same
// id is refused with ErrRunHeld and changes nothing, neither the first
// run's directory nor its rows; the first run ends as it would have.
func TestRunHeldIsNotTakenOver(t *testing.T) {
	t.Parallel()
	e, st := newEngine(t)
	ctx := context.Background()
	runsDir := t.TempDir()
	started, proceed := make(chan stepengine.RunContext), make(chan struct{})
	var calls atomic.Int32
	wf := stepengine.Workflow{Name: "report", Steps: []stepengine.Step{
		{Name: "write", Run: func(_ context.Context, rc stepengine.RunContext, _ *stepengine.RunState, _ *stepengine.Logger) (stepengine.StepResult, error) {
			if err := os.WriteFile(filepath.Join(rc.ArtifactsDir(), "report.csv"), []byte("a\n"), 0o644); err != nil {
				return stepengine.StepResult{}, err
			}
			if calls.Add(1) == 1 { // the first run waits; a second, if any, does not
				started <- rc
				<-proceed
			}
			return stepengine.StepResult{OK: true}, nil
		}},
	}}
	type result struct {
		res stepengine.RunResult
		err error
	}
	first := make(chan result, 1)
	go func() {
		res, err := e.Run(ctx, wf, stepengine.RunOptions{RunsDir: runsDir})
		first <- result{res, err}
	}()
	rc := <-started
	_, err := e.Run(ctx, wf, stepengine.RunOptions{RunsDir: runsDir, RunID: rc.RunID()})
	if !errors.Is(err, stepengine.ErrRunHeld) || err.Error() != "rerun "+rc.RunID()+": run held by another process" {
		t.Errorf("a second Run of %s: %v, want ErrRunHeld", rc.RunID(), err)
	}
	if _, err := os.Stat(filepath.Join(rc.ArtifactsDir(), "report.csv")); err != nil {
		t.Errorf("the first run's files after the second Run: %v", err)
	}
	close(proceed)
	r := <-first
	if r.err != nil || r.res.Status != "OK" {
		t.Fatalf("the first run: %+v, %v; want it OK", r.res.Summary, r.err)
	}
	got, err := st.Get(ctx, rc.RunID())
	if err != nil {
		t.Fatal(err)
	}
	if got.State != "OK" || got.Attempt != 1 {
		t.Errorf("run in the database: %s, attempt %d; want OK at attempt 1", got.State, got.Attempt)
	}
}
