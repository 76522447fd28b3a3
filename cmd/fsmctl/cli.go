package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/internal/dbconn"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// EnvDatabaseURL names the environment variable that holds the database's
// connection string.
const EnvDatabaseURL = "DATABASE_URL"

// cli is what a command works with: where it writes and how it reads the
// environment.
type cli struct {
	stdout, stderr io.Writer
	getenv         func(string) string
}

// command is one of fsmctl's commands.
type command struct {
	name     string // "runs list"
	synopsis string // its arguments, after the name
	summary  string // one line for the command list
	details  string // the rest of its help
	run      func(ctx context.Context, c *cli, fs *flag.FlagSet, args []string) error
	flags    func(fs *flag.FlagSet) // declares the command's flags; may be nil
}

// commands lists fsmctl's commands in the order help shows them.
func commands() []*command {
	return []*command{
		migrateCommand(),
		runsListCommand(), runsShowCommand(), runsSignalCommand(), runsCancelCommand(), runsTerminateCommand(), runsResumeCommand(), runsRetryCommand(),
		definitionsListCommand(), definitionsShowCommand(),
		retentionListCommand(), retentionSetCommand(), retentionClearCommand(), cleanupCommand(),
		chainsListCommand(), chainsShowCommand(), exportCommand(), evidenceVerifyCommand(), evidenceExportCommand(),
		outboxStatusCommand(), outboxRequeueCommand(),
		versionsStatusCommand(), versionsPlanCommand(), versionsUpgradeCommand(),
		serveCommand(), completionCommand(), versionCommand(),
	}
}

// usage is the command's usage line: fsmctl, its name and its synopsis.
func (cmd *command) usage() string {
	return strings.TrimSpace("fsmctl " + cmd.name + " " + cmd.synopsis)
}

// usageError is a command line fsmctl cannot act on: exit status 2.
type usageError struct {
	cmd *command // nil when no command was recognised
	msg string
}

func (e *usageError) Error() string { return e.msg }

// usagef returns a usage error; a command's run leaves cmd nil, and
// dispatch fills it in.
func usagef(cmd *command, format string, args ...any) error {
	return &usageError{cmd: cmd, msg: fmt.Sprintf(format, args...)}
}

// run runs fsmctl with the given arguments (without the program's name)
// and returns its exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := &cli{stdout: stdout, stderr: stderr, getenv: os.Getenv}
	return c.main(ctx, args)
}

func (c *cli) main(ctx context.Context, args []string) int {
	err := c.dispatch(ctx, args)
	var ue *usageError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.Is(err, errReported):
		return exitUsage
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		fmt.Fprintln(c.stderr, "fsmctl: interrupted")
		return exitFailure
	case errors.As(err, &ue):
		if ue.cmd != nil {
			fmt.Fprintf(c.stderr, "fsmctl %s: %s\nusage: %s\nRun 'fsmctl help %s' for details.\n",
				ue.cmd.name, ue.msg, ue.cmd.usage(), ue.cmd.name)
		} else {
			fmt.Fprintf(c.stderr, "fsmctl: %s\nRun 'fsmctl help' for usage.\n", ue.msg)
		}
		return exitUsage
	default:
		fmt.Fprintf(c.stderr, "fsmctl: %v\n", err)
		return exitFailure
	}
}

// errReported is a usage error the flag package has printed already.
var errReported = errors.New("usage error reported")

// isHelpFlag reports whether arg asks for help, as -h, -help and --help do.
func isHelpFlag(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help" || arg == "--h"
}

func (c *cli) dispatch(ctx context.Context, args []string) error {
	if len(args) == 0 {
		c.printUsage(c.stderr)
		return errReported
	}
	switch {
	case args[0] == "help":
		return c.help(args[1:])
	case isHelpFlag(args[0]):
		return c.help(args[1:])
	case args[0] == completeCommand:
		return c.complete(ctx, args[1:])
	}
	if len(args) > 1 && isHelpFlag(args[1]) && len(groupCommands(args[0])) > 0 {
		// fsmctl runs -h: the group's help.
		c.printGroupHelp(c.stdout, args[0])
		return nil
	}
	cmd, rest, err := lookup(args)
	if err != nil {
		return err
	}
	fs := c.flagSet(cmd)
	rest, err = parseInterspersed(fs, rest)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			c.printCommandHelp(c.stdout, cmd, fs)
		} else {
			c.printCommandHelp(c.stderr, cmd, fs)
		}
		return err
	}
	err = cmd.run(ctx, c, fs, rest)
	var ue *usageError
	if errors.As(err, &ue) && ue.cmd == nil {
		ue.cmd = cmd
	}
	return err
}

