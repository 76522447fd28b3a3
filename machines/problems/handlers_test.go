package problems_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/fsmgen/fsmgen/machines/problems"
	"github.com/fsmgen/fsmgen/machines/problems/local"
	rog "github.com/fsmgen/fsmgen/machines/problems/retrieveorgenerate"
	"github.com/fsmgen/fsmgen/runtime"
)

var (
	textCmd  = problems.SubmitProblem{Text: "Solve for x: 2x + 3 = 7", MediaType: "text/plain"}
	textNorm = "solve for x 2x+3=7"
	textSig  = problems.ProblemSignature(textNorm, "")
	textTags = []string{"algebra", "linear-equation"}
	// normalized is the MediaNormalized of textCmd.
	normalized = rog.MediaNormalized{ProblemSignature: textSig, NormalizedText: textNorm, TopicTags: textTags}
)

type failingNormalizer struct{ err error }

func (f failingNormalizer) Normalize(context.Context, problems.Content) (problems.Media, error) {
	return problems.Media{}, f.err
}

type failingRetriever struct{ err error }

func (f failingRetriever) Search(context.Context, problems.Query) ([]problems.Candidate, error) {
	return nil, f.err
}

type failingIndexer struct{ err error }

func (f failingIndexer) Upsert(context.Context, problems.IndexDocument) error { return f.err }

// with returns a workflow on the fixture's adapters changed by change.
func (fx *fixture) with(t *testing.T, change func(*problems.Adapters)) *problems.Workflow {
	t.Helper()
	a := fx.set.Adapters()
	change(&a)
	wf, err := problems.New(a)
	if err != nil {
		t.Fatal(err)
	}
	return wf
}

// stored registers and indexes a solved problem and returns its problem
// and asset version ids.
func (fx *fixture) stored(t *testing.T, text string) (string, string) {
	t.Helper()
	ctx := context.Background()
	p, err := fx.set.Registry.GetOrCreateProblem(ctx, problems.ProblemSpec{
		ProblemSignature: problems.ProblemSignature(text, ""), NormalizedText: text, TopicTags: local.TopicTags(text),
	})
	if err != nil {
		t.Fatal(err)
	}
	v, err := fx.set.Registry.CreateVersion(ctx, problems.VersionSpec{ProblemID: p.ID, AssetType: problems.AssetTypeSolutionHTML, StorageKey: "sha256:" + p.ID})
	if err != nil {
		t.Fatal(err)
	}
	err = fx.set.Indexer.Upsert(ctx, problems.IndexDocument{
		ProblemID: p.ID, AssetVersionID: v.ID, ProblemSignature: p.ProblemSignature, NormalizedText: text, TopicTags: local.TopicTags(text),
	})
	if err != nil {
		t.Fatal(err)
	}
	return p.ID, v.ID
}

// want is what a handler call must come to.
type want struct {
	event   runtime.Event
	code    string // the error's code when an error is wanted
	errText string
	effects *effects
}

func check(t *testing.T, name string, ev runtime.Event, err error, fx *effects, w want) {
	t.Helper()
	if w.errText != "" || w.code != "" {
		if err == nil {
			t.Errorf("%s: event %#v, want an error", name, ev)
			return
		}
		if w.errText != "" && err.Error() != w.errText {
			t.Errorf("%s: error %q, want %q", name, err, w.errText)
		}
		if runtime.ErrorCode(err) != w.code {
			t.Errorf("%s: error code %q, want %q", name, runtime.ErrorCode(err), w.code)
		}
	} else if err != nil {
		t.Errorf("%s: %v", name, err)
		return
	}
	if diff := cmp.Diff(w.event, ev); diff != "" {
		t.Errorf("%s: event (-want +got):\n%s", name, diff)
	}
	wantFx := w.effects
	if wantFx == nil {
		wantFx = &effects{}
	}
	if diff := cmp.Diff(wantFx, fx, cmpopts.IgnoreFields(effects{}, "mu"), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("%s: effects (-want +got):\n%s", name, diff)
	}
}

