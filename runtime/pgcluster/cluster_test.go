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

func TestDurableRunsWithDurabilityOnAndSettingsPassed(t *testing.T) {
	t.Parallel()
	if os.Getenv("FSMGEN_TEST_DATABASE_URL") != "" {
		t.Skip("FSMGEN_TEST_DATABASE_URL is set: the tests use that server, and may lack the binaries to start one")
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		opts []Option
		want []string
	}{
		{"default", nil, []string{"off", "off", "off", "0"}},
		{"durable", []Option{Durable(), Setting("statement_timeout", "123s")}, []string{"on", "on", "on", "123s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := Start(ctx, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := c.Stop(); err != nil {
					t.Error(err)
				}
			}()
			conn, err := pgx.Connect(ctx, c.URL())
			if err != nil {
				t.Fatalf("connect to %s: %v", c.URL(), err)
			}
			defer conn.Close(ctx)
			var got []string
			for _, name := range []string{"fsync", "synchronous_commit", "full_page_writes", "statement_timeout"} {
				var v string
				if err := conn.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&v); err != nil {
					t.Fatal(err)
				}
				got = append(got, v)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("fsync, synchronous_commit, full_page_writes, statement_timeout (-want +got):\n%s", diff)
			}
		})
	}
}
