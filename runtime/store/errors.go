package store

import "github.com/fsmgen/fsmgen/runtime/internal/pgstore"

// Translate maps an error from a query on the runtime's tables, including one
// the caller sent itself, to the store's sentinels: the SQLSTATEs of the
// schema's triggers become runtime.ErrTransitionRefused, runtime.ErrLogImmutable,
// runtime.ErrRunImmutable, runtime.ErrDefinitionImmutable, runtime.ErrUnlogged and runtime.ErrOtherExecutor, a foreign-key violation against
// workflow_definitions becomes runtime.ErrUnknownDefinition, one against the
// registered moves (db.ConstraintMove) runtime.ErrTransitionRefused, a second log row
// of the same change of state (db.ConstraintLoggedChange) runtime.ErrUnlogged, pgx.ErrNoRows becomes
// runtime.ErrRunNotFound and a closed pool runtime.ErrClosed. The original error stays in the
// chain. Other errors are returned unchanged.
func Translate(err error) error { return pgstore.Translate(err) }
