package store

import (
	"github.com/fsmgen/fsmgen/runtime/internal/pgstore"
)

// Limits bounds what the store accepts from callers, so that a bad payload
// fails at once with runtime.ErrInvalidInput instead of in the database, or worse,
// being stored and reloaded at every step of the run.
type Limits struct {
	// MaxPayload is the size in bytes of one JSON document once encoded: a
	// run's input or policy snapshot, an event's payload, a step's or a
	// message's payload, a result's output. Default 1 MiB.
	MaxPayload int
	// MaxKey is the size in bytes of an idempotency key, and of the other
	// names a caller gives: type, tenant id, step name, topic, error code.
	// Default 512.
	MaxKey int
}

// The default limits.
const (
	DefaultMaxPayload = pgstore.DefaultMaxPayload
	DefaultMaxKey     = pgstore.DefaultMaxKey
)

// WithLimits sets the store's limits; a zero field keeps its default.
func WithLimits(l Limits) Option {
	return func(s *Store) { s.db().SetLimits(pgstore.Limits(l)) }
}
