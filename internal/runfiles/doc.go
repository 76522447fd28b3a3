// Package runfiles is the on-disk format of a step-engine run: the files
// under runs/<run_id>/ (run.json, steps.json, context.json, logs.jsonl,
// audit.json, artifacts/index.json, errors/<workflow>__<step>.json), the
// crash-safe way they are written, and the audit export of a run as JSON or
// CSV.
//
// # Why here
//
// Two programs need this format: the step engine in runtime/stepengine
// writes the files, and fsmctl reads them back for `fsmctl export` without
// linking the engine. runtime/internal is importable by the engine only,
// not by cmd/fsmctl; an internal package at the module's root is
// importable by both and by nothing outside the module.
// runtime/stepengine re-exports the types a workflow author uses
// (RunSummary, StepSummary, ArtifactRecord, ...) as aliases.
//
// # Writing
//
// WriteFile writes a file crash-safely: to a temporary file in the same
// directory, fsync, rename over the target, fsync the directory. A reader,
// or a process started after a crash, sees the old file or the new one,
// never a torn one. WriteJSON does the same for a value encoded as indented
// JSON with a final newline, the layout of every JSON file of a run.
//
// # Exporting
//
// ReadSummaries reads and checks run.json and steps.json of a run
// directory; a missing directory is ErrRunDirNotFound, a missing or corrupt
// summary ErrSummaryMissing or ErrSummaryCorrupt, each naming the file.
// AuditJSON and AuditCSV encode the audit of a run, the same bytes whether
// the summaries came from the files or from the database. CSVColumns are the
// CSV's columns, in the contract's order. A CSV cell that starts with =, +,
// -, @, a tab or a carriage return is written with a single quote in front
// (NeutraliseFormula, after OWASP's CSV injection guidance): a spreadsheet
// opening the export shows it as text instead of running it as a formula.
package runfiles
