package enginetest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/db"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
	"github.com/fsmgen/fsmgen/runtime/evidence"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/runnertest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// Backend is the PostgreSQL engine as a backend of the conformance suite
// (runtime/runnertest): it deploys machines on runtime/engine, each
// deployment on a database of its own (runtime/pgtest), the engine
// connected as the runtime role, evidence enabled for every machine. It is
// a runnertest.ProcessBackend, its deployments ClockSkippers,
// EvidenceVerifiers and Historians. A test binary that runs the suite on
// it calls runnertest.WorkerMain(enginetest.Work) and pgtest.Main in its
// TestMain:
//
//	func TestMain(m *testing.M) {
//		runnertest.WorkerMain(enginetest.Work)
//		pgtest.Main(m)
//	}
//
//	func TestConformance(t *testing.T) { runnertest.Run(t, enginetest.Backend{}) }
type Backend struct{}

// deployment is an engine on a database. Its store's clock is the
// database's time moved forward by skew (store.WithClock, which the
// engine follows for due times, timers and leases).
type deployment struct {
	eng   *engine.Engine
	st    *store.Store
	owner *pgxpool.Pool
	skew  *atomic.Int64
}

var (
	_ runnertest.ProcessBackend   = Backend{}
	_ runnertest.ClockSkipper     = deployment{}
	_ runnertest.EvidenceVerifier = deployment{}
	_ runnertest.Historian        = deployment{}
)

// Deploy implements runnertest.Backend.
func (b Backend) Deploy(t *testing.T, drivers ...runtime.Driver) runnertest.Deployment {
	d, _ := b.deploy(t, true, drivers)
	return d
}

// DeployRemote implements runnertest.ProcessBackend: its address is the
// database's connection string as the runtime role.
func (b Backend) DeployRemote(t *testing.T, drivers ...runtime.Driver) (runnertest.Deployment, string) {
	return b.deploy(t, false, drivers)
}

// deploy makes the database, registers the drivers with evidence enabled
// for their types and, when work is set, starts the engine's workers,
// stopped when the test ends. It returns the deployment and the runtime
// role's connection string.
func (Backend) deploy(t *testing.T, work bool, drivers []runtime.Driver) (deployment, string) {
	t.Helper()
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	owner, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(owner.Close)
	roleDSN := pgtest.RoleDSN(t, dsn, db.RoleRuntime)
	pool, err := pgxpool.New(ctx, roleDSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	d := deployment{owner: owner, skew: new(atomic.Int64)}
	d.st = store.New(pool, store.WithClock(func() time.Time { return time.Now().Add(time.Duration(d.skew.Load())) }))
	d.eng, err = engine.New(d.st, engine.Config{PollInterval: 20 * time.Millisecond, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	for _, dr := range drivers {
		if err := d.eng.Register(ctx, dr); err != nil {
			t.Fatal(err)
		}
		if err := evidence.Enable(ctx, owner, dr.Definition().Type); err != nil {
			t.Fatal(err)
		}
	}
	if work {
		wctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- d.eng.Work(wctx) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("engine workers: %v", err)
			}
		})
	}
	return d, roleDSN
}

// Runner is the engine.
func (d deployment) Runner() runtime.Runner { return d.eng }

// SkipClock moves the store's clock forward; the workers, polling, see
// the runs it made due.
func (d deployment) SkipClock(_ *testing.T, by time.Duration) { d.skew.Add(int64(by)) }

// VerifyEvidence verifies the run's chain (see Evidence).
func (d deployment) VerifyEvidence(ctx context.Context, runID string) ([]string, error) {
	return Evidence(ctx, d.owner, runID)
}

// Evidence verifies the evidence chain of run runID with evidence.Verify
// and returns the kinds of its records, in chain order: what
// runnertest.EvidenceVerifier reports, for any backend that records its
// runs in PostgreSQL.
func Evidence(ctx context.Context, q evidence.Querier, runID string) ([]string, error) {
	if _, err := evidence.Verify(ctx, q, runID); err != nil {
		return nil, err
	}
	recs, err := evidence.Records(ctx, q, runID)
	if err != nil {
		return nil, err
	}
	kinds := make([]string, 0, len(recs))
	for _, r := range recs {
		kinds = append(kinds, r.Kind)
	}
	return kinds, nil
}

// History reads the run's log (store.History) and returns its
// transitions.
func (d deployment) History(ctx context.Context, runID string) ([]string, error) {
	steps, err := d.st.History(ctx, runID)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, s := range steps {
		if s.Event != "" {
			out = append(out, fmt.Sprintf("%s -%s-> %s", s.From, s.Event, s.To))
		}
	}
	return out, nil
}

// Work is the body of a worker process of the suite (see
// runnertest.WorkerMain): an engine on the database of
// roleDSN working the drivers' runs, with a short lease so that another
// worker takes a run over soon after this process is killed.
func Work(ctx context.Context, roleDSN string, drivers []runtime.Driver) error {
	pool, err := pgxpool.New(ctx, roleDSN)
	if err != nil {
		return err
	}
	eng, err := engine.New(store.New(pool), engine.Config{WorkerID: engine.DefaultWorkerID("runnertest"),
		Lease: time.Second, Heartbeat: 100 * time.Millisecond, PollInterval: 20 * time.Millisecond, Logger: quiet})
	if err != nil {
		return err
	}
	for _, d := range drivers {
		if err := eng.Register(ctx, d); err != nil {
			return err
		}
	}
	return eng.Work(ctx)
}
