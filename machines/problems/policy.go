package problems

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
)

// VideoMode says whether and how a video is generated for a new solution.
type VideoMode string

// The video modes of an execution policy.
const (
	// VideoSkip generates no video.
	VideoSkip VideoMode = "skip"
	// VideoAsync enqueues a video run that renders in the background.
	VideoAsync VideoMode = "async"
	// VideoSync enqueues a video run that renders in one blocking step of
	// its own; this workflow still does not wait for it.
	VideoSync VideoMode = "sync"
)

// Subscription tiers known to policy engines.
const (
	TierFree       = "free"
	TierPro        = "pro"
	TierEnterprise = "enterprise"
)

// Content sensitivity tags, as the run's context carries them.
const (
	SensitivityPrivate  = "private"
	SensitivityStandard = "standard"
	SensitivityPublic   = "public"
)

// Method names how a retrieval candidate was found; each method has its own
// confidence threshold (see ExecutionPolicy.Threshold).
type Method string

// The retrieval methods of the threshold table.
const (
	// MethodPHashExact is the same image: identical perceptual hashes.
	MethodPHashExact Method = "phash_exact"
	// MethodPHashNear is a near-duplicate image: perceptual hashes less than
	// NearDuplicateDistance bits apart.
	MethodPHashNear Method = "phash_near"
	// MethodTextExact is the same normalized text.
	MethodTextExact Method = "text_exact"
	// MethodSimilarity is a similarity score between texts: vector cosine
	// in a semantic index, trigram similarity in the local retriever.
	MethodSimilarity Method = "similarity"
	// MethodHybrid is a similarity re-ranked with other signals (topic
	// tags, keywords), used when similarity alone is uncertain.
	MethodHybrid Method = "hybrid"
)

// The fixed confidences, and thresholds, of the exact methods.
const (
	// ConfidencePHashExact is the confidence and threshold of MethodPHashExact.
	ConfidencePHashExact = 1.0
	// ConfidencePHashNear is the confidence and threshold of MethodPHashNear.
	ConfidencePHashNear = 0.95
	// ConfidenceTextExact is the confidence and threshold of MethodTextExact.
	ConfidenceTextExact = 0.99
	// NearDuplicateDistance bounds the Hamming distance, exclusive, between
	// the perceptual hashes of near-duplicate images.
	NearDuplicateDistance = 8
	// HybridAllowance is how far below the retrieval threshold a hybrid
	// re-ranked candidate may score and still be a hit.
	HybridAllowance = 0.02
	// NearMissConfidence is the confidence a retrieval candidate must exceed
	// to be served, flagged approximate, when solving fails.
	NearMissConfidence = 0.70
)

// ExecutionPolicy governs one run: it is resolved before the run starts, its
// JSON snapshot is stored on the run, and every state reads it from there.
type ExecutionPolicy struct {
	// RetrievalThreshold is the confidence a similarity candidate needs to
	// be served; hybrid candidates need RetrievalThreshold - HybridAllowance.
	RetrievalThreshold float64 `json:"retrieval_threshold"`
	// VideoGeneration says whether a new solution gets a video.
	VideoGeneration VideoMode `json:"video_generation"`
	// RetryMax is the number of retries after a first failed try of the
	// steps the policy governs (ingestion and solving), within the bound
	// the machine declares for each (retry up to N: at most N tries).
	RetryMax int `json:"retry_max"`
	// CostCapUSD is the most a run may spend on solving.
	CostCapUSD float64 `json:"cost_cap_usd"`
	// SubscriptionTier and Sensitivity record what the policy was resolved
	// for, for whoever reads the snapshot later.
	SubscriptionTier string `json:"subscription_tier,omitempty"`
	Sensitivity      string `json:"sensitivity,omitempty"`
}

// DefaultPolicy returns the policy of the platform's published defaults:
// retrieval threshold 0.85, video in the background, 3 retries, a 0.50 USD
// cost cap.
func DefaultPolicy() ExecutionPolicy {
	return ExecutionPolicy{
		RetrievalThreshold: 0.85,
		VideoGeneration:    VideoAsync,
		RetryMax:           3,
		CostCapUSD:         0.50,
	}
}

// ErrInvalidPolicy is matched by errors.Is when a policy or its snapshot is
// unusable.
var ErrInvalidPolicy = errors.New("invalid execution policy")

// Validate reports whether p can govern a run.
func (p ExecutionPolicy) Validate() error {
	switch {
	case math.IsNaN(p.RetrievalThreshold) || p.RetrievalThreshold <= 0 || p.RetrievalThreshold > 1:
		return fmt.Errorf("%w: retrieval_threshold %v not in (0, 1]", ErrInvalidPolicy, p.RetrievalThreshold)
	case p.VideoGeneration != VideoSkip && p.VideoGeneration != VideoAsync && p.VideoGeneration != VideoSync:
		return fmt.Errorf("%w: video_generation %q is not skip, async or sync", ErrInvalidPolicy, p.VideoGeneration)
	case p.RetryMax < 0:
		return fmt.Errorf("%w: retry_max %d is negative", ErrInvalidPolicy, p.RetryMax)
	case math.IsNaN(p.CostCapUSD) || math.IsInf(p.CostCapUSD, 0) || p.CostCapUSD < 0:
		return fmt.Errorf("%w: cost_cap_usd %v is not a non-negative amount", ErrInvalidPolicy, p.CostCapUSD)
	}
	return nil
}

// Threshold returns the confidence a candidate found by method m needs to be
// served, per the threshold table: exact pHash 1.0, near-duplicate pHash
// 0.95, exact normalized text 0.99, similarity RetrievalThreshold, hybrid
// RetrievalThreshold - 0.02. An unknown method gets a threshold above 1, so
// that nothing it finds is served.
func (p ExecutionPolicy) Threshold(m Method) float64 {
	switch m {
	case MethodPHashExact:
		return ConfidencePHashExact
	case MethodPHashNear:
		return ConfidencePHashNear
	case MethodTextExact:
		return ConfidenceTextExact
	case MethodSimilarity:
		return p.RetrievalThreshold
	case MethodHybrid:
		return p.RetrievalThreshold - HybridAllowance
	}
	return math.Inf(1)
}

// Admits reports whether candidate c is good enough to be served under p.
func (p ExecutionPolicy) Admits(c Candidate) bool {
	return c.Confidence >= p.Threshold(c.Method)
}

// DecodePolicy reads a policy snapshot, as stored on a run, and validates it.
func DecodePolicy(snapshot json.RawMessage) (ExecutionPolicy, error) {
	if len(snapshot) == 0 || string(snapshot) == "null" {
		return ExecutionPolicy{}, fmt.Errorf("%w: the run has no policy snapshot", ErrInvalidPolicy)
	}
	var p ExecutionPolicy
	if err := json.Unmarshal(snapshot, &p); err != nil {
		return ExecutionPolicy{}, fmt.Errorf("%w: decode snapshot: %w", ErrInvalidPolicy, err)
	}
	if err := p.Validate(); err != nil {
		return ExecutionPolicy{}, err
	}
	return p, nil
}

// PolicyRequest is what a policy is resolved from.
type PolicyRequest struct {
	WorkflowType     string
	TenantID         string
	UserID           string
	SubscriptionTier string
	Sensitivity      string
}

// PolicyEngine resolves the execution policy of a run before it starts.
type PolicyEngine interface {
	Policy(ctx context.Context, req PolicyRequest) (ExecutionPolicy, error)
}
