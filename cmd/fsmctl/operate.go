package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/internal/cliout"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/admin"
	"github.com/fsmgen/fsmgen/runtime/store"
)

func runsSignalCommand() *command {
	return &command{
		name:     "runs signal",
		synopsis: "[-database URL] [-to STATE] [-reason TEXT] [-lock-timeout D] [-o json] RUN EVENT [JSON]",
		summary:  "fire an event on a run, its payload checked against the registered definition",
		details: `Signal fires EVENT on run RUN with the payload JSON (an object of the event's
fields; none when left out), for any registered machine: the payload is checked
against the fields the registered definition declares for the event (names as
declared, values of their Go types), and the transition is recorded through the
store, so that the database checks it as any other. The run's row version
fences the write: a worker in flight for the run finds its own write refused.

Guards are Go code that only the machine's process evaluates. When the run's
state has one unguarded row on EVENT it is fired; when its rows are guarded,
signal refuses and lists them, and -to STATE fires the row to STATE without
its guard. Timer, exhaustion and child events the engine fires itself are
refused unless the machine declares them external. The history gets an
operator_signal step with the event, the state entered, the guards not
evaluated and -reason.

It prints the run's move; -o json prints the run afterwards as runs show -o json
does (without the history).`,
		flags: func(fs *flag.FlagSet) {
			addDatabaseFlag(fs)
			fs.String("to", "", "the target state of the row to fire when the state's rows are guarded")
			fs.String("reason", "", "why, for the run's history")
			addLockTimeoutFlag(fs)
			addOutputFlag(fs)
		},
		run: runsSignal,
	}
}

func runsCancelCommand() *command {
	return &command{
		name:     "runs cancel",
		synopsis: "[-database URL] [-to STATE] [-reason TEXT] [-lock-timeout D] [-o json] RUN",
		summary:  "cancel a run with its machine's cancel event",
		details: `Cancel fires the machine's cancel event (cancel EVENT in its .fsm file) on run
RUN, from any state that has a row on it, as an operator acting for the system:
the owner's guard that the engine's Cancel evaluates is not. The run goes where
its state's row leads (a cancelled final state, or a state that undoes work
first); -to STATE chooses when the rows lead to several states. A cancelled run's
result says CANCELLED: cancelled by an operator, with -reason. A finished run,
a machine without a cancel event or a state without a row on it is refused.

While another transaction holds the run's row (a worker recording a transition,
a session left open in psql), cancel waits for it at most -lock-timeout, then
fails saying so; the run is left as it was.`,
		flags: func(fs *flag.FlagSet) {
			addDatabaseFlag(fs)
			fs.String("to", "", "the target state when the cancel rows lead to several")
			fs.String("reason", "", "why, for the run's history and result")
			addLockTimeoutFlag(fs)
			addOutputFlag(fs)
		},
		run: runsCancel,
	}
}

func runsTerminateCommand() *command {
	return &command{
		name:     "runs terminate",
		synopsis: "[-database URL] -reason TEXT [-by NAME] [-lock-timeout D] [-o json] RUN",
		summary:  "end a live run where it is, without its machine's transitions or handlers",
		details: `Terminate ends run RUN at once, in whatever state it is, as an operator's forced
stop: no transition of its machine is fired, no handler runs and no cancel
event is needed (cancel is the machine's own way out; terminate is for a run
that is stuck or must stop now). The run keeps its state; its status becomes
cancelled and its result says TERMINATED: terminated by NAME: REASON. Its live
child runs, and theirs, are terminated with it. Each gets a terminated row in
its history with the reason, NAME and the database role of the session. A
worker still running the run's handler finds its transition refused, and later
signals find the run finished. Only the operator role may terminate (the
database function fsmgen_terminate_run). A finished run is refused.

-reason is required. -by names who terminates, the OS user by default.
It prints the run's end and the descendants terminated with it; -o json prints
the run afterwards as runs show -o json does (without the history).`,
		flags: func(fs *flag.FlagSet) {
			addDatabaseFlag(fs)
			fs.String("reason", "", "why, for the run's history and result (required)")
			fs.String("by", "", "who terminates, for the run's history and result (the OS user when not given)")
			addLockTimeoutFlag(fs)
			addOutputFlag(fs)
		},
		run: runsTerminate,
	}
}

// osUser is the name of the user fsmctl runs as, "" when unknown.
func osUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return os.Getenv("USER")
}

