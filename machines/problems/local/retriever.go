package local

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/machines/problems"
)

// DefaultLimit is how many candidates a Retriever returns unless told otherwise.
const DefaultLimit = 5

// Retriever is a problems.Retriever over the problems registered and indexed
// in the same database. It looks, in order, for
//
//   - images with the same perceptual hash (problems.MethodPHashExact,
//     confidence 1.0) or one less than problems.NearDuplicateDistance bits
//     away (problems.MethodPHashNear, 0.95), among registered problems;
//   - the same normalized text (problems.MethodTextExact, 0.99), among
//     registered problems, by signature;
//   - similar texts in the index, by pg_trgm's similarity() through the
//     GIN trigram index: a similarity at or above the query's retrieval
//     threshold is a problems.MethodSimilarity candidate; a lower one is
//     re-ranked with the topic tags (HybridScore) as a problems.MethodHybrid
//     candidate.
//
// A problem found by several methods is returned once: with its best exact
// method when it has one, else with its similarity or hybrid score.
// Each candidate names the problem's latest solution_html version.
type Retriever struct {
	pool *pgxpool.Pool
	// Limit bounds the candidates returned; 0 means DefaultLimit.
	Limit int
}

var _ problems.Retriever = (*Retriever)(nil)

// NewRetriever returns a retriever on pool, whose database Migrate prepared.
func NewRetriever(pool *pgxpool.Pool) *Retriever { return &Retriever{pool: pool} }

// HybridScore re-ranks a similarity with the overlap (Jaccard index) of the
// topic tags: 0.8 × similarity + 0.2 × overlap.
func HybridScore(similarity, tagOverlap float64) float64 {
	return 0.8*similarity + 0.2*tagOverlap
}

// TagOverlap returns the Jaccard index of two tag sets: the size of their
// intersection over that of their union, 0 when both are empty.
func TagOverlap(a, b []string) float64 {
	set := make(map[string]int, len(a)+len(b))
	for _, t := range a {
		set[t] |= 1
	}
	for _, t := range b {
		set[t] |= 2
	}
	if len(set) == 0 {
		return 0
	}
	both := 0
	for _, v := range set {
		if v == 3 {
			both++
		}
	}
	return float64(both) / float64(len(set))
}

const latestSolution = `
	JOIN LATERAL (
		SELECT av.id FROM problembank.asset_versions av
		WHERE av.problem_id = p.id AND av.asset_type = 'solution_html'
		ORDER BY av.version_no DESC LIMIT 1
	) v ON true`

// Search implements problems.Retriever.
func (r *Retriever) Search(ctx context.Context, q problems.Query) ([]problems.Candidate, error) {
	limit := r.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	best := map[string]problems.Candidate{}
	add := func(c problems.Candidate) {
		if old, ok := best[c.ProblemID]; !ok || c.Confidence > old.Confidence {
			best[c.ProblemID] = c
		}
	}
	if q.PHash != "" {
		phash := strings.ToLower(q.PHash)
		if _, err := parseHash(phash); err != nil {
			return nil, fmt.Errorf("local: search: %w", err)
		}
		rows, err := r.pool.Query(ctx, `
			SELECT p.id::text, v.id::text, d FROM (
				SELECT id, bit_count(('x' || phash)::bit(64) # ('x' || $1)::bit(64)) AS d
				FROM problembank.problems WHERE phash <> ''
			) p `+latestSolution+`
			WHERE d < $2 ORDER BY d, p.id LIMIT $3`, phash, problems.NearDuplicateDistance, limit)
		if err != nil {
			return nil, fmt.Errorf("local: search by perceptual hash: %w", err)
		}
		for rows.Next() {
			var c problems.Candidate
			var d int64
			if err := rows.Scan(&c.ProblemID, &c.AssetVersionID, &d); err != nil {
				rows.Close()
				return nil, fmt.Errorf("local: search by perceptual hash: %w", err)
			}
			c.Method, c.Confidence = problems.MethodPHashNear, problems.ConfidencePHashNear
			if d == 0 {
				c.Method, c.Confidence = problems.MethodPHashExact, problems.ConfidencePHashExact
			}
			add(c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("local: search by perceptual hash: %w", err)
		}
	}
	if q.NormalizedText != "" {
		rows, err := r.pool.Query(ctx, `
			SELECT p.id::text, v.id::text FROM problembank.problems p `+latestSolution+`
			WHERE p.signature = $1 AND p.normalized_text = $2`,
			q.ProblemSignature, q.NormalizedText)
		if err != nil {
			return nil, fmt.Errorf("local: search by text: %w", err)
		}
		for rows.Next() {
			c := problems.Candidate{Method: problems.MethodTextExact, Confidence: problems.ConfidenceTextExact}
			if err := rows.Scan(&c.ProblemID, &c.AssetVersionID); err != nil {
				rows.Close()
				return nil, fmt.Errorf("local: search by text: %w", err)
			}
			add(c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("local: search by text: %w", err)
		}

		rows, err = r.pool.Query(ctx, `
			SELECT problem_id::text, asset_version_id::text, similarity(normalized_text, $1), topic_tags
			FROM problembank.problem_index
			WHERE normalized_text % $1
			ORDER BY 3 DESC, problem_id LIMIT $2`, q.NormalizedText, limit)
		if err != nil {
			return nil, fmt.Errorf("local: search by similarity: %w", err)
		}
		for rows.Next() {
			var c problems.Candidate
			var sim float32
			var tags []string
			if err := rows.Scan(&c.ProblemID, &c.AssetVersionID, &sim, &tags); err != nil {
				rows.Close()
				return nil, fmt.Errorf("local: search by similarity: %w", err)
			}
			if _, exact := best[c.ProblemID]; exact {
				continue // found by an exact method, which names it better
			}
			c.Method, c.Confidence = problems.MethodSimilarity, float64(sim)
			if c.Confidence < q.RetrievalThreshold {
				c.Method, c.Confidence = problems.MethodHybrid, HybridScore(float64(sim), TagOverlap(q.TopicTags, tags))
			}
			add(c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("local: search by similarity: %w", err)
		}
	}
	out := make([]problems.Candidate, 0, len(best))
	for _, c := range best {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Confidence != out[j].Confidence {
			return out[i].Confidence > out[j].Confidence
		}
		return out[i].ProblemID < out[j].ProblemID
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}
