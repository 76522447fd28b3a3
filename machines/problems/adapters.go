package problems

import (
	"context"
	"errors"
	"fmt"
)

// Content is what a user submitted: exactly one of an upload, a text or a
// URL, with its media type.
type Content struct {
	UploadSessionID string
	Text            string
	URL             string
	MediaType       string
}

// Media is normalized content. A rejected one has RejectionReason set and
// nothing else.
type Media struct {
	// NormalizedText is the text of the problem in canonical form (OCR'd
	// for images), empty for an image without text.
	NormalizedText string
	// PHash is the perceptual hash of an image, 16 hexadecimal digits,
	// empty for text.
	PHash string
	// TopicTags are sorted and unique.
	TopicTags []string
	// RejectionReason says why the content cannot be used, as a short code
	// such as "empty_content" or "unsupported_media_type".
	RejectionReason string
}

// Rejected reports whether the content was rejected.
func (m Media) Rejected() bool { return m.RejectionReason != "" }

// Normalizer turns submitted content into normalized media: OCR, text
// canonicalization, perceptual hashing, topic tags. Content it cannot use
// gives a Media with a RejectionReason and a nil error; an error means the
// normalizer itself failed and the step may be tried again.
type Normalizer interface {
	Normalize(ctx context.Context, c Content) (Media, error)
}

// Query is what a retriever searches for.
type Query struct {
	ProblemSignature string
	NormalizedText   string
	PHash            string
	TopicTags        []string
	// RetrievalThreshold is the policy's: a retriever re-ranks candidates
	// whose similarity falls below it (MethodHybrid).
	RetrievalThreshold float64
}

// Candidate is a stored solution that may answer a query.
type Candidate struct {
	AssetVersionID string
	ProblemID      string
	Confidence     float64
	Method         Method
}

// Retriever searches stored solutions: it returns candidates, best first,
// each scored by the method that found it. Deciding which candidate, if any,
// is served is the workflow's, by the policy's threshold table.
type Retriever interface {
	Search(ctx context.Context, q Query) ([]Candidate, error)
}

// SolveRequest asks a solver for a solution.
type SolveRequest struct {
	ProblemSignature string
	NormalizedText   string
	TopicTags        []string
	Intent           string
	// Attempt counts the tries of this request, from 1; a solver may fall
	// back to another model on later attempts.
	Attempt int
	// BudgetUSD is what the solver may spend on this request.
	BudgetUSD float64
}

// Solution is a generated solution, already stored under StorageKey.
type Solution struct {
	HTML       string
	StorageKey string
	// Provenance says what produced the solution (model, method, version).
	Provenance string
	CostUSD    float64
}

// ErrCostCapExceeded is matched by errors.Is on a solver's error when the
// solution would cost more than the request's budget.
var ErrCostCapExceeded = errors.New("cost cap exceeded")

// CostCapError is a solver's error when a solution would cost more than the
// request's budget; errors.Is(err, ErrCostCapExceeded) matches it.
type CostCapError struct {
	CapUSD   float64
	SpentUSD float64
}

// Error implements error.
func (e *CostCapError) Error() string {
	return fmt.Sprintf("cost cap exceeded: %.4f USD needed, cap %.4f USD", e.SpentUSD, e.CapUSD)
}

// Is reports whether target is ErrCostCapExceeded.
func (e *CostCapError) Is(target error) bool { return target == ErrCostCapExceeded }

// Solver generates a solution and stores its HTML (the solve sub-workflow).
type Solver interface {
	Solve(ctx context.Context, req SolveRequest) (Solution, error)
}

// ProblemSpec identifies and describes a problem for the registry.
type ProblemSpec struct {
	ProblemSignature string
	NormalizedText   string
	PHash            string
	TopicTags        []string
}

// Problem is a registered problem.
type Problem struct {
	ID               string
	ProblemSignature string
	// Created is true when this call registered it.
	Created bool
}

// AssetTypeSolutionHTML is the asset type of a generated HTML solution.
const AssetTypeSolutionHTML = "solution_html"

// VersionSpec describes a new version of an asset of a problem.
type VersionSpec struct {
	ProblemID  string
	AssetType  string
	StorageKey string
	Provenance string
}

// AssetVersion is a registered version of an asset.
type AssetVersion struct {
	ID        string
	ProblemID string
	AssetType string
	// VersionNo counts the versions of the problem's asset type from 1.
	VersionNo  int
	StorageKey string
	// Created is true when this call registered it.
	Created bool
}

// Registry is the asset registry. Both methods are idempotent, since a step
// may run again after a crash: the same signature gives the same problem, and
// the same (problem, asset type, storage key) the same version.
type Registry interface {
	GetOrCreateProblem(ctx context.Context, p ProblemSpec) (Problem, error)
	CreateVersion(ctx context.Context, v VersionSpec) (AssetVersion, error)
}

// IndexDocument is what the index holds for a problem's current solution.
type IndexDocument struct {
	ProblemID        string
	AssetVersionID   string
	ProblemSignature string
	NormalizedText   string
	PHash            string
	TopicTags        []string
}

// ErrIndexTimeout is matched by errors.Is on an indexer's error when the
// write timed out; the workflow then defers the write to a background job.
var ErrIndexTimeout = errors.New("index write timed out")

// Indexer writes documents to the search index. Upsert is idempotent.
type Indexer interface {
	Upsert(ctx context.Context, doc IndexDocument) error
}

// VideoRequest asks a renderer for the video of a solution.
type VideoRequest struct {
	ProblemSignature       string
	SolutionAssetVersionID string
	VideoMode              VideoMode
	// Attempt counts the tries of this request, from 1.
	Attempt int
}

// Video is a rendered video, stored under StorageKey.
type Video struct {
	StorageKey string
}

// VideoRenderer renders and stores the video of a solution (the video
// workflow's work). Render is idempotent: the same solution gives the same
// video, since a step may run again after a crash.
type VideoRenderer interface {
	Render(ctx context.Context, req VideoRequest) (Video, error)
}
