//go:build tools

// Package tools pins the code generators the main module runs through
// `make generate`, in a module of its own so that their dependencies stay out
// of the main module's go.mod.
package tools

import (
	_ "github.com/sqlc-dev/sqlc/cmd/sqlc"
)
