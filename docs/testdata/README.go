// Package doc is what the Go blocks of README.md take as given (see
// docs/docs_test.go).
package doc

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"

	"example.com/order"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
	"github.com/fsmgen/fsmgen/runtime/store"
)

var (
	ctx    context.Context
	pool   *pgxpool.Pool
	userID string
)

// Input is an order's input.
type Input struct{ Cents int }

// handlers does the work of the states of Order the engine drives.
type handlers struct{}

// charge charges the customer through a payment provider, once per key.
func charge(ctx context.Context, key string) (receipt string, err error) { return "", nil }

// newGuards returns the guards of a run.
func newGuards(run *runtime.Run) order.Guards { return nil }

var (
	_ = engine.New
	_ = store.New
)
