package problems

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	rog "github.com/fsmgen/fsmgen/machines/problems/retrieveorgenerate"
	"github.com/fsmgen/fsmgen/runtime"
)

// Adapters are the external systems the workflow works with. Every one is
// required.
type Adapters struct {
	Policies   PolicyEngine
	Normalizer Normalizer
	Retriever  Retriever
	Solver     Solver
	Registry   Registry
	Indexer    Indexer
	// Videos renders the videos of new solutions, in the background runs
	// of type VideoWorkflowType.
	Videos VideoRenderer
}

// Workflow is the RetrieveOrGenerate workflow: it implements the handlers of
// the generated machine, and builds its guards for each run. A Workflow holds
// no per-run state and is safe for concurrent use.
type Workflow struct {
	a Adapters
}

var _ rog.Handlers = (*Workflow)(nil)

// New returns the workflow over the given adapters.
func New(a Adapters) (*Workflow, error) {
	var missing []string
	if a.Policies == nil {
		missing = append(missing, "Policies")
	}
	if a.Normalizer == nil {
		missing = append(missing, "Normalizer")
	}
	if a.Retriever == nil {
		missing = append(missing, "Retriever")
	}
	if a.Solver == nil {
		missing = append(missing, "Solver")
	}
	if a.Registry == nil {
		missing = append(missing, "Registry")
	}
	if a.Indexer == nil {
		missing = append(missing, "Indexer")
	}
	if a.Videos == nil {
		missing = append(missing, "Videos")
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("problems: new workflow: missing adapters %v", missing)
	}
	return &Workflow{a: a}, nil
}

// Driver returns the runtime.Driver of the workflow: the generated machine
// with this workflow's handlers, firing every event with the guards of the
// run it is fired on (see Guards). Register it with the engine.
func (w *Workflow) Driver() runtime.Driver {
	return rog.NewDriver(w, w.Guards)
}

// PolicyFor resolves the execution policy of a run about to start and
// returns the snapshot to store on it, which the run's handlers and guards
// read back as run.Policy.
func (w *Workflow) PolicyFor(ctx context.Context, workflowType, userID, subscriptionTier, sensitivity string) (json.RawMessage, error) {
	return w.resolvePolicy(ctx, PolicyRequest{
		WorkflowType:     workflowType,
		UserID:           userID,
		SubscriptionTier: subscriptionTier,
		Sensitivity:      sensitivity,
	})
}

func (w *Workflow) resolvePolicy(ctx context.Context, req PolicyRequest) (json.RawMessage, error) {
	p, err := w.a.Policies.Policy(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("problems: resolve policy: %w", err)
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("problems: resolve policy: %w", err)
	}
	b, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("problems: encode policy: %w", err)
	}
	return b, nil
}

// Key returns the idempotency key to start a run for cmd by userID with:
// IdempotencyKey of the problem's signature, the user and the intent. It
// normalizes the content to compute the signature; content the normalizer
// rejects is keyed by the SHA-256 of its raw form instead, so that each
// rejected submission gets a key of its own.
func (w *Workflow) Key(ctx context.Context, userID string, cmd SubmitProblem) (string, error) {
	if err := cmd.Validate(); err != nil {
		return "", err
	}
	m, err := w.a.Normalizer.Normalize(ctx, cmd.Content())
	if err != nil {
		return "", fmt.Errorf("problems: key: normalize: %w", err)
	}
	sig := ProblemSignature(m.NormalizedText, m.PHash)
	if m.Rejected() || sig == "" {
		sig = sha256Hex("raw:" + cmd.MediaType + "\x00" + cmd.UploadSessionID + "\x00" + cmd.Text + "\x00" + cmd.URL)
	}
	return IdempotencyKey(sig, userID, cmd.IntentOrDefault()), nil
}

// Initiated applies the run's execution policy: it checks the snapshot the
// engine stored, logs it as step "policy_applied", and starts the run.
func (w *Workflow) Initiated(ctx context.Context, run *runtime.Run) (rog.InitiatedEvent, error) {
	if run == nil {
		return nil, errNilRun
	}
	p, err := DecodePolicy(run.Policy)
	if err != nil {
		return nil, runtime.WithCode(CodeInvalidPolicy, err)
	}
	effectsOf(run).LogStep("policy_applied", map[string]any{"policy": p})
	return rog.Start{}, nil
}

