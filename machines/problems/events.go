package problems

// The topics of the domain events the workflow emits to the outbox.
const (
	TopicMediaNormalized     = "ingestion.MediaNormalized"
	TopicMediaRejected       = "ingestion.MediaRejected"
	TopicRetrievalHit        = "retrieval.RetrievalHit"
	TopicRetrievalMiss       = "retrieval.RetrievalMiss"
	TopicProblemRegistered   = "asset.ProblemRegistered"
	TopicAssetVersionCreated = "asset.AssetVersionCreated"
	TopicDocumentIndexed     = "retrieval.DocumentIndexed"
)

// The workflow types the workflow enqueues in the background.
const (
	// ReindexWorkflowType retries an index write that timed out; its input
	// is a ReindexAsset.
	ReindexWorkflowType = "admin.reindex_asset"
	// VideoWorkflowType renders the video of a new solution; its input is a
	// GenerateVideo.
	VideoWorkflowType = "video_generation"
)

// The error codes the workflow reports.
const (
	// CodeInvalidPolicy: the run's policy snapshot is missing or unusable.
	CodeInvalidPolicy = "POLICY_INVALID"
	// CodeMissingEvent: an event a state depends on is not in the run's history.
	CodeMissingEvent = "MISSING_EVENT"
	// CodeMediaRejected: the submitted content cannot be used.
	CodeMediaRejected = "MEDIA_REJECTED"
	// CodeSolveFailed: the solver failed on every attempt the policy allows.
	CodeSolveFailed = "SOLVE_FAILED"
	// CodeCostCapExceeded: solving would cost more than the policy's cap.
	CodeCostCapExceeded = "COST_CAP_EXCEEDED"
	// CodeIndexFailed: the index write failed with an error other than a timeout.
	CodeIndexFailed = "INDEX_FAILED"
)

// Output is the output of a succeeded run, stored in its result record.
type Output struct {
	AssetVersionID string `json:"asset_version_id"`
	// VideoPending is true when a video run was enqueued for the solution.
	VideoPending bool `json:"video_pending"`
	// IsApproximate is true only when a near miss is served because
	// solving failed.
	IsApproximate bool `json:"is_approximate"`
}

// ReindexAsset is the input of a ReindexWorkflowType run.
type ReindexAsset struct {
	AssetVersionID   string   `json:"asset_version_id"`
	ProblemID        string   `json:"problem_id"`
	ProblemSignature string   `json:"problem_signature"`
	NormalizedText   string   `json:"normalized_text"`
	PHash            string   `json:"phash,omitempty"`
	TopicTags        []string `json:"topic_tags"`
}

// GenerateVideo is the input of a VideoWorkflowType run.
type GenerateVideo struct {
	ProblemSignature       string    `json:"problem_signature"`
	SolutionAssetVersionID string    `json:"solution_asset_version_id"`
	VideoMode              VideoMode `json:"video_mode"`
}

// MediaNormalizedEvent is the payload of TopicMediaNormalized.
type MediaNormalizedEvent struct {
	RunID            string   `json:"run_id"`
	ProblemSignature string   `json:"problem_signature"`
	PHash            string   `json:"phash,omitempty"`
	TopicTags        []string `json:"topic_tags"`
}

// MediaRejectedEvent is the payload of TopicMediaRejected.
type MediaRejectedEvent struct {
	RunID  string `json:"run_id"`
	Reason string `json:"reason"`
}

// RetrievalHitEvent is the payload of TopicRetrievalHit.
type RetrievalHitEvent struct {
	RunID            string  `json:"run_id"`
	ProblemSignature string  `json:"problem_signature"`
	AssetVersionID   string  `json:"asset_version_id"`
	Confidence       float64 `json:"confidence"`
	Method           Method  `json:"method"`
}

// RetrievalMissEvent is the payload of TopicRetrievalMiss.
type RetrievalMissEvent struct {
	RunID                   string  `json:"run_id"`
	ProblemSignature        string  `json:"problem_signature"`
	BestConfidence          float64 `json:"best_confidence"`
	CandidateAssetVersionID string  `json:"candidate_asset_version_id,omitempty"`
	Candidates              int     `json:"candidates"`
}

// ProblemRegisteredEvent is the payload of TopicProblemRegistered.
type ProblemRegisteredEvent struct {
	RunID            string `json:"run_id"`
	ProblemID        string `json:"problem_id"`
	ProblemSignature string `json:"problem_signature"`
}

// AssetVersionCreatedEvent is the payload of TopicAssetVersionCreated.
type AssetVersionCreatedEvent struct {
	RunID          string `json:"run_id"`
	ProblemID      string `json:"problem_id"`
	AssetVersionID string `json:"asset_version_id"`
	AssetType      string `json:"asset_type"`
	VersionNo      int    `json:"version_no"`
	StorageKey     string `json:"storage_key"`
	Provenance     string `json:"provenance"`
}

// DocumentIndexedEvent is the payload of TopicDocumentIndexed.
type DocumentIndexedEvent struct {
	RunID            string `json:"run_id"`
	ProblemID        string `json:"problem_id"`
	AssetVersionID   string `json:"asset_version_id"`
	ProblemSignature string `json:"problem_signature"`
}
