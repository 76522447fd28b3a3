package temporal_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/fsmgen/fsmgen/contrib/temporal"
	"github.com/fsmgen/fsmgen/machines/compliance/compliancetest"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/runnertest"
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
// and a worker of a new task queue. Its deployments are Historians (the
// run's transitions from the query QueryName); a dev server cannot skip
// time and the Runner keeps no evidence chain, so they are neither
// ClockSkippers nor EvidenceVerifiers.
type conformanceBackend struct{}

var (
	_ runnertest.ProcessBackend = conformanceBackend{}
	_ runnertest.Historian      = conformanceDeployment{}
)

// conformanceDeployment is a Runner on a task queue.
type conformanceDeployment struct {
	c client.Client
	r *temporal.Runner
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
	w := worker.New(d.c, queue, worker.Options{})
	for _, dr := range drivers {
		temporal.Register(w, dr)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return d
}

// DeployRemote returns the address "HOST:PORT TASK-QUEUE".
func (b conformanceBackend) DeployRemote(t *testing.T, drivers ...runtime.Driver) (runnertest.Deployment, string) {
	t.Helper()
	d, queue := b.runner(t, drivers)
	return d, sharedServer(t).HostPort + " " + queue
}

// runner returns a Runner of the drivers' machines on a new task queue.
func (conformanceBackend) runner(t *testing.T, drivers []runtime.Driver) (conformanceDeployment, string) {
	t.Helper()
	c := sharedServer(t).Client
	queue := "conformance-" + uuid.NewString()
	defs := make([]runtime.Definition, 0, len(drivers))
	for _, dr := range drivers {
		defs = append(defs, dr.Definition())
	}
	r, err := temporal.NewRunner(c, temporal.RunnerConfig{TaskQueue: queue, Definitions: defs})
	if err != nil {
		t.Fatal(err)
	}
	return conformanceDeployment{c: c, r: r}, queue
}

// conformanceWorker is the body of a worker process: a worker of the task
// queue addr names, on the server it names, running the drivers.
func conformanceWorker(ctx context.Context, addr string, drivers []runtime.Driver) error {
	hostPort, queue, ok := strings.Cut(addr, " ")
	if !ok {
		return fmt.Errorf("worker address %q: want HOST:PORT TASK-QUEUE", addr)
	}
	c, err := client.DialContext(ctx, client.Options{HostPort: hostPort})
	if err != nil {
		return err
	}
	defer c.Close()
	w := worker.New(c, queue, worker.Options{})
	for _, d := range drivers {
		temporal.Register(w, d)
	}
	return w.Run(worker.InterruptCh())
}