// Ingesting normalizes the submitted content: MediaNormalized with the
// problem signature, or MediaRejected with the reason. A failing normalizer
// is retried until the policy's retry_max is used up, then the media is
// rejected with reason "normalization_failed".
func (w *Workflow) Ingesting(ctx context.Context, run *runtime.Run) (rog.IngestingEvent, error) {
	if run == nil {
		return nil, errNilRun
	}
	fx := effectsOf(run)
	if _, err := DecodePolicy(run.Policy); err != nil {
		return nil, runtime.WithCode(CodeInvalidPolicy, err)
	}
	cmd, err := DecodeSubmission(run.Input)
	if err != nil {
		fx.LogStep("input_invalid", map[string]any{"error": err.Error()})
		return w.reject(run, fx, "invalid_submission", err.Error()), nil
	}
	m, err := w.a.Normalizer.Normalize(ctx, cmd.Content())
	if err != nil {
		if ctx.Err() == nil && run.StepAttempt >= attempts(run, rog.StateIngesting) {
			return w.reject(run, fx, "normalization_failed", err.Error()), nil
		}
		return nil, fmt.Errorf("normalize: %w", err)
	}
	if m.Rejected() {
		return w.reject(run, fx, m.RejectionReason, ""), nil
	}
	sig := ProblemSignature(m.NormalizedText, m.PHash)
	fx.Emit(TopicMediaNormalized, MediaNormalizedEvent{
		RunID: run.ID, ProblemSignature: sig, PHash: m.PHash, TopicTags: m.TopicTags,
	})
	return rog.MediaNormalized{
		ProblemSignature: sig,
		NormalizedText:   m.NormalizedText,
		Phash:            m.PHash,
		TopicTags:        m.TopicTags,
	}, nil
}

func (w *Workflow) reject(run *runtime.Run, fx runtime.Effects, reason, detail string) rog.MediaRejected {
	fx.Emit(TopicMediaRejected, MediaRejectedEvent{RunID: run.ID, Reason: reason})
	if detail == "" {
		detail = reason
	}
	setError(fx, CodeMediaRejected, detail)
	return rog.MediaRejected{Reason: reason}
}

// Retrieving searches stored solutions. The best candidate the policy's
// threshold table admits is a RetrievalHit, and the run succeeds with it;
// otherwise RetrievalMiss carries the best candidate, which a failed solve
// may still serve as a near miss.
func (w *Workflow) Retrieving(ctx context.Context, run *runtime.Run) (rog.RetrievingEvent, error) {
	if run == nil {
		return nil, errNilRun
	}
	fx := effectsOf(run)
	p, err := DecodePolicy(run.Policy)
	if err != nil {
		return nil, runtime.WithCode(CodeInvalidPolicy, err)
	}
	mn, ok := runtime.Last[rog.MediaNormalized](run)
	if !ok {
		return nil, missing("MediaNormalized")
	}
	cands, err := w.a.Retriever.Search(ctx, Query{
		ProblemSignature:   mn.ProblemSignature,
		NormalizedText:     mn.NormalizedText,
		PHash:              mn.Phash,
		TopicTags:          mn.TopicTags,
		RetrievalThreshold: p.RetrievalThreshold,
	})
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	cands = append([]Candidate(nil), cands...)
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].Confidence > cands[j].Confidence })
	for _, c := range cands {
		if p.Admits(c) && c.AssetVersionID != "" {
			fx.Emit(TopicRetrievalHit, RetrievalHitEvent{
				RunID: run.ID, ProblemSignature: mn.ProblemSignature,
				AssetVersionID: c.AssetVersionID, Confidence: c.Confidence, Method: c.Method,
			})
			fx.SetResult(Output{AssetVersionID: c.AssetVersionID}, 0)
			return rog.RetrievalHit{AssetVersionID: c.AssetVersionID, Confidence: c.Confidence, Method: string(c.Method)}, nil
		}
	}
	var miss rog.RetrievalMiss
	if len(cands) > 0 {
		miss = rog.RetrievalMiss{BestConfidence: cands[0].Confidence, CandidateAssetVersionID: cands[0].AssetVersionID}
	}
	fx.Emit(TopicRetrievalMiss, RetrievalMissEvent{
		RunID: run.ID, ProblemSignature: mn.ProblemSignature,
		BestConfidence: miss.BestConfidence, CandidateAssetVersionID: miss.CandidateAssetVersionID,
		Candidates: len(cands),
	})
	return miss, nil
}