func runsResumeCommand() *command {
	return &command{
		name:     "runs resume",
		synopsis: "[-database URL] [-lock-timeout D] [-o json] RUN",
		summary:  "make a parked run due again",
		details: `Resume makes run RUN, parked after its retries gave up in a state that names no
event for that, due again with a fresh attempt counter, logs a resumed step,
and tells idle workers. A run that is not parked is refused.`,
		flags: func(fs *flag.FlagSet) { addDatabaseFlag(fs); addLockTimeoutFlag(fs); addOutputFlag(fs) },
		run:   runsResume,
	}
}

func runsRetryCommand() *command {
	return &command{
		name:     "runs retry",
		synopsis: "[-database URL] [-lock-timeout D] [-o json] RUN",
		summary:  "restart a failed run: same row, attempt + 1, initial state",
		details: `Retry restarts the failed run RUN as a new start with its key would:
the same row and id, attempt_no + 1, the state reset to the initial state of
its definition version, its result and finish time cleared, a restarted row
logged, due at once. A run that is not failed is refused.`,
		flags: func(fs *flag.FlagSet) { addDatabaseFlag(fs); addLockTimeoutFlag(fs); addOutputFlag(fs) },
		run:   runsRetry,
	}
}

// defaultLockTimeout is how long a write command waits by default for a
// run's row that another transaction holds.
const defaultLockTimeout = 5 * time.Second

// addLockTimeoutFlag declares -lock-timeout, which the write commands on
// a run have.
func addLockTimeoutFlag(fs *flag.FlagSet) {
	fs.Duration("lock-timeout", defaultLockTimeout, "how long to wait for the run's row while another transaction holds it (a worker's transition, an open psql session)")
}

// withAdmin connects and calls fn with an Admin on the database, whose
// pool configuration opts change.
func (c *cli) withAdmin(ctx context.Context, fs *flag.FlagSet, fn func(a *admin.Admin) error, opts ...func(*pgxpool.Config)) error {
	pool, err := c.openPool(ctx, fs, opts...)
	if err != nil {
		return err
	}
	defer pool.Close()
	return fn(admin.New(store.New(pool)))
}

// withRunAdmin is withAdmin for a command that writes run id: a statement
// that waits longer than -lock-timeout for a lock another transaction
// holds fails (PostgreSQL's lock_timeout), and the error says so, naming
// the run; the command never blocks without a bound.
func (c *cli) withRunAdmin(ctx context.Context, fs *flag.FlagSet, id string, fn func(a *admin.Admin) error) error {
	wait := fs.Lookup("lock-timeout").Value.(flag.Getter).Get().(time.Duration)
	if wait <= 0 {
		return usagef(nil, "-lock-timeout %v: want more than 0", wait)
	}
	err := c.withAdmin(ctx, fs, fn, func(cfg *pgxpool.Config) {
		cfg.ConnConfig.RuntimeParams["lock_timeout"] = strconv.FormatInt(max(wait.Milliseconds(), 1), 10)
	})
	if pe, ok := errors.AsType[*pgconn.PgError](err); ok && pe.Code == "55P03" { // lock_not_available
		return &reworded{err: err, msg: fmt.Sprintf(
			"run %s: another transaction holds the run's row: gave up after waiting %v (-lock-timeout); try again once it ends", id, wait)}
	}
	return err
}

// oneRun checks that args are one run id.
func oneRun(args []string) (string, error) {
	switch {
	case len(args) == 0:
		return "", usagef(nil, "missing run id")
	case len(args) > 1:
		return "", usagef(nil, "want one run id, got %d arguments", len(args))
	}
	if err := checkRunID(args[0]); err != nil {
		return "", usagef(nil, "%v", err)
	}
	return args[0], nil
}

// printMove says where a command moved a run, or prints it as JSON.
func (c *cli) printMove(fs *flag.FlagSet, verb string, before, after string, run runtime.Run) error {
	if wantJSON(fs) {
		return cliout.WriteJSON(c.stdout, toJSONRun(run))
	}
	fmt.Fprintf(c.stdout, "run %s %s: %s -> %s (%s, attempt %d)\n", run.ID, verb, before, after, run.Status, run.Attempt)
	return nil
}

