package temporal

import "go.temporal.io/sdk/temporal"

// The search attributes (Keyword) a run's workflow upserts when it starts
// and after every transition, to list runs by state, status, tenant and
// idempotency key with Temporal's visibility (the server must have them
// registered: devserver.Start does, temporal operator search-attribute
// create does on another server).
var (
	// SearchState is the run's state: a leaf, or for a run in a parallel
	// state its configuration ("A|B").
	SearchState = temporal.NewSearchAttributeKeyKeyword("FsmState")
	// SearchStatus is the run's runtime.Status.
	SearchStatus = temporal.NewSearchAttributeKeyKeyword("FsmStatus")
	// SearchTenant is the tenant that owns the run.
	SearchTenant = temporal.NewSearchAttributeKeyKeyword("FsmTenant")
	// SearchKey is the run's idempotency key.
	SearchKey = temporal.NewSearchAttributeKeyKeyword("FsmIdempotencyKey")
)
