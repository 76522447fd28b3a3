// Command fsmctl operates the runs of fsmgen workflows stored in
// PostgreSQL: it migrates the runtime's schema, lists and shows runs with
// their transition history and the linear chain's instances, and exports
// the audit of a step-engine run as JSON or CSV. It works on any machine's
// runs and imports none: the demo that creates some is a command of its own
// (machines/cmd/demo, make demo).
//
// Usage:
//
//	fsmctl migrate                 apply the runtime's migrations
//	fsmctl runs list [-type T] [-state S] [-status S] [-tenant X] [-limit N] [-after ID]
//	fsmctl runs show [-payloads] ID
//	fsmctl chains list [-type T] [-status S[,S...]] [-key K] [-limit N] [-after ID]
//	fsmctl chains show ID
//	fsmctl export <run_id> [--format json|csv] [--runs-dir DIR] [--out FILE] [--from-db]
//	fsmctl help [command]
//
// The database is the one the DATABASE_URL environment variable names (a
// postgres:// URL or a key=value connection string), or the -database flag
// of each command; without either, the commands that connect fail. export
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
