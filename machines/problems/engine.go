package problems

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	rog "github.com/fsmgen/fsmgen/machines/problems/retrieveorgenerate"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
)

// RunInput is the input JSON of a run that Submit starts: the submitted
// problem, flattened, and the context its execution policy is resolved
// from. The handlers read the problem part (DecodeSubmission); the policy
// function reads the rest before the run exists.
type RunInput struct {
	SubmitProblem
	// SubscriptionTier is the submitting user's tier: TierFree, TierPro or
	// TierEnterprise.
	SubscriptionTier string `json:"subscription_tier,omitempty"`
	// Sensitivity is the content's sensitivity tag; empty means standard.
	Sensitivity string `json:"sensitivity,omitempty"`
}

// SubmitRequest is a user's submission of a problem, with the context of
// the request.
type SubmitRequest struct {
	// UserID is the submitting user's UUID; the run belongs to this user,
	// who alone may cancel it.
	UserID string
	// TenantID is required.
	TenantID string
	// CorrelationID is a UUID tracing the request; generated when empty.
	CorrelationID string
	// SubscriptionTier and Sensitivity select the execution policy.
	SubscriptionTier string
	Sensitivity      string
	// Problem is what was submitted.
	Problem SubmitProblem
}

// Register registers the workflow with eng: the RetrieveOrGenerate machine,
// driven by w.Driver(), started under the policy that w.StartPolicy
// resolves, its exhausted states ended by w.Exhausted, and the background
// machines its runs enqueue (w.ReindexDriver and w.VideoDriver). Call it
// once per engine, before Submit and before the engine works.
func (w *Workflow) Register(ctx context.Context, eng *engine.Engine) error {
	if eng == nil {
		return errors.New("problems: register: nil engine")
	}
	if err := eng.Register(ctx, w.Driver(), engine.WithPolicy(w.StartPolicy), engine.WithExhausted(w.Exhausted)); err != nil {
		return fmt.Errorf("problems: register %s: %w", rog.Type, err)
	}
	if err := w.registerBackground(ctx, eng); err != nil {
		return err
	}
	return nil
}

// StartPolicy is the engine.PolicyFunc of RetrieveOrGenerate runs: before a
// run starts it resolves the execution policy for the run's user, tenant,
// subscription tier and sensitivity (read from the run's input, a RunInput)
// and returns the snapshot the engine stores on the run. Register installs
// it; it is exported for engines wired by hand.
func (w *Workflow) StartPolicy(ctx context.Context, p runtime.StartRequest) (json.RawMessage, error) {
	in, err := decodeRunInput(p.Input)
	if err != nil {
		return nil, err
	}
	return w.resolvePolicy(ctx, PolicyRequest{
		WorkflowType:     p.Type,
		TenantID:         p.TenantID,
		UserID:           p.UserID,
		SubscriptionTier: in.SubscriptionTier,
		Sensitivity:      in.Sensitivity,
	})
}

// Submit starts the run of a submission on eng, idempotently: the
// idempotency key is IdempotencyKey of the problem's signature, the user
// and the intent (see Key), so that the same problem submitted again by the
// same user with the same intent finds the same run. The branches are those
// of engine.Engine.Start: a new run (runtime.StartCreated), a failed one started
// again as its next attempt (runtime.StartRestarted), one under way with its ETA
// (runtime.StartRunning), one that succeeded with its cached result
// (runtime.StartCached), or one that was cancelled (runtime.StartCancelled). The engine's
// workers drive a new or restarted run; call eng.Drive to drive it in the
// caller's goroutine instead.
func (w *Workflow) Submit(ctx context.Context, eng *engine.Engine, req SubmitRequest) (runtime.Started, error) {
	if eng == nil {
		return runtime.Started{}, errors.New("problems: submit: nil engine")
	}
	if req.TenantID == "" {
		return runtime.Started{}, fmt.Errorf("problems: submit: %w: no tenant", ErrInvalidSubmission)
	}
	key, err := w.Key(ctx, req.UserID, req.Problem)
	if err != nil {
		return runtime.Started{}, fmt.Errorf("problems: submit: %w", err)
	}
	res, err := eng.Start(ctx, runtime.StartRequest{
		Type:           rog.Type,
		IdempotencyKey: key,
		Owner:          runtime.Owner{TenantID: req.TenantID, UserID: req.UserID, CorrelationID: req.CorrelationID},
		Input: RunInput{
			SubmitProblem:    req.Problem,
			SubscriptionTier: req.SubscriptionTier,
			Sensitivity:      req.Sensitivity,
		},
	})
	if err != nil {
		return res, fmt.Errorf("problems: submit: %w", err)
	}
	return res, nil
}

// decodeRunInput reads a RunInput from a start's input: a RunInput, a
// SubmitProblem, JSON, or any value that encodes to a RunInput's JSON.
func decodeRunInput(input any) (RunInput, error) {
	switch v := input.(type) {
	case RunInput:
		return v, nil
	case *RunInput:
		if v != nil {
			return *v, nil
		}
		return RunInput{}, nil
	case SubmitProblem:
		return RunInput{SubmitProblem: v}, nil
	case nil:
		return RunInput{}, nil
	}
	var raw []byte
	switch v := input.(type) {
	case json.RawMessage:
		raw = v
	case []byte:
		raw = v
	default:
		b, err := json.Marshal(input)
		if err != nil {
			return RunInput{}, fmt.Errorf("problems: encode run input: %w", err)
		}
		raw = b
	}
	var in RunInput
	if len(raw) == 0 {
		return in, nil
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return RunInput{}, fmt.Errorf("problems: %w: decode run input: %w", ErrInvalidSubmission, err)
	}
	return in, nil
}