// GeneratingSolution runs the solver with the policy's cost cap as budget.
// A solution goes on to registration; one that costs more than the cap is
// CostCapExceeded. A failing solver is retried (the error is returned) until
// the policy's retry_max or the machine's retry limit is reached; on the last
// attempt the handler returns SolveFailed itself, having set the result: the
// near miss (is_approximate) when NearMissAvailable admits it, else the error.
func (w *Workflow) GeneratingSolution(ctx context.Context, run *runtime.Run) (rog.GeneratingSolutionEvent, error) {
	if run == nil {
		return nil, errNilRun
	}
	fx := effectsOf(run)
	p, err := DecodePolicy(run.Policy)
	if err != nil {
		return nil, runtime.WithCode(CodeInvalidPolicy, err)
	}
	mn, ok := runtime.Last[rog.MediaNormalized](run)
	if !ok {
		return nil, missing("MediaNormalized")
	}
	cmd, err := DecodeSubmission(run.Input)
	if err != nil {
		return nil, err
	}
	sol, err := w.a.Solver.Solve(ctx, SolveRequest{
		ProblemSignature: mn.ProblemSignature,
		NormalizedText:   mn.NormalizedText,
		TopicTags:        mn.TopicTags,
		Intent:           cmd.IntentOrDefault(),
		Attempt:          run.StepAttempt,
		BudgetUSD:        p.CostCapUSD,
	})
	var capErr *CostCapError
	switch {
	case errors.As(err, &capErr):
		return w.overCap(fx, p, capErr.SpentUSD), nil
	case errors.Is(err, ErrCostCapExceeded):
		return w.overCap(fx, p, 0), nil
	case err == nil && sol.CostUSD > p.CostCapUSD:
		return w.overCap(fx, p, sol.CostUSD), nil
	case err == nil && (sol.HTML == "" || sol.StorageKey == ""):
		err = errors.New("the solver returned no stored HTML")
	}
	if err != nil {
		limit := attempts(run, rog.StateGeneratingSolution)
		if ctx.Err() != nil || run.StepAttempt < limit {
			return nil, fmt.Errorf("solve (attempt %d of %d): %w", run.StepAttempt, limit, err)
		}
		code := runtime.ErrorCode(err)
		if code == "" {
			code = CodeSolveFailed
		}
		return solveFailed(run, fx, p, code, err.Error()), nil
	}
	return rog.SolveSucceeded{StorageKey: sol.StorageKey, Provenance: sol.Provenance, CostUSD: sol.CostUSD}, nil
}

// solveFailed returns the SolveFailed that ends a solve whose tries are used
// up, having set the run's result: the near miss (is_approximate) when
// NearMissAvailable will admit it, else the error.
func solveFailed(run *runtime.Run, fx runtime.Effects, p ExecutionPolicy, code, detail string) rog.SolveFailed {
	failed := rog.SolveFailed{ErrorCode: code, ErrorDetail: detail}
	if out, ok := nearMiss(run, p, failed); ok {
		fx.LogStep("near_miss_served", map[string]any{
			"asset_version_id": out.AssetVersionID, "error_code": code,
		})
		fx.SetResult(out, 0)
	} else {
		fx.SetResult(nil, 0)
		setError(fx, code, detail)
	}
	return failed
}

// Exhausted is the engine.ExhaustedFunc of the workflow, which Register
// installs: when the engine gives up on a state (its retries, or its
// recoveries from expired leases, are used up) it builds the event a
// handler would have returned on its last try, with its result. In
// GENERATING_SOLUTION that is SolveFailed with the last error, serving the
// near miss when there is one (outcome "hit", output {asset_version_id,
// is_approximate: true}); in INGESTING it is MediaRejected with reason
// "normalization_failed". Other states get the machine's event with an
// empty payload (a nil event), and the last error in the result.
func (w *Workflow) Exhausted(_ context.Context, run *runtime.Run, state, code, detail string) (runtime.Event, error) {
	if run == nil {
		return nil, errNilRun
	}
	fx := effectsOf(run)
	switch state {
	case rog.StateGeneratingSolution.String():
		p, err := DecodePolicy(run.Policy)
		if err != nil {
			return nil, nil // the guards refuse a near miss without a policy
		}
		return solveFailed(run, fx, p, code, detail), nil
	case rog.StateIngesting.String():
		return w.reject(run, fx, "normalization_failed", code+": "+detail), nil
	}
	return nil, nil
}

