package local

import (
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/machines/problems"
)

// Set holds the local implementation of every adapter of the workflow, each
// with its defaults; change their fields before the first run to configure
// them.
type Set struct {
	Policies   *Policies
	Normalizer *Normalizer
	Retriever  *Retriever
	Solver     *Solver
	Registry   *Registry
	Indexer    *Indexer
	Videos     *Videos
}

// NewSet returns the local adapters on pool, whose database Migrate
// prepared. The Normalizer reads uploads from uploads, nil for none.
func NewSet(pool *pgxpool.Pool, uploads Uploads) *Set {
	return &Set{
		Policies:   NewPolicies(),
		Normalizer: &Normalizer{Uploads: uploads},
		Retriever:  NewRetriever(pool),
		Solver:     NewSolver(pool),
		Registry:   NewRegistry(pool),
		Indexer:    NewIndexer(pool),
		Videos:     NewVideos(pool),
	}
}

// Adapters returns the set as problems.Adapters, for problems.New.
func (s *Set) Adapters() problems.Adapters {
	return problems.Adapters{
		Policies:   s.Policies,
		Normalizer: s.Normalizer,
		Retriever:  s.Retriever,
		Solver:     s.Solver,
		Registry:   s.Registry,
		Indexer:    s.Indexer,
		Videos:     s.Videos,
	}
}
