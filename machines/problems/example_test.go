package problems_test

import (
	"context"
	"errors"
	"fmt"

	rog "github.com/fsmgen/fsmgen/machines/problems/retrieveorgenerate"
	"github.com/fsmgen/fsmgen/runtime"
)

// policy implements the machine's guards with an execution policy.
type policy struct{ threshold float64 }

func (policy) IdempotencyCheckPassed(context.Context, rog.Start) bool { return true }
func (policy) SignatureComputed(_ context.Context, e rog.MediaNormalized) bool {
	return e.ProblemSignature != ""
}
func (p policy) AtOrAboveThreshold(_ context.Context, e rog.RetrievalHit) bool {
	return e.Confidence >= p.threshold
}
func (p policy) BelowThreshold(_ context.Context, e rog.RetrievalMiss) bool {
	return e.BestConfidence < p.threshold
}
func (policy) HTMLAvailable(_ context.Context, e rog.SolveSucceeded) bool  { return e.StorageKey != "" }
func (policy) NearMissAvailable(_ context.Context, e rog.SolveFailed) bool { return false }
func (policy) AssetsPersisted(_ context.Context, e rog.AssetsRegistered) bool {
	return e.AssetVersionID != ""
}
func (policy) UserOwnsRun(_ context.Context, e rog.Cancel) bool { return e.UserID == "u-1" }

func Example() {
	ctx := context.Background()
	// A recorder sees every transition before it is applied; the runtime's
	// Postgres store is one.
	log := runtime.RecorderFunc(func(_ context.Context, t runtime.Transition) error {
		fmt.Printf("%s -> %s on %s\n", t.From, t.To, t.Event)
		return nil
	})
	m := rog.New(policy{threshold: 0.85}, rog.WithRecorder(log))

	_ = m.Start(ctx, rog.Start{})
	_ = m.Fire(ctx, rog.MediaNormalized{ProblemSignature: "sig-1", NormalizedText: "2x+3=7"})

	// In RETRIEVING only RETRIEVING's events can be fired through its view:
	// v.DocumentIndexed(...) would not compile.
	if v, ok := m.InRetrieving(); ok {
		_ = v.RetrievalHit(ctx, rog.RetrievalHit{AssetVersionID: "av-9", Confidence: 0.97})
	}
	fmt.Println(m.State(), m.State().Status(), m.State().Terminal())

	// A final state accepts nothing; the error says what and where.
	err := m.Fire(ctx, rog.Cancel{UserID: "u-1"})
	fmt.Println(errors.Is(err, runtime.ErrIllegalTransition))
	fmt.Println(err)
	// Output:
	// INITIATED -> INGESTING on Start
	// INGESTING -> RETRIEVING on MediaNormalized
	// RETRIEVING -> SUCCEEDED on RetrievalHit
	// SUCCEEDED succeeded true
	// true
	// retrieve_or_generate: illegal transition: state SUCCEEDED has no transition on event Cancel
}

func Example_guardRejected() {
	ctx := context.Background()
	m := rog.New(policy{threshold: 0.85}, rog.WithState(rog.StateRetrieving))
	// A hit below the threshold is refused by its guard and changes nothing.
	err := m.RetrievalHit(ctx, rog.RetrievalHit{Confidence: 0.5})
	fmt.Println(errors.Is(err, runtime.ErrGuardRejected), m.State())
	fmt.Println(err)
	// Output:
	// true RETRIEVING
	// retrieve_or_generate: event RetrievalHit in state RETRIEVING rejected by guards [AtOrAboveThreshold]
}
