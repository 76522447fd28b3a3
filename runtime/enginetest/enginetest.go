// Package enginetest helps test workflows built on runtime/engine against
// the faults a deployment meets, with the engine's own code paths rather
// than hand-written SQL.
package enginetest

import (
	"context"
	"fmt"
	"time"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/internal/enginestore"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// AbandonClaim claims run runID as worker owner would, with a lease of ttl,
// and abandons it there, as a worker killed right after its claim does: the
// lease is never released, and the next claim after it expires charges the
// interrupted try to the run (step_attempt + 1 and a lease_expired row in
// its log). The run must be due and unleased; AbandonClaim returns the run
// as claimed.
func AbandonClaim(ctx context.Context, st *store.Store, owner, runID string, ttl time.Duration) (runtime.Run, error) {
	run, err := st.Get(ctx, runID)
	if err != nil {
		return runtime.Run{}, err
	}
	claims, err := enginestore.New(st).Claim(ctx, enginestore.ClaimParams{
		Owner: owner, Kinds: []enginestore.Kind{{Type: run.Type, Version: run.Version}}, Limit: 1, TTL: ttl, RunID: runID,
	})
	if err != nil {
		return runtime.Run{}, err
	}
	if len(claims) != 1 {
		return runtime.Run{}, fmt.Errorf("abandon claim of run %s: the run is not due or is leased", runID)
	}
	return claims[0].Run, nil
}
