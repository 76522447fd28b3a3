package problems_test

import (
	"encoding/json"
	"errors"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/machines/problems"
)

func TestProblemSignatureAndIdempotencyKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, got, want string
	}{
		{"text", problems.ProblemSignature("solve 2x+3=7", ""), "ebba0dda83de5c0bc9896c034342d7652b0aa1bbba713712ea746b2493f1c401"},
		{"text wins over pHash", problems.ProblemSignature("solve 2x+3=7", "00ff00ff00ff00ff"), "ebba0dda83de5c0bc9896c034342d7652b0aa1bbba713712ea746b2493f1c401"},
		{"image without text", problems.ProblemSignature("", "00ff00ff00ff00ff"), "6295645bcb82d42f12770784b0b04b4c5d6dab2f7f7fded53d5f2debedca0c03"},
		{"nothing", problems.ProblemSignature("", ""), ""},
		{"key", problems.IdempotencyKey("ebba0dda83de5c0bc9896c034342d7652b0aa1bbba713712ea746b2493f1c401", userID, "solve"),
			"281887e6d20fda804ba4aaa5c6270a55a30089a53d2d46c7602f4f36c026b4e5"},
		{"key of nothing", problems.IdempotencyKey("", "", ""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, tt.got, tt.want)
		}
	}
}

func TestSubmission(t *testing.T) {
	t.Parallel()
	cmd := problems.SubmitProblem{Text: "2+2", MediaType: "text/plain"}
	b, err := json.Marshal(cmd)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"text":"2+2","media_type":"text/plain"}` {
		t.Errorf("JSON = %s", b)
	}
	got, err := problems.DecodeSubmission(b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(cmd, got); diff != "" {
		t.Errorf("DecodeSubmission (-want +got):\n%s", diff)
	}
	if got.IntentOrDefault() != "solve" {
		t.Errorf("IntentOrDefault = %q", got.IntentOrDefault())
	}
	if diff := cmp.Diff(problems.Content{UploadSessionID: "up", MediaType: "image/png"}, problems.SubmitProblem{UploadSessionID: "up", MediaType: "image/png", Intent: "explain"}.Content()); diff != "" {
		t.Errorf("Content (-want +got):\n%s", diff)
	}
	for _, bad := range []string{`{}`, `{"text":"a","url":"http://x"}`, `{"upload_session_id":"u","text":"a","url":"b"}`, `[1]`, `{"text":`} {
		if _, err := problems.DecodeSubmission(json.RawMessage(bad)); !errors.Is(err, problems.ErrInvalidSubmission) {
			t.Errorf("DecodeSubmission(%s): %v, want ErrInvalidSubmission", bad, err)
		}
	}
}

func TestPolicy(t *testing.T) {
	t.Parallel()
	p := problems.DefaultPolicy()
	if diff := cmp.Diff(problems.ExecutionPolicy{RetrievalThreshold: 0.85, VideoGeneration: "async", RetryMax: 3, CostCapUSD: 0.5}, p); diff != "" {
		t.Errorf("DefaultPolicy (-want +got):\n%s", diff)
	}
	thresholds := map[problems.Method]float64{}
	for _, m := range []problems.Method{problems.MethodPHashExact, problems.MethodPHashNear, problems.MethodTextExact, problems.MethodSimilarity, problems.MethodHybrid, "other"} {
		thresholds[m] = p.Threshold(m)
	}
	if diff := cmp.Diff(map[problems.Method]float64{
		"phash_exact": 1, "phash_near": 0.95, "text_exact": 0.99, "similarity": 0.85, "hybrid": 0.85 - 0.02, "other": math.Inf(1),
	}, thresholds); diff != "" {
		t.Errorf("thresholds (-want +got):\n%s", diff)
	}
	admits := []struct {
		c    problems.Candidate
		want bool
	}{
		{problems.Candidate{Confidence: 1, Method: problems.MethodPHashExact}, true},
		{problems.Candidate{Confidence: 0.95, Method: problems.MethodPHashNear}, true},
		{problems.Candidate{Confidence: 0.99, Method: problems.MethodTextExact}, true},
		{problems.Candidate{Confidence: 0.85, Method: problems.MethodSimilarity}, true},
		{problems.Candidate{Confidence: 0.849, Method: problems.MethodSimilarity}, false},
		{problems.Candidate{Confidence: 0.84, Method: problems.MethodHybrid}, true},
		{problems.Candidate{Confidence: 0.829, Method: problems.MethodHybrid}, false},
		{problems.Candidate{Confidence: 1, Method: "other"}, false},
	}
	for _, tt := range admits {
		if got := p.Admits(tt.c); got != tt.want {
			t.Errorf("Admits(%+v) = %v, want %v", tt.c, got, tt.want)
		}
	}

	snap, err := json.Marshal(problems.ExecutionPolicy{RetrievalThreshold: 0.8, VideoGeneration: "skip", RetryMax: 1, CostCapUSD: 0.05, SubscriptionTier: "free"})
	if err != nil {
		t.Fatal(err)
	}
	if string(snap) != `{"retrieval_threshold":0.8,"video_generation":"skip","retry_max":1,"cost_cap_usd":0.05,"subscription_tier":"free"}` {
		t.Errorf("snapshot = %s", snap)
	}
	got, err := problems.DecodePolicy(snap)
	if err != nil || got.RetrievalThreshold != 0.8 || got.VideoGeneration != problems.VideoSkip {
		t.Errorf("DecodePolicy = %+v, %v", got, err)
	}
	for _, bad := range []string{``, `null`, `{`, `{"retrieval_threshold":0,"video_generation":"skip"}`,
		`{"retrieval_threshold":1.5,"video_generation":"skip"}`, `{"retrieval_threshold":0.8,"video_generation":"later"}`,
		`{"retrieval_threshold":0.8,"video_generation":"skip","retry_max":-1}`, `{"retrieval_threshold":0.8,"video_generation":"skip","cost_cap_usd":-1}`} {
		if _, err := problems.DecodePolicy(json.RawMessage(bad)); !errors.Is(err, problems.ErrInvalidPolicy) {
			t.Errorf("DecodePolicy(%s): %v, want ErrInvalidPolicy", bad, err)
		}
	}
}
