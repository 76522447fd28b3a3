package temporal_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/fsmgen/fsmgen/contrib/temporal"
	"github.com/fsmgen/fsmgen/db"
	"github.com/fsmgen/fsmgen/machines/compliance/compliancetest"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/enginetest"
	"github.com/fsmgen/fsmgen/runtime/evidence"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/runnertest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// A worker process of the conformance suite's worker-killed scenario is
// this test binary re-executed: it works and exits before TestMain runs.
func init() { runnertest.WorkerMain(conformanceWorker) }

// TestConformance runs the conformance suite (runtime/runnertest) and
// FCHA's scenarios (machines/compliance/compliancetest) on the Runner, on
// the binary's dev server, each scenario on a task queue of its own.
func TestConformance(t *testing.T) {
	runnertest.Run(t, conformanceBackend{})
	compliancetest.Run(t, conformanceBackend{})
}

// conformanceBackend deploys machines on the shared dev server: a Runner
// and a worker of a new task queue, which records the runs (WithRecord)
// in a database of the deployment's own (runtime/pgtest), as the runtime
// role, with evidence enabled for every machine; the Runner reads the
// runs' evidence ids there (RunnerConfig.Record). Its deployments are
// Historians (the run's transitions from the query QueryName) and
// EvidenceVerifiers (the recorded chain); a dev server cannot skip time,
// so they are no ClockSkippers.
type conformanceBackend struct{}

var (
	_ runnertest.ProcessBackend   = conformanceBackend{}
	_ runnertest.Historian        = conformanceDeployment{}
	_ runnertest.EvidenceVerifier = conformanceDeployment{}
)

// conformanceDeployment is a Runner on a task queue, and the database its
// workers record the runs in.
type conformanceDeployment struct {
	c client.Client
	r *temporal.Runner
	// owner is a pool on the database as its owner, dsn the database's
	// connection string as the runtime role.
	owner *pgxpool.Pool
	dsn   string
}

// VerifyEvidence verifies the recorded run's chain.
func (d conformanceDeployment) VerifyEvidence(ctx context.Context, runID string) ([]string, error) {
	return enginetest.Evidence(ctx, d.owner, runID)
}

func (d conformanceDeployment) Runner() runtime.Runner { return d.r }

func (d conformanceDeployment) History(ctx context.Context, runID string) ([]string, error) {
	_, snap, err := temporal.QueryState(ctx, d.c, runID, func(s string) (string, error) { return s, nil })
	if err != nil {
		return nil, err
	}
	var out []string
	for _, s := range snap.History {
		out = append(out, fmt.Sprintf("%s -%s-> %s", s.From, s.Event, s.To))
	}
	return out, nil
}

func (b conformanceBackend) Deploy(t *testing.T, drivers ...runtime.Driver) runnertest.Deployment {
	t.Helper()
	d, queue := b.runner(t, drivers)
	pool, err := pgxpool.New(context.Background(), d.dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	w := worker.New(d.c, queue, worker.Options{})
	for _, dr := range drivers {
		temporal.Register(w, dr, temporal.WithRecord(store.New(pool)))
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return d
}

// DeployRemote returns the address "HOST:PORT TASK-QUEUE DSN".
func (b conformanceBackend) DeployRemote(t *testing.T, drivers ...runtime.Driver) (runnertest.Deployment, string) {
	t.Helper()
	d, queue := b.runner(t, drivers)
	return d, sharedServer(t).HostPort + " " + queue + " " + d.dsn
}

// runner returns a Runner of the drivers' machines on a new task queue,
// and makes the database the deployment's workers record its runs in.
func (conformanceBackend) runner(t *testing.T, drivers []runtime.Driver) (conformanceDeployment, string) {
	t.Helper()
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	owner, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(owner.Close)
	c := sharedServer(t).Client
	queue := "conformance-" + uuid.NewString()
	defs := make([]runtime.Definition, 0, len(drivers))
	for _, dr := range drivers {
		defs = append(defs, dr.Definition())
	}
	for _, d := range defs {
		if err := evidence.Enable(ctx, owner, d.Type); err != nil {
			t.Fatal(err)
		}
	}
	runtimeDSN := pgtest.RoleDSN(t, dsn, db.RoleRuntime)
	pool, err := pgxpool.New(ctx, runtimeDSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	r, err := temporal.NewRunner(c, temporal.RunnerConfig{TaskQueue: queue, Definitions: defs, Record: store.New(pool)})
	if err != nil {
		t.Fatal(err)
	}
	return conformanceDeployment{c: c, r: r, owner: owner, dsn: runtimeDSN}, queue
}

// conformanceWorker is the body of a worker process: a worker of the task
// queue addr names, on the server it names, running the drivers and
// recording their runs in the database it names.
func conformanceWorker(ctx context.Context, addr string, drivers []runtime.Driver) error {
	// The DSN may hold spaces (host=... port=...): it is the rest.
	f := strings.SplitN(addr, " ", 3)
	if len(f) != 3 {
		return fmt.Errorf("worker address %q: want HOST:PORT TASK-QUEUE DSN", addr)
	}
	pool, err := pgxpool.New(ctx, f[2])
	if err != nil {
		return err
	}
	defer pool.Close()
	c, err := client.DialContext(ctx, client.Options{HostPort: f[0]})
	if err != nil {
		return err
	}
	defer c.Close()
	w := worker.New(c, f[1], worker.Options{})
	for _, d := range drivers {
		temporal.Register(w, d, temporal.WithRecord(store.New(pool)))
	}
	return w.Run(worker.InterruptCh())
}