func TestInitiated(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	ctx := context.Background()
	p := problems.DefaultPolicy()

	run, eff := newRun(t, p, textCmd)
	ev, err := fx.wf.Initiated(ctx, run)
	check(t, "policy applied", ev, err, eff, want{
		event:   rog.Start{},
		effects: &effects{Steps: []step{{"policy_applied", map[string]any{"policy": p}}}},
	})

	run, eff = newRun(t, p, textCmd)
	run.Policy = nil
	ev, err = fx.wf.Initiated(ctx, run)
	check(t, "no policy", ev, err, eff, want{code: problems.CodeInvalidPolicy,
		errText: "POLICY_INVALID: invalid execution policy: the run has no policy snapshot"})

	run, _ = newRun(t, p, textCmd)
	run.Effects = nil
	if ev, err := fx.wf.Initiated(ctx, run); err != nil || ev != (rog.Start{}) {
		t.Errorf("without effects: %v, %v", ev, err)
	}
	if _, err := fx.wf.Initiated(ctx, nil); err == nil {
		t.Error("nil run: no error")
	}
}

func TestIngesting(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	ctx := context.Background()
	p := problems.DefaultPolicy()
	p.RetryMax = 1
	down := errors.New("ocr down")
	broken := fx.with(t, func(a *problems.Adapters) { a.Normalizer = failingNormalizer{down} })

	tests := []struct {
		name    string
		wf      *problems.Workflow
		cmd     problems.SubmitProblem
		attempt int
		want    want
	}{
		{"normalized", fx.wf, textCmd, 1, want{
			event: normalized,
			effects: &effects{Emits: []emitted{{problems.TopicMediaNormalized, problems.MediaNormalizedEvent{
				RunID: runID, ProblemSignature: textSig, TopicTags: textTags,
			}}}},
		}},
		{"rejected", fx.wf, problems.SubmitProblem{Text: "?!"}, 1, want{
			event: rog.MediaRejected{Reason: "empty_content"},
			effects: &effects{
				Emits:  []emitted{{problems.TopicMediaRejected, problems.MediaRejectedEvent{RunID: runID, Reason: "empty_content"}}},
				Errors: []coded{{"MEDIA_REJECTED", "empty_content"}},
			},
		}},
		{"invalid input", fx.wf, problems.SubmitProblem{}, 1, want{
			event: rog.MediaRejected{Reason: "invalid_submission"},
			effects: &effects{
				Steps:  []step{{"input_invalid", map[string]any{"error": "invalid submission: want exactly one of upload_session_id, text and url, have 0"}}},
				Emits:  []emitted{{problems.TopicMediaRejected, problems.MediaRejectedEvent{RunID: runID, Reason: "invalid_submission"}}},
				Errors: []coded{{"MEDIA_REJECTED", "invalid submission: want exactly one of upload_session_id, text and url, have 0"}},
			},
		}},
		{"normalizer down, retried", broken, textCmd, 1, want{errText: "normalize: ocr down"}},
		{"normalizer down on the policy's last attempt", broken, textCmd, 2, want{
			event: rog.MediaRejected{Reason: "normalization_failed"},
			effects: &effects{
				Emits:  []emitted{{problems.TopicMediaRejected, problems.MediaRejectedEvent{RunID: runID, Reason: "normalization_failed"}}},
				Errors: []coded{{"MEDIA_REJECTED", "ocr down"}},
			},
		}},
	}
	for _, tt := range tests {
		run, eff := newRun(t, p, tt.cmd)
		run.StepAttempt = tt.attempt
		ev, err := tt.wf.Ingesting(ctx, run)
		check(t, tt.name, ev, err, eff, tt.want)
	}
}

