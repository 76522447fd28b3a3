// Package retention measures the removal of finished runs: the runtime's
// purge (fsmgen_purge_finished_runs, through admin.Cleanup) against
// dropping a time partition of a partitioned copy of the log, on the same
// million log rows, on a durable server.
package retention

import (
	"context"
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/bench/internal/benchdb"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/admin"
	"github.com/fsmgen/fsmgen/runtime/store"
)

func TestMain(m *testing.M) { benchdb.Main(m) }

var logRows = flag.Int("retention-log-rows", 1_000_000, "log rows built before each removal: runs of 10 rows, half of them finished 40 days ago")

// purge is the machine of the runs built: A -> DONE on Finish.
var purge = runtime.Definition{
	Machine: "Purge", Type: "purge", Version: 1, Initial: "A",
	States: []runtime.StateSpec{
		{Name: "A", Initial: true, Status: runtime.StatusRunning, Wait: true},
		{Name: "DONE", Status: runtime.StatusSucceeded},
	},
	Events:      []runtime.EventSpec{{Name: "Finish"}},
	Transitions: []runtime.TransitionSpec{{From: "A", Event: "Finish", To: "DONE"}},
}

// build fills the database with *logRows/10 runs of purge, each with 10 log
// rows (its creation, 8 steps with a 100-byte payload, the transition to
// DONE); the even-numbered half finished 40 days ago, the rest now. It
// writes with synchronous_commit off: its speed is no figure.
func build(ctx context.Context, b *testing.B, dsn string) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		b.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	runs := *logRows / 10
	for _, q := range []string{
		`INSERT INTO workflow_runs (workflow_type, current_state, tenant_id, correlation_id, idempotency_key,
			definition_version, created_at, updated_at, attempt_started_at)
		SELECT 'purge', 'A', 't', gen_random_uuid(), 'k' || g, 1, ts, ts, ts
		FROM generate_series(1, $1::int) g,
			LATERAL (SELECT CASE WHEN g % 2 = 0 THEN now() - interval '40 days' ELSE now() END AS ts) t`,
		`INSERT INTO workflow_step_logs (workflow_run_id, workflow_type, attempt_no, step_name, state_before,
			state_after, payload, occurred_at, kind, event, row_version, definition_version)
		SELECT id, 'purge', 1, 'start', NULL, 'A', NULL, created_at, 'created', NULL, 1, 1
		FROM workflow_runs WHERE $1::int > 0`,
		`INSERT INTO workflow_step_logs (workflow_run_id, workflow_type, attempt_no, step_name, state_before,
			state_after, payload, occurred_at, kind, event, row_version, definition_version)
		SELECT id, 'purge', 1, 'work', 'A', 'A', jsonb_build_object('i', n, 'note', repeat('x', 100)),
			created_at, 'step', NULL, 1, 1
		FROM workflow_runs, generate_series(1, 8) n WHERE $1::int > 0`,
		`WITH logged AS (
			INSERT INTO workflow_step_logs (workflow_run_id, workflow_type, attempt_no, step_name, state_before,
				state_after, payload, occurred_at, kind, event, row_version, definition_version)
			SELECT id, 'purge', 1, 'Finish', 'A', 'DONE', '{}', created_at, 'transition', 'Finish', 2, 1
			FROM workflow_runs WHERE $1::int > 0
		)
		UPDATE workflow_runs SET current_state = 'DONE', previous_state = 'A', status = 'succeeded',
			row_version = 2, finished_at = created_at, updated_at = created_at, next_run_at = NULL,
			result = jsonb_build_object('status', 'succeeded', 'workflow_run_id', id, 'attempt_no', 1)`,
		`VACUUM ANALYZE`,
	} {
		var args []any
		if q != `VACUUM ANALYZE` {
			args = []any{runs}
		}
		if _, err := pool.Exec(ctx, q, args...); err != nil {
			b.Fatalf("build: %v\n%s", err, q)
		}
	}
}

// prepare returns a pool on a fresh database with purge registered, a
// retention of 30 days for it, and the rows of build.
func prepare(ctx context.Context, b *testing.B) *pgxpool.Pool {
	dsn := benchdb.NewDatabase(b)
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	a := admin.New(store.New(pool))
	if err := store.New(pool).Register(ctx, purge); err != nil {
		b.Fatal(err)
	}
	if _, err := a.SetRetention(ctx, purge.Type, 30); err != nil {
		b.Fatal(err)
	}
	build(ctx, b, dsn)
	return pool
}

// report adds the removal's WAL and rate to the benchmark's figures.
func report(b *testing.B, before, after benchdb.Counters, elapsed time.Duration, rows int64) {
	cost := after.Since(before)
	b.ReportMetric(float64(cost.WALBytes)/(1<<20), "WAL-MB")
	b.ReportMetric(float64(rows), "log-rows-removed")
	b.ReportMetric(float64(rows)/elapsed.Seconds(), "log-rows/s")
}

