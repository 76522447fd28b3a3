package engine

import (
	"context"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// The engine is the runtime.Runner that generated typed handles call:
// order.Runs[Input](eng).
var _ runtime.Runner = (*Engine)(nil)

// StartRun implements runtime.Runner with Start.
func (e *Engine) StartRun(ctx context.Context, req runtime.StartRequest) (runtime.RunInfo, error) {
	res, err := e.Start(ctx, StartParams{
		Type: req.Type, Version: req.Version, IdempotencyKey: req.IdempotencyKey,
		TenantID: req.TenantID, UserID: req.UserID, CorrelationID: req.CorrelationID, Input: req.Input,
	})
	if err != nil {
		return runtime.RunInfo{}, err
	}
	info := runInfo(res.Run)
	info.Start, info.ETA = runtime.StartOutcome(res.Outcome.String()), res.ETA
	return info, nil
}

// SignalRun implements runtime.Runner with Signal.
func (e *Engine) SignalRun(ctx context.Context, runID string, ev runtime.Event) (runtime.RunInfo, error) {
	run, err := e.Signal(ctx, runID, ev)
	return runInfo(run), err
}

// CancelRun implements runtime.Runner with Cancel.
func (e *Engine) CancelRun(ctx context.Context, runID, userID string) (runtime.RunInfo, error) {
	run, err := e.Cancel(ctx, runID, userID)
	return runInfo(run), err
}

// GetRun implements runtime.Runner: it reads the run from the store.
func (e *Engine) GetRun(ctx context.Context, runID string) (runtime.RunInfo, error) {
	run, err := e.st.Get(ctx, runID)
	return runInfo(run), err
}

// WaitRun implements runtime.Runner with Wait.
func (e *Engine) WaitRun(ctx context.Context, runID string) (runtime.RunInfo, error) {
	run, err := e.Wait(ctx, runID)
	return runInfo(run), err
}

// runInfo converts a stored run; the zero run gives the zero RunInfo.
func runInfo(r store.Run) runtime.RunInfo {
	if r.ID == "" {
		return runtime.RunInfo{}
	}
	info := runtime.RunInfo{
		ID: r.ID, Type: r.Type, Version: r.Version, IdempotencyKey: r.IdempotencyKey,
		State: r.State, Status: r.Status, Attempt: r.Attempt,
		Owner: runtime.Owner{TenantID: r.TenantID, UserID: r.UserID, CorrelationID: r.CorrelationID},
		Input: r.Input, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, FinishedAt: r.FinishedAt, NextRunAt: r.NextRunAt,
		ParkedAt: r.ParkedAt, LastErrorCode: r.LastErrorCode, LastError: r.LastError,
	}
	if res := r.Result; res != nil {
		info.Result = &runtime.RunResult{
			Status: res.Status, Outcome: res.Outcome, Output: res.Output, CostUSD: res.CostUSD,
			DurationMS: res.DurationMS, ErrorCode: res.ErrorCode, ErrorDetail: res.ErrorDetail,
		}
	}
	return info
}
