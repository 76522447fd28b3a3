// Package pgstore is the runtime's persistence layer on PostgreSQL. It
// owns the SQL (the sqlc queries of db/queries, package dbsqlc) and the
// state a store keeps (its pool, clock, limits, the cache of registered
// definitions and the group commit of transitions), with the helpers that
// package store and the engine's operations (package enginestore) both
// build on: reading a run from its row, checking and building a
// transition, the schedule of a state entered, id parsing, JSON encoding,
// input checks and the translation of the database's errors.
//
// Package store declares its Store as a DB (type Store pgstore.DB), and
// the engine's operations convert a *store.Store to a *DB, checked by the
// compiler: there is no hook variable, and nothing of DB shows in store's
// API, since DB's fields are unexported and a defined type does not take
// its underlying type's methods.
package pgstore

import (
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/runtime/internal/batch"
	"github.com/fsmgen/fsmgen/runtime/internal/dbsqlc"
)

// DB is a store's state: see the package's doc. Create one with New, set
// it up with the Set methods, then Open it.
type DB struct {
	pool   *pgxpool.Pool
	q      *dbsqlc.Queries
	clock  func() time.Time
	limits Limits

	mu   sync.RWMutex
	defs map[defKey]*Definition

	// batchSize and batchWindow configure batch, the group commit of
	// transitions written outside a caller's transaction.
	batchSize   int
	batchWindow time.Duration
	batch       *batch.Batcher[dbsqlc.AdvanceRunParams, AdvanceResult]
}

// New returns a DB on pool with the default limits and group commit.
func New(pool *pgxpool.Pool) *DB {
	return &DB{pool: pool, q: dbsqlc.New(pool), limits: defaultLimits, defs: make(map[defKey]*Definition), batchSize: 64}
}

// SetClock makes every query use the time now returns instead of the
// database's now().
func (db *DB) SetClock(now func() time.Time) { db.clock = now }

// SetGroupCommit sets the size and window of the group commit; size 1
// writes every transition alone.
func (db *DB) SetGroupCommit(size int, window time.Duration) {
	db.batchSize, db.batchWindow = size, max(window, 0)
}

// SetLimits sets the limits; a zero field keeps its value.
func (db *DB) SetLimits(l Limits) {
	if l.MaxPayload > 0 {
		db.limits.MaxPayload = l.MaxPayload
	}
	if l.MaxKey > 0 {
		db.limits.MaxKey = l.MaxKey
	}
}

// Open starts the group commit, as SetGroupCommit configured it.
func (db *DB) Open() {
	if db.batchSize > 1 {
		key := func(a dbsqlc.AdvanceRunParams) string { return string(a.ID.Bytes[:]) }
		db.batch = batch.New(db.batchSize, db.batchWindow, groupCommitTimeout, key, db.advanceBatch)
	}
}

// Pool returns the pool the DB was created with.
func (db *DB) Pool() *pgxpool.Pool { return db.pool }

// Queries returns the queries on tx, or on the pool when tx is nil.
func (db *DB) Queries(tx pgx.Tx) *dbsqlc.Queries {
	if tx == nil {
		return db.q
	}
	return db.q.WithTx(tx)
}

// Batch returns the group commit of transitions, nil when every
// transition is written alone.
func (db *DB) Batch() *batch.Batcher[dbsqlc.AdvanceRunParams, AdvanceResult] { return db.batch }

// Now is the value of the queries' now parameter: NULL, meaning the
// database's clock, unless a clock was set with SetClock.
func (db *DB) Now() pgtype.Timestamptz {
	if db.clock == nil {
		return pgtype.Timestamptz{}
	}
	return pgtype.Timestamptz{Time: db.clock(), Valid: true}
}
