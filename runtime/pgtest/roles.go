package pgtest

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/db"
)

// RoleDSN creates a login role of kind r for the calling test, gives it the
// privileges of that kind on the database of dsn (a database of
// [NewDatabase] or [NewPool], whose user owns the schema) with [db.Grant],
// and returns the connection string of the same database as that role: the
// least-privileged role the role model (docs/security.md) gives the
// runtime, the operator or the reader. The role is dropped when the test
// ends, before its database.
func RoleDSN(tb testing.TB, dsn string, r db.Role) string {
	tb.Helper()
	name, roleDSN := LoginRole(tb, dsn, string(r))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	owner, err := pgx.Connect(ctx, dsn)
	if err != nil {
		tb.Fatalf("pgtest: role %s: %v", r, err)
	}
	defer owner.Close(ctx)
	if err := db.Grant(ctx, owner, r, name); err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	return roleDSN
}

// LoginRole creates a login role without privileges for the calling test,
// named after kind, and returns its name and the connection string of the
// database of dsn as that role; the test grants it what it needs. The
// role is dropped when the test ends, before its database.
func LoginRole(tb testing.TB, dsn, kind string) (name, roleDSN string) {
	tb.Helper()
	name = "fsmgen_" + kind + "_" + randomHex(6)
	password := randomHex(16)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	owner, err := pgx.Connect(ctx, dsn)
	if err != nil {
		tb.Fatalf("pgtest: role %s: %v", name, err)
	}
	defer owner.Close(ctx)
	if _, err := owner.Exec(ctx, "CREATE ROLE "+pgx.Identifier{name}.Sanitize()+" LOGIN PASSWORD '"+password+"'"); err != nil {
		tb.Fatalf("pgtest: create role %s: %v", name, err)
	}
	tb.Cleanup(func() { dropRole(tb, dsn, name) })
	return name, withUser(dsn, name, password)
}

// RolePool is [RoleDSN] with a pool on it, closed when the test ends.
func RolePool(tb testing.TB, dsn string, r db.Role) *pgxpool.Pool {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool, err := pgxpool.New(ctx, RoleDSN(tb, dsn, r))
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	tb.Cleanup(pool.Close)
	return pool
}

// dropRole ends the role's sessions, gives the test's database back to the
// connecting user if the role owns it, drops what the role owns or was
// granted in it, and the role.
func dropRole(tb testing.TB, dsn, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		tb.Errorf("pgtest: drop role %s: %v", name, err)
		return
	}
	defer conn.Close(ctx)
	id := pgx.Identifier{name}.Sanitize()
	for _, s := range []string{
		"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '" + name + "'",
		"DO $$ BEGIN IF to_regclass('fsmgen_role_grants') IS NOT NULL THEN DELETE FROM fsmgen_role_grants WHERE role_name = '" + name + "'; END IF; END $$",
		"DO $$ BEGIN IF (SELECT datdba FROM pg_database WHERE datname = current_database()) = '" + id + "'::regrole THEN " +
			"EXECUTE format('ALTER DATABASE %I OWNER TO %I', current_database(), current_user); END IF; END $$",
		"DROP OWNED BY " + id,
		"DROP ROLE " + id,
	} {
		if _, err := conn.Exec(ctx, s); err != nil {
			tb.Errorf("pgtest: drop role %s: %s: %v", name, s, err)
			return
		}
	}
}

// withUser returns dsn with its user and password replaced.
func withUser(dsn, user, password string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		if u, err := url.Parse(dsn); err == nil {
			u.User = url.UserPassword(user, password)
			return u.String()
		}
	}
	return dsn + " user=" + user + " password=" + password
}
