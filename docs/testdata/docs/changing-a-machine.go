// Package doc is what the Go blocks of docs/changing-a-machine.md take as
// given (see docs/docs_test.go).
package doc

import (
	"context"

	rog "github.com/fsmgen/fsmgen/machines/problems/changing/retrieveorgenerate"
	rogv1 "github.com/fsmgen/fsmgen/machines/problems/changing/retrieveorgeneratev1"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
)

var (
	ctx context.Context
	eng *engine.Engine
)

// The handlers and guards of each version.
type (
	handlersV1 struct{ rogv1.Handlers }
	handlersV2 struct{ rog.Handlers }
)

var (
	guardsV1 func(run *runtime.Run) rogv1.Guards
	guardsV2 func(run *runtime.Run) rog.Guards
)
