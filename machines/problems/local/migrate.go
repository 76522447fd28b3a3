package local

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed schema.sql
var schema string

// migrateLock is the key of the advisory lock that serializes Migrate
// between processes ("problembank" in ASCII, folded into 63 bits).
const migrateLock int64 = 0x70726f626c656d62

// Migrate creates, when missing, the pg_trgm extension and the tables of
// schema problembank that the adapters of this package use. It is
// idempotent and safe to call from several processes at once.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", migrateLock); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, schema)
		return err
	})
	if err != nil {
		return fmt.Errorf("local: migrate: %w", err)
	}
	return nil
}
