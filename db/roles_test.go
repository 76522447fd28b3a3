package db_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/db"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/evidence"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func connect(t *testing.T, dsn string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func exec(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

var door = runtime.Definition{
	Machine: "Door", Type: "door", Version: 1, Initial: "CLOSED",
	States: []runtime.StateSpec{
		{Name: "CLOSED", Initial: true, Status: runtime.StatusRunning},
		{Name: "OPEN", Status: runtime.StatusSucceeded},
	},
	Events:      []runtime.EventSpec{{Name: "Open"}},
	Transitions: []runtime.TransitionSpec{{From: "CLOSED", To: "OPEN", Event: "Open"}},
}

// The role model end to end with an owner that is not a superuser: the
// owner migrates and grants; the runtime role registers, runs and records
// evidence, and migrates with nothing to apply; the operator purges by the
// retention policy; the reader reads and writes nothing.
func TestRoleModel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	admin := pgtest.NewDatabase(t, pgtest.Empty())
	ownerName, ownerDSN := pgtest.LoginRole(t, admin, "owner")
	var dbName string
	if err := connect(t, admin).QueryRow(ctx, `SELECT current_database()`).Scan(&dbName); err != nil {
		t.Fatal(err)
	}
	exec(t, connect(t, admin), `ALTER DATABASE `+pgx.Identifier{dbName}.Sanitize()+` OWNER TO `+ownerName)
	owner := connect(t, ownerDSN)
	if err := db.Migrate(ctx, owner); err != nil {
		t.Fatal(err)
	}
	runtimeName, runtimeDSN := pgtest.LoginRole(t, admin, "runtime")
	operatorName, operatorDSN := pgtest.LoginRole(t, admin, "operator")
	readerName, readerDSN := pgtest.LoginRole(t, admin, "reader")
	for r, name := range map[db.Role]string{db.RoleRuntime: runtimeName, db.RoleOperator: operatorName, db.RoleReader: readerName} {
		if err := db.Grant(ctx, owner, r, name); err != nil {
			t.Fatal(err)
		}
	}

	rt := connect(t, runtimeDSN)
	if err := db.Migrate(ctx, rt); err != nil {
		t.Fatalf("migrate as the runtime role with nothing to apply: %v", err)
	}
	st := store.New(rt)
	if err := st.Register(ctx, door); err != nil {
		t.Fatal(err)
	}
	if err := evidence.Enable(ctx, rt, "door"); err != nil {
		t.Fatal(err)
	}
	res, err := st.Start(ctx, runtime.StartRequest{Type: "door", Version: 1, IdempotencyKey: "front", Owner: runtime.Owner{TenantID: "t"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Record(ctx, res.Run.ID, res.Run.RowVersion, runtime.Transition{
		Machine: "door", Version: 1, From: "CLOSED", To: "OPEN", Event: "Open", Status: runtime.StatusSucceeded}); err != nil {
		t.Fatal(err)
	}
	if v, err := evidence.Verify(ctx, rt, res.Run.ID); err != nil || v.Records != 2 {
		t.Fatalf("evidence: %+v, %v; want 2 records", v, err)
	}

	reader := connect(t, readerDSN)
	var runs int
	if err := reader.QueryRow(ctx, `SELECT count(*) FROM workflow_executions`).Scan(&runs); err != nil || runs != 1 {
		t.Errorf("the reader counts %d runs (%v), want 1", runs, err)
	}
	_, err = reader.Exec(ctx, `INSERT INTO workflow_retention (workflow_type, keep_days) VALUES ('door', 0)`)
	var pg *pgconn.PgError
	if !errors.As(err, &pg) || pg.Code != "42501" {
		t.Errorf("the reader sets retention: %v, want SQLSTATE 42501", err)
	}

	op := connect(t, operatorDSN)
	exec(t, op, `INSERT INTO workflow_retention (workflow_type, keep_days) VALUES ('door', 0)`)
	var removed int64
	if err := op.QueryRow(ctx, `SELECT runs FROM fsmgen_purge_finished_runs()`).Scan(&removed); err != nil || removed != 1 {
		t.Errorf("the operator's purge removed %d runs (%v), want 1", removed, err)
	}
}

// Grant refuses a kind it does not know, a role that does not exist, and
// the schema's owner.
func TestGrantRefuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	admin := connect(t, pgtest.NewDatabase(t))
	var owner string
	if err := admin.QueryRow(ctx, `SELECT current_user`).Scan(&owner); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		role db.Role
		name string
		want string
	}{
		{"admin", "x", `grant admin to x: unknown role kind "admin": want one of runtime, operator, reader`},
		{db.RoleRuntime, "fsmgen_nobody_here", `grant runtime to fsmgen_nobody_here: role "fsmgen_nobody_here" does not exist: create it first (CREATE ROLE "fsmgen_nobody_here" LOGIN)`},
		{db.RoleRuntime, owner, `grant runtime to ` + owner + `: role "` + owner + `" owns the schema or its tables: the database's guarantees hold only for roles that do not`},
	} {
		err := db.Grant(ctx, admin, tt.role, tt.name)
		if err == nil {
			t.Errorf("grant %s to %s: no error", tt.role, tt.name)
			continue
		}
		if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
			t.Errorf("grant %s to %s (-want +got):\n%s", tt.role, tt.name, diff)
		}
	}
}

// The roles Grant recorded get the privileges of their kind again after
// migrations, for what those added.
func TestMigrateGrantsAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	owner := connect(t, dsn)
	rt := connect(t, pgtest.RoleDSN(t, dsn, db.RoleRuntime))
	var name string
	if err := rt.QueryRow(ctx, `SELECT current_user`).Scan(&name); err != nil {
		t.Fatal(err)
	}
	// As if a later migration had added evidence_heads.
	exec(t, owner, `REVOKE SELECT ON evidence_heads FROM `+name)
	if _, err := rt.Exec(ctx, `SELECT count(*) FROM evidence_heads`); err == nil {
		t.Fatal("the revoke did not take")
	}
	if err := db.Regrant(ctx, owner); err != nil {
		t.Fatal(err)
	}
	exec(t, rt, `SELECT count(*) FROM evidence_heads`)
}

// docs/security.md lists the grants of every role as GrantStatements makes
// them (whitespace aside).
func TestSecurityDocListsTheGrants(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile("../docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Join(strings.Fields(string(page)), " ")
	for _, r := range db.Roles() {
		stmts, err := db.GrantStatements(r, "public")
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range stmts {
			if !strings.Contains(doc, strings.Join(strings.Fields(s), " ")+";") {
				t.Errorf("docs/security.md does not list the %s role's %s", r, s)
			}
		}
	}
}
