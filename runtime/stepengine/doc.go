// Package stepengine is the step engine: it runs a Workflow, an ordered
// list of steps with a name, each step at most once, in order, stopping at
// the first failure, and leaves the run on disk (runs/<run_id>/) and in
// PostgreSQL, telling the same story in both.
//
// # Running a workflow
//
//	st := store.New(pool)               // a migrated database (db.Migrate)
//	eng := stepengine.New(st)
//	if err := eng.Register(ctx); err != nil { ... }
//	res, err := eng.Run(ctx, stepengine.Workflow{
//		Name: "report",
//		Steps: []stepengine.Step{
//			{Name: "fetch", Run: fetch},
//			{Name: "write", Run: write},
//		},
//	}, stepengine.RunOptions{RunsDir: "runs"})
//
// A step is a function of the run's context (RunContext: run id, run
// directory, logs path, read-only), its shared state (RunState: a data map
// and the outputs of earlier steps by name) and a Logger. It returns a
// StepResult: OK with outputs (and optional metrics), or not OK with an
// Error. The zero StepResult is invalid and fails the step, as returning
// None does in the contract. A step fails when it returns a failed or
// invalid result, an error, or panics; the engine records each the same
// way and runs no further step. Run returns an error only when the run
// could not be carried out (database, disk, invalid workflow); it rides
// out lost connections, writing again on new ones while its context
// lasts.
//
// # The machines
//
// The lifecycle comes from step_engine.fsm, generated into packages step
// and run. Every step is a run of the step machine in the database,
// created PENDING when the run starts, moved PENDING -> RUNNING
// (StepStart) -> OK (StepEnd with ok) or FAILED (StepEnd without ok for a
// returned failure, StepError for an error, a panic or an invalid result).
// The run is a run of the run machine, RUNNING while its steps execute
// (StepOK after each), then OK (AllStepsOK) or FAILED (StepFailed). The
// steps a failure leaves unstarted end SKIPPED (RunStopped; generic status
// cancelled, error code Skipped) in the same transaction as the run's
// StepFailed, so a failed run leaves no step PENDING; so do the steps of
// an interrupted attempt when its run is run again. Each transition is
// recorded through runtime/store before it is applied. The step's summary
// (steps.json's element) is its run's result output, and the run's summary
// (run.json) the run's, so that `fsmctl export --from-db` rebuilds the
// audit byte for byte.
//
// # The files
//
// Under runs/<run_id>/ (the run id is the run's id in the database):
//
//   - logs.jsonl: one JSON object a line, with ts, component, event and
//     run_id: run_start, step_start, step_end (status, duration), run_end;
//     for a failed step, before its step_end, step_error (error type,
//     message, and the API fields) then step_failed (the same details and
//     the error artifact's path, artifact_path), for every kind of
//     failure; and the lines steps log, with component "step";
//   - context.json: the RunState, written when the run starts and after
//     each step, the failed one included;
//   - steps.json: the summaries of the steps that ran, after each step;
//   - run.json: the run's summary, when it ends, with config_hash (SHA-256
//     of Workflow.Config's JSON), git_sha and error_summary when known;
//   - audit.json: {run, steps}, the bundle `fsmctl export` writes;
//   - artifacts/: created when the run starts (RunContext.ArtifactsDir),
//     the workflow's artifacts under fixed names (report.csv);
//   - artifacts/index.json: RunContext.RegisterArtifact's records, in the
//     order registered;
//   - errors/<workflow>__<step>.json: the failed step's error artifact;
//     a step's error with APIDetails (an exhausted API request) adds
//     operation, status_code, attempts and reason.
//
// Every JSON file is written crash-safely (temporary file, fsync, rename,
// fsync of the directory): a process killed at any point leaves whole
// files. The formats and the writing live in internal/runfiles, shared
// with fsmctl.
//
// # Running again
//
// RunOptions.RunID runs the workflow again under the id of an earlier run
// of it, whatever its end, as the contract's rerun rule says: the
// directory is emptied and written afresh under the same file names, so
// the same run id always holds one execution's files, and a deterministic
// workflow rerun with the same clock writes the same bytes (the logs name
// no attempt). In the database, a run that failed, or whose process died
// during it, restarts in place (attempt + 1; an interrupted attempt is
// first closed as FAILED with error code RunInterrupted). A run that
// succeeded stays as it is, as the store keeps every succeeded run: the
// new execution is a run of its own (RunResult.ExecutionID, its input
// naming rerun_of), linked from the first by a "rerun" log row, and
// `fsmctl export --from-db` reads the latest execution. Another run gets
// another id and directory.
//
// One Run at a time runs a run id. A Run holds its run id, while it runs,
// with a session-level advisory lock on a connection of its own, which
// the server lets go when the process dies; a Run of an id another one
// holds waits up to two seconds for it, then returns ErrRunHeld, without
// touching the directory or the database. So an attempt is taken to be
// interrupted only when no live Run holds it: as runtime/engine and the
// linear chain take a run or a step over only once its lease has expired.
//
// # API calls and the example
//
// A report workflow is built on the engine in machines/reporting:
// package apiclient is the HTTP client its steps use for APIs, retrying
// 429, 5xx and rate-limit 403s with exponential backoff and jitter; when
// its retries run out, its *APIRetryExhausted fails the step with error
// type APIRetryExhausted and its APIDetails. Package sheets writes rows to
// a spreadsheet tab by the contract's clear-then-write rule, and package
// report fetches rows from an HTTP API, writes artifacts/report.csv and
// registers it, and optionally replaces a spreadsheet tab with the
// report; the demo (machines/cmd/demo, make demo) runs it against scripted
// local servers and exports its audit.
package stepengine
