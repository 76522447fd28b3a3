// Package doc is what the Go blocks of docs/operating.md take as given (see
// docs/docs_test.go).
package doc

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/runtime/engine"
	"github.com/fsmgen/fsmgen/runtime/relay"
	"github.com/fsmgen/fsmgen/runtime/store"
)

var (
	ctx       context.Context
	pool      *pgxpool.Pool
	st        *store.Store
	publisher relay.Publisher
	url       string
)
