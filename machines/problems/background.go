package problems

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/fsmgen/fsmgen/machines/problems/reindexasset"
	"github.com/fsmgen/fsmgen/machines/problems/videogeneration"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
)

// The error codes of the background runs.
const (
	// CodeInvalidInput: a background run's input cannot be decoded or lacks
	// a field; the run fails without retrying.
	CodeInvalidInput = "INPUT_INVALID"
	// CodeReindexFailed: the index write failed on every try.
	CodeReindexFailed = "REINDEX_FAILED"
	// CodeRenderFailed: rendering the video failed on every try.
	CodeRenderFailed = "VIDEO_FAILED"
)

// ReindexDriver returns the runtime.Driver of the background runs of type
// ReindexWorkflowType (machine ReindexAsset of background.fsm): state
// REINDEXING upserts the index document that the run's input, a
// ReindexAsset, describes, through the workflow's Indexer. A failed write
// is retried by the state's policy (5 tries, 1 s, 4 s, 16 s, 1 min
// apart); when the tries are used up the engine fires ReindexFailed and the
// run fails with the write's error. Register registers it.
func (w *Workflow) ReindexDriver() runtime.Driver {
	return reindexasset.NewDriver(reindexHandlers{w})
}

// VideoDriver returns the runtime.Driver of the background runs of type
// VideoWorkflowType (machine VideoGeneration of background.fsm): state
// RENDERING renders the video that the run's input, a GenerateVideo, asks
// for, through the workflow's VideoRenderer, and the run succeeds with
// outcome "rendered" and output {storage_key}. A failed render is retried
// by the state's policy (3 tries); then the engine fires RenderFailed and
// the run fails. Register registers it.
func (w *Workflow) VideoDriver() runtime.Driver {
	return videogeneration.NewDriver(videoHandlers{w})
}

// registerBackground registers the machines of the background runs the
// workflow enqueues.
func (w *Workflow) registerBackground(ctx context.Context, eng *engine.Engine) error {
	if err := eng.Register(ctx, w.ReindexDriver()); err != nil {
		return fmt.Errorf("problems: register %s: %w", ReindexWorkflowType, err)
	}
	if err := eng.Register(ctx, w.VideoDriver()); err != nil {
		return fmt.Errorf("problems: register %s: %w", VideoWorkflowType, err)
	}
	return nil
}

type reindexHandlers struct{ w *Workflow }

var _ reindexasset.Handlers = reindexHandlers{}

// Reindexing writes the index document of the run's ReindexAsset.
func (h reindexHandlers) Reindexing(ctx context.Context, run *runtime.Run) (reindexasset.ReindexingEvent, error) {
	if run == nil {
		return nil, errNilRun
	}
	fx := effectsOf(run)
	var in ReindexAsset
	err := json.Unmarshal(run.Input, &in)
	if err == nil && (in.AssetVersionID == "" || in.ProblemID == "" || in.ProblemSignature == "") {
		err = errors.New("asset_version_id, problem_id and problem_signature are required")
	}
	if err != nil {
		detail := fmt.Sprintf("reindex input: %v", err)
		fx.SetError(CodeInvalidInput, detail)
		return reindexasset.ReindexFailed{ErrorCode: CodeInvalidInput, ErrorDetail: detail}, nil
	}
	err = h.w.a.Indexer.Upsert(ctx, IndexDocument{
		ProblemID:        in.ProblemID,
		AssetVersionID:   in.AssetVersionID,
		ProblemSignature: in.ProblemSignature,
		NormalizedText:   in.NormalizedText,
		PHash:            in.PHash,
		TopicTags:        in.TopicTags,
	})
	if err != nil {
		return nil, runtime.WithCode(CodeReindexFailed, fmt.Errorf("reindex %s: %w", in.AssetVersionID, err))
	}
	fx.Emit(TopicDocumentIndexed, DocumentIndexedEvent{
		RunID: run.ID, ProblemID: in.ProblemID, AssetVersionID: in.AssetVersionID, ProblemSignature: in.ProblemSignature,
	})
	fx.SetResult(ReindexOutput{AssetVersionID: in.AssetVersionID}, 0)
	return reindexasset.Reindexed{AssetVersionID: in.AssetVersionID}, nil
}

// ReindexOutput is the output of a succeeded ReindexWorkflowType run.
type ReindexOutput struct {
	AssetVersionID string `json:"asset_version_id"`
}

// VideoOutput is the output of a succeeded VideoWorkflowType run.
type VideoOutput struct {
	SolutionAssetVersionID string `json:"solution_asset_version_id"`
	StorageKey             string `json:"storage_key"`
}

type videoHandlers struct{ w *Workflow }

var _ videogeneration.Handlers = videoHandlers{}

// Rendering renders the video of the run's GenerateVideo.
func (h videoHandlers) Rendering(ctx context.Context, run *runtime.Run) (videogeneration.RenderingEvent, error) {
	if run == nil {
		return nil, errNilRun
	}
	fx := effectsOf(run)
	var in GenerateVideo
	err := json.Unmarshal(run.Input, &in)
	if err == nil && in.SolutionAssetVersionID == "" {
		err = errors.New("solution_asset_version_id is required")
	}
	if err != nil {
		detail := fmt.Sprintf("video input: %v", err)
		fx.SetError(CodeInvalidInput, detail)
		return videogeneration.RenderFailed{ErrorCode: CodeInvalidInput, ErrorDetail: detail}, nil
	}
	v, err := h.w.a.Videos.Render(ctx, VideoRequest{
		ProblemSignature:       in.ProblemSignature,
		SolutionAssetVersionID: in.SolutionAssetVersionID,
		VideoMode:              in.VideoMode,
		Attempt:                run.StepAttempt,
	})
	if err == nil && v.StorageKey == "" {
		err = errors.New("the renderer returned no storage key")
	}
	if err != nil {
		return nil, runtime.WithCode(CodeRenderFailed, fmt.Errorf("render video of %s: %w", in.SolutionAssetVersionID, err))
	}
	fx.LogStep("video_rendered", map[string]any{"storage_key": v.StorageKey, "video_mode": in.VideoMode})
	fx.SetResult(VideoOutput{SolutionAssetVersionID: in.SolutionAssetVersionID, StorageKey: v.StorageKey}, 0)
	return videogeneration.Rendered{StorageKey: v.StorageKey}, nil
}
