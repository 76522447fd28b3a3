package pgtest

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// otherTracer is a tracer a config had before the counter.
type otherTracer struct{ queries int }

func (o *otherTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	o.queries++
	return ctx
}

func (o *otherTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func TestStatementCounterCountsEveryStatementSent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1 // otherTracer is not safe for concurrent use
	other := &otherTracer{}
	cfg.ConnConfig.Tracer = other
	count := CountStatements(cfg.ConnConfig)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()

	// A query named as sqlc names it, an Exec, a QueryRow.
	if _, err := pool.Exec(ctx, "-- name: MakeTable :exec\nCREATE TEMP TABLE t (n int)"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := pool.QueryRow(ctx, "SELECT 1").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if got := count.Count(); got != 2 {
		t.Errorf("Count() = %d after two statements, want 2", got)
	}
	if diff := cmp.Diff([]string{"MakeTable", "select 1"}, count.Take()); diff != "" {
		t.Errorf("Take() mismatch (-want +got):\n%s", diff)
	}
	if got := count.Count(); got != 0 {
		t.Errorf("Count() = %d after Take, want 0", got)
	}

	// A transaction, a batch of two queries and a COPY, on the connection
	// that holds the temporary table.
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "INSERT INTO t VALUES (1)")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	b := &pgx.Batch{}
	b.Queue("INSERT INTO t VALUES (2)")
	b.Queue("-- name: CountT :one\nSELECT count(*) FROM t")
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{"t"}, []string{"n"}, pgx.CopyFromRows([][]any{{3}, {4}})); err != nil {
		t.Fatal(err)
	}
	want := []string{"begin", "insert into t values (1)", "commit", "insert into t values (2)", "CountT", `copy "t"`}
	// The batch is one round trip: begin, insert, commit, batch, copy.
	if got := count.Trips(); got != 5 {
		t.Errorf("Trips() = %d, want 5", got)
	}
	if diff := cmp.Diff(want, count.Take()); diff != "" {
		t.Errorf("Take() mismatch (-want +got):\n%s", diff)
	}
	if other.queries != 5 {
		t.Errorf("the tracer the config had saw %d queries, want 5: it is no longer called", other.queries)
	}
}