func (w *Workflow) overCap(fx runtime.Effects, p ExecutionPolicy, spent float64) rog.CostCapExceeded {
	fx.SetResult(nil, spent)
	setError(fx, CodeCostCapExceeded, fmt.Sprintf("solving needs %.4f USD, the cap is %.4f USD", spent, p.CostCapUSD))
	return rog.CostCapExceeded{CapUSD: p.CostCapUSD, SpentUSD: spent}
}

// nearMiss returns the output that serves the run's best retrieval candidate
// as an approximate answer to a failed solve: the candidate must have scored
// above NearMissConfidence and the solve must not have spent more than the
// cost cap.
func nearMiss(run *runtime.Run, p ExecutionPolicy, e rog.SolveFailed) (Output, bool) {
	miss, ok := runtime.Last[rog.RetrievalMiss](run)
	if !ok || miss.CandidateAssetVersionID == "" || miss.BestConfidence <= NearMissConfidence {
		return Output{}, false
	}
	if e.CostUSD > p.CostCapUSD {
		return Output{}, false
	}
	return Output{AssetVersionID: miss.CandidateAssetVersionID, IsApproximate: true}, true
}

// Registering saves the problem and a new version of its HTML solution in
// the asset registry, and emits asset.ProblemRegistered and
// asset.AssetVersionCreated. Both writes are idempotent, so a retry after a
// crash finds what the earlier attempt wrote.
func (w *Workflow) Registering(ctx context.Context, run *runtime.Run) (rog.RegisteringEvent, error) {
	if run == nil {
		return nil, errNilRun
	}
	fx := effectsOf(run)
	mn, ok := runtime.Last[rog.MediaNormalized](run)
	if !ok {
		return nil, missing("MediaNormalized")
	}
	sol, ok := runtime.Last[rog.SolveSucceeded](run)
	if !ok {
		return nil, missing("SolveSucceeded")
	}
	prob, err := w.a.Registry.GetOrCreateProblem(ctx, ProblemSpec{
		ProblemSignature: mn.ProblemSignature,
		NormalizedText:   mn.NormalizedText,
		PHash:            mn.Phash,
		TopicTags:        mn.TopicTags,
	})
	if err != nil {
		return nil, fmt.Errorf("register problem: %w", err)
	}
	av, err := w.a.Registry.CreateVersion(ctx, VersionSpec{
		ProblemID:  prob.ID,
		AssetType:  AssetTypeSolutionHTML,
		StorageKey: sol.StorageKey,
		Provenance: sol.Provenance,
	})
	if err != nil {
		return nil, fmt.Errorf("register asset version: %w", err)
	}
	fx.Emit(TopicProblemRegistered, ProblemRegisteredEvent{RunID: run.ID, ProblemID: prob.ID, ProblemSignature: mn.ProblemSignature})
	fx.Emit(TopicAssetVersionCreated, AssetVersionCreatedEvent{
		RunID: run.ID, ProblemID: prob.ID, AssetVersionID: av.ID, AssetType: av.AssetType,
		VersionNo: av.VersionNo, StorageKey: av.StorageKey, Provenance: sol.Provenance,
	})
	return rog.AssetsRegistered{ProblemID: prob.ID, AssetVersionID: av.ID}, nil
}

