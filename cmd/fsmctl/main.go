// Command fsmctl operates the runs of fsmgen workflows stored in
// PostgreSQL: it migrates the schema, runs the RetrieveOrGenerate demo,
// lists and shows runs with their transition history, and exports the audit
// of a step-engine run as JSON or CSV.
//
// Usage:
//
//	fsmctl migrate                 apply the runtime's and the demo workflow's migrations
//	fsmctl demo [-seed N]          submit a few problems and print each run and its history
//	fsmctl runs list [-type T] [-state S] [-status S] [-tenant X] [-limit N] [-after ID]
//	fsmctl runs show [-payloads] ID
//	fsmctl export <run_id> [--format json|csv] [--runs-dir DIR] [--out FILE] [--from-db]
//	fsmctl help [command]
//
// The database is the one the DATABASE_URL environment variable names (a
// postgres:// URL or a key=value connection string), or the -database flag
// of each command. Without either, demo starts a throwaway local cluster
// from the PostgreSQL server binaries it finds, as the tests do, and stops
// it at the end; the other commands that connect fail. export reads a run's
// files and needs no database unless given --from-db.
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
