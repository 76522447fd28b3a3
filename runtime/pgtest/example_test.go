package pgtest_test

import (
	"context"
	"fmt"
	"log"

	"github.com/jackc/pgx/v5/pgxpool"

	subs "github.com/fsmgen/fsmgen/machines/subscription/subscription"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// An Example has no testing.T: OpenPool gives it a migrated database of
// its own, on the server FSMGEN_TEST_DATABASE_URL names or on a throwaway
// cluster, dropped when the package's TestMain (pgtest.Main) ends. A test
// calls NewPool(t) instead, whose database is dropped when the test ends.
func ExampleOpenPool() {
	ctx := context.Background()
	pool, err := pgtest.OpenPool(ctx)
	if err != nil {
		log.Fatal(err)
	}
	var runs int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM workflow_runs").Scan(&runs); err != nil {
		log.Fatal(err)
	}
	fmt.Println(runs, "runs")
	// CheckInvariants checks what the runtime promises of its tables,
	// which NewPool does at the end of every test.
	fmt.Println(pgtest.CheckInvariants(ctx, pool))
	// Output:
	// 0 runs
	// <nil>
}

// CountStatements counts the statements an operation sends, for a test
// that holds it to a number of round trips.
func ExampleCountStatements() {
	ctx := context.Background()
	db, err := pgtest.OpenPool(ctx)
	if err != nil {
		log.Fatal(err)
	}
	cfg := db.Config() // in a test: pgxpool.ParseConfig(pgtest.NewDatabase(t))
	count := pgtest.CountStatements(cfg.ConnConfig)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	st := store.New(pool)
	if err := st.Register(ctx, subs.Definition()); err != nil {
		log.Fatal(err)
	}
	count.Take() // forget what came before
	if _, err := st.Start(ctx, runtime.StartRequest{Type: subs.Type, Version: subs.Version, IdempotencyKey: "customer-42", Owner: runtime.Owner{TenantID: "acme"}}); err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(count.Take()), "statement")
	// Output:
	// 1 statement
}
