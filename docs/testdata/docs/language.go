// Package doc is what the Go blocks of docs/language.md take as given (see
// docs/docs_test.go).
package doc

import (
	"context"
	"errors"

	rog "github.com/fsmgen/fsmgen/machines/problems/retrieveorgenerate"
	"github.com/fsmgen/fsmgen/runtime"
)

var (
	ctx context.Context
	log runtime.Recorder
)

// policy implements the machine's guards with an execution policy.
type policy struct {
	rog.Guards
	threshold float64
}
