package benchdb

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgxpool"
)

// floorRows counts the rows the floor's INSERTs wrote, leaving out the
// warm-up rows (v = 0).
func floorRows(tb testing.TB, pool *pgxpool.Pool) int {
	tb.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), Mark+"SELECT count(*) FROM bench_floor WHERE v <> 0").Scan(&n); err != nil {
		tb.Fatal(err)
	}
	return n
}

// TestFloorCommitsOneRowPerOperation runs Floor for 200 operations at 4
// connections: 200 rows, each its own statement and write transaction,
// every connection opened before the operations began.
func TestFloorCommitsOneRowPerOperation(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, MaxConns(4))
	res := Floor(t, pool, 4, 200)
	rows := floorRows(t, pool)
	opened := pool.Stat().TotalConns()
	if diff := cmp.Diff([]int{200, 200, 200}, []int{res.Ops, rows, len(res.Latencies)}); diff != "" {
		t.Errorf("operations, rows and latencies (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(int32(4), opened); diff != "" {
		t.Errorf("connections opened (-want +got):\n%s", diff)
	}
	if Server(t).Statements && res.Cost.Statements != 200 {
		t.Errorf("statements = %d, want 200", res.Cost.Statements)
	}
	if res.Cost.WriteXacts < 200 {
		t.Errorf("write transactions = %d, want at least 200 (server-wide)", res.Cost.WriteXacts)
	}
	if res.Elapsed <= 0 || res.Percentile(0.5) <= 0 {
		t.Errorf("elapsed %v, p50 %v µs: want both measured", res.Elapsed, res.Percentile(0.5))
	}
}

// TestPgbenchRunsTheFloorInsert runs the pgbench cross-check for one
// second at 2 clients: the rows pgbench reports are in the table, one
// statement each.
func TestPgbenchRunsTheFloorInsert(t *testing.T) {
	if _, err := PgbenchPath(); err != nil {
		t.Skipf("no pgbench: %v", err)
	}
	old := *PgbenchTime
	*PgbenchTime = time.Second
	defer func() { *PgbenchTime = old }()
	pool := NewPool(t)
	res := Pgbench(t, pool, 2)
	rows := floorRows(t, pool)
	if res.Ops == 0 || res.Ops != rows {
		t.Errorf("pgbench reported %d transactions, the table holds %d rows; want as many, and some", res.Ops, rows)
	}
	if Server(t).Statements && res.Cost.Statements != int64(res.Ops) {
		t.Errorf("statements = %d, want one per transaction (%d)", res.Cost.Statements, res.Ops)
	}
	if res.PerSecond() <= 0 {
		t.Errorf("%v transactions per second", res.PerSecond())
	}
}
