package local

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/runtime/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// newPool returns a pool on a fresh database of the test's own, migrated by
// the runtime and by Migrate.
func newPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool := pgtest.NewPool(t)
	if err := Migrate(context.Background(), pool); err != nil {
		t.Fatal(err)
	}
	return pool
}
