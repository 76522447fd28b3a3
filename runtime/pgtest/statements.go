package pgtest

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/multitracer"
	"github.com/jackc/pgx/v5/pgxpool"
)

// StatementCounter counts the statements that the connections of a config
// send to the server, for a test that holds an operation to a number of
// round trips. It is a pgx tracer: each Query, QueryRow and Exec is one
// statement (BEGIN and COMMIT included), each query of a batch is one, and
// each CopyFrom is one. The statements pgx prepares on its own before it
// runs one (its statement cache) are not counted: they are part of running
// that statement. It counts round trips too (Trips): a batch, which pgx
// sends as one pipeline, is one. It is safe for concurrent use.
type StatementCounter struct {
	mu    sync.Mutex
	names []string
	trips int
}

var (
	_ pgx.QueryTracer    = (*StatementCounter)(nil)
	_ pgx.BatchTracer    = (*StatementCounter)(nil)
	_ pgx.CopyFromTracer = (*StatementCounter)(nil)
)

// CountStatements installs a StatementCounter on cfg, beside the tracer cfg
// already has, if any, and returns it. Call it before the pool or the
// connection is made:
//
//	cfg, err := pgxpool.ParseConfig(dsn)
//	...
//	count := pgtest.CountStatements(cfg.ConnConfig)
//	pool, err := pgxpool.NewWithConfig(ctx, cfg)
//	...
//	count.Take() // forget what came before
//	// ... the operation ...
//	got := count.Take() // the statements it sent, by name
func CountStatements(cfg *pgx.ConnConfig) *StatementCounter {
	c := &StatementCounter{}
	if cfg.Tracer == nil {
		cfg.Tracer = c
	} else {
		cfg.Tracer = multitracer.New(cfg.Tracer, c)
	}
	return c
}

// Take returns the statements sent since the last Take (or since the
// counter was installed), in the order they were sent, and forgets them. A
// statement is named by its sqlc query name when it has one (the
// "-- name: GetRun :one" line that sqlc puts first), else by its first
// line, lower-cased ("begin", "commit"); a CopyFrom is "copy TABLE".
func (c *StatementCounter) Take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.names
	c.names, c.trips = nil, 0
	return out
}

// Trips returns the number of round trips since the last Take: a
// statement sent alone is one, a batch of statements is one.
func (c *StatementCounter) Trips() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.trips
}

// Count returns the number of statements sent since the last Take.
func (c *StatementCounter) Count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.names)
}

// add counts the statement name, and a round trip when trip is set.
func (c *StatementCounter) add(name string, trip bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if name != "" {
		c.names = append(c.names, name)
	}
	if trip {
		c.trips++
	}
}

// statementName names sql as Take does.
func statementName(sql string) string {
	sql = strings.TrimSpace(sql)
	if rest, ok := strings.CutPrefix(sql, "-- name: "); ok {
		if name, _, ok := strings.Cut(rest, " "); ok {
			return name
		}
	}
	line, _, _ := strings.Cut(sql, "\n")
	return strings.ToLower(strings.TrimSpace(line))
}

// TraceQueryStart implements pgx.QueryTracer: it counts the statement.
func (c *StatementCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	c.add(statementName(data.SQL), true)
	return ctx
}

// TraceQueryEnd implements pgx.QueryTracer.
func (c *StatementCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TraceBatchStart implements pgx.BatchTracer: it counts the batch's round
// trip.
func (c *StatementCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.add("", true)
	return ctx
}

// TraceBatchQuery implements pgx.BatchTracer: it counts the query of the
// batch.
func (c *StatementCounter) TraceBatchQuery(_ context.Context, _ *pgx.Conn, data pgx.TraceBatchQueryData) {
	c.add(statementName(data.SQL), false)
}

// TraceBatchEnd implements pgx.BatchTracer.
func (c *StatementCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// TraceCopyFromStart implements pgx.CopyFromTracer: it counts the COPY.
func (c *StatementCounter) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceCopyFromStartData) context.Context {
	c.add("copy "+data.TableName.Sanitize(), true)
	return ctx
}

// TraceCopyFromEnd implements pgx.CopyFromTracer.
func (c *StatementCounter) TraceCopyFromEnd(context.Context, *pgx.Conn, pgx.TraceCopyFromEndData) {}

// CountedPool returns a pool on the database dsn names whose statements c
// counts (see CountStatements), closed when the test ends.
func CountedPool(tb testing.TB, dsn string) (pool *pgxpool.Pool, c *StatementCounter) {
	tb.Helper()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	c = CountStatements(cfg.ConnConfig)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	tb.Cleanup(pool.Close)
	return pool, c
}