// parseInterspersed parses the flags of a command line whose flags may come
// before, between and after its arguments, as in runs show ID -o json, and
// returns the arguments. After --, everything is an argument. A flag that
// fs does not define, or a bad value, has been reported by the flag package
// (errReported); -h and -help return flag.ErrHelp.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for len(args) > 0 {
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		if len(args[0]) < 2 || args[0][0] != '-' {
			pos = append(pos, args[0])
			args = args[1:]
			continue
		}
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, errReported
		}
		rest := fs.Args()
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" && !takesValue(fs, args, n-2) {
			// The flag package stopped at --: the rest are arguments.
			return append(pos, rest...), nil
		}
		args = rest
	}
	return pos, nil
}

// takesValue reports whether args[i] is a flag of fs whose value is the
// argument after it: a flag that is not boolean, given without =value.
func takesValue(fs *flag.FlagSet, args []string, i int) bool {
	if i < 0 || len(args[i]) < 2 || args[i][0] != '-' || strings.Contains(args[i], "=") {
		return false
	}
	f := fs.Lookup(strings.TrimLeft(args[i], "-"))
	if f == nil {
		return false
	}
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return !ok || !b.IsBoolFlag()
}

// groupCommands returns the commands of the group name (runs,
// definitions, ...) in the order help shows them; none when name is no
// group.
func groupCommands(name string) []*command {
	var out []*command
	for _, cmd := range commands() {
		if group, _, ok := strings.Cut(cmd.name, " "); ok && group == name {
			out = append(out, cmd)
		}
	}
	return out
}

// lookup finds the command args name and returns it with the arguments
// that follow its name.
func lookup(args []string) (*command, []string, error) {
	for _, cmd := range commands() {
		words := strings.Fields(cmd.name)
		if len(args) >= len(words) && strings.Join(args[:len(words)], " ") == cmd.name {
			return cmd, args[len(words):], nil
		}
	}
	// A group of commands (runs, definitions, ...) named without one of
	// its subcommands, or with one it lacks.
	var subs []string
	for _, cmd := range groupCommands(args[0]) {
		_, sub, _ := strings.Cut(cmd.name, " ")
		subs = append(subs, sub)
	}
	if len(subs) > 0 {
		list := strings.Join(subs[:len(subs)-1], ", ") + " and " + subs[len(subs)-1]
		if len(subs) == 1 {
			list = subs[0]
		}
		if len(args) == 1 {
			return nil, nil, usagef(nil, "%s needs a subcommand: %s", args[0], strings.Replace(list, " and ", " or ", 1))
		}
		return nil, nil, usagef(nil, "unknown command %q: %s has %s", args[0]+" "+args[1], args[0], list)
	}
	return nil, nil, usagef(nil, "unknown command %q", args[0])
}

