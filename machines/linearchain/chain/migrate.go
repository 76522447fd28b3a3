package chain

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationLockKey is the advisory lock held while Migrate applies
// migrations ("lchain" in ASCII).
const migrationLockKey int64 = 0x6c636861696e

// Migrate applies the package's embedded migrations that the database has
// not seen yet, each in its own transaction, under an advisory lock so
// that concurrent callers apply each once: the tables workflow_instance,
// workflow_step, workflow_chain_inbox, workflow_chain_outbox and workflow_clock, and
// the guards fsmgen sql generated from linear_chain.fsm for the two status
// columns, with their logs workflow_instance_status_log and
// workflow_step_status_log. Applied versions are kept in
// workflow_chain_migrations.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	files, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return fmt.Errorf("chain: read embedded migrations: %w", err)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Name() < files[j].Name() })
	for _, f := range files {
		num, _, _ := strings.Cut(f.Name(), "_")
		version, err := strconv.Atoi(num)
		if err != nil {
			return fmt.Errorf("chain: migration %s: the name does not start with a number", f.Name())
		}
		sql, err := migrationFiles.ReadFile("migrations/" + f.Name())
		if err != nil {
			return fmt.Errorf("chain: read migration %s: %w", f.Name(), err)
		}
		err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLockKey); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS workflow_chain_migrations (
				version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL)`); err != nil {
				return err
			}
			var done bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM workflow_chain_migrations WHERE version = $1)`, version).Scan(&done); err != nil {
				return err
			}
			if done {
				return nil
			}
			if _, err := tx.Exec(ctx, string(sql)); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO workflow_chain_migrations (version, name, applied_at) VALUES ($1, $2, $3)`,
				version, f.Name(), time.Now())
			return err
		})
		if err != nil {
			return fmt.Errorf("chain: migration %s: %w", f.Name(), err)
		}
	}
	return nil
}

// AdvanceClock moves the database clock of the chain's tables, the
// workflow_now() every lease, due time and deadline is read from, forward
// by d (backward when d is negative) in the database q reaches. It exists
// for tests, which thereby expire leases and deadlines without waiting.
func AdvanceClock(ctx context.Context, q Querier, d time.Duration) error {
	if _, err := q.Exec(ctx, `UPDATE workflow_clock SET skew = skew + $1::bigint * interval '1 microsecond'`, d.Microseconds()); err != nil {
		return fmt.Errorf("chain: advance the clock by %s: %w", d, err)
	}
	return nil
}
