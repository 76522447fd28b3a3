package pgtest

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/db"
)

func TestMain(m *testing.M) { Main(m) }

func TestNewPoolGivesEachTestItsOwnMigratedDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := NewPool(t), NewPool(t)
	var nameA, nameB string
	if err := a.QueryRow(ctx, "SELECT current_database()").Scan(&nameA); err != nil {
		t.Fatal(err)
	}
	if err := b.QueryRow(ctx, "SELECT current_database()").Scan(&nameB); err != nil {
		t.Fatal(err)
	}
	if nameA == nameB {
		t.Errorf("two NewPool calls share database %s", nameA)
	}
	migrations, err := db.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	var applied int
	if err := a.QueryRow(ctx, "SELECT count(*) FROM fsmgen_migrations").Scan(&applied); err != nil {
		t.Fatal(err)
	}
	if applied != len(migrations) {
		t.Errorf("fsmgen_migrations has %d rows, want %d", applied, len(migrations))
	}
}

func TestEmptyDatabaseHasNoSchema(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, Empty())
	var n int
	if err := pool.QueryRow(context.Background(), "SELECT count(*) FROM pg_tables WHERE tablename LIKE 'workflow_%'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("empty database has %d workflow tables", n)
	}
}

func TestCheckInvariantsOnCleanDatabase(t *testing.T) {
	t.Parallel()
	pool := NewPool(t)
	if err := CheckInvariants(context.Background(), pool); err != nil {
		t.Fatal(err)
	}
}

func TestWithDatabase(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"postgres://u:p@h:5432/postgres?sslmode=disable", "postgres://u:p@h:5432/x?sslmode=disable"},
		{"postgresql://h/", "postgresql://h/x"},
		{"host=/tmp port=5432 user=postgres dbname=postgres", "host=/tmp port=5432 user=postgres dbname=postgres dbname=x"},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, withDatabase(tt.in, "x")); diff != "" {
			t.Errorf("withDatabase(%q) mismatch (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestInstallHintSaysWhatToDo(t *testing.T) {
	t.Parallel()
	msg := installHint
	for _, want := range []string{"apt-get install -y postgresql", EnvURL} {
		if !strings.Contains(msg, want) {
			t.Errorf("the hint does not mention %q:\n%s", want, msg)
		}
	}
}
