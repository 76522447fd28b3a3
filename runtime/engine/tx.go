package engine

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/fsmgen/fsmgen/runtime/store"
)

// Tx returns the transaction of the transition whose entry or exit actions
// are running, and whether ctx carries one: the engine calls a
// transition's actions (runtime.Transition.Actions) inside the transaction
// that records it, after the run moved and before the commit, and an action
// that writes through this transaction commits or rolls back with the
// transition. It is store.Tx, for code written against the engine. The
// transaction belongs to the engine: an action must not commit or roll it
// back.
func Tx(ctx context.Context) (pgx.Tx, bool) { return store.Tx(ctx) }
