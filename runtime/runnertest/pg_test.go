package runnertest_test

import (
	"testing"

	"github.com/fsmgen/fsmgen/runtime/enginetest"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/runnertest"
)

func TestMain(m *testing.M) {
	runnertest.WorkerMain(enginetest.Work)
	pgtest.Main(m)
}

// TestConformance runs the conformance suite on the PostgreSQL engine.
// machines/compliance/compliancetest runs FCHA's scenarios on it.
func TestConformance(t *testing.T) {
	runnertest.Run(t, enginetest.Backend{})
}
