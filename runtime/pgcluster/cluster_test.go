package pgcluster

import (
	"context"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
)

func TestStartServesItsURLUntilStopped(t *testing.T) {
	t.Parallel()
	// With a server named for the tests (runtime/pgtest's variable), the
	// machine may have no server binaries; CI never sets it.
	if os.Getenv("FSMGEN_TEST_DATABASE_URL") != "" {
		t.Skip("FSMGEN_TEST_DATABASE_URL is set: the tests use that server, and may lack the binaries to start one")
	}
	ctx := context.Background()
	c, err := Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = c.Stop()
		}
	}()
	conn, err := pgx.Connect(ctx, c.URL())
	if err != nil {
		t.Fatalf("connect to %s: %v", c.URL(), err)
	}
	var user, dbname string
	err = conn.QueryRow(ctx, "SELECT current_user, current_database()").Scan(&user, &dbname)
	conn.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"postgres", "postgres"}, []string{user, dbname}); diff != "" {
		t.Errorf("user and database mismatch (-want +got):\n%s", diff)
	}
	stopped = true
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(c.Dir()); !os.IsNotExist(err) {
		t.Errorf("the cluster's directory %s is still there after Stop (stat: %v)", c.Dir(), err)
	}
}
