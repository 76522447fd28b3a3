package problems

import (
	"context"

	rog "github.com/fsmgen/fsmgen/machines/problems/retrieveorgenerate"
	"github.com/fsmgen/fsmgen/runtime"
)

// Guards returns the guards of the machine for one run. The guards read the
// run (its owner, its policy snapshot, its recorded events) besides the event
// they are asked about, so they are built per run rather than once per
// process; the driver asks for them for each run it fires an event on.
//
// The guards do no I/O and never fail: a run whose policy snapshot is
// missing or invalid gets guards that refuse every policy-dependent event
// (the handlers refuse to work on such a run before that matters), and a nil
// run gets guards that refuse everything that depends on the run.
func (w *Workflow) Guards(run *runtime.Run) rog.Guards {
	g := runGuards{run: run}
	if run != nil {
		if p, err := DecodePolicy(run.Policy); err == nil {
			g.policy, g.hasPolicy = p, true
		}
	}
	return g
}

type runGuards struct {
	run       *runtime.Run
	policy    ExecutionPolicy
	hasPolicy bool
}

var _ rog.Guards = runGuards{}

// IdempotencyCheckPassed admits Start for a run that has an idempotency
// key: the store's idempotent start let this attempt through.
func (g runGuards) IdempotencyCheckPassed(_ context.Context, _ rog.Start) bool {
	return g.run != nil && g.run.IdempotencyKey != ""
}

// SignatureComputed admits MediaNormalized whose signature is the one its
// text and pHash give.
func (g runGuards) SignatureComputed(_ context.Context, e rog.MediaNormalized) bool {
	return e.ProblemSignature != "" && e.ProblemSignature == ProblemSignature(e.NormalizedText, e.Phash)
}

// AtOrAboveThreshold admits a hit whose confidence meets the policy's
// threshold for its method.
func (g runGuards) AtOrAboveThreshold(_ context.Context, e rog.RetrievalHit) bool {
	return g.hasPolicy && e.AssetVersionID != "" &&
		g.policy.Admits(Candidate{AssetVersionID: e.AssetVersionID, Confidence: e.Confidence, Method: Method(e.Method)})
}

// BelowThreshold admits a miss whose best confidence is under the policy's
// retrieval threshold. Exact methods have fixed confidences equal to their
// thresholds, so a best candidate that was not served always scored under
// the retrieval threshold.
func (g runGuards) BelowThreshold(_ context.Context, e rog.RetrievalMiss) bool {
	return g.hasPolicy && e.BestConfidence < g.policy.RetrievalThreshold
}

// HTMLAvailable admits a solve that stored its HTML.
func (g runGuards) HTMLAvailable(_ context.Context, e rog.SolveSucceeded) bool {
	return e.StorageKey != ""
}

// NearMissAvailable admits a failed solve when the run's retrieval miss
// left a candidate that scored above NearMissConfidence and the solve did
// not spend more than the cost cap. It decides alike whether the handler
// returned SolveFailed, Workflow.Exhausted built it, or an engine wired
// without Exhausted fired it with an empty payload.
func (g runGuards) NearMissAvailable(_ context.Context, e rog.SolveFailed) bool {
	if !g.hasPolicy {
		return false
	}
	_, ok := nearMiss(g.run, g.policy, e)
	return ok
}

// AssetsPersisted admits AssetsRegistered that names both registered rows.
func (g runGuards) AssetsPersisted(_ context.Context, e rog.AssetsRegistered) bool {
	return e.ProblemID != "" && e.AssetVersionID != ""
}

// UserOwnsRun admits a cancel by the user the run belongs to.
func (g runGuards) UserOwnsRun(_ context.Context, e rog.Cancel) bool {
	return g.run != nil && g.run.UserID != "" && e.UserID == g.run.UserID
}
