// Package runnertest is the conformance suite of runtime.Runner backends:
// one set of scenario tests, written once, that every backend runs, the
// way testing/fstest checks a file system. The PostgreSQL engine
// (runtime/engine) runs it in this package's tests, the Temporal backend
// (contrib/temporal) in its own module's. It knows no workflow of
// machines/ (runtime imports none): a workflow's own scenarios, written
// with this package's helpers, run beside it (the compliance workflow FCHA:
// machines/compliance/compliancetest).
//
// # Running it
//
// A backend implements Backend (and, for the scenarios that need one, the
// optional capabilities below) and calls Run from a test:
//
//	func TestConformance(t *testing.T) {
//		runnertest.Run(t, myBackend{})
//		compliancetest.Run(t, myBackend{})
//	}
//
// runtime/enginetest.Backend is the PostgreSQL engine's.
//
// Backend.Deploy gives each scenario a deployment of its own: a Runner for
// the machines of the drivers the scenario hands it, and workers that
// drive their runs until the test ends. A deployment may share a server
// with others (one Temporal namespace): every scenario uses idempotency
// keys, a tenant and a user of its own, and lists only its tenant's runs.
// A backend that cannot deploy (its server is missing) fails the test;
// the suite skips a scenario only for a capability the backend lacks.
//
// # Capabilities
//
// A Deployment may implement:
//
//   - ClockSkipper: its time can be moved forward, so that a timer of
//     days fires (FCHA's authorization-timeout needs it; the PostgreSQL
//     engine's store clock can be moved, a Temporal dev server's cannot).
//   - EvidenceVerifier: it keeps the evidence chain of runtime/evidence
//     (FCHA's evidence needs it).
//   - Historian: it reads a run's transitions; the scenarios then check
//     every run's history, transition by transition.
//
// A Backend may be a ProcessBackend, whose workers run in processes of
// their own: worker-killed needs it, and the test binary's TestMain calls
// WorkerMain first.
//
// # Scenarios
//
// Each is a subtest with a stable name, run in parallel:
//
//   - job/...: the fixture machine Job (internal/fixture/job.fsm):
//     retries-then-success, retries-exhausted (FAILED, the result holding
//     the last error's code), timer (after 1s, real time), cancel (refused
//     for another user, then by the owner),
//     signals-refused/{illegal,guard-rejected,not-a-callers-event,run-finished,unknown-run},
//     idempotent-start/{running,cached,restarted,cancelled} after a
//     created one, list/{type,other-type,tenant,other-tenant,state,states,status-succeeded,status-running,key,limit}
//     (with a run of the second fixture machine, Note).
//   - worker-killed: a worker process killed (SIGKILL) while its handler
//     runs; a second worker process calls the handler again and finishes
//     the run, whose history has each transition once.
//
// # Writing scenarios
//
// NewScenario gives a scenario its context, owner and keys; Eventually and
// WaitState poll with its deadline; CheckHistory checks a run's
// transitions on a Historian; Refused checks a refused signal's error;
// Require skips a scenario for a capability its deployment lacks.
//
// # The contract it checks
//
// Beyond states and results: a refused signal matches both
// runtime.ErrSignalRefused and its cause (runtime.ErrRunFinished,
// ErrIllegalTransition, ErrGuardRejected, ErrNotCallerEvent), and leaves
// the run as it was; a signal to an unknown run matches ErrRunNotFound; a
// cancellation by another user matches ErrNotOwner, of a finished run
// ErrRunFinished; a failed run's result holds its last error's code; a
// start by a known key returns the same run with the outcome
// runtime.StartOutcome names; List selects by type, states, status, tenant and key (polled
// until it agrees, for a backend whose list lags behind its runs).
package runnertest
