package pgtest

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// NewRole creates a login role for the calling test on the server of dsn,
// a database made by [NewDatabase] or [NewPool]: not a superuser, allowed
// to read and write the tables of that database and to open at most
// connLimit connections at once (its CONNECTION LIMIT; -1 for none, which
// superusers, exempt from every such limit, cannot stand in for). It
// returns the role's name and dsn for the role. The role is dropped when
// the test ends, before the database.
func NewRole(tb testing.TB, dsn string, connLimit int) (name, roleDSN string) {
	tb.Helper()
	name, roleDSN = LoginRole(tb, dsn, "limited")
	ident := pgx.Identifier{name}.Sanitize()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	defer conn.Close(ctx)
	for _, stmt := range []string{
		"ALTER ROLE " + ident + " NOSUPERUSER CONNECTION LIMIT " + strconv.Itoa(connLimit),
		"GRANT USAGE ON SCHEMA public TO " + ident,
		"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO " + ident,
		"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO " + ident,
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			tb.Fatalf("pgtest: %s: %v", stmt, err)
		}
	}
	return name, roleDSN
}
