package db

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// The SQLSTATEs raised by the schema's triggers (class FS).
const (
	SQLStateTransitionRefused   = "FS001"
	SQLStateLogImmutable        = "FS002"
	SQLStateRunImmutable        = "FS003"
	SQLStateDefinitionImmutable = "FS004"
	SQLStateUnlogged            = "FS005"
	// SQLStateRetention: a DELETE of workflow_runs outside retention's
	// fsmgen_purge_finished_runs, or a purge of a run that is not finished.
	SQLStateRetention = "FS008"
	// SQLStateOtherExecutor: a write of a run that another runtime
	// executes outside its recorder's transactions (0018_executor.sql).
	SQLStateOtherExecutor = "FS009"
)

// The constraints whose violations stand for a guard's SQLSTATE.
const (
	// ConstraintMove names the check of workflow_runs against the registered
	// moves (the trigger workflow_runs_known_move, which replaced a foreign key of
	// that name and raises its errors): a violation (23503) is a move the
	// registered table lacks, or a status that is not the state's, as
	// SQLStateTransitionRefused is.
	ConstraintMove = "workflow_runs_move_fkey"
	// ConstraintLoggedChange is the unique index of the log's change rows
	// (one per run and row version): a violation (23505) is a second log
	// row of a change of state, as SQLStateUnlogged is.
	ConstraintLoggedChange = "workflow_step_logs_change_idx"
)

// migrationLockKey is the key of the advisory lock held while migrations are
// applied ("fsmgen" in ASCII).
const migrationLockKey int64 = 0x66736d67656e

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migration is one embedded schema migration.
type Migration struct {
	// Version is the NNNN prefix of the file name, Name the rest of it
	// without the .sql suffix.
	Version int
	Name    string
	// SQL is the file's text and Checksum its SHA-256 in hex.
	SQL      string
	Checksum string
}

// Migrations returns the embedded migrations in the order Migrate applies
// them.
func Migrations() ([]Migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, fmt.Errorf("read embedded migrations: %w", err)
	}
	var out []Migration
	seen := make(map[int]string)
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		base := strings.TrimSuffix(e.Name(), ".sql")
		num, name, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v < 1 {
			return nil, fmt.Errorf("migration %s: name must be NNNN_name.sql", e.Name())
		}
		if prev, dup := seen[v]; dup {
			return nil, fmt.Errorf("migrations %s and %s share version %d", prev, e.Name(), v)
		}
		seen[v] = e.Name()
		text, err := fs.ReadFile(migrationFiles, path.Join("migrations", e.Name()))
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", e.Name(), err)
		}
		sum := sha256.Sum256(text)
		out = append(out, Migration{Version: v, Name: name, SQL: string(text), Checksum: hex.EncodeToString(sum[:])})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

// Beginner is what Migrate needs from a connection: *pgxpool.Pool, *pgx.Conn
// and pgx.Tx all satisfy it.
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Migrate applies the embedded migrations that the database has not recorded
// yet, in order, each in its own transaction together with its row in
// fsmgen_migrations. It is idempotent and safe to run from several processes
// at once: every transaction takes the same transaction-scoped advisory lock
// first, so concurrent callers apply each migration exactly once.
//
// When every migration is applied already, Migrate only reads
// fsmgen_migrations: a role without CREATE on the schema (the runtime's, see
// [Grant]) may call it at every start. After applying migrations it gives
// the roles recorded by Grant the privileges of their kind again.
func Migrate(ctx context.Context, conn Beginner) error {
	migrations, err := Migrations()
	if err != nil {
		return err
	}
	if done, err := applied(ctx, conn, migrations); err != nil || done {
		return err
	}
	err = inLockedTx(ctx, conn, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS fsmgen_migrations (
			version    INTEGER     PRIMARY KEY,
			name       TEXT        NOT NULL,
			checksum   TEXT        NOT NULL,
			applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
		)`)
		return err
	})
	if err != nil {
		return fmt.Errorf("migrate: create fsmgen_migrations: %w", err)
	}
	for _, m := range migrations {
		err := inLockedTx(ctx, conn, func(tx pgx.Tx) error {
			var checksum string
			err := tx.QueryRow(ctx, `SELECT checksum FROM fsmgen_migrations WHERE version = $1`, m.Version).Scan(&checksum)
			switch {
			case err == nil:
				if checksum != m.Checksum {
					return fmt.Errorf("applied with checksum %s, the embedded file has %s: migrations must not change once applied; add a new one", checksum, m.Checksum)
				}
				return nil
			case !errors.Is(err, pgx.ErrNoRows):
				return err
			}
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return err
			}
			_, err = tx.Exec(ctx, `INSERT INTO fsmgen_migrations (version, name, checksum) VALUES ($1, $2, $3)`,
				m.Version, m.Name, m.Checksum)
			return err
		})
		if err != nil {
			return fmt.Errorf("migrate %04d_%s: %w", m.Version, m.Name, err)
		}
	}
	if err := regrant(ctx, conn); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// applied reports whether every migration is recorded with its checksum,
// reading fsmgen_migrations only. A checksum that differs is an error.
func applied(ctx context.Context, conn Beginner, migrations []Migration) (bool, error) {
	done := false
	err := inTx(ctx, conn, func(tx pgx.Tx) error {
		var present bool
		if err := tx.QueryRow(ctx, `SELECT to_regclass('fsmgen_migrations') IS NOT NULL`).Scan(&present); err != nil || !present {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT version, checksum FROM fsmgen_migrations`)
		if err != nil {
			return err
		}
		sums := map[int]string{}
		var v int
		var sum string
		if _, err := pgx.ForEachRow(rows, []any{&v, &sum}, func() error { sums[v] = sum; return nil }); err != nil {
			return err
		}
		for _, m := range migrations {
			got, ok := sums[m.Version]
			if !ok {
				return nil
			}
			if got != m.Checksum {
				return fmt.Errorf("migrate %04d_%s: applied with checksum %s, the embedded file has %s: migrations must not change once applied; add a new one",
					m.Version, m.Name, got, m.Checksum)
			}
		}
		done = true
		return nil
	})
	if err != nil {
		return false, err
	}
	return done, nil
}

func inTx(ctx context.Context, conn Beginner, f func(pgx.Tx) error) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after Commit
	if err := f(tx); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

func inLockedTx(ctx context.Context, conn Beginner, f func(pgx.Tx) error) error {
	return inTx(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLockKey); err != nil {
			return err
		}
		return f(tx)
	})
}
