package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/internal/dbsqlc"
	"github.com/fsmgen/fsmgen/runtime/internal/pgstore"
)

// Store persists runs of generated machines in Postgres. It is safe for
// concurrent use; create one per pool with New.
type Store pgstore.DB

// db is the store as the persistence layer it is.
func (s *Store) db() *pgstore.DB { return (*pgstore.DB)(s) }

// Option configures a Store.
type Option func(*Store)

// WithClock makes every query of the store use the time now returns instead
// of the database's now(). It exists for tests that need a fixed or
// advancing clock; without it, all times (created_at, ETAs, durations, ...)
// come from the database server, never from the Go process.
func WithClock(now func() time.Time) Option {
	return func(s *Store) { s.db().SetClock(now) }
}

// WithGroupCommit sets the group commit of Record and Finish (not of
// RecordTx and FinishTx, which write in the caller's transaction): the
// transitions of different runs recorded concurrently through the store are
// written together, at most size at once, in one statement and one
// transaction, each with its own compare-and-set, and each caller is
// answered once that transaction is over. A transition that finds no other
// waiting is written at once; a batch of more than one transition, but
// fewer than size, waits up to window for more. Size 1 writes every
// transition alone. Default: size 64, window 0.
//
// A caller whose context ends before its transition is taken into a batch
// gets the context's error, and nothing is written; once taken, the
// transition is written and the caller waits for the outcome (at most 30s).
func WithGroupCommit(size int, window time.Duration) Option {
	return func(s *Store) { s.db().SetGroupCommit(size, window) }
}

// New returns a Store on pool. The schema must be migrated (db.Migrate).
func New(pool *pgxpool.Pool, opts ...Option) *Store {
	s := (*Store)(pgstore.New(pool))
	for _, o := range opts {
		o(s)
	}
	s.db().Open()
	return s
}

// Pool returns the pool the store was created with.
func (s *Store) Pool() *pgxpool.Pool { return s.db().Pool() }

// Register records a machine's definition (type, version, states with their
// generic status, transition table, and the whole definition as JSON) so
// that runs of it can be started and the database can check their
// transitions. It is idempotent: registering the same definition again, from
// any number of processes at once, is a no-op. Registering a (type, version)
// that exists with a different definition fails with runtime.ErrDefinitionConflict,
// naming what differs: give the changed machine a new version. Everything
// that changes how runs behave or what is stored for them is compared:
// states with their status, outcome, wait flag, retry policy, exhausted
// event and timers; events with their payload fields and external flag;
// the transition rows with their guards, outcomes and order; the initial
// state and the cancel event. Doc comments and the Go name are not.
func (s *Store) Register(ctx context.Context, def runtime.Definition) error {
	op := fmt.Sprintf("register %s v%d", def.Type, def.Version)
	if err := def.Validate(); err != nil {
		// Validate's message names the type and version.
		return pgstore.RunErr("register", "", fmt.Errorf("%w: %w", runtime.ErrInvalidDefinition, err))
	}
	digest, err := pgstore.Digest(def)
	if err != nil {
		return pgstore.RunErr(op, "", err)
	}
	if d := s.db().Cached(def.Type, def.Version); d != nil && d.Digest == digest {
		return nil
	}
	raw, err := json.Marshal(def)
	if err != nil {
		return pgstore.RunErr(op, "", fmt.Errorf("%w: encode definition: %w", runtime.ErrInvalidDefinition, err))
	}
	err = pgx.BeginFunc(ctx, s.db().Pool(), func(tx pgx.Tx) error {
		q := s.db().Queries(nil).WithTx(tx)
		n, err := q.InsertDefinition(ctx, dbsqlc.InsertDefinitionParams{
			WorkflowType: def.Type, Version: int32(def.Version), InitialState: def.Initial,
			Digest: digest, Definition: raw, Now: s.db().Now(),
		})
		if err != nil {
			return err
		}
		if n == 0 {
			have, err := q.GetDefinition(ctx, dbsqlc.GetDefinitionParams{WorkflowType: def.Type, Version: int32(def.Version)})
			if err != nil {
				return err
			}
			// Compare the canonical forms rather than the stored digests,
			// so that rows written under an older digest compare right.
			var stored runtime.Definition
			if err := json.Unmarshal(have.Definition, &stored); err != nil {
				return fmt.Errorf("%w: the registered definition does not decode: %w", runtime.ErrDefinitionConflict, err)
			}
			if sd, err := pgstore.Digest(stored); err != nil || sd != digest {
				return conflict(stored, def)
			}
			return nil
		}
		if err := q.InsertStates(ctx, pgstore.StatesParams(def)); err != nil {
			return err
		}
		tp := dbsqlc.InsertTransitionsParams{WorkflowType: def.Type, Version: int32(def.Version),
			FromStates: []string{}, Events: []string{}, ToStates: []string{}}
		for _, t := range def.Transitions {
			tp.FromStates = append(tp.FromStates, t.From)
			tp.Events = append(tp.Events, t.Event)
			tp.ToStates = append(tp.ToStates, t.To)
		}
		return q.InsertTransitions(ctx, tp)
	})
	if err != nil {
		return pgstore.RunErr(op, "", pgstore.Translate(err))
	}
	s.db().Put(pgstore.NewDefinition(def, digest))
	return nil
}

// Definition returns the registered definition of (typ, version), whichever
// process registered it.
func (s *Store) Definition(ctx context.Context, typ string, version int) (runtime.Definition, error) {
	d, err := s.db().Definition(ctx, typ, version)
	if err != nil {
		return runtime.Definition{}, pgstore.RunErr("read definition", "", err)
	}
	return d.Def, nil
}