// flagSet returns the flag set of cmd, writing the errors of its flags
// to stderr.
func (c *cli) flagSet(cmd *command) *flag.FlagSet {
	fs := flag.NewFlagSet("fsmctl "+cmd.name, flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	if cmd.flags != nil {
		cmd.flags(fs)
	}
	// dispatch prints the command's help: on stdout for -h, on stderr
	// after a bad flag.
	fs.Usage = func() {}
	return fs
}

// help prints the help of the command or group args name on stdout, or
// fsmctl's when args is empty.
func (c *cli) help(args []string) error {
	if len(args) == 0 {
		c.printUsage(c.stdout)
		return nil
	}
	if len(args) == 1 && len(groupCommands(args[0])) > 0 {
		c.printGroupHelp(c.stdout, args[0])
		return nil
	}
	cmd, rest, err := lookup(args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usagef(nil, "help takes one command, not %q", strings.Join(args, " "))
	}
	c.printCommandHelp(c.stdout, cmd, c.flagSet(cmd))
	return nil
}

// printGroupHelp prints the commands of group name.
func (c *cli) printGroupHelp(w io.Writer, name string) {
	fmt.Fprintf(w, "usage: fsmctl %s <command> [flags] [arguments]\n\nCommands:\n", name)
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	for _, cmd := range groupCommands(name) {
		fmt.Fprintf(tw, "\t%s\t%s\n", cmd.name, cmd.summary)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nRun 'fsmctl help %s <command>' for a command's flags and details.\n", name)
}

func (c *cli) printUsage(w io.Writer) {
	fmt.Fprint(w, `fsmctl operates the runs of fsmgen workflows stored in PostgreSQL.

Usage:
	fsmctl <command> [arguments] [flags]

Commands:
`)
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	for _, cmd := range commands() {
		fmt.Fprintf(tw, "\t%s\t%s\n", cmd.name, cmd.summary)
	}
	fmt.Fprintf(tw, "\t%s\t%s\n", "help", "show this help, or a command's: fsmctl help runs list, fsmctl runs list -h")
	tw.Flush()
	fmt.Fprint(w, `
The database is the one the -database flag of a command names, else `+EnvDatabaseURL+`
(postgres://user:password@host:5432/db?sslmode=disable, or a key=value connection
string), else the libpq variables PGHOST, PGPORT, PGUSER, PGDATABASE, PGPASSWORD,
PGSSLMODE and the other PG* ones. Flags may come before, between or after the
arguments (-flag and --flag alike; after --, all are arguments). Read commands
take -o json for scripts. fsmctl completion bash|zsh|fish prints a shell's
completion script. The demo that creates runs to look at is not here: make demo
(go run ./machines/cmd/demo).

Exit status: 0 on success, 1 on failure, 2 on a usage error.
`)
}

func (c *cli) printCommandHelp(w io.Writer, cmd *command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: %s\n\n%s\n", cmd.usage(), cmd.details)
	var any bool
	fs.VisitAll(func(*flag.Flag) { any = true })
	if any {
		fmt.Fprint(w, "\nFlags:\n")
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(c.stderr)
	}
}

// addDatabaseFlag declares the -database flag every command that connects
// has.
func addDatabaseFlag(fs *flag.FlagSet) {
	fs.String("database", "", "the database's connection string (default $"+EnvDatabaseURL+")")
}

// databaseURL returns the connection string the command is to use and
// where it came from: the -database flag, else DATABASE_URL, else the
// libpq environment (PGHOST, PGPORT, PGUSER, PGDATABASE, PGPASSWORD...);
// both empty when none is set.
func (c *cli) databaseURL(fs *flag.FlagSet) (conn, source string) {
	if f := fs.Lookup("database"); f != nil && f.Value.String() != "" {
		return f.Value.String(), "-database"
	}
	if v := c.getenv(EnvDatabaseURL); v != "" {
		return v, EnvDatabaseURL
	}
	return dbconn.FromPGEnv(c.getenv)
}

// openPool connects to the command's database, the one needDatabase
// names, with the pool configuration opts change; the caller closes the
// pool.
func (c *cli) openPool(ctx context.Context, fs *flag.FlagSet, opts ...func(*pgxpool.Config)) (*pgxpool.Pool, error) {
	conn, source, err := c.needDatabase(fs)
	if err != nil {
		return nil, err
	}
	return connect(ctx, source, conn, opts...)
}

// needDatabase returns the command's connection string, or an error
// saying how to give one.
func (c *cli) needDatabase(fs *flag.FlagSet) (conn, source string, err error) {
	conn, source = c.databaseURL(fs)
	if conn == "" {
		return "", "", fmt.Errorf("no database: pass -database, set %s (for example postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable), or set PGHOST, PGUSER, PGDATABASE and the other PG* variables", EnvDatabaseURL)
	}
	return conn, source, nil
}
