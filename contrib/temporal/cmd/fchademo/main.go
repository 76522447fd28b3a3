// Command fchademo runs the FCHA compliance workflow on Temporal: it starts
// a dev server (temporal server start-dev --headless), a worker with the
// machine registered by contrib/temporal, and four applications, one per
// branch that a signal decides, and prints each run's transitions and the
// typed state its query returns. The authorization is signalled at once;
// the workflow takes it when the run waits for it, and refuses it, as sent
// to a finished run, when prequalification denied the application first.
// make demo-temporal runs it. The seven-day authorization timeout is shown
// by the tests on the SDK's skipped clock (go test ./contrib/temporal -run
// TestFCHABranches), not waited for here.
//
// With -database DSN (a database migrated by fsmctl migrate; the runtime
// role is enough), the worker records every run in it (temporal.WithRecord),
// so that an operator reads the runs and their log rows there as the
// engine's: fsmctl runs show ID, the console.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/fsmgen/fsmgen/contrib/temporal"
	"github.com/fsmgen/fsmgen/contrib/temporal/devserver"
	"github.com/fsmgen/fsmgen/machines/compliance"
	"github.com/fsmgen/fsmgen/machines/compliance/fcha"
	"github.com/fsmgen/fsmgen/machines/compliance/local"
	"github.com/fsmgen/fsmgen/runtime/store"
)

const usage = `usage: fchademo [-database DSN]

Runs the FCHA compliance workflow on a Temporal dev server (the temporal CLI
on PATH, started with temporal server start-dev --headless): four
applications, one per branch a signal decides, each run's transitions and
its queried state printed.

`

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
	case err != nil:
		fmt.Fprintln(os.Stderr, "fchademo:", err)
		os.Exit(1)
	}
}

// run runs the demo with the command line args, printing to stdout, its
// usage and flag errors to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("fchademo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dsn := fs.String("database", "", "record every run (temporal.WithRecord) in the PostgreSQL database `DSN`, migrated by fsmctl migrate;\nthe runtime role is enough; fsmctl runs show ID then shows a run and its log")
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	var opts []temporal.Option
	if *dsn != "" {
		pool, err := pgxpool.New(ctx, *dsn)
		if err != nil {
			return fmt.Errorf("-database: %w", err)
		}
		defer pool.Close()
		if err := pool.Ping(ctx); err != nil {
			return fmt.Errorf("-database: %w", err)
		}
		opts = append(opts, temporal.WithRecord(store.New(pool)))
	}
	fmt.Fprintln(stdout, "Starting temporal server start-dev --headless on free ports...")
	s, err := devserver.Start(ctx)
	if err != nil {
		return err
	}
	defer s.Stop()
	wf := compliance.New(nil, nil, compliance.Adapters{
		Prequalifier: &local.Prequalifier{Fail: map[string]string{"applicant-low-income": "income below 40x monthly rent"}},
		Screening:    &local.Screening{Findings: map[string][]string{"applicant-2014": {"misdemeanor, 2014"}, "applicant-2023": {"felony, 2023"}}},
		Notifier:     &local.Notifier{},
		Assessor:     &local.Assessor{Deny: map[string]bool{"applicant-2023": true}},
	})
	w := worker.New(s.Client, "fcha", worker.Options{})
	temporal.Register(w, wf.Driver(), opts...)
	if err := w.Start(); err != nil {
		return err
	}
	defer w.Stop()
	for i, b := range []struct{ title, applicant string }{
		{"prequalification failed -> DENIED", "applicant-low-income"},
		{"authorized, clean check -> APPROVED", "applicant-clean"},
		{"adverse information, assessment approves -> APPROVED", "applicant-2014"},
		{"adverse information, assessment denies -> DENIED", "applicant-2023"},
	} {
		key := fmt.Sprintf("app-%d-%d", i+1, time.Now().UnixNano())
		// The workflow id is the run id the record needs: a UUID of the
		// type and the application's key.
		id := temporal.RunID(fcha.Type, key)
		input, err := json.Marshal(compliance.Application{ApplicationID: key, ApplicantID: b.applicant, OrganizationID: "org_demo", MarketID: "NYC"})
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "\n-- %d. %s (application %s, workflow %s)\n", i+1, b.title, key, id)
		wr, err := s.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: "fcha"}, fcha.Type,
			temporal.Start{RunID: id, Type: fcha.Type, IdempotencyKey: key, Input: input, TenantID: "org_demo"})
		if err != nil {
			return err
		}
		if err := temporal.Signal(ctx, s.Client, id, fcha.BackgroundCheckAuthorizationSigned{SignedAt: time.Now().UTC(), SignedBy: b.applicant}); err != nil {
			return err
		}
		var res temporal.Result
		if err := wr.Get(ctx, &res); err != nil {
			return err
		}
		for _, h := range res.History {
			fmt.Fprintf(stdout, "  %-25s -> %-25s on %s\n", h.From, h.To, h.Event)
		}
		for _, r := range res.Refused {
			fmt.Fprintf(stdout, "  refused: %s\n", r)
		}
		state, _, err := temporal.QueryState(ctx, s.Client, id, fcha.ParseState)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "  query: state %v (fcha.State), outcome %s\n", state, res.Outcome)
		if *dsn != "" {
			fmt.Fprintf(stdout, "  recorded: fsmctl runs show %s\n", id)
		}
	}
	return nil
}
