package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// txKey is the context key of the transaction a transition is written in.
type txKey struct{}

// WithTx returns a copy of ctx that carries tx, the transaction a
// transition is being written in: a Recorder that writes to Postgres calls
// a transition's Actions (runtime.Transition.Actions) with such a context,
// so that the actions write in the same transaction.
func WithTx(ctx context.Context, tx pgx.Tx) context.Context {
	return context.WithValue(ctx, txKey{}, tx)
}

// Tx returns the transaction of the transition whose entry or exit actions
// are running, and whether ctx carries one. Every Recorder of the runtime
// (this package's, the engine's) passes it to runtime.Transition.Actions: an
// action that writes through it commits with the transition, or rolls back
// with it. The transaction belongs to the recorder: an action must not
// commit or roll it back.
func Tx(ctx context.Context) (pgx.Tx, bool) {
	tx, ok := ctx.Value(txKey{}).(pgx.Tx)
	return tx, ok && tx != nil
}
