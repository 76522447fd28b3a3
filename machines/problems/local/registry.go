package local

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/machines/problems"
)

// ErrNotFound is matched by errors.Is when a row the caller names does not
// exist.
var ErrNotFound = errors.New("not found")

// Registry is the asset registry on tables problembank.problems and
// problembank.asset_versions.
type Registry struct {
	pool *pgxpool.Pool
}

var _ problems.Registry = (*Registry)(nil)

// NewRegistry returns a registry on pool, whose database Migrate prepared.
func NewRegistry(pool *pgxpool.Pool) *Registry { return &Registry{pool: pool} }

// GetOrCreateProblem implements problems.Registry: it returns the problem
// with p's signature, registering it first when there is none.
func (r *Registry) GetOrCreateProblem(ctx context.Context, p problems.ProblemSpec) (problems.Problem, error) {
	if p.ProblemSignature == "" {
		return problems.Problem{}, errors.New("local: register problem: empty signature")
	}
	tags := p.TopicTags
	if tags == nil {
		tags = []string{}
	}
	var id string
	err := r.pool.QueryRow(ctx, `
		INSERT INTO problembank.problems (signature, normalized_text, phash, topic_tags)
		VALUES ($1, $2, $3, $4)
		ON CONFLICT (signature) DO NOTHING
		RETURNING id::text`,
		p.ProblemSignature, p.NormalizedText, strings.ToLower(p.PHash), tags).Scan(&id)
	if err == nil {
		return problems.Problem{ID: id, ProblemSignature: p.ProblemSignature, Created: true}, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return problems.Problem{}, fmt.Errorf("local: register problem %s: %w", p.ProblemSignature, err)
	}
	// Registered before, or by a concurrent caller that has committed by
	// now: this statement's snapshot sees it.
	err = r.pool.QueryRow(ctx, `SELECT id::text FROM problembank.problems WHERE signature = $1`, p.ProblemSignature).Scan(&id)
	if err != nil {
		return problems.Problem{}, fmt.Errorf("local: find problem %s: %w", p.ProblemSignature, err)
	}
	return problems.Problem{ID: id, ProblemSignature: p.ProblemSignature}, nil
}

// CreateVersion implements problems.Registry: it registers the next version
// of the problem's asset type, or returns the version that already holds the
// same storage key.
func (r *Registry) CreateVersion(ctx context.Context, v problems.VersionSpec) (problems.AssetVersion, error) {
	if v.AssetType == "" || v.StorageKey == "" {
		return problems.AssetVersion{}, errors.New("local: create version: empty asset type or storage key")
	}
	out := problems.AssetVersion{ProblemID: v.ProblemID, AssetType: v.AssetType, StorageKey: v.StorageKey}
	err := pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		// The problem's row lock serializes the numbering of its versions.
		if !isUUID(v.ProblemID) {
			return fmt.Errorf("problem %q: %w", v.ProblemID, ErrNotFound)
		}
		var locked string
		err := tx.QueryRow(ctx, `SELECT id::text FROM problembank.problems WHERE id = $1::uuid FOR UPDATE`, v.ProblemID).Scan(&locked)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("problem %q: %w", v.ProblemID, ErrNotFound)
		}
		if err != nil {
			return err
		}
		err = tx.QueryRow(ctx, `
			SELECT id::text, version_no FROM problembank.asset_versions
			WHERE problem_id = $1::uuid AND asset_type = $2 AND storage_key = $3`,
			v.ProblemID, v.AssetType, v.StorageKey).Scan(&out.ID, &out.VersionNo)
		if err == nil {
			return nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		out.Created = true
		return tx.QueryRow(ctx, `
			INSERT INTO problembank.asset_versions (problem_id, asset_type, version_no, storage_key, provenance)
			SELECT $1::uuid, $2, coalesce(max(version_no), 0) + 1, $3, $4
			FROM problembank.asset_versions WHERE problem_id = $1::uuid AND asset_type = $2
			RETURNING id::text, version_no`,
			v.ProblemID, v.AssetType, v.StorageKey, v.Provenance).Scan(&out.ID, &out.VersionNo)
	})
	if err != nil {
		return problems.AssetVersion{}, fmt.Errorf("local: create version of %s %s: %w", v.ProblemID, v.AssetType, err)
	}
	return out, nil
}

// Version returns the asset version with the given id.
func (r *Registry) Version(ctx context.Context, id string) (problems.AssetVersion, error) {
	out := problems.AssetVersion{ID: id}
	if !isUUID(id) {
		return problems.AssetVersion{}, fmt.Errorf("local: asset version %q: %w", id, ErrNotFound)
	}
	err := r.pool.QueryRow(ctx, `
		SELECT problem_id::text, asset_type, version_no, storage_key
		FROM problembank.asset_versions WHERE id = $1::uuid`, id).
		Scan(&out.ProblemID, &out.AssetType, &out.VersionNo, &out.StorageKey)
	if errors.Is(err, pgx.ErrNoRows) {
		return problems.AssetVersion{}, fmt.Errorf("local: asset version %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return problems.AssetVersion{}, fmt.Errorf("local: asset version %q: %w", id, err)
	}
	return out, nil
}

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

func isUUID(s string) bool { return uuidRE.MatchString(s) }

// Content returns the stored document under a storage key, as the Solver
// stored it.
func (r *Registry) Content(ctx context.Context, storageKey string) (string, error) {
	var body string
	err := r.pool.QueryRow(ctx, `SELECT body FROM problembank.contents WHERE storage_key = $1`, storageKey).Scan(&body)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("local: content %q: %w", storageKey, ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("local: content %q: %w", storageKey, err)
	}
	return body, nil
}
