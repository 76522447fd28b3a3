package local

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"html"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/machines/problems"
)

// SolverProvenance prefixes the provenance of the Solver's solutions.
const SolverProvenance = "local-solver/1"

// FallbackModel is the model the Solver names in the provenance of a
// solution found on a retry (SolveRequest.Attempt above 1):
// RetrieveOrGenerate solves again with a fallback model after a failed try. The first try's
// provenance names no model.
const FallbackModel = "fallback"

// DefaultSolveCostUSD is what a Solver charges per solution unless told
// otherwise.
const DefaultSolveCostUSD = 0.01

// Solver is a deterministic problems.Solver. It solves linear equations in
// one variable ("2x+3=7") and evaluates arithmetic ("12*(3+4)"), exactly
// over the rationals; any other problem gets an HTML page that restates it
// with its topics and a general method. The HTML is stored in table
// problembank.contents under "sha256:" and the SHA-256 of the page, so the
// same solution is stored once.
type Solver struct {
	pool *pgxpool.Pool
	// CostUSD is charged per solution: 0 means DefaultSolveCostUSD, a
	// negative value nothing. A solution that would cost more than the
	// request's budget is refused with a *problems.CostCapError before any
	// work is done.
	CostUSD float64
	// Fail, when set, is asked before each solve; the error it returns is
	// returned as the solve's. Tests use it to make attempts fail.
	Fail func(req problems.SolveRequest) error
}

var _ problems.Solver = (*Solver)(nil)

// NewSolver returns a solver that stores its pages in pool's database,
// which Migrate prepared.
func NewSolver(pool *pgxpool.Pool) *Solver { return &Solver{pool: pool} }

// Solve implements problems.Solver.
func (s *Solver) Solve(ctx context.Context, req problems.SolveRequest) (problems.Solution, error) {
	cost := s.CostUSD
	switch {
	case cost == 0:
		cost = DefaultSolveCostUSD
	case cost < 0:
		cost = 0
	}
	if cost > req.BudgetUSD {
		return problems.Solution{}, &problems.CostCapError{CapUSD: req.BudgetUSD, SpentUSD: cost}
	}
	if s.Fail != nil {
		if err := s.Fail(req); err != nil {
			return problems.Solution{}, fmt.Errorf("local: solve: %w", err)
		}
	}
	page, method := SolveHTML(req.NormalizedText, req.TopicTags)
	sum := sha256.Sum256([]byte(page))
	key := "sha256:" + hex.EncodeToString(sum[:])
	_, err := s.pool.Exec(ctx, `
		INSERT INTO problembank.contents (storage_key, content_type, body)
		VALUES ($1, 'text/html; charset=utf-8', $2)
		ON CONFLICT (storage_key) DO NOTHING`, key, page)
	if err != nil {
		return problems.Solution{}, fmt.Errorf("local: store solution: %w", err)
	}
	prov := SolverProvenance + " method=" + method
	if req.Attempt > 1 {
		prov = SolverProvenance + " model=" + FallbackModel + " method=" + method
	}
	return problems.Solution{
		HTML:       page,
		StorageKey: key,
		Provenance: prov,
		CostUSD:    cost,
	}, nil
}

// SolveHTML returns the solution page of a normalized problem text and the
// method that produced it: "linear-equation", "arithmetic" or "explanation".
func SolveHTML(text string, tags []string) (page, method string) {
	for _, tok := range strings.Fields(text) {
		if !strings.Contains(tok, "=") {
			continue
		}
		v, x, err := solveLinear(tok)
		if err != nil {
			continue
		}
		body := fmt.Sprintf("<p>Equation: <code>%s</code></p>\n"+
			"<p>Collect the terms in <var>%c</var> on one side and the constants on the other, then divide by the coefficient of <var>%c</var>.</p>\n"+
			"<p class=\"answer\"><var>%c</var> = %s</p>",
			html.EscapeString(tok), v, v, v, html.EscapeString(formatRat(x)))
		return document(text, body), "linear-equation"
	}
	for _, tok := range strings.Fields(text) {
		if !strings.ContainsAny(tok, "+-*/^") || !strings.ContainsAny(tok, "0123456789") {
			continue
		}
		r, err := evalArithmetic(tok)
		if err != nil {
			continue
		}
		body := fmt.Sprintf("<p>Expression: <code>%s</code></p>\n"+
			"<p>Evaluate parentheses first, then powers, products and quotients, then sums and differences.</p>\n"+
			"<p class=\"answer\">%s = %s</p>",
			html.EscapeString(tok), html.EscapeString(tok), html.EscapeString(formatRat(r)))
		return document(text, body), "arithmetic"
	}
	topics := "general"
	if len(tags) > 0 {
		topics = strings.Join(tags, ", ")
	}
	body := fmt.Sprintf("<p>Topics: %s</p>\n"+
		"<p>Restate what is given and what is asked, choose the facts of the topic that connect them, "+
		"and work step by step, checking each result against the question.</p>",
		html.EscapeString(topics))
	return document(text, body), "explanation"
}

func document(problem, body string) string {
	return "<!doctype html>\n<article class=\"solution\">\n<h1>Solution</h1>\n<p class=\"problem\">" +
		html.EscapeString(problem) + "</p>\n" + body + "\n</article>\n"
}