func TestRetrieving(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	ctx := context.Background()
	p := problems.DefaultPolicy()
	_, av := fx.stored(t, textNorm)
	similar := "solve for x 2x+3=8" // pg_trgm similarity 0.8095238 to textNorm
	sim := float64(float32(0.8095238))

	norm := func(text string, tags []string) rog.MediaNormalized {
		return rog.MediaNormalized{ProblemSignature: problems.ProblemSignature(text, ""), NormalizedText: text, TopicTags: tags}
	}
	hit := func(text string, conf float64, m problems.Method) want {
		return want{
			event: rog.RetrievalHit{AssetVersionID: av, Confidence: conf, Method: string(m)},
			effects: &effects{
				Emits: []emitted{{problems.TopicRetrievalHit, problems.RetrievalHitEvent{
					RunID: runID, ProblemSignature: problems.ProblemSignature(text, ""), AssetVersionID: av, Confidence: conf, Method: m,
				}}},
				Results: []result{{problems.Output{AssetVersionID: av}, 0}},
			},
		}
	}
	miss := func(text string, best float64, cand string, n int) want {
		return want{
			event: rog.RetrievalMiss{BestConfidence: best, CandidateAssetVersionID: cand},
			effects: &effects{Emits: []emitted{{problems.TopicRetrievalMiss, problems.RetrievalMissEvent{
				RunID: runID, ProblemSignature: problems.ProblemSignature(text, ""), BestConfidence: best, CandidateAssetVersionID: cand, Candidates: n,
			}}}},
		}
	}
	lower := p
	lower.RetrievalThreshold = 0.80
	tests := []struct {
		name   string
		wf     *problems.Workflow
		p      problems.ExecutionPolicy
		events []runtime.Event
		want   want
	}{
		{"exact text: 0.99 hit", fx.wf, p, []runtime.Event{rog.Start{}, normalized}, hit(textNorm, 0.99, problems.MethodTextExact)},
		{"similarity at a 0.80 threshold: hit", fx.wf, lower, []runtime.Event{norm(similar, textTags)}, hit(similar, sim, problems.MethodSimilarity)},
		{"hybrid within 0.02 of 0.85: hit", fx.wf, p, []runtime.Event{norm(similar, textTags)}, hit(similar, 0.8*sim+0.2, problems.MethodHybrid)},
		{"hybrid below 0.83: miss", fx.wf, p, []runtime.Event{norm(similar, nil)}, miss(similar, 0.8*sim, av, 1)},
		{"nothing alike: miss without candidate", fx.wf, p, []runtime.Event{norm("what is a prime", nil)}, miss("what is a prime", 0, "", 0)},
		{"search down", fx.with(t, func(a *problems.Adapters) { a.Retriever = failingRetriever{errors.New("index down")} }), p,
			[]runtime.Event{normalized}, want{errText: "search: index down"}},
		{"no MediaNormalized", fx.wf, p, []runtime.Event{rog.Start{}},
			want{code: problems.CodeMissingEvent, errText: "MISSING_EVENT: no MediaNormalized event in the run's history"}},
	}
	for _, tt := range tests {
		run, eff := newRun(t, tt.p, textCmd, tt.events...)
		ev, err := tt.wf.Retrieving(ctx, run)
		check(t, tt.name, ev, err, eff, tt.want)
	}
}

