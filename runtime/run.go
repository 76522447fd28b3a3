package runtime

import "encoding/json"

// Run is what a state handler is told about the run it is working on.
type Run struct {
	// ID identifies the run.
	ID string
	// Type and Version name the machine definition the run follows.
	Type    string
	Version int
	// IdempotencyKey is the key the run was started with.
	IdempotencyKey string
	// Attempt is the run's attempt number, starting at 1; it grows when a
	// FAILED run is started again with the same key.
	Attempt int
	// TenantID and UserID identify who the run belongs to.
	TenantID string
	UserID   string
	// Input is the JSON input the run was started with.
	Input json.RawMessage
}
