// Command fsmctl operates the runs of fsmgen workflows stored in
// PostgreSQL: it migrates the runtime's schema (or prints it), lists and
// shows runs with their transition history, signals, cancels, terminates,
// resumes and retries them, shows the registered definitions with their transition
// table and Mermaid diagram, keeps finished runs for each type's retention
// and cleans up after it, shows the linear chain's instances, and exports
// the audit of a step-engine run as JSON or CSV. It works on any machine's
// runs and imports none: the demo that creates some is a command of its own
// (machines/cmd/demo, make demo).
//
// Usage:
//
//	fsmctl migrate [-print]        apply the runtime's migrations, or print their SQL
//	fsmctl runs list [-type T] [-state S] [-status S] [-tenant X] [-limit N] [-after ID] [-o json]
//	fsmctl runs show [-payloads] [-o json] ID
//	fsmctl runs signal [-to STATE] [-reason TEXT] [-lock-timeout D] RUN EVENT [JSON]
//	fsmctl runs cancel [-to STATE] [-reason TEXT] [-lock-timeout D] RUN
//	fsmctl runs terminate -reason TEXT [-by NAME] [-lock-timeout D] RUN
//	fsmctl runs resume [-lock-timeout D] RUN
//	fsmctl runs retry [-lock-timeout D] RUN
//	fsmctl definitions list [-o json]
//	fsmctl definitions show [-mermaid] [-o json] TYPE [VERSION]
//	fsmctl retention list [-o json]
//	fsmctl retention set TYPE DAYS
//	fsmctl retention clear TYPE
//	fsmctl cleanup [-dry-run] [-batch N] [-o json]
//	fsmctl chains list [-type T] [-status S[,S...]] [-key K] [-limit N] [-after ID]
//	fsmctl chains show ID
//	fsmctl export <run_id> [--format json|csv] [--runs-dir DIR] [--out FILE] [--from-db]
//	fsmctl outbox status [-o json]
//	fsmctl outbox requeue [-dry-run] [-o json] all|ID...
//	fsmctl versions status TYPE
//	fsmctl versions plan [-limit N] TYPE FROM TO
//	fsmctl versions upgrade [-batch N] [-wait D] TYPE FROM TO
//	fsmctl serve [-addr HOST:PORT] [-hosts NAMES] [-password-file FILE] [-actions]
//	fsmctl completion bash|zsh|fish
//	fsmctl version
//	fsmctl help [command]
//
// Flags may come before, between or after the arguments (runs show ID -o
// json), written -flag or --flag; after --, everything is an argument.
// Help is at every level: fsmctl help runs, fsmctl runs -h, fsmctl help
// runs show, fsmctl runs show --help print on standard output. fsmctl
// completion prints a completion script for bash, zsh or fish, which asks
// fsmctl itself (a hidden __complete command) for the commands, flags and
// flag values that complete a word, and with a database for the run ids
// and dead letters the command acts on. The write commands on a run wait at
// most -lock-timeout (5s by default) for its row while another transaction
// holds it, then fail saying so.
//
// runs signal and runs cancel work on any registered machine without its Go
// code: the payload is checked against the event's fields in the registered
// definition, and the transition goes through the store, so the database
// checks it as any other; guarded rows need -to STATE, since guards are Go
// code. Read commands take -o json (package internal/cliout). outbox status
// counts the outbox's pending and published messages and shows the oldest
// pending one, with its failed tries and last error (see runtime/relay).
// cleanup removes the finished runs older than their type's retention
// (retention set) with their logs, evidence and published outbox rows,
// through the database's one deletion path, fsmgen_purge_finished_runs;
// -dry-run counts what it would remove.
//
// The database is the one the -database flag of a command names, else the
// DATABASE_URL environment variable (a postgres:// URL or a key=value
// connection string), else the libpq variables PGHOST, PGPORT, PGUSER,
// PGDATABASE, PGPASSWORD, PGSSLMODE and the other PG* ones; without any,
// the commands that connect fail. export
// reads a run's files and needs no database unless given --from-db.
//
// fsmctl exits with 0 on success, 1 on failure and 2 on a usage error.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
