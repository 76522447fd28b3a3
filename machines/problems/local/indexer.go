package local

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/machines/problems"
)

// DefaultIndexTimeout bounds an index write unless told otherwise.
const DefaultIndexTimeout = 5 * time.Second

// Indexer is a problems.Indexer on table problembank.problem_index: one
// document per problem, replaced by each upsert, searched by the
// Retriever's trigram similarity.
type Indexer struct {
	pool *pgxpool.Pool
	// Timeout bounds each write; 0 means DefaultIndexTimeout. A write that
	// runs out of it returns an error matching problems.ErrIndexTimeout.
	Timeout time.Duration
	// Delay makes each write wait that long in the database before it
	// writes, as a slow index would: a Delay above Timeout makes every
	// write time out.
	Delay time.Duration
}

var _ problems.Indexer = (*Indexer)(nil)

// NewIndexer returns an indexer on pool, whose database Migrate prepared.
func NewIndexer(pool *pgxpool.Pool) *Indexer { return &Indexer{pool: pool} }

// Upsert implements problems.Indexer.
func (ix *Indexer) Upsert(ctx context.Context, doc problems.IndexDocument) error {
	timeout := ix.Timeout
	if timeout <= 0 {
		timeout = DefaultIndexTimeout
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tags := doc.TopicTags
	if tags == nil {
		tags = []string{}
	}
	err := pgx.BeginFunc(wctx, ix.pool, func(tx pgx.Tx) error {
		if ix.Delay > 0 {
			if _, err := tx.Exec(wctx, "SELECT pg_sleep($1)", ix.Delay.Seconds()); err != nil {
				return err
			}
		}
		_, err := tx.Exec(wctx, `
			INSERT INTO problembank.problem_index
				(problem_id, asset_version_id, signature, normalized_text, phash, topic_tags, indexed_at)
			VALUES ($1::uuid, $2::uuid, $3, $4, $5, $6, now())
			ON CONFLICT (problem_id) DO UPDATE SET
				asset_version_id = EXCLUDED.asset_version_id,
				signature = EXCLUDED.signature,
				normalized_text = EXCLUDED.normalized_text,
				phash = EXCLUDED.phash,
				topic_tags = EXCLUDED.topic_tags,
				indexed_at = EXCLUDED.indexed_at`,
			doc.ProblemID, doc.AssetVersionID, doc.ProblemSignature, doc.NormalizedText, strings.ToLower(doc.PHash), tags)
		return err
	})
	if err == nil {
		return nil
	}
	if ctx.Err() == nil && (errors.Is(wctx.Err(), context.DeadlineExceeded) || pgconn.Timeout(err)) {
		return fmt.Errorf("local: index %s after %s: %w", doc.AssetVersionID, timeout, problems.ErrIndexTimeout)
	}
	return fmt.Errorf("local: index %s: %w", doc.AssetVersionID, err)
}

// Indexed reports the asset version the index serves for a problem, and
// whether it has a document for it.
func (ix *Indexer) Indexed(ctx context.Context, problemID string) (string, bool, error) {
	if !isUUID(problemID) {
		return "", false, nil
	}
	var av string
	err := ix.pool.QueryRow(ctx, `SELECT asset_version_id::text FROM problembank.problem_index WHERE problem_id = $1::uuid`, problemID).Scan(&av)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("local: read index of %s: %w", problemID, err)
	}
	return av, true, nil
}