func TestGeneratingSolution(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	ctx := context.Background()
	p := problems.DefaultPolicy()
	p.RetryMax = 1 // two attempts
	down := errors.New("model unavailable")
	failing := &local.Solver{Fail: func(problems.SolveRequest) error { return down }}
	failingWF := fx.with(t, func(a *problems.Adapters) { a.Solver = failing })
	expensive := fx.with(t, func(a *problems.Adapters) {
		s := *fx.set.Solver
		s.CostUSD = 0.75
		a.Solver = &s
	})
	page, _ := local.SolveHTML(textNorm, textTags)
	solved := rog.SolveSucceeded{
		StorageKey: "sha256:" + problems.ProblemSignature(page, ""),
		Provenance: "local-solver/1 method=linear-equation",
		CostUSD:    0.01,
	}
	nearMiss := rog.RetrievalMiss{BestConfidence: 0.78, CandidateAssetVersionID: "av-near"}
	farMiss := rog.RetrievalMiss{BestConfidence: 0.65, CandidateAssetVersionID: "av-far"}
	generous := p
	generous.RetryMax = 9 // bounded by the machine's retry up to 6

	tests := []struct {
		name    string
		wf      *problems.Workflow
		p       problems.ExecutionPolicy
		attempt int
		miss    rog.RetrievalMiss
		want    want
	}{
		{"solved", fx.wf, p, 1, nearMiss, want{event: solved}},
		{"over the cost cap", expensive, p, 1, nearMiss, want{
			event: rog.CostCapExceeded{CapUSD: 0.5, SpentUSD: 0.75},
			effects: &effects{
				Results: []result{{nil, 0.75}},
				Errors:  []coded{{"COST_CAP_EXCEEDED", "solving needs 0.7500 USD, the cap is 0.5000 USD"}},
			},
		}},
		{"failed, retried", failingWF, p, 1, nearMiss, want{errText: "solve (attempt 1 of 2): local: solve: model unavailable"}},
		{"failed on the last attempt, near miss served", failingWF, p, 2, nearMiss, want{
			event: rog.SolveFailed{ErrorCode: "SOLVE_FAILED", ErrorDetail: "local: solve: model unavailable"},
			effects: &effects{
				Steps:   []step{{"near_miss_served", map[string]any{"asset_version_id": "av-near", "error_code": "SOLVE_FAILED"}}},
				Results: []result{{problems.Output{AssetVersionID: "av-near", IsApproximate: true}, 0}},
			},
		}},
		{"failed on the last attempt, no near miss", failingWF, p, 2, farMiss, want{
			event: rog.SolveFailed{ErrorCode: "SOLVE_FAILED", ErrorDetail: "local: solve: model unavailable"},
			effects: &effects{
				Results: []result{{nil, 0}},
				Errors:  []coded{{"SOLVE_FAILED", "local: solve: model unavailable"}},
			},
		}},
		{"the machine bounds the policy's retries", failingWF, generous, 2, farMiss, want{errText: "solve (attempt 2 of 6): local: solve: model unavailable"}},
		{"the last attempt the machine allows", failingWF, generous, 6, farMiss, want{
			event: rog.SolveFailed{ErrorCode: "SOLVE_FAILED", ErrorDetail: "local: solve: model unavailable"},
			effects: &effects{
				Results: []result{{nil, 0}},
				Errors:  []coded{{"SOLVE_FAILED", "local: solve: model unavailable"}},
			},
		}},
	}
	for _, tt := range tests {
		run, eff := newRun(t, tt.p, textCmd, rog.Start{}, normalized, tt.miss)
		run.StepAttempt = tt.attempt
		ev, err := tt.wf.GeneratingSolution(ctx, run)
		check(t, tt.name, ev, err, eff, tt.want)
	}
}