func runsSignal(ctx context.Context, c *cli, fs *flag.FlagSet, args []string) error {
	if len(args) < 2 || len(args) > 3 {
		return usagef(nil, "want RUN EVENT [JSON], got %d arguments", len(args))
	}
	id, event := args[0], args[1]
	if err := checkRunID(id); err != nil {
		return usagef(nil, "%v", err)
	}
	var payload json.RawMessage
	if len(args) == 3 {
		payload = json.RawMessage(args[2])
		if !json.Valid(payload) {
			var v any
			err := json.Unmarshal(payload, &v)
			return usagef(nil, "payload is not JSON: %v", err)
		}
	}
	opts := admin.SignalOptions{To: flagString(fs, "to"), Reason: flagString(fs, "reason")}
	return c.withRunAdmin(ctx, fs, id, func(a *admin.Admin) error {
		before, err := store.New(a.Pool()).Get(ctx, id)
		if err != nil {
			return runError(id, err)
		}
		run, err := a.Signal(ctx, id, event, payload, opts)
		if err != nil {
			return operateError(id, err)
		}
		return c.printMove(fs, "signalled "+event, before.State, run.State, run)
	})
}

func runsCancel(ctx context.Context, c *cli, fs *flag.FlagSet, args []string) error {
	id, err := oneRun(args)
	if err != nil {
		return err
	}
	opts := admin.SignalOptions{To: flagString(fs, "to"), Reason: flagString(fs, "reason")}
	return c.withRunAdmin(ctx, fs, id, func(a *admin.Admin) error {
		before, err := store.New(a.Pool()).Get(ctx, id)
		if err != nil {
			return runError(id, err)
		}
		run, err := a.Cancel(ctx, id, opts)
		if err != nil {
			return operateError(id, err)
		}
		return c.printMove(fs, "cancelled", before.State, run.State, run)
	})
}

func runsTerminate(ctx context.Context, c *cli, fs *flag.FlagSet, args []string) error {
	id, err := oneRun(args)
	if err != nil {
		return err
	}
	opts := admin.TerminateOptions{Reason: strings.TrimSpace(flagString(fs, "reason")), By: strings.TrimSpace(flagString(fs, "by"))}
	if opts.By == "" {
		opts.By = osUser()
	}
	switch {
	case opts.Reason == "":
		return usagef(nil, "missing -reason: say why the run is terminated")
	case opts.By == "":
		return usagef(nil, "missing -by: say who terminates the run")
	}
	return c.withRunAdmin(ctx, fs, id, func(a *admin.Admin) error {
		t, err := a.Terminate(ctx, id, opts)
		if err != nil {
			return operateError(id, err)
		}
		if wantJSON(fs) {
			return cliout.WriteJSON(c.stdout, toJSONRun(t.Run))
		}
		fmt.Fprintf(c.stdout, "run %s terminated in %s (%s, attempt %d)\n", t.Run.ID, t.Run.State, t.Run.Status, t.Run.Attempt)
		if len(t.Descendants) > 0 {
			fmt.Fprintf(c.stdout, "with its %d live descendants: %s\n", len(t.Descendants), strings.Join(t.Descendants, ", "))
		}
		return nil
	})
}

func runsResume(ctx context.Context, c *cli, fs *flag.FlagSet, args []string) error {
	id, err := oneRun(args)
	if err != nil {
		return err
	}
	return c.withRunAdmin(ctx, fs, id, func(a *admin.Admin) error {
		run, err := a.Resume(ctx, id)
		if err != nil {
			return operateError(id, err)
		}
		if wantJSON(fs) {
			return cliout.WriteJSON(c.stdout, toJSONRun(run))
		}
		fmt.Fprintf(c.stdout, "run %s resumed in %s: due %s\n", run.ID, run.State, formatTime(run.NextRunAt))
		return nil
	})
}

func runsRetry(ctx context.Context, c *cli, fs *flag.FlagSet, args []string) error {
	id, err := oneRun(args)
	if err != nil {
		return err
	}
	return c.withRunAdmin(ctx, fs, id, func(a *admin.Admin) error {
		before, err := store.New(a.Pool()).Get(ctx, id)
		if err != nil {
			return runError(id, err)
		}
		run, err := a.Retry(ctx, id)
		if err != nil {
			return operateError(id, err)
		}
		return c.printMove(fs, "retried", before.State, run.State, run)
	})
}

// operateError words the error of a write command on run id, with the
// flag that helps when the table's guards decide.
func operateError(id string, err error) error {
	err = runError(id, err)
	if errors.Is(err, admin.ErrGuarded) {
		return fmt.Errorf("%w; pass -to STATE", err)
	}
	return err
}
