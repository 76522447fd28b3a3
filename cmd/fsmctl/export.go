package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/fsmgen/fsmgen/internal/runfiles"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/store"
)

func exportCommand() *command {
	return &command{
		name:     "export",
		synopsis: "<run_id> [--format json|csv] [--runs-dir DIR] [--out FILE] [--from-db [-database URL]]",
		summary:  "export a step-engine run's audit as JSON or CSV",
		details: `Export writes the audit of a run of the step engine (runtime/stepengine) from
the summaries it left in runs/<run_id>/: run.json and steps.json.

  --format json  writes runs/<run_id>/audit.json: {"run": <run.json>, "steps": <steps.json>}
  --format csv   writes runs/<run_id>/audit.csv: one row per step, the run's fields
                 repeated on each, with the columns
                 run_id, workflow_name, run_status, run_started_at, run_finished_at,
                 run_duration_ms, step_index, step_name, step_status, step_started_at,
                 step_finished_at, step_duration_ms, step_error_code, step_error_message,
                 step_metrics_json (the step's metrics as compact JSON)

--out FILE writes elsewhere (--out - to standard output). The file is written
whole or not at all: a temporary file, synced, renamed over FILE, which keeps
its mode. A FILE that is not a regular file (a symbolic link, a device) is
refused, and so is one inside a run's directory other than its audit.json and
audit.csv: an export never overwrites a run's own files.

A missing run directory, and a missing or corrupt run.json or steps.json, is an
error naming the directory or file (exit status 1); nothing is written then.

--from-db reads the same summaries from the database (DATABASE_URL or
-database) instead of the directory: the run's recorded result and those of its
steps. The output is the same, byte for byte; without --out it goes to standard
output. Flags may come before or after the run id.`,
		flags: func(fs *flag.FlagSet) {
			fs.String("format", "json", "the audit's format: json or csv")
			fs.String("runs-dir", "runs", "the directory that holds the runs' directories")
			fs.String("out", "", "the file to write (- for standard output; default runs/<run_id>/audit.<format>)")
			fs.Bool("from-db", false, "read the run from the database rather than from its directory")
			addDatabaseFlag(fs)
		},
		run: runExport,
	}
}

func runExport(ctx context.Context, c *cli, fs *flag.FlagSet, args []string) error {
	switch {
	case len(args) == 0:
		return usagef(nil, "missing run id")
	case len(args) > 1:
		return usagef(nil, "want one run id, got %d arguments: %q", len(args), args)
	}
	id := args[0]
	format := fs.Lookup("format").Value.String()
	if format != "json" && format != "csv" {
		return usagef(nil, "--format %q: want json or csv", format)
	}
	if err := runfiles.CheckRunID(id); err != nil {
		return usagef(nil, "%v", err)
	}
	runsDir := fs.Lookup("runs-dir").Value.String()
	out := fs.Lookup("out").Value.String()
	fromDB := fs.Lookup("from-db").Value.String() == "true"

	if out != "" && out != "-" {
		if err := checkOut(out, runsDir); err != nil {
			return usagef(nil, "%v", err)
		}
	}
	var (
		a   runfiles.Audit
		err error
	)
	if fromDB {
		if err := checkRunID(id); err != nil {
			return usagef(nil, "%v", err)
		}
		pool, err := c.openPool(ctx, fs)
		if err != nil {
			return err
		}
		defer pool.Close()
		a, err = runfiles.FromStore(ctx, store.New(pool), id)
		if err != nil {
			if errors.Is(err, runtime.ErrRunNotFound) || errors.Is(err, runtime.ErrInvalidID) {
				return runError(id, err)
			}
			return fmt.Errorf("export %s: %w", id, operatorError(err))
		}
		if out == "" {
			out = "-"
		}
	} else {
		a, err = runfiles.ReadSummaries(runsDir, id)
		if err != nil {
			return fmt.Errorf("export %s: %w", id, err)
		}
		if out == "" {
			name := runfiles.AuditFile
			if format == "csv" {
				name = runfiles.AuditCSVFile
			}
			out = filepath.Join(runsDir, id, name)
		}
	}
	var data []byte
	if format == "csv" {
		data, err = runfiles.AuditCSV(a)
	} else {
		data, err = runfiles.AuditJSON(a)
	}
	if err != nil {
		return fmt.Errorf("export %s: %w", id, err)
	}
	if out == "-" {
		_, err := c.stdout.Write(data)
		return err
	}
	if err := runfiles.WriteFile(out, data); err != nil {
		return fmt.Errorf("export %s: %w", id, err)
	}
	fmt.Fprintf(c.stdout, "Wrote %s: run %s (%s, %s), %d steps.\n", out, id, a.Run.WorkflowName, a.Run.Status, len(a.Steps))
	return nil
}

// checkOut refuses an --out inside a run's directory of runsDir (symbolic
// links resolved) other than its audit files: an export must not
// overwrite run.json, steps.json or any other file of a run.
func checkOut(out, runsDir string) error {
	resolve := func(p string) string {
		abs, err := filepath.Abs(p)
		if err != nil {
			return p
		}
		if r, err := filepath.EvalSymlinks(abs); err == nil {
			return r
		}
		return abs
	}
	target := filepath.Join(resolve(filepath.Dir(out)), filepath.Base(out))
	rel, err := filepath.Rel(resolve(runsDir), target)
	if err != nil || !filepath.IsLocal(rel) {
		return nil
	}
	parts := strings.Split(filepath.ToSlash(rel), "/")
	if len(parts) == 1 || len(parts) == 2 && (parts[1] == runfiles.AuditFile || parts[1] == runfiles.AuditCSVFile) {
		return nil
	}
	return fmt.Errorf("--out %s: inside the run directory %s, whose files an export must not overwrite (only %s and %s may be written there)",
		out, filepath.Join(runsDir, parts[0]), runfiles.AuditFile, runfiles.AuditCSVFile)
}
