package enginestore_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"testing"

	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// TestClaimReadsNoOtherDueRuns: a claim of any due run reads a few buffers
// however many runs of other types are due, also in a database whose
// statistics saw most runs finished, whose plan of the claim (generic, made
// once per connection) once read the runs of a claim of one run by the
// claim index, filtering on the id: every due run of every type, at every
// claim.
func TestClaimReadsNoOtherDueRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t, pgtest.SkipInvariants())
	if err := store.New(pool).Register(ctx, chain()); err != nil {
		t.Fatal(err)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	insert := func(n int, typ, state, status, due string) {
		t.Helper()
		// Written as a bulk load, the triggers off (a superuser's), without
		// the log rows that the invariant check would look for.
		_, err := conn.Exec(ctx, fmt.Sprintf(`
			SET session_replication_role = replica;
			INSERT INTO workflow_runs (workflow_type, current_state, status, tenant_id, correlation_id, idempotency_key,
				definition_version, created_at, updated_at, attempt_started_at, next_run_at)
			SELECT '%s', '%s', '%s', 't', gen_random_uuid(), '%s' || g, 1, now(), now(), now(), %s
			FROM generate_series(1, %d) g;
			RESET session_replication_role`, typ, state, status, typ+status, due, n))
		if err != nil {
			t.Fatal(err)
		}
	}
	// The statistics see 20,000 finished runs and none running; then
	// 5,000 runs of a type the worker does not drive fall due.
	insert(20000, "chain", "C", "succeeded", "NULL")
	if _, err := conn.Exec(ctx, "ANALYZE workflow_runs"); err != nil {
		t.Fatal(err)
	}
	insert(5000, "other", "A", "running", "now() - interval '1 hour'")

	// A connection of its own, which plans the claim now.
	fresh, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Release()
	conn.Release()
	buffers := regexp.MustCompile(`Function Scan on fsm_claim_runs .*\n\s+Buffers: shared hit=(\d+)`)
	for i := range 3 {
		var plan string
		rows, err := fresh.Query(ctx, `EXPLAIN (ANALYZE, BUFFERS, TIMING OFF)
			SELECT * FROM fsm_claim_runs('{1/chain}', NULL, 8, 'w', 60000000, NULL)`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var l string
			if err := rows.Scan(&l); err != nil {
				t.Fatal(err)
			}
			plan += l + "\n"
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		m := buffers.FindStringSubmatch(plan)
		if m == nil {
			t.Fatalf("no buffers in the plan:\n%s", plan)
		}
		// The first claim of a connection plans the function's statement,
		// reading the catalogs.
		if n, _ := strconv.Atoi(m[1]); i > 0 && n > 20 {
			t.Errorf("claim %d read %d buffers with 5,000 due runs of another type, want a few:\n%s", i, n, plan)
		}
	}
}
