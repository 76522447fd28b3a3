package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/internal/batch"
	"github.com/fsmgen/fsmgen/runtime/internal/dbsqlc"
	"github.com/fsmgen/fsmgen/runtime/internal/storehook"
)

// Store persists runs of generated machines in Postgres. It is safe for
// concurrent use; create one per pool with New.
type Store struct {
	pool   *pgxpool.Pool
	q      *dbsqlc.Queries
	clock  func() time.Time
	limits Limits

	mu   sync.RWMutex
	defs map[defKey]*definition

	// batchSize and batchWindow configure batch, the group commit of
	// Record and Finish.
	batchSize   int
	batchWindow time.Duration
	batch       *batch.Batcher[dbsqlc.AdvanceRunParams, advanceResult]
}

type defKey struct {
	typ     string
	version int
}

// definition is a registered definition, indexed for the checks the store
// makes before it writes.
type definition struct {
	def    runtime.Definition
	digest string
	states map[string]runtime.StateSpec
	moves  map[[3]string]bool // from, event, to
}

func newDefinition(def runtime.Definition, digest string) *definition {
	d := &definition{def: def, digest: digest, states: make(map[string]runtime.StateSpec, len(def.States)), moves: make(map[[3]string]bool, len(def.Transitions))}
	for _, s := range def.States {
		d.states[s.Name] = s
	}
	for _, t := range def.Transitions {
		d.moves[[3]string{t.From, t.Event, t.To}] = true
	}
	return d
}

// Option configures a Store.
type Option func(*Store)

// WithClock makes every query of the store use the time now returns instead
// of the database's now(). It exists for tests that need a fixed or
// advancing clock; without it, all times (created_at, ETAs, durations, ...)
// come from the database server, never from the Go process.
func WithClock(now func() time.Time) Option {
	return func(s *Store) { s.clock = now }
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
	return func(s *Store) { s.batchSize, s.batchWindow = size, max(window, 0) }
}

// New returns a Store on pool. The schema must be migrated (db.Migrate).
func New(pool *pgxpool.Pool, opts ...Option) *Store {
	s := &Store{pool: pool, q: dbsqlc.New(pool), limits: defaultLimits, defs: make(map[defKey]*definition), batchSize: 64}
	for _, o := range opts {
		o(s)
	}
	if s.batchSize > 1 {
		key := func(a dbsqlc.AdvanceRunParams) string { return string(a.ID.Bytes[:]) }
		s.batch = batch.New(s.batchSize, s.batchWindow, groupCommitTimeout, key, s.advanceBatch)
	}
	return s
}

// Pool returns the pool the store was created with.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// now is the value of the queries' now parameter: NULL, meaning the
// database's clock, unless a clock was set with WithClock.
func (s *Store) now() pgtype.Timestamptz {
	if s.clock == nil {
		return pgtype.Timestamptz{}
	}
	return pgtype.Timestamptz{Time: s.clock(), Valid: true}
}

func (s *Store) queries(tx pgx.Tx) *dbsqlc.Queries {
	if tx == nil {
		return s.q
	}
	return s.q.WithTx(tx)
}

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
		return runErr("register", "", fmt.Errorf("%w: %w", runtime.ErrInvalidDefinition, err))
	}
	digest, err := digestOf(def)
	if err != nil {
		return runErr(op, "", err)
	}
	if d := s.cached(def.Type, def.Version); d != nil && d.digest == digest {
		return nil
	}
	raw, err := json.Marshal(def)
	if err != nil {
		return runErr(op, "", fmt.Errorf("%w: encode definition: %w", runtime.ErrInvalidDefinition, err))
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		n, err := q.InsertDefinition(ctx, dbsqlc.InsertDefinitionParams{
			WorkflowType: def.Type, Version: int32(def.Version), InitialState: def.Initial,
			Digest: digest, Definition: raw, Now: s.now(),
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
			if sd, err := digestOf(stored); err != nil || sd != digest {
				return conflict(stored, def)
			}
			return nil
		}
		sp := dbsqlc.InsertStatesParams{WorkflowType: def.Type, Version: int32(def.Version)}
		for _, st := range def.States {
			sp.States = append(sp.States, st.Name)
			sp.Statuses = append(sp.Statuses, string(statusOf(st)))
			sp.Outcomes = append(sp.Outcomes, st.Outcome)
			sp.Initials = append(sp.Initials, st.Name == def.Initial)
		}
		if err := q.InsertStates(ctx, sp); err != nil {
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
		return runErr(op, "", Translate(err))
	}
	s.mu.Lock()
	s.defs[defKey{def.Type, def.Version}] = newDefinition(def, digest)
	s.mu.Unlock()
	return nil
}

func statusOf(st runtime.StateSpec) runtime.Status {
	if st.Status == "" {
		return runtime.StatusRunning
	}
	return st.Status
}

func (s *Store) cached(typ string, version int) *definition {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.defs[defKey{typ, version}]
}

// definition returns the registered definition of (typ, version), from the
// cache or else from the database (registered by another process).
func (s *Store) definition(ctx context.Context, typ string, version int) (*definition, error) {
	if d := s.cached(typ, version); d != nil {
		return d, nil
	}
	row, err := s.q.GetDefinition(ctx, dbsqlc.GetDefinitionParams{WorkflowType: typ, Version: int32(version)})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%w: %s v%d is not registered", runtime.ErrUnknownDefinition, typ, version)
	}
	if err != nil {
		return nil, Translate(err)
	}
	var def runtime.Definition
	if err := json.Unmarshal(row.Definition, &def); err != nil {
		return nil, fmt.Errorf("%w: stored definition of %s v%d does not decode: %w", runtime.ErrUnknownDefinition, typ, version, err)
	}
	digest, err := digestOf(def)
	if err != nil {
		return nil, fmt.Errorf("%w: stored definition of %s v%d: %w", runtime.ErrUnknownDefinition, typ, version, err)
	}
	d := newDefinition(def, digest)
	s.mu.Lock()
	s.defs[defKey{typ, version}] = d
	s.mu.Unlock()
	return d, nil
}

// Definition returns the registered definition of (typ, version), whichever
// process registered it.
func (s *Store) Definition(ctx context.Context, typ string, version int) (runtime.Definition, error) {
	d, err := s.definition(ctx, typ, version)
	if err != nil {
		return runtime.Definition{}, runErr("read definition", "", err)
	}
	return d.def, nil
}

func init() {
	storehook.Of = func(st any) any {
		s := st.(*Store)
		return storehook.Internals[runtime.Run, runtime.Result]{
			Pool: s.pool, Queries: s.q, Now: s.now, RunFromRow: runFromRow, TransitionParams: s.transitionParams,
			InitialDelay: s.initialDelay, ParseRunID: parseRunID, EncodeJSON: s.encodeJSON, CheckText: s.checkText, RawJSON: rawJSON,
		}
	}
}
