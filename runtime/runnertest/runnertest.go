package runnertest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime"
)

// Backend is a runtime.Runner implementation under test: it deploys
// machines, each scenario on a deployment of its own.
type Backend interface {
	// Deploy returns a deployment of the drivers' machines: a Runner that
	// starts and reads their runs, and workers in this process that drive
	// them with the drivers until the test ends. The backend stops what it
	// started with t.Cleanup, and fails the test (t.Fatal) when it cannot
	// deploy: a service it needs that is missing is a failure, never a skip.
	Deploy(t *testing.T, drivers ...runtime.Driver) Deployment
}

// Deployment is what Backend.Deploy returns. Its optional capabilities are
// the interfaces ClockSkipper, EvidenceVerifier and Historian, which a
// deployment implements when its backend can; a scenario that needs one the
// deployment lacks is skipped, saying which.
type Deployment interface {
	// Runner is the runtime.Runner under test.
	Runner() runtime.Runner
}

// ClockSkipper is a Deployment whose time can be moved forward: the
// scenarios that wait for a timer of days (FCHA's 7-day authorization
// window) need it.
type ClockSkipper interface {
	// SkipClock moves the time the deployment's timers follow forward by d:
	// a timer that falls due within d fires as soon as a worker sees it.
	SkipClock(t *testing.T, d time.Duration)
}

// EvidenceVerifier is a Deployment that keeps an evidence chain of each
// run (runtime/evidence).
type EvidenceVerifier interface {
	// VerifyEvidence verifies the evidence chain of run runID and returns
	// the kinds of its records in chain order ("created", "transition",
	// and the kinds the handlers logged as evidence.<kind> steps).
	VerifyEvidence(ctx context.Context, runID string) ([]string, error)
}

// Historian is a Deployment that reads a run's history.
type Historian interface {
	// History returns the transitions of run runID, oldest first, each as
	// "FROM -Event-> TO".
	History(ctx context.Context, runID string) ([]string, error)
}

// ProcessBackend is a Backend whose workers can run in processes of their
// own, so that a scenario can kill one mid-activity (SIGKILL) and start
// another. Its test binary's TestMain must call WorkerMain first.
type ProcessBackend interface {
	Backend
	// DeployRemote deploys the drivers' machines as Deploy does, but with
	// no worker in this process: their runs are driven by the worker
	// processes that the scenario starts, each calling WorkerMain's work
	// function with addr.
	DeployRemote(t *testing.T, drivers ...runtime.Driver) (d Deployment, addr string)
}

// Scenario is one scenario's context: its test, its context (cancelled
// after Timeout, or when the test ends), and the identities its runs use,
// unique to it, so that backends whose deployments share a server (one
// Temporal namespace) do not mix the runs of two scenarios.
type Scenario struct {
	T   *testing.T
	Ctx context.Context
	// Owner is the scenario's tenant and user.
	Owner  runtime.Owner
	prefix string
}

// Timeout bounds every wait of a scenario.
const Timeout = 2 * time.Minute

// NewScenario returns the context of the scenario t runs.
func NewScenario(t *testing.T) *Scenario {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	t.Cleanup(cancel)
	id := rand.Text()[:10]
	return &Scenario{T: t, Ctx: ctx, prefix: id,
		Owner: runtime.Owner{TenantID: "tenant-" + id, UserID: newUUID()}}
}

// Key returns an idempotency key unique to the scenario.
func (s *Scenario) Key(name string) string { return s.prefix + "-" + name }

// newUUID returns a random (version 4) UUID.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// Eventually polls cond until it returns "" or the scenario's context
// ends, when it fails the test with cond's last explanation of what it is
// waiting for.
func (s *Scenario) Eventually(what string, cond func() string) {
	s.T.Helper()
	delay := 10 * time.Millisecond
	for {
		why := cond()
		if why == "" {
			return
		}
		select {
		case <-s.Ctx.Done():
			s.T.Fatalf("%s: gave up after %v: %s", what, Timeout, why)
		case <-time.After(delay):
		}
		delay = min(2*delay, 250*time.Millisecond)
	}
}

// WaitState waits until run id, read with get (a typed handle's Get), is
// in state (stateOf says which it is in), and returns it.
func WaitState[R any](s *Scenario, id, state string, get func(ctx context.Context, id string) (R, error), stateOf func(R) string) R {
	s.T.Helper()
	var got R
	s.Eventually(fmt.Sprintf("run %s to reach %s", id, state), func() string {
		r, err := get(s.Ctx, id)
		if err != nil {
			return err.Error()
		}
		got = r
		if st := stateOf(r); st != state {
			return "it is in " + st
		}
		return ""
	})
	return got
}

// CheckHistory compares the transitions of run id ("FROM -Event-> TO")
// with want when d is a Historian, and does nothing otherwise.
func (s *Scenario) CheckHistory(d Deployment, id string, want []string) {
	s.T.Helper()
	h, ok := d.(Historian)
	if !ok {
		return
	}
	got, err := h.History(s.Ctx, id)
	if err != nil {
		s.T.Fatalf("history of run %s: %v", id, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		s.T.Errorf("history of run %s (-want +got):\n%s", id, diff)
	}
}

// Refused checks that err refuses a signal for the cause given: both
// runtime.ErrSignalRefused and cause match it.
func Refused(t *testing.T, what string, err, cause error) {
	t.Helper()
	if !errors.Is(err, cause) || !errors.Is(err, runtime.ErrSignalRefused) {
		t.Errorf("%s: %v, want an error matching %q and %q", what, err, cause, runtime.ErrSignalRefused)
	}
}

// Require returns d as the capability C, or skips the test, saying which
// capability the deployment lacks and what that means.
func Require[C any](t *testing.T, d Deployment) C {
	t.Helper()
	c, ok := d.(C)
	if !ok {
		name := reflect.TypeFor[C]().Name()
		t.Skipf("the backend's deployment is no %s: %s", name, capabilityReason[name])
	}
	return c
}

// capabilityReason says what a scenario skipped for the lack of a
// capability cannot do.
var capabilityReason = map[string]string{
	"ClockSkipper":     "it cannot move its clock forward, so a timer of days cannot fire within the test",
	"EvidenceVerifier": "it keeps no evidence chain of its runs",
	"Historian":        "it cannot read a run's history",
	"ProcessBackend":   "it cannot run its workers in processes of their own",
}

// Run runs the conformance suite against b: every scenario is a subtest
// of t with a stable name (see the package documentation), run in
// parallel with the others. A workflow's own scenarios run beside them
// (machines/compliance/compliancetest.Run).
func Run(t *testing.T, b Backend) {
	t.Run("job", func(t *testing.T) { t.Parallel(); runJob(t, b) })
	t.Run("worker-killed", func(t *testing.T) { t.Parallel(); workerKilled(t, b) })
}
