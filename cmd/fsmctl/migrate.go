package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/db"
)

func migrateCommand() *command {
	return &command{
		name:     "migrate",
		synopsis: "[-database URL] [-print] [-grant KIND=ROLE]...",
		summary:  "apply the runtime's migrations",
		details: `Migrate applies the runtime's schema (workflow runs, their append-only log,
definitions, outbox: package db). It is idempotent: migrations already
applied are skipped, so it may run at every deployment. A machine's own
tables (the demo's problembank, the linear chain's instances and steps) are
created by the machine's package (make demo does).

-print writes the migrations' SQL to standard output instead, in the order they
apply, each after a "-- fsmgen migration NNNN_name.sql" line, for teams that
apply schema changes with their own tool (goose, Atlas, Flyway): it needs no
database. Such a tool records what it applied itself; fsmgen_migrations, the
table migrate keeps, is not part of the output.

-grant KIND=ROLE, after the migrations, gives the existing database role ROLE
the privileges of KIND: runtime (the engine, the store, the relay), operator
(fsmctl: the runtime's and retention's) or reader (the console without
actions: read only); it may be given several times. Run migrate as the
schema's owner; the roles must exist (CREATE ROLE) and must not own the
schema, for the database's guarantees hold only for roles that do not. Later
migrations give the roles granted so the privileges of what they add. With
nothing to apply and no -grant, migrate only reads: any of the roles may run
it. docs/security.md describes the role model and lists the grants.`,
		flags: func(fs *flag.FlagSet) {
			addDatabaseFlag(fs)
			fs.Bool("print", false, "print the migrations' SQL instead of applying it")
			fs.Var(&grantFlag{}, "grant", "after migrating, grant KIND (runtime, operator, reader) to the existing role ROLE: KIND=ROLE; repeatable")
		},
		run: func(ctx context.Context, c *cli, fs *flag.FlagSet, args []string) error {
			if len(args) > 0 {
				return usagef(nil, "unexpected arguments %q", args)
			}
			if fs.Lookup("print").Value.String() == "true" {
				return printMigrations(c.stdout)
			}
			pool, err := c.openPool(ctx, fs)
			if err != nil {
				return err
			}
			defer pool.Close()
			if err := migrate(ctx, pool, c.stdout); err != nil {
				return err
			}
			for _, g := range fs.Lookup("grant").Value.(*grantFlag).grants {
				if err := db.Grant(ctx, pool, g.role, g.name); err != nil {
					return err
				}
				fmt.Fprintf(c.stdout, "granted %s to %s\n", g.role, g.name)
			}
			return nil
		},
	}
}

// grantFlag collects -grant KIND=ROLE.
type grantFlag struct {
	grants []roleGrant
}

type roleGrant struct {
	role db.Role
	name string
}

func (g *grantFlag) String() string {
	var parts []string
	for _, x := range g.grants {
		parts = append(parts, string(x.role)+"="+x.name)
	}
	return strings.Join(parts, ",")
}

func (g *grantFlag) Set(v string) error {
	kind, name, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return fmt.Errorf("want KIND=ROLE, not %q", v)
	}
	r, err := db.ParseRole(kind)
	if err != nil {
		return err
	}
	g.grants = append(g.grants, roleGrant{role: r, name: name})
	return nil
}

// migrate applies the runtime's schema and says what it did.
func migrate(ctx context.Context, pool *pgxpool.Pool, w io.Writer) error {
	before, err := appliedMigrations(ctx, pool)
	if err != nil {
		return err
	}
	if err := db.Migrate(ctx, pool); err != nil {
		return fmt.Errorf("migrate the runtime schema: %w", err)
	}
	after, err := appliedMigrations(ctx, pool)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "runtime schema: %d migrations, %d applied now\n", after, after-before)
	return nil
}

// appliedMigrations counts the runtime's recorded migrations, 0 before the
// first.
func appliedMigrations(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	var exists bool
	if err := pool.QueryRow(ctx, `SELECT to_regclass('fsmgen_migrations') IS NOT NULL`).Scan(&exists); err != nil {
		return 0, fmt.Errorf("count applied migrations: %w", err)
	}
	if !exists {
		return 0, nil
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM fsmgen_migrations`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count applied migrations: %w", err)
	}
	return n, nil
}

// printMigrations writes the embedded migrations' SQL, each after a line
// naming its file.
func printMigrations(w io.Writer) error {
	ms, err := db.Migrations()
	if err != nil {
		return err
	}
	for i, m := range ms {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "-- fsmgen migration %04d_%s.sql\n%s", m.Version, m.Name, m.SQL)
		if !strings.HasSuffix(m.SQL, "\n") {
			fmt.Fprintln(w)
		}
	}
	return nil
}
