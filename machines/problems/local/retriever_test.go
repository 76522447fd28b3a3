package local

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/machines/problems"
)

func TestRetrieverThresholds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	const textA = "solve for x 2x+3=7"
	pa, va := register(t, pool, textA, "", true)
	register(t, pool, "find the area of a circle of radius 2", "", true)
	img := gradient(64, 64, 0, 10, 10, 20)
	pi, vi := register(t, pool, "", PHash(img), false)
	r := NewRetriever(pool)

	// pg_trgm's similarity of textA and "solve for x 2x+3=8", a real.
	sim := float64(float32(0.8095238))
	query := func(text string, threshold float64, tags ...string) problems.Query {
		return problems.Query{ProblemSignature: problems.ProblemSignature(text, ""), NormalizedText: text, TopicTags: tags, RetrievalThreshold: threshold}
	}
	tests := []struct {
		name string
		q    problems.Query
		want []problems.Candidate
	}{
		{"exact text", query(textA, 0.85, "algebra", "linear-equation"),
			[]problems.Candidate{{AssetVersionID: va, ProblemID: pa, Confidence: 0.99, Method: problems.MethodTextExact}}},
		{"similar text at or above the threshold", query("solve for x 2x+3=8", 0.80, "algebra", "linear-equation"),
			[]problems.Candidate{{AssetVersionID: va, ProblemID: pa, Confidence: sim, Method: problems.MethodSimilarity}}},
		{"similar text below the threshold, same topics", query("solve for x 2x+3=8", 0.85, "algebra", "linear-equation"),
			[]problems.Candidate{{AssetVersionID: va, ProblemID: pa, Confidence: 0.8*sim + 0.2, Method: problems.MethodHybrid}}},
		{"similar text below the threshold, other topics", query("solve for x 2x+3=8", 0.85, "geometry"),
			[]problems.Candidate{{AssetVersionID: va, ProblemID: pa, Confidence: 0.8 * sim, Method: problems.MethodHybrid}}},
		{"distant text", query("solve for x 5x-4=11", 0.85, "algebra", "linear-equation"),
			[]problems.Candidate{{AssetVersionID: va, ProblemID: pa, Confidence: 0.8*float64(float32(0.44444445)) + 0.2, Method: problems.MethodHybrid}}},
		{"nothing alike", query("hello world", 0.85), []problems.Candidate{}},
		{"same image", problems.Query{PHash: PHash(img), RetrievalThreshold: 0.85},
			[]problems.Candidate{{AssetVersionID: vi, ProblemID: pi, Confidence: 1, Method: problems.MethodPHashExact}}},
		{"near-duplicate image", problems.Query{PHash: PHash(withDot(img, 48, 48, 3)), RetrievalThreshold: 0.85},
			[]problems.Candidate{{AssetVersionID: vi, ProblemID: pi, Confidence: 0.95, Method: problems.MethodPHashNear}}},
		{"another image", problems.Query{PHash: PHash(gradient(64, 64, 0, 40, 36, 20)), RetrievalThreshold: 0.85}, []problems.Candidate{}},
	}
	for _, tt := range tests {
		got, err := r.Search(ctx, tt.q)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}

	// What the policy's threshold table makes of them, at 0.85.
	p := problems.DefaultPolicy()
	decide := map[string]bool{}
	for _, tt := range tests[:5] {
		got, err := r.Search(ctx, tt.q)
		if err != nil || len(got) == 0 {
			t.Fatalf("%s: %v, %v", tt.name, got, err)
		}
		decide[tt.name] = p.Admits(got[0])
	}
	want := map[string]bool{
		"exact text":                                     true,  // 0.99 >= 0.99
		"similar text at or above the threshold":         false, // similarity 0.8095 < 0.85
		"similar text below the threshold, same topics":  true,  // hybrid 0.8476 >= 0.83
		"similar text below the threshold, other topics": false, // hybrid 0.6476 < 0.83
		"distant text":                                   false,
	}
	if diff := cmp.Diff(want, decide); diff != "" {
		t.Errorf("hits at the default threshold (-want +got):\n%s", diff)
	}

	if _, err := r.Search(ctx, problems.Query{PHash: "zz"}); err == nil {
		t.Error("Search with a malformed pHash: no error")
	}
}
