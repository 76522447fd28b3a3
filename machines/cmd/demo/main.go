// Command demo runs the workflows of machines/ on a real PostgreSQL and
// prints each run and its history; make demo runs it.
//
// Usage:
//
//	demo [-database URL] [-seed N] [-runs-dir DIR]
//
// It migrates the database (the runtime's schema and the problembank schema
// of the RetrieveOrGenerate workflow's local adapters), registers the
// RetrieveOrGenerate workflow (machines/problems) with an engine, and
// submits four problems, each showing a branch of the workflow:
//
//  1. a new equation: normalized, not found, solved, registered and indexed
//     (outcome new);
//  2. the same problem phrased differently, by another user: a retrieval hit
//     (outcome hit);
//  3. an upload of an unsupported media type: rejected, the run fails;
//  4. the first submission again: idempotent, the same run and its stored
//     result.
//
// Each new run is driven inline to its end (engine.Drive); then demo prints
// the run (id, state, status, outcome, output, attempt, cost, duration) and
// its history. The background runs they enqueue (the video of a new
// solution) are driven by the engine's workers (engine.Work) until they end.
// The runs belong to tenant "demo" and stay in the database: see them with
// fsmctl runs list -tenant demo.
//
// Then demo runs the linear chain example, order.process (VALIDATE ->
// RESERVE -> WAIT_PAYMENT -> SHIP -> NOTIFY, on the workflow_instance and
// workflow_step tables of runtime/linearchain, package machines/linearchain):
// a good order woken by payment.captured (delivered twice: the second is a
// duplicate) ends COMPLETED; an order for no items fails at VALIDATE; an
// order never paid fails when WAIT_PAYMENT's deadline passes. It prints each
// instance's steps and history; see them again with fsmctl chains list and
// fsmctl chains show ID.
//
// Last, demo runs the step engine's report workflow
// (machines/reporting/report) three times against a scripted local HTTP
// API, with a scripted Sheets API as its sheet output, and exports each
// run's audit as fsmctl export does:
//
//  1. the API answers 503 once, then the sheet: the fetch retries and the
//     run ends OK; artifacts/report.csv is written and registered, and the
//     report replaces the tab (clear, then write);
//  2. the API answers 429 to every request: the fetch's retries run out
//     (APIRetryExhausted), the run ends FAILED at step 1 of 4 with its error
//     artifact, and the other steps end SKIPPED with the run;
//  3. the API is back: the failed run runs again under the same run id,
//     attempt 2, its directory is rewritten and the tab replaced again,
//     holding one copy of the report.
//
// The runs' directories go under -runs-dir, which is kept so that fsmctl
// export can be run on it afterwards (the demo prints the command); by
// default they go in a new temporary directory removed at the end.
//
// The database is the one -database or the DATABASE_URL environment
// variable names. Without either, demo starts a throwaway PostgreSQL
// cluster from the server binaries it finds (initdb on PATH, pg_config
// --bindir, /usr/lib/postgresql/*/bin), as the tests do, and stops and
// removes it at the end, also on an error, Ctrl-C or a standard output
// closed early (demo | head): the demo stops at its first failed write.
// Its runs go with the cluster, so it names no fsmctl command that reads
// them, and says at the end to run it with DATABASE_URL to follow them up.
//
// The users and the equation come from -seed (default: a random one): the
// same seed submits the same problems as the same users, so that against a
// database that has seen it before the first submission finds its earlier
// run.
//
// demo exits with 0 on success, 1 on failure and 2 on a usage error.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// A write to a closed pipe (demo | head) fails with EPIPE rather than
	// kill the process, so that the demo stops its cluster and removes
	// its directories (run stops at the first failed write).
	signal.Ignore(syscall.SIGPIPE)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}
