package local

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/machines/problems"
)

// Videos is a problems.VideoRenderer that renders nothing: it records each
// request in table problembank.videos, one row per solution asset version,
// under the storage key "video:" followed by that id, as a renderer that
// stored the video there would. A second request for the same solution
// counts a render and keeps the row.
type Videos struct {
	pool *pgxpool.Pool
	// Fail, when set, is called before each render; an error it returns
	// fails the render, as a broken renderer would.
	Fail func(problems.VideoRequest) error
}

var _ problems.VideoRenderer = (*Videos)(nil)

// NewVideos returns a video renderer on pool, whose database Migrate
// prepared.
func NewVideos(pool *pgxpool.Pool) *Videos { return &Videos{pool: pool} }

// Render implements problems.VideoRenderer.
func (v *Videos) Render(ctx context.Context, req problems.VideoRequest) (problems.Video, error) {
	if !isUUID(req.SolutionAssetVersionID) {
		return problems.Video{}, fmt.Errorf("local: render video: solution asset version id %q is not a UUID", req.SolutionAssetVersionID)
	}
	if v.Fail != nil {
		if err := v.Fail(req); err != nil {
			return problems.Video{}, fmt.Errorf("local: render video of %s: %w", req.SolutionAssetVersionID, err)
		}
	}
	key := "video:" + req.SolutionAssetVersionID
	_, err := v.pool.Exec(ctx, `
		INSERT INTO problembank.videos (solution_asset_version_id, problem_signature, video_mode, storage_key)
		VALUES ($1::uuid, $2, $3, $4)
		ON CONFLICT (solution_asset_version_id) DO UPDATE SET
			renders = problembank.videos.renders + 1,
			rendered_at = now()`,
		req.SolutionAssetVersionID, req.ProblemSignature, string(req.VideoMode), key)
	if err != nil {
		return problems.Video{}, fmt.Errorf("local: render video of %s: %w", req.SolutionAssetVersionID, err)
	}
	return problems.Video{StorageKey: key}, nil
}

// Rendered returns the storage key of the video of a solution asset
// version and how many times it was rendered; ok is false when it has none.
func (v *Videos) Rendered(ctx context.Context, solutionAssetVersionID string) (key string, renders int, ok bool, err error) {
	if !isUUID(solutionAssetVersionID) {
		return "", 0, false, nil
	}
	err = v.pool.QueryRow(ctx, `SELECT storage_key, renders FROM problembank.videos WHERE solution_asset_version_id = $1::uuid`,
		solutionAssetVersionID).Scan(&key, &renders)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", 0, false, nil
	}
	if err != nil {
		return "", 0, false, fmt.Errorf("local: video of %s: %w", solutionAssetVersionID, err)
	}
	return key, renders, true, nil
}
