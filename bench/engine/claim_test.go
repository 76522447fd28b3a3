package engine_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/fsmgen/fsmgen/bench/internal/benchdb"
	"github.com/fsmgen/fsmgen/runtime/engine"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// othersDue is the number of due runs of a type the claiming engine does
// not drive, in the database of BenchmarkClaim's others=100000 case.
const othersDue = 100_000

// withOthersDue is the benchdb set-up of that database: a definition the
// engine does not register and othersDue runs of it, due an hour ago, each
// with its created log row, as Start writes them.
var withOthersDue = benchdb.Setup(fmt.Sprintf("others-due-%d", othersDue), func(ctx context.Context, conn *pgx.Conn) error {
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		for _, q := range []string{
			`INSERT INTO workflow_definitions (workflow_type, version, initial_state, digest, definition)
			 VALUES ('bench_other', 1, 'S1', 'bench', '{}')`,
			`INSERT INTO workflow_states (workflow_type, version, state, status, is_initial)
			 VALUES ('bench_other', 1, 'S1', 'running', true)`,
			fmt.Sprintf(`WITH ins AS (
				INSERT INTO workflow_runs (workflow_type, current_state, tenant_id, correlation_id, idempotency_key,
					definition_version, created_at, updated_at, attempt_started_at, next_run_at)
				SELECT 'bench_other', 'S1', 'bench', gen_random_uuid(), 'k' || g, 1,
					now() - interval '1 hour', now() - interval '1 hour', now() - interval '1 hour', now() - interval '1 hour'
				FROM generate_series(1, %d) g
				RETURNING id, workflow_type, attempt_no, current_state, created_at, row_version, definition_version)
			 INSERT INTO workflow_step_logs (workflow_run_id, workflow_type, attempt_no, step_name, state_before,
				state_after, payload, occurred_at, kind, event, row_version, definition_version)
			 SELECT id, workflow_type, attempt_no, 'start', NULL, current_state, NULL, created_at, 'created', NULL,
				row_version, definition_version
			 FROM ins`, othersDue),
		} {
			if _, err := tx.Exec(ctx, q); err != nil {
				return err
			}
		}
		return nil
	})
})

// BenchmarkClaim times one claim of an idle worker (engine.RunDue, which
// claims and finds nothing of its own due) with no other runs in the
// database, and with othersDue due runs of a type it does not drive. One
// iteration is one claim statement. Besides ns/op it reports the server's
// time per claim, planning included (server-µs/claim), which a busy machine
// disturbs less than the client's.
//
//	go test -run '^$' -bench Claim -count 6 ./engine/ | tee /tmp/claim.txt
//	benchstat -col /others /tmp/claim.txt
func BenchmarkClaim(b *testing.B) {
	for _, c := range []struct {
		others int
		opts   []benchdb.Option
	}{{0, nil}, {othersDue, []benchdb.Option{withOthersDue}}} {
		b.Run(fmt.Sprintf("others=%d", c.others), func(b *testing.B) {
			ctx := context.Background()
			pool := benchdb.NewPool(b, c.opts...)
			if _, err := pool.Exec(ctx, benchdb.Mark+"VACUUM ANALYZE workflow_runs"); err != nil {
				b.Fatal(err)
			}
			var n int
			if err := pool.QueryRow(ctx, benchdb.Mark+"SELECT count(*) FROM workflow_runs WHERE status = 'running' AND next_run_at <= now()").Scan(&n); err != nil || n != c.others {
				b.Fatalf("%d due runs, %v; want %d", n, err, c.others)
			}
			e, err := engine.New(store.New(pool), engine.Config{Logger: quietLog})
			if err != nil {
				b.Fatal(err)
			}
			if err := e.Register(ctx, driver{def: chain("bench_claim")}); err != nil {
				b.Fatal(err)
			}
			before, err := benchdb.Take(ctx, pool)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if n, err := e.RunDue(ctx); err != nil || n != 0 {
					b.Fatalf("RunDue: %d, %v", n, err)
				}
			}
			after, err := benchdb.Take(ctx, pool)
			if err != nil {
				b.Fatal(err)
			}
			after.Since(before).Report(b, float64(b.N), "claim")
		})
	}
}