func TestRegistering(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	ctx := context.Background()
	solved := rog.SolveSucceeded{StorageKey: "sha256:abc", Provenance: "local-solver/1 method=linear-equation", CostUSD: 0.01}
	var first rog.AssetsRegistered
	for i := range 2 { // a second try after a crash finds the same rows
		run, eff := newRun(t, problems.DefaultPolicy(), textCmd, normalized, rog.RetrievalMiss{}, solved)
		ev, err := fx.wf.Registering(ctx, run)
		if err != nil {
			t.Fatal(err)
		}
		reg, ok := ev.(rog.AssetsRegistered)
		if !ok || reg.ProblemID == "" || reg.AssetVersionID == "" {
			t.Fatalf("event %#v, want AssetsRegistered with ids", ev)
		}
		if i == 0 {
			first = reg
		}
		check(t, "registered", ev, err, eff, want{
			event: first,
			effects: &effects{Emits: []emitted{
				{problems.TopicProblemRegistered, problems.ProblemRegisteredEvent{RunID: runID, ProblemID: first.ProblemID, ProblemSignature: textSig}},
				{problems.TopicAssetVersionCreated, problems.AssetVersionCreatedEvent{
					RunID: runID, ProblemID: first.ProblemID, AssetVersionID: first.AssetVersionID, AssetType: "solution_html",
					VersionNo: 1, StorageKey: "sha256:abc", Provenance: "local-solver/1 method=linear-equation",
				}},
			}},
		})
	}
	var rows []string
	r, err := fx.pool.Query(ctx, `
		SELECT p.id::text || ' ' || p.signature || ' ' || p.normalized_text || ' ' || array_to_string(p.topic_tags, ',')
		       || ' | ' || v.id::text || ' ' || v.asset_type || ' v' || v.version_no || ' ' || v.storage_key || ' ' || v.provenance
		FROM problembank.problems p JOIN problembank.asset_versions v ON v.problem_id = p.id`)
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
		var s string
		if err := r.Scan(&s); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, s)
	}
	if diff := cmp.Diff([]string{
		first.ProblemID + " " + textSig + " solve for x 2x+3=7 algebra,linear-equation | " + first.AssetVersionID + " solution_html v1 sha256:abc local-solver/1 method=linear-equation",
	}, rows); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}

	run, eff := newRun(t, problems.DefaultPolicy(), textCmd, normalized)
	ev, err := fx.wf.Registering(ctx, run)
	check(t, "no SolveSucceeded", ev, err, eff, want{code: problems.CodeMissingEvent, errText: "MISSING_EVENT: no SolveSucceeded event in the run's history"})
}

func TestIndexing(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	ctx := context.Background()
	pid, av := fx.stored(t, "some other problem 1+1")
	registered := rog.AssetsRegistered{ProblemID: pid, AssetVersionID: av}
	solved := rog.SolveSucceeded{StorageKey: "sha256:abc", Provenance: "p", CostUSD: 0.01}
	slow := fx.with(t, func(a *problems.Adapters) {
		ix := *fx.set.Indexer
		ix.Timeout, ix.Delay = 50*time.Millisecond, 2*time.Second
		a.Indexer = &ix
	})
	broken := fx.with(t, func(a *problems.Adapters) { a.Indexer = failingIndexer{errors.New("disk full")} })
	async, skip := problems.DefaultPolicy(), problems.DefaultPolicy()
	skip.VideoGeneration = problems.VideoSkip
	video := enqueued{problems.VideoWorkflowType, "video:" + av, problems.GenerateVideo{ProblemSignature: textSig, SolutionAssetVersionID: av, VideoMode: "async"}}
	indexedEvent := emitted{problems.TopicDocumentIndexed, problems.DocumentIndexedEvent{RunID: runID, ProblemID: pid, AssetVersionID: av, ProblemSignature: textSig}}
	reindex := enqueued{problems.ReindexWorkflowType, "reindex:" + av, problems.ReindexAsset{
		AssetVersionID: av, ProblemID: pid, ProblemSignature: textSig, NormalizedText: textNorm, TopicTags: textTags,
	}}

	tests := []struct {
		name string
		wf   *problems.Workflow
		p    problems.ExecutionPolicy
		want want
	}{
		{"indexed, video enqueued", fx.wf, async, want{
			event: rog.DocumentIndexed{AssetVersionID: av},
			effects: &effects{
				Emits:    []emitted{indexedEvent},
				Enqueues: []enqueued{video},
				Results:  []result{{problems.Output{AssetVersionID: av, VideoPending: true}, 0.01}},
			},
		}},
		{"indexed, video skipped", fx.wf, skip, want{
			event: rog.DocumentIndexed{AssetVersionID: av},
			effects: &effects{
				Emits:   []emitted{indexedEvent},
				Results: []result{{problems.Output{AssetVersionID: av}, 0.01}},
			},
		}},
		{"index timed out", slow, async, want{
			event: rog.IndexTimedOut{AssetVersionID: av},
			effects: &effects{
				Steps:    []step{{"index_deferred", map[string]any{"reason": "timeout"}}},
				Enqueues: []enqueued{reindex, video},
				Results:  []result{{problems.Output{AssetVersionID: av, VideoPending: true}, 0.01}},
			},
		}},
		{"index failed", broken, async, want{
			event: rog.IndexFailed{ErrorCode: "INDEX_FAILED", ErrorDetail: "disk full"},
			effects: &effects{
				Results: []result{{nil, 0.01}},
				Errors:  []coded{{"INDEX_FAILED", "disk full"}},
			},
		}},
	}
	for _, tt := range tests {
		run, eff := newRun(t, tt.p, textCmd, normalized, solved, registered)
		ev, err := tt.wf.Indexing(ctx, run)
		check(t, tt.name, ev, err, eff, tt.want)
	}
	var text string
	if err := fx.pool.QueryRow(ctx, `SELECT normalized_text FROM problembank.problem_index WHERE asset_version_id = $1::uuid`, av).Scan(&text); err != nil || text != textNorm {
		t.Errorf("index row text = %q, %v; want %q", text, err, textNorm)
	}
}