// BenchmarkRetention removes the half of *logRows that belongs to runs
// finished 40 days ago, three ways:
//
//   - purge: the runtime's cleanup (admin.Cleanup, batches of
//     admin.DefaultCleanupBatch runs, each a transaction of
//     fsmgen_purge_finished_runs) removes the runs, their log rows and
//     outbox rows, with the log's append-only triggers in place;
//   - purge-one-tx: the same function in one transaction for all of them;
//   - drop-partition: the log copied into a table partitioned by
//     occurred_at, one partition before the retention's cut-off and one
//     after, and the old partition detached and dropped (the runs' own
//     rows are not removed: the figure is the log's part alone).
//
// Run it once per round (each iteration builds its million rows, outside
// the timer):
//
//	cd bench && go test -run '^$' -bench Retention -benchtime 1x -count 3 ./retention/
func BenchmarkRetention(b *testing.B) {
	if b.N > 3 {
		b.Skipf("each round builds %d log rows: run BenchmarkRetention with -benchtime 1x", *logRows)
	}
	ctx := context.Background()
	b.Run("purge", func(b *testing.B) {
		for range b.N {
			b.StopTimer()
			pool := prepare(ctx, b)
			a := admin.New(store.New(pool))
			before, err := benchdb.Take(ctx, pool)
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			start := time.Now()
			rep, err := a.Cleanup(ctx, admin.CleanupOptions{})
			elapsed := time.Since(start)
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			after, err := benchdb.Take(ctx, pool)
			if err != nil {
				b.Fatal(err)
			}
			if want := int64(*logRows / 20); rep.Total.Runs != want {
				b.Fatalf("removed %d runs, want %d", rep.Total.Runs, want)
			}
			report(b, before, after, elapsed, rep.Total.StepLogs)
		}
	})
	b.Run("purge-one-tx", func(b *testing.B) {
		for range b.N {
			b.StopTimer()
			pool := prepare(ctx, b)
			before, err := benchdb.Take(ctx, pool)
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			start := time.Now()
			var runs, rows int64
			err = pool.QueryRow(ctx, `SELECT sum(runs), sum(step_logs) FROM fsmgen_purge_finished_runs(false, NULL)`).Scan(&runs, &rows)
			elapsed := time.Since(start)
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			after, err := benchdb.Take(ctx, pool)
			if err != nil {
				b.Fatal(err)
			}
			if want := int64(*logRows / 20); runs != want {
				b.Fatalf("removed %d runs, want %d", runs, want)
			}
			report(b, before, after, elapsed, rows)
		}
	})
	b.Run("drop-partition", func(b *testing.B) {
		for range b.N {
			b.StopTimer()
			pool := prepare(ctx, b)
			for _, q := range []string{
				`CREATE TABLE plog (LIKE workflow_step_logs INCLUDING DEFAULTS) PARTITION BY RANGE (occurred_at)`,
				`CREATE TABLE plog_old PARTITION OF plog FOR VALUES FROM (MINVALUE) TO ('` + time.Now().Add(-30*24*time.Hour).UTC().Format(time.RFC3339) + `')`,
				`CREATE TABLE plog_new PARTITION OF plog FOR VALUES FROM ('` + time.Now().Add(-30*24*time.Hour).UTC().Format(time.RFC3339) + `') TO (MAXVALUE)`,
				`CREATE INDEX ON plog (workflow_run_id, id)`,
				`CREATE UNIQUE INDEX ON plog (workflow_run_id, row_version, occurred_at) WHERE kind <> 'step'`,
				`INSERT INTO plog SELECT * FROM workflow_step_logs`,
				`VACUUM ANALYZE plog`,
			} {
				if _, err := pool.Exec(ctx, q); err != nil {
					b.Fatalf("%s: %v", q, err)
				}
			}
			var rows int64
			if err := pool.QueryRow(ctx, `SELECT count(*) FROM plog_old`).Scan(&rows); err != nil {
				b.Fatal(err)
			}
			if want := int64(*logRows / 2); rows != want {
				b.Fatalf("the old partition has %d rows, want %d", rows, want)
			}
			before, err := benchdb.Take(ctx, pool)
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			start := time.Now()
			tx, err := pool.Begin(ctx)
			if err == nil {
				_, err = tx.Exec(ctx, `ALTER TABLE plog DETACH PARTITION plog_old`)
			}
			if err == nil {
				_, err = tx.Exec(ctx, `DROP TABLE plog_old`)
			}
			if err == nil {
				err = tx.Commit(ctx)
			}
			elapsed := time.Since(start)
			b.StopTimer()
			if err != nil {
				b.Fatal(fmt.Errorf("drop the old partition: %w", err))
			}
			after, err := benchdb.Take(ctx, pool)
			if err != nil {
				b.Fatal(err)
			}
			report(b, before, after, elapsed, rows)
		}
	})
}
