// Package doc is what the Go blocks of docs/durable-workflows.md take as
// given (see docs/docs_test.go).
package doc

import (
	"context"
	"encoding/json"
	"errors"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"

	"example.com/refund"
	"github.com/fsmgen/fsmgen/db"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
	"github.com/fsmgen/fsmgen/runtime/store"
)

var (
	ctx  context.Context
	eng  *engine.Engine
	err  error
	errc chan error
	res  runtime.Started
	run  runtime.Run
	psp  Provider

	orderID, userID, runID, ref string
)

// Request is a refund's input.
type Request struct{ Cents int64 }

// Provider is the payment provider's client.
type Provider interface {
	Refund(ctx context.Context, key string, cents int64) (ref string, err error)
}

// ErrCardClosed is the provider's refusal to pay to a closed card.
var ErrCardClosed = errors.New("card closed")
