package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/fsmgen/fsmgen/internal/cliout"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/store"
)

const (
	defaultListLimit = 50
	maxListLimit     = 10000
)

// statuses are the generic statuses a run can have, for -status.
var statuses = []string{
	string(runtime.StatusRunning), string(runtime.StatusSucceeded),
	string(runtime.StatusFailed), string(runtime.StatusCancelled),
}

func runsListCommand() *command {
	return &command{
		name:     "runs list",
		synopsis: "[-database URL] [-type T] [-state S[,S...]] [-status S] [-tenant X] [-limit N] [-after ID] [-o json]",
		summary:  "list runs, filtered by type, state, status and tenant",
		details: `List prints the runs that match every filter given, oldest first, as a table:
id, type and version, state, status, outcome, tenant, attempt, and when the
run was created and last changed (UTC). When more runs match than -limit, the
last line says how to ask for the next page (-after the last id shown).
With -o json it prints a JSON array of the runs (every field of the run, an
empty array when none match): page with -after the last id.`,
		flags: func(fs *flag.FlagSet) {
			addDatabaseFlag(fs)
			fs.String("type", "", "only runs of this workflow type (retrieve_or_generate)")
			fs.String("state", "", "only runs in one of these states, comma-separated (SUCCEEDED,FAILED)")
			fs.String("status", "", "only runs with this status: "+strings.Join(statuses, ", "))
			fs.String("tenant", "", "only runs of this tenant")
			fs.Int("limit", defaultListLimit, fmt.Sprintf("at most this many runs, 1..%d", maxListLimit))
			fs.String("after", "", "the runs after this run id (the last of the previous page)")
			addOutputFlag(fs)
		},
		run: runsList,
	}
}

func flagString(fs *flag.FlagSet, name string) string { return fs.Lookup(name).Value.String() }

func runsList(ctx context.Context, c *cli, fs *flag.FlagSet, args []string) error {
	if len(args) > 0 {
		return usagef(nil, "unexpected arguments %q", args)
	}
	f := store.Filter{
		Filter: runtime.Filter{Type: flagString(fs, "type"), TenantID: flagString(fs, "tenant")},
		After:  flagString(fs, "after"),
	}
	if s := flagString(fs, "state"); s != "" {
		for _, st := range strings.Split(s, ",") {
			if st = strings.TrimSpace(st); st != "" {
				f.States = append(f.States, st)
			}
		}
	}
	if s := flagString(fs, "status"); s != "" {
		if !contains(statuses, s) {
			return usagef(nil, "-status %q is not one of %s", s, strings.Join(statuses, ", "))
		}
		f.Status = runtime.Status(s)
	}
	limit := fs.Lookup("limit").Value.(flag.Getter).Get().(int)
	if limit < 1 || limit > maxListLimit {
		return usagef(nil, "-limit %d is not in 1..%d", limit, maxListLimit)
	}
	f.Limit = limit
	if f.After != "" {
		if err := checkRunID(f.After); err != nil {
			return usagef(nil, "-after: %v", err)
		}
	}
	pool, err := c.openPool(ctx, fs)
	if err != nil {
		return err
	}
	defer pool.Close()
	runs, err := store.New(pool).List(ctx, f)
	if err != nil {
		return fmt.Errorf("list runs: %w", operatorError(err))
	}
	if wantJSON(fs) {
		out := make([]jsonRun, len(runs))
		for i, r := range runs {
			out[i] = toJSONRun(r)
		}
		return cliout.WriteJSON(c.stdout, out)
	}
	if len(runs) == 0 {
		fmt.Fprintln(c.stdout, "no runs match")
		return nil
	}
	if err := printRunTable(c.stdout, runs); err != nil {
		return err
	}
	if len(runs) == limit {
		fmt.Fprintf(c.stdout, "(%d runs shown; more may match: add -after %s)\n", len(runs), runs[len(runs)-1].ID)
	}
	return nil
}

func runsShowCommand() *command {
	return &command{
		name:     "runs show",
		synopsis: "[-database URL] [-payloads] [-o json] ID",
		summary:  "show a run and its full transition history",
		details: `Show prints the run (type, state, status, outcome, tenant, user, idempotency key,
attempt, result: output, cost, duration and error, times, lease and schedule
while it runs) and then its whole append-only log, oldest first: the creation,
every transition, restarts and logged steps, with their time (UTC), the
states before and after, and the run's attempt. With -o json it prints one
object: {"run": {...}, "history": [...]}, each log row with its payload.`,
		flags: func(fs *flag.FlagSet) {
			addDatabaseFlag(fs)
			fs.Bool("payloads", false, "add each log row's payload (JSON) to the history")
			addOutputFlag(fs)
		},
		run: runsShow,
	}
}

func runsShow(ctx context.Context, c *cli, fs *flag.FlagSet, args []string) error {
	switch {
	case len(args) == 0:
		return usagef(nil, "missing run id")
	case len(args) > 1:
		return usagef(nil, "want one run id, got %d arguments", len(args))
	}
	id := args[0]
	if err := checkRunID(id); err != nil {
		return usagef(nil, "%v", err)
	}
	pool, err := c.openPool(ctx, fs)
	if err != nil {
		return err
	}
	defer pool.Close()
	st := store.New(pool)
	run, err := st.Get(ctx, id)
	if err != nil {
		return runError(id, err)
	}
	steps, err := st.History(ctx, id)
	if err != nil {
		return runError(id, err)
	}
	if wantJSON(fs) {
		return cliout.WriteJSON(c.stdout, struct {
			Run     jsonRun    `json:"run"`
			History []jsonStep `json:"history"`
		}{toJSONRun(run), toJSONSteps(steps)})
	}
	if err := printRun(c.stdout, run); err != nil {
		return err
	}
	fmt.Fprintln(c.stdout)
	return printHistory(c.stdout, steps, fs.Lookup("payloads").Value.String() == "true")
}

// checkRunID reports a run id that is not a UUID.
func checkRunID(id string) error {
	var u pgtype.UUID
	if err := u.Scan(id); err != nil {
		return fmt.Errorf("run %q: malformed id: want a UUID such as 1b4e28ba-2fa1-4d2b-883f-0016d3cca427", id)
	}
	return nil
}

// runError words the store's errors about run id for an operator.
func runError(id string, err error) error {
	switch {
	case errors.Is(err, runtime.ErrRunNotFound):
		return fmt.Errorf("run %s: not found", id)
	case errors.Is(err, runtime.ErrInvalidID):
		if e := checkRunID(id); e != nil {
			return e
		}
	}
	return fmt.Errorf("run %s: %w", id, operatorError(err))
}

// operatorError words an error of the store for an operator, after the
// command has said what it was doing and to which run: the store's own
// prefix (component, operation, run), which would repeat that, is left
// out, PostgreSQL's error is given by its message, and a database that was
// never migrated says what to do. The chain stays intact for errors.Is.
func operatorError(err error) error {
	msg := err.Error()
	var re *runtime.RunError
	if errors.As(err, &re) {
		msg = re.Err.Error()
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		msg = pe.Message
		if pe.Code == "42P01" { // undefined_table
			msg = "the database has no runtime schema (" + pe.Message + "): run fsmctl migrate"
		}
	}
	return &reworded{msg: msg, err: err}
}

// reworded is an error with its message replaced.
type reworded struct {
	msg string
	err error
}

func (r *reworded) Error() string { return r.msg }
func (r *reworded) Unwrap() error { return r.err }
