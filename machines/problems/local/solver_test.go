package local

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/machines/problems"
)

func TestSolveHTML(t *testing.T) {
	t.Parallel()
	page, method := SolveHTML("solve 2x+3=7", []string{"algebra", "linear-equation"})
	want := `<!doctype html>
<article class="solution">
<h1>Solution</h1>
<p class="problem">solve 2x+3=7</p>
<p>Equation: <code>2x+3=7</code></p>
<p>Collect the terms in <var>x</var> on one side and the constants on the other, then divide by the coefficient of <var>x</var>.</p>
<p class="answer"><var>x</var> = 2</p>
</article>
`
	if method != "linear-equation" {
		t.Errorf("method = %q, want linear-equation", method)
	}
	if diff := cmp.Diff(want, page); diff != "" {
		t.Errorf("page (-want +got):\n%s", diff)
	}

	tests := []struct {
		text, method, answer string
	}{
		{"x/3=1/6", "linear-equation", `<p class="answer"><var>x</var> = 1/2 ≈ 0.5000</p>`},
		{"3(y-1)=2y+4", "linear-equation", `<p class="answer"><var>y</var> = 7</p>`},
		{"find x 0.5x-1.25=x", "linear-equation", `<p class="answer"><var>x</var> = -5/2 ≈ -2.5000</p>`},
		{"what is 12*(3+4)/2", "arithmetic", `<p class="answer">12*(3+4)/2 = 42</p>`},
		{"2^10-1/3", "arithmetic", `<p class="answer">2^10-1/3 = 3071/3 ≈ 1023.6667</p>`},
		{"x^2-5x+6=0", "explanation", "<p>Topics: algebra</p>"},
		{"x+y=3", "explanation", "<p>Topics: algebra</p>"},
		{"2x=2x", "explanation", "<p>Topics: algebra</p>"},
		{"1/0+1", "explanation", "<p>Topics: algebra</p>"},
		{"what is a prime", "explanation", "<p>Topics: algebra</p>"},
	}
	for _, tt := range tests {
		page, method := SolveHTML(tt.text, []string{"algebra"})
		if method != tt.method || !strings.Contains(page, tt.answer) {
			t.Errorf("SolveHTML(%q) = %s with method %q; want method %q and %q", tt.text, page, method, tt.method, tt.answer)
		}
	}
	page, _ = SolveHTML("<script>", nil)
	if strings.Contains(page, "<script>") || !strings.Contains(page, "<p>Topics: general</p>") {
		t.Errorf("page of an unsolvable problem with markup:\n%s", page)
	}
}

func TestSolver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	s := NewSolver(pool)
	req := problems.SolveRequest{ProblemSignature: "sig", NormalizedText: "solve 2x+3=7", TopicTags: []string{"algebra"}, Attempt: 1, BudgetUSD: 0.5}
	got, err := s.Solve(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := SolveHTML(req.NormalizedText, req.TopicTags)
	want := problems.Solution{
		HTML:       page,
		StorageKey: "sha256:" + problems.ProblemSignature(page, ""),
		Provenance: "local-solver/1 method=linear-equation",
		CostUSD:    0.01,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Solve (-want +got):\n%s", diff)
	}
	body, err := NewRegistry(pool).Content(ctx, got.StorageKey)
	if err != nil || body != page {
		t.Errorf("stored content = %q, %v; want the page", body, err)
	}
	// The same solution again is stored once.
	if _, err := s.Solve(ctx, req); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM problembank.contents`).Scan(&n); err != nil || n != 1 {
		t.Errorf("contents rows = %d, %v; want 1", n, err)
	}

	expensive := &Solver{pool: pool, CostUSD: 0.75}
	_, err = expensive.Solve(ctx, req)
	var capErr *problems.CostCapError
	if !errors.As(err, &capErr) || !errors.Is(err, problems.ErrCostCapExceeded) {
		t.Fatalf("Solve over budget: %v, want a CostCapError", err)
	}
	if diff := cmp.Diff(&problems.CostCapError{CapUSD: 0.5, SpentUSD: 0.75}, capErr); diff != "" {
		t.Errorf("CostCapError (-want +got):\n%s", diff)
	}

	down := errors.New("model unavailable")
	var attempts []int
	flaky := &Solver{pool: pool, CostUSD: -1, Fail: func(r problems.SolveRequest) error {
		attempts = append(attempts, r.Attempt)
		if r.Attempt < 2 {
			return down
		}
		return nil
	}}
	if _, err := flaky.Solve(ctx, req); !errors.Is(err, down) {
		t.Errorf("first attempt: %v, want %v", err, down)
	}
	req.Attempt = 2
	free, err := flaky.Solve(ctx, req)
	if err != nil || free.CostUSD != 0 {
		t.Errorf("second attempt: cost %v, %v; want 0, nil", free.CostUSD, err)
	}
	if diff := cmp.Diff([]int{1, 2}, attempts); diff != "" {
		t.Errorf("attempts (-want +got):\n%s", diff)
	}
	if _, err := NewRegistry(pool).Content(ctx, "sha256:none"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Content of an unknown key: %v, want ErrNotFound", err)
	}
}

func TestPolicies(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := NewPolicies()
	req := func(tier, sens string) problems.PolicyRequest {
		return problems.PolicyRequest{WorkflowType: "retrieve_or_generate", UserID: "u", SubscriptionTier: tier, Sensitivity: sens}
	}
	tests := []struct {
		req  problems.PolicyRequest
		want problems.ExecutionPolicy
	}{
		{req("free", ""), problems.ExecutionPolicy{RetrievalThreshold: 0.85, VideoGeneration: "skip", RetryMax: 1, CostCapUSD: 0.05, SubscriptionTier: "free", Sensitivity: "standard"}},
		{req("pro", "public"), problems.ExecutionPolicy{RetrievalThreshold: 0.85, VideoGeneration: "async", RetryMax: 3, CostCapUSD: 0.50, SubscriptionTier: "pro", Sensitivity: "public"}},
		{req("pro", "private"), problems.ExecutionPolicy{RetrievalThreshold: 0.85, VideoGeneration: "skip", RetryMax: 3, CostCapUSD: 0.50, SubscriptionTier: "pro", Sensitivity: "private"}},
		{req("enterprise", "standard"), problems.ExecutionPolicy{RetrievalThreshold: 0.80, VideoGeneration: "sync", RetryMax: 3, CostCapUSD: 2.00, SubscriptionTier: "enterprise", Sensitivity: "standard"}},
	}
	for _, tt := range tests {
		got, err := p.Policy(ctx, tt.req)
		if err != nil {
			t.Errorf("%+v: %v", tt.req, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%+v (-want +got):\n%s", tt.req, diff)
		}
		if err := got.Validate(); err != nil {
			t.Errorf("%+v: %v", tt.req, err)
		}
	}
	for _, bad := range []problems.PolicyRequest{
		{WorkflowType: "other", SubscriptionTier: "free"},
		req("platinum", ""),
		req("free", "secret"),
	} {
		if _, err := p.Policy(ctx, bad); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}
