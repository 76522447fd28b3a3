// Package problems runs the problem-solving pipeline: the RetrieveOrGenerate
// workflow on the machine of retrieve_or_generate.fsm, whose generated
// package is problems/retrieveorgenerate.
//
// A user submits a problem (text, an upload or a URL). The workflow
// normalizes it, serves a stored solution when one matches well enough
// (outcome "hit"), and otherwise generates an HTML solution, registers it
// and indexes it (outcome "new"), enqueueing its video in the background.
//
//	INITIATED -> INGESTING -> RETRIEVING -> SUCCEEDED (hit)
//	                                     -> GENERATING_SOLUTION -> REGISTERING -> INDEXING -> SUCCEEDED (new)
//
// # Wiring
//
// Every external system is an interface: Normalizer (OCR and text
// canonicalization), Retriever (hybrid search), Solver (the solve
// sub-workflow), Registry (the asset registry), Indexer (the search index),
// VideoRenderer (the video workflow's renderer) and PolicyEngine (the
// execution policy). Package problems/local implements them all on
// PostgreSQL. Give them to New:
//
//	wf, err := problems.New(problems.Adapters{
//		Policies: policies, Normalizer: normalizer, Retriever: retriever,
//		Solver: solver, Registry: registry, Indexer: indexer, Videos: videos,
//	})
//
// The engine drives a run with the runtime.Driver that wf.Driver()
// returns: the generated machine with wf's handlers and the guards of that
// run. The guards are built per run because they read it: the policy
// snapshot (thresholds, cost cap), the events recorded so far (the
// retrieval miss a failed solve may fall back on) and the run's owner (who
// may cancel it). They do no I/O and cannot fail; a run without a usable
// policy gets guards that refuse every event that depends on it.
//
// # Running on the engine
//
// Register registers the workflow with an engine (package runtime/engine):
// the machine, with wf.Driver() and the policy function wf.StartPolicy, and
// the background machines its runs enqueue. Submit then starts a run for a
// submission, idempotently:
//
//	eng, err := engine.New(store.New(pool), engine.Config{})
//	if err != nil { ... }
//	if err := wf.Register(ctx, eng); err != nil { ... }
//	res, err := wf.Submit(ctx, eng, problems.SubmitRequest{
//		UserID: userID, TenantID: tenantID,
//		SubscriptionTier: problems.TierPro, Sensitivity: problems.SensitivityStandard,
//		Problem: problems.SubmitProblem{Text: "Solve 2x + 3 = 7", MediaType: "text/plain"},
//	})
//	switch res.Outcome {
//	case runtime.StartCreated, runtime.StartRestarted:
//		run, err := eng.Drive(ctx, res.Run.ID) // or let eng.Work's workers drive it
//	case runtime.StartCached: // solved before: res.Run.Result
//	case runtime.StartRunning: // under way: res.Run.State, res.ETA
//	case runtime.StartCancelled: // cancelled by its owner: final for this key
//	}
//
// The run's idempotency key is IdempotencyKey(signature, user, intent):
// the SHA-256 of the problem signature, the user id and the intent; wf.Key
// computes it, normalizing the content to get the signature. The run's
// input is a RunInput: the SubmitProblem and the subscription tier and
// sensitivity the policy is resolved from. Policy first: before the run is
// written, the engine calls wf.StartPolicy, which resolves the execution
// policy through the PolicyEngine for the run's workflow type, tenant,
// user, tier and sensitivity, and the engine stores its JSON snapshot on
// the run, where every handler and guard reads it as run.Policy. A policy
// engine that fails refuses the submission (runtime.ErrPolicy) and writes
// nothing. A failed run submitted again is restarted in place, attempt 2,
// under a freshly resolved policy.
//
// Without the engine's Start, wf.PolicyFor(ctx, type, user, tier,
// sensitivity) resolves the same snapshot for a run started by hand.
//
// # What each state does
//
//   - INITIATED checks the policy snapshot, logs it as step
//     "policy_applied" and starts the run.
//   - INGESTING normalizes the content and computes the problem signature
//     (ProblemSignature: the SHA-256 of the normalized text, or of the
//     pHash of an image without text): MediaNormalized, or MediaRejected
//     with the normalizer's reason. It emits ingestion.MediaNormalized or
//     ingestion.MediaRejected.
//   - RETRIEVING searches stored solutions and applies the policy's
//     threshold table (ExecutionPolicy.Threshold): exact pHash 1.0,
//     near-duplicate pHash 0.95, exact normalized text 0.99, similarity
//     the policy's retrieval_threshold (default 0.85), hybrid re-ranked
//     retrieval_threshold - 0.02. The best admitted candidate is a
//     RetrievalHit and the run succeeds with outcome "hit" and output
//     {asset_version_id}; otherwise RetrievalMiss records the best
//     candidate. It emits retrieval.RetrievalHit or retrieval.RetrievalMiss.
//   - GENERATING_SOLUTION runs the solver with the policy's cost cap as
//     budget: SolveSucceeded, or CostCapExceeded (the run fails). A failing
//     solver is retried by the engine until the policy's retry_max (or the
//     machine's limit, whichever is lower) is reached; the last attempt
//     returns SolveFailed. Then, if the retrieval miss left a candidate
//     that scored above 0.70 and the cost cap was not exceeded, the guard
//     NearMissAvailable serves it: the run succeeds with outcome "hit" and
//     output {asset_version_id, is_approximate: true}; otherwise it fails.
//   - REGISTERING saves the problem and a new version of its HTML solution,
//     and emits asset.ProblemRegistered and asset.AssetVersionCreated.
//   - INDEXING writes the index and emits retrieval.DocumentIndexed. An
//     index write that times out does not fail the run: IndexTimedOut, a
//     background run of type "admin.reindex_asset" is enqueued, and step
//     "index_deferred" is logged with {"reason":"timeout"}. Unless the
//     policy's video_generation is "skip", a "video_generation" run is
//     enqueued. The run succeeds with outcome "new", output
//     {asset_version_id, video_pending, is_approximate: false} and the
//     solution's cost.
//
// Any state can be cancelled by the run's owner: the guard UserOwnsRun
// admits Cancel only from the user the run belongs to.
//
// # Background runs
//
// The runs a RetrieveOrGenerate run enqueues are runs of two small machines
// of their own, declared in background.fsm and registered by Register, so
// that the engine's workers drive them like any run:
//
//   - "admin.reindex_asset" (package problems/reindexasset): REINDEXING
//     writes the index document its input (a ReindexAsset) carries through
//     the Indexer, retried 5 times (1 s, 4 s, 16 s, 1 min), then INDEXED
//     with outcome "indexed", or FAILED.
//   - "video_generation" (package problems/videogeneration): RENDERING
//     renders the video its input (a GenerateVideo) asks for through the
//     VideoRenderer, retried 3 times, then RENDERED with outcome
//     "rendered" and output {solution_asset_version_id, storage_key}, or
//     FAILED.
//
// They are started in the transaction of the transition that enqueues
// them, with the run's tenant, user and correlation id, idempotently by
// key ("reindex:" or "video:" and the asset version id).
//
// # Cancelling
//
// The generated typed handle, retrieveorgenerate.Runs[problems.RunInput](eng),
// cancels a run from any process on behalf of its owner by firing Cancel,
// the event retrieve_or_generate.fsm names with "cancel Cancel", and reads
// runs with their state typed:
//
//	runs := retrieveorgenerate.Runs[problems.RunInput](eng)
//	run, err := runs.Cancel(ctx, runID, userID) // run.State == retrieveorgenerate.StateCancelled
//
// Another user gets runtime.ErrNotOwner, a finished run
// runtime.ErrRunFinished. A handler in flight (a long solve, say) has its
// context cancelled at its next heartbeat and writes nothing; an eng.Drive
// driving it returns runtime.ErrLeaseLost. A cancelled run stays cancelled:
// submitting the same problem again returns it (runtime.StartCancelled).
//
// # Effects
//
// Handlers act on the world through the adapters and through run.Effects:
// LogStep, Emit (the outbox), Enqueue (background runs, idempotent by key:
// "reindex:" or "video:" followed by the asset version id) and SetResult.
// The engine writes effects in the transaction of the transition the
// handler returns, and drops them when that transition is not recorded; the
// adapters' own writes (registry, index) are idempotent so that a handler
// run again after a crash finds them. Outside the engine run.Effects may be
// nil, and the handlers then do their work without effects. With SetError
// the handlers set the result's error code and detail on the failures they
// choose themselves (MediaRejected, SolveFailed, CostCapExceeded,
// IndexFailed).
//
// # Exhausted states
//
// When the engine rather than a handler gives up on a state (its retries,
// or its recoveries from workers that died holding the run, are used up),
// it asks wf.Exhausted, which Register installs, for the event to fire: in
// GENERATING_SOLUTION the SolveFailed that the handler returns on its last
// try, with the same result (the near miss with is_approximate, or the
// error), and in INGESTING MediaRejected with reason "normalization_failed".
// Other states fire the machine's else event with an empty payload and the
// last error in the result.
//
// # Limits
//
// The policy's retry_max can lower the number of tries of INGESTING and
// GENERATING_SOLUTION below the machine's (4 and 3), never raise it.
package problems