func TestGuards(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fx := newFixture(t)
	p := problems.DefaultPolicy()
	run, _ := newRun(t, p, textCmd, rog.Start{}, normalized, rog.RetrievalMiss{BestConfidence: 0.75, CandidateAssetVersionID: "av-near"})
	g := fx.wf.Guards(run)
	noNear, _ := newRun(t, p, textCmd, rog.Start{}, normalized, rog.RetrievalMiss{BestConfidence: 0.70, CandidateAssetVersionID: "av-far"})
	gFar := fx.wf.Guards(noNear)
	broken, _ := newRun(t, p, textCmd)
	broken.Policy = []byte(`{"retrieval_threshold":7}`)
	gBroken := fx.wf.Guards(broken)
	noKey, _ := newRun(t, p, textCmd)
	noKey.IdempotencyKey = ""
	gNil := fx.wf.Guards(nil)

	got := map[string]bool{
		"Start":                         g.IdempotencyCheckPassed(ctx, rog.Start{}),
		"Start without a key":           fx.wf.Guards(noKey).IdempotencyCheckPassed(ctx, rog.Start{}),
		"signature computed":            g.SignatureComputed(ctx, normalized),
		"signature missing":             g.SignatureComputed(ctx, rog.MediaNormalized{NormalizedText: textNorm}),
		"signature of another text":     g.SignatureComputed(ctx, rog.MediaNormalized{ProblemSignature: textSig, NormalizedText: "1+1"}),
		"hit 0.99 text":                 g.AtOrAboveThreshold(ctx, rog.RetrievalHit{AssetVersionID: "av", Confidence: 0.99, Method: "text_exact"}),
		"hit 0.98 text":                 g.AtOrAboveThreshold(ctx, rog.RetrievalHit{AssetVersionID: "av", Confidence: 0.98, Method: "text_exact"}),
		"hit 0.85 similarity":           g.AtOrAboveThreshold(ctx, rog.RetrievalHit{AssetVersionID: "av", Confidence: 0.85, Method: "similarity"}),
		"hit 0.84 similarity":           g.AtOrAboveThreshold(ctx, rog.RetrievalHit{AssetVersionID: "av", Confidence: 0.84, Method: "similarity"}),
		"hit 0.83 hybrid":               g.AtOrAboveThreshold(ctx, rog.RetrievalHit{AssetVersionID: "av", Confidence: 0.83, Method: "hybrid"}),
		"hit 0.82 hybrid":               g.AtOrAboveThreshold(ctx, rog.RetrievalHit{AssetVersionID: "av", Confidence: 0.82, Method: "hybrid"}),
		"hit 0.95 near pHash":           g.AtOrAboveThreshold(ctx, rog.RetrievalHit{AssetVersionID: "av", Confidence: 0.95, Method: "phash_near"}),
		"hit without asset":             g.AtOrAboveThreshold(ctx, rog.RetrievalHit{Confidence: 1, Method: "phash_exact"}),
		"hit under a broken policy":     gBroken.AtOrAboveThreshold(ctx, rog.RetrievalHit{AssetVersionID: "av", Confidence: 1, Method: "phash_exact"}),
		"miss 0.84":                     g.BelowThreshold(ctx, rog.RetrievalMiss{BestConfidence: 0.84}),
		"miss 0.85":                     g.BelowThreshold(ctx, rog.RetrievalMiss{BestConfidence: 0.85}),
		"miss under a broken policy":    gBroken.BelowThreshold(ctx, rog.RetrievalMiss{}),
		"HTML stored":                   g.HTMLAvailable(ctx, rog.SolveSucceeded{StorageKey: "k"}),
		"no HTML":                       g.HTMLAvailable(ctx, rog.SolveSucceeded{}),
		"near miss 0.75, engine-fired":  g.NearMissAvailable(ctx, rog.SolveFailed{}),
		"near miss 0.75, within cap":    g.NearMissAvailable(ctx, rog.SolveFailed{ErrorCode: "X", CostUSD: 0.5}),
		"near miss 0.75, over the cap":  g.NearMissAvailable(ctx, rog.SolveFailed{CostUSD: 0.51}),
		"near miss 0.70":                gFar.NearMissAvailable(ctx, rog.SolveFailed{}),
		"near miss without a miss":      fx.wf.Guards(broken).NearMissAvailable(ctx, rog.SolveFailed{}),
		"assets persisted":              g.AssetsPersisted(ctx, rog.AssetsRegistered{ProblemID: "p", AssetVersionID: "v"}),
		"asset version missing":         g.AssetsPersisted(ctx, rog.AssetsRegistered{ProblemID: "p"}),
		"cancel by the owner":           g.UserOwnsRun(ctx, rog.Cancel{UserID: userID}),
		"cancel by another user":        g.UserOwnsRun(ctx, rog.Cancel{UserID: "someone-else"}),
		"cancel without a user":         g.UserOwnsRun(ctx, rog.Cancel{}),
		"nil run: Start":                gNil.IdempotencyCheckPassed(ctx, rog.Start{}),
		"nil run: cancel":               gNil.UserOwnsRun(ctx, rog.Cancel{}),
		"nil run: near miss":            gNil.NearMissAvailable(ctx, rog.SolveFailed{}),
		"nil run: signature":            gNil.SignatureComputed(ctx, normalized),
		"cancel of a run without owner": fx.wf.Guards(&runtime.Run{Policy: snapshot(t, p)}).UserOwnsRun(ctx, rog.Cancel{}),
	}
	if diff := cmp.Diff(map[string]bool{
		"Start": true, "Start without a key": false,
		"signature computed": true, "signature missing": false, "signature of another text": false,
		"hit 0.99 text": true, "hit 0.98 text": false, "hit 0.85 similarity": true, "hit 0.84 similarity": false,
		"hit 0.83 hybrid": true, "hit 0.82 hybrid": false, "hit 0.95 near pHash": true, "hit without asset": false,
		"hit under a broken policy": false,
		"miss 0.84":                 true, "miss 0.85": false, "miss under a broken policy": false,
		"HTML stored": true, "no HTML": false,
		"near miss 0.75, engine-fired": true, "near miss 0.75, within cap": true, "near miss 0.75, over the cap": false,
		"near miss 0.70": false, "near miss without a miss": false,
		"assets persisted": true, "asset version missing": false,
		"cancel by the owner": true, "cancel by another user": false, "cancel without a user": false,
		"nil run: Start": false, "nil run: cancel": false, "nil run: near miss": false, "nil run: signature": true,
		"cancel of a run without owner": false,
	}, got); diff != "" {
		t.Errorf("guards (-want +got):\n%s", diff)
	}
}