// Indexing writes the new solution to the search index and finishes the run
// with outcome "new". An index write that times out is not fatal: the run
// succeeds with IndexTimedOut, a background reindex is enqueued and step
// "index_deferred" is logged. Any other index error fails the run with
// IndexFailed. Unless the policy says skip, a video run is enqueued.
func (w *Workflow) Indexing(ctx context.Context, run *runtime.Run) (rog.IndexingEvent, error) {
	if run == nil {
		return nil, errNilRun
	}
	fx := effectsOf(run)
	p, err := DecodePolicy(run.Policy)
	if err != nil {
		return nil, runtime.WithCode(CodeInvalidPolicy, err)
	}
	mn, ok := runtime.Last[rog.MediaNormalized](run)
	if !ok {
		return nil, missing("MediaNormalized")
	}
	reg, ok := runtime.Last[rog.AssetsRegistered](run)
	if !ok {
		return nil, missing("AssetsRegistered")
	}
	sol, ok := runtime.Last[rog.SolveSucceeded](run)
	if !ok {
		return nil, missing("SolveSucceeded")
	}
	err = w.a.Indexer.Upsert(ctx, IndexDocument{
		ProblemID:        reg.ProblemID,
		AssetVersionID:   reg.AssetVersionID,
		ProblemSignature: mn.ProblemSignature,
		NormalizedText:   mn.NormalizedText,
		PHash:            mn.Phash,
		TopicTags:        mn.TopicTags,
	})
	var ev rog.IndexingEvent
	switch {
	case err == nil:
		fx.Emit(TopicDocumentIndexed, DocumentIndexedEvent{
			RunID: run.ID, ProblemID: reg.ProblemID, AssetVersionID: reg.AssetVersionID, ProblemSignature: mn.ProblemSignature,
		})
		ev = rog.DocumentIndexed{AssetVersionID: reg.AssetVersionID}
	case ctx.Err() != nil:
		return nil, fmt.Errorf("index: %w", err)
	case isTimeout(err):
		fx.Enqueue(ReindexWorkflowType, "reindex:"+reg.AssetVersionID, ReindexAsset{
			AssetVersionID: reg.AssetVersionID, ProblemID: reg.ProblemID, ProblemSignature: mn.ProblemSignature,
			NormalizedText: mn.NormalizedText, PHash: mn.Phash, TopicTags: mn.TopicTags,
		})
		fx.LogStep("index_deferred", map[string]any{"reason": "timeout"})
		ev = rog.IndexTimedOut{AssetVersionID: reg.AssetVersionID}
	default:
		fx.SetResult(nil, sol.CostUSD)
		setError(fx, CodeIndexFailed, err.Error())
		return rog.IndexFailed{ErrorCode: CodeIndexFailed, ErrorDetail: err.Error()}, nil
	}
	out := Output{AssetVersionID: reg.AssetVersionID}
	if p.VideoGeneration != VideoSkip {
		fx.Enqueue(VideoWorkflowType, "video:"+reg.AssetVersionID, GenerateVideo{
			ProblemSignature:       mn.ProblemSignature,
			SolutionAssetVersionID: reg.AssetVersionID,
			VideoMode:              p.VideoGeneration,
		})
		out.VideoPending = true
	}
	fx.SetResult(out, sol.CostUSD)
	return ev, nil
}

// isTimeout reports whether an index error is a timeout: ErrIndexTimeout,
// a deadline of the indexer's own, or a network timeout.
func isTimeout(err error) bool {
	if errors.Is(err, ErrIndexTimeout) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

var errNilRun = errors.New("problems: handler called without a run")

func missing(event string) error {
	return runtime.WithCode(CodeMissingEvent, fmt.Errorf("no %s event in the run's history", event))
}

// attempts returns how many tries run gets in state s: the state's retry
// policy as the run's policy snapshot chooses within its bound (retry up
// to N: the policy's retry_max + 1, at most N), as the engine counts them;
// 1 in a state without one.
func attempts(run *runtime.Run, s rog.State) int {
	d := rog.Definition()
	spec, ok := d.State(s.String())
	if !ok || spec.Retry == nil {
		return 1
	}
	return spec.Retry.ForRun(run.Policy).MaxAttempts
}

func setError(fx runtime.Effects, code, detail string) {
	fx.SetError(code, detail)
}

func effectsOf(run *runtime.Run) runtime.Effects {
	if run.Effects == nil {
		return noEffects{}
	}
	return run.Effects
}

// noEffects drops every effect, for handlers called outside the engine.
type noEffects struct{}

func (noEffects) LogStep(string, any)         {}
func (noEffects) Emit(string, any)            {}
func (noEffects) Enqueue(string, string, any) {}
func (noEffects) SetError(string, string)     {}
func (noEffects) SetResult(any, float64)      {}
