// Package local implements every adapter of the RetrieveOrGenerate workflow
// (package problems) on the process and one PostgreSQL database, for tests,
// demonstrations and small deployments.
//
// # Setting up
//
// The adapters keep their rows in schema problembank of the database the
// runtime uses. Migrate creates it, with the pg_trgm extension, and may run
// at every start:
//
//	if err := local.Migrate(ctx, pool); err != nil { ... }
//	set := local.NewSet(pool, uploads) // uploads: a local.Uploads, or nil
//	set.Solver.CostUSD = 0.02          // configure before the first run
//	wf, err := problems.New(set.Adapters())
//
// The tables:
//
//	problembank.problems        one row per problem signature: normalized text, pHash, topic tags
//	problembank.asset_versions  versions of a problem's assets, numbered from 1 per asset type
//	problembank.contents        solution pages, addressed by "sha256:" + the page's SHA-256
//	problembank.problem_index   the search index: one document per problem, with a GIN trigram index
//	problembank.videos          the videos the stub renderer recorded, one per solution asset version
//
// # The adapters
//
// Normalizer canonicalizes text (NormalizeText: lower case, digits of any
// script as ASCII, folded punctuation and spaces, canonical numbers) and
// tags it by topic (TopicTags). It reads uploads through Uploads
// (MemoryUploads holds them in memory): text files, and PNG, JPEG and GIF
// images, which get a DCT perceptual hash (PHash) and, when an OCR is
// given, their text. URLs need a Fetcher. Content it cannot use is rejected
// with one of the Reject* reasons.
//
// Retriever finds stored solutions by the threshold table of the execution
// policy: the same image (pHash, 1.0), a near-duplicate image (fewer than 8
// bits apart, 0.95), the same normalized text (0.99), then pg_trgm
// similarity() over the index, re-ranked with the topic tags (HybridScore)
// when the similarity alone is below the retrieval threshold.
//
// Solver solves linear equations in one variable and arithmetic exactly,
// and explains anything else in general terms; it charges CostUSD per
// solution, refuses one over the request's budget with a
// *problems.CostCapError, and fails on request through its Fail hook.
//
// Registry writes problems and asset versions idempotently, Indexer writes
// the index, bounded by Timeout; its Delay simulates a slow index, so that
// a Delay above the Timeout makes every write fail with
// problems.ErrIndexTimeout.
//
// Videos is a stub video renderer: it records each request in
// problembank.videos under the storage key "video:" + the solution's asset
// version id, and fails on request through its Fail hook.
//
// Policies resolves the execution policy from the subscription tier (free,
// pro, enterprise) and the content's sensitivity: private content never
// gets a video.
package local
