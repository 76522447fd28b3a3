package compliancetest_test

import (
	"testing"

	"github.com/fsmgen/fsmgen/machines/compliance/compliancetest"
	"github.com/fsmgen/fsmgen/runtime/enginetest"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/runnertest"
)

func TestMain(m *testing.M) {
	runnertest.WorkerMain(enginetest.Work)
	pgtest.Main(m)
}

// TestConformance runs FCHA's conformance scenarios on the PostgreSQL
// engine (runtime/runnertest runs the suite's own).
func TestConformance(t *testing.T) {
	compliancetest.Run(t, enginetest.Backend{})
}
