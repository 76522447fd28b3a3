package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/db"
	"github.com/fsmgen/fsmgen/internal/dbconn"
	"github.com/fsmgen/fsmgen/internal/runprint"
	"github.com/fsmgen/fsmgen/machines/compliance/fchademo"
	"github.com/fsmgen/fsmgen/machines/linearchain"
	"github.com/fsmgen/fsmgen/machines/problems"
	"github.com/fsmgen/fsmgen/machines/problems/local"
	rog "github.com/fsmgen/fsmgen/machines/problems/retrieveorgenerate"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
	"github.com/fsmgen/fsmgen/runtime/pgcluster"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// demoTenant is the tenant of the demo's runs.
const demoTenant = "demo"

// envDatabaseURL names the environment variable that holds the database's
// connection string when -database is not given.
const envDatabaseURL = "DATABASE_URL"

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// options are the demo's flags, parsed.
type options struct {
	conn, source string // the connection string and where it came from; both empty for a throwaway cluster
	seed         uint64
	runsDir      string
}

// run runs the demo with the given arguments (without the program's name),
// reading the environment through getenv, and returns its exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	database := fs.String("database", "", "the database's connection string (default $"+envDatabaseURL+")")
	seed := fs.Uint64("seed", 0, "choose the users and the equation (default: a random seed)")
	runsDir := fs.String("runs-dir", "", "where the step engine's runs' directories go (default: a new temporary directory)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "demo: unexpected arguments %q\nusage: demo [-database URL] [-seed N] [-runs-dir DIR]\n", fs.Args())
		return exitUsage
	}
	opts := options{seed: *seed, runsDir: *runsDir}
	switch {
	case *database != "":
		opts.conn, opts.source = *database, "-database"
	case getenv(envDatabaseURL) != "":
		opts.conn, opts.source = getenv(envDatabaseURL), envDatabaseURL
	}
	// A standard output that fails (closed early: demo | head) stops the
	// demo as Ctrl-C does, so that it stops and removes what it made.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	out := &stopOnError{w: stdout, stop: cancel}
	err := demo(ctx, out, stderr, opts)
	if err == nil && out.err != nil {
		err = out.err // the demo ended before it saw the context cancelled
	}
	switch {
	case err == nil:
		return exitOK
	case out.err != nil:
		fmt.Fprintf(stderr, "demo: stopped: %v\n", out.err)
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		fmt.Fprintln(stderr, "demo: interrupted")
	default:
		fmt.Fprintf(stderr, "demo: %v\n", err)
	}
	return exitFailure
}

// stopOnError writes to w, and at the first write that fails cancels the
// demo's context with the error (kept in err) and writes nothing more.
type stopOnError struct {
	w    io.Writer
	stop context.CancelCauseFunc
	err  error
}

func (s *stopOnError) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.w.Write(p)
	if err != nil {
		s.err = fmt.Errorf("write the output: %w", err)
		s.stop(s.err)
	}
	return n, err
}

// submission is one of the demo's submissions and what it should show.
type submission struct {
	title  string
	who    string // the user's name in the output
	user   string
	tier   string
	label  string // the content as printed
	cmd    problems.SubmitProblem
	again  int    // for a repeated submission, the number of the first one
	expect string // the state and outcome it should end with
}

// demoScript returns the demo's submissions for seed, and the uploads they
// refer to.
func demoScript(seed uint64) ([]submission, *local.MemoryUploads) {
	alice := fmt.Sprintf("a11ce000-0000-4000-8000-%012d", seed%1e12)
	bob := fmt.Sprintf("b0b00000-0000-4000-8000-%012d", seed%1e12)
	a, x, b := 2+seed%12, 1+seed/12%20, 1+seed/240%30
	c := a*x + b
	text := fmt.Sprintf("Solve %dx + %d = %d", a, b, c)
	rephrased := fmt.Sprintf("solve %dx+%d=%d", a, b, c)
	uploads := &local.MemoryUploads{}
	upload := "upload-" + strconv.FormatUint(seed, 10) + "-homework.pdf"
	uploads.Put(upload, "application/pdf", []byte("%PDF-1.7\n% a scanned worksheet\n"))
	first := submission{
		title: "A new equation: normalized, not found, solved, registered and indexed",
		who:   "alice", user: alice, tier: problems.TierPro, label: strconv.Quote(text),
		cmd:    problems.SubmitProblem{Text: text, MediaType: "text/plain"},
		expect: "SUCCEEDED new",
	}
	again := first
	again.title = "The first submission again: idempotent, the same run and its stored result"
	again.again = 1
	return []submission{
		first,
		{
			title: "The same problem phrased differently, by another user: a retrieval hit",
			who:   "bob", user: bob, tier: problems.TierFree, label: strconv.Quote(rephrased),
			cmd:    problems.SubmitProblem{Text: rephrased, MediaType: "text/plain"},
			expect: "SUCCEEDED hit",
		},
		{
			title: "An upload of an unsupported media type: rejected, the run fails",
			who:   "bob", user: bob, tier: problems.TierFree, label: "upload " + upload + " (application/pdf)",
			cmd:    problems.SubmitProblem{UploadSessionID: upload, MediaType: "application/pdf"},
			expect: "FAILED",
		},
		again,
	}, uploads
}

// demo runs the three demos in turn on one database and prints what they
// do to w; the engine's warnings go to stderr.
func demo(ctx context.Context, w, stderr io.Writer, opts options) (err error) {
	seed := opts.seed
	if seed == 0 {
		seed = 1 + rand.Uint64N(999_999)
	}
	runsDir := opts.runsDir
	if runsDir == "" {
		// The runs' directories go in a temporary directory removed at the
		// end, on an error or an interruption too (-runs-dir keeps them).
		if runsDir, err = os.MkdirTemp("", "demo-runs-"); err != nil {
			return fmt.Errorf("make a directory for the runs: %w", err)
		}
		defer func() {
			if rerr := os.RemoveAll(runsDir); rerr != nil {
				err = errors.Join(err, fmt.Errorf("remove the runs' directory: %w", rerr))
			}
		}()
	}
	conn, source := opts.conn, opts.source
	throwaway := conn == ""
	if throwaway {
		fmt.Fprintf(w, "%s is not set: starting a throwaway PostgreSQL cluster, as the tests do.\n", envDatabaseURL)
		cluster, err := pgcluster.Start(ctx)
		if errors.Is(err, pgcluster.ErrNoServerBinaries) {
			return fmt.Errorf("no database: %s is not set, and %w.\n"+
				"Install the PostgreSQL server binaries (Debian/Ubuntu: apt-get install -y postgresql; macOS: brew install postgresql),\n"+
				"or set %s to a server, for example postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", envDatabaseURL, err, envDatabaseURL)
		}
		if err != nil {
			return fmt.Errorf("start a throwaway cluster: %w", err)
		}
		fmt.Fprintf(w, "The cluster lives in %s and is removed at the end.\n", cluster.Dir())
		defer func() {
			if serr := cluster.Stop(); serr != nil {
				err = errors.Join(err, serr)
				return
			}
			fmt.Fprintln(w, "\nStopped the throwaway cluster and removed its directory.")
		}()
		conn, source = cluster.URL(), "throwaway cluster URL"
	}
	cfg, err := dbconn.ParseConfig(source, conn)
	if err != nil {
		return err
	}
	if !throwaway {
		fmt.Fprintf(w, "Using the %s that %s names.\n", dbconn.Describe(cfg), source)
	}
	pool, err := dbconn.Connect(ctx, source, conn)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := migrate(ctx, pool, w); err != nil {
		return err
	}

	script, uploads := demoScript(seed)
	wf, err := problems.New(local.NewSet(pool, uploads).Adapters())
	if err != nil {
		return err
	}
	eng, err := engine.New(store.New(pool), engine.Config{
		WorkerID:     engine.DefaultWorkerID("demo"),
		Lease:        30 * time.Second,
		PollInterval: 50 * time.Millisecond,
		Logger:       slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return err
	}
	if err := wf.Register(ctx, eng); err != nil {
		return err
	}
	fmt.Fprintf(w, "Registered %s version %d. Seed %d (demo -seed %d submits the same problems as the same users).\n",
		rog.Type, rog.Version, seed, seed)

	since, err := eng.Store().Now(ctx)
	if err != nil {
		return err
	}
	type outcome struct {
		start runtime.StartOutcome
		run   runtime.Run
	}
	var results []outcome
	var unexpected []string
	shown := map[string]int{} // run id -> history rows printed
	for i, s := range script {
		fmt.Fprintf(w, "\n== %d. %s\n", i+1, s.title)
		fmt.Fprintf(w, "%s (%s, tier %s) submits %s\n", s.who, s.user, s.tier, s.label)
		res, err := wf.Submit(ctx, eng, problems.SubmitRequest{
			UserID: s.user, TenantID: demoTenant, SubscriptionTier: s.tier, Problem: s.cmd,
		})
		if err != nil {
			return fmt.Errorf("submission %d: %w", i+1, err)
		}
		run := res.Run
		switch res.Outcome {
		case runtime.StartCreated, runtime.StartRestarted:
			fmt.Fprintf(w, "%s run %s; driving it inline\n", res.Outcome, run.ID)
			if run, err = eng.Drive(ctx, run.ID); err != nil {
				return fmt.Errorf("submission %d: drive run %s: %w", i+1, res.Run.ID, err)
			}
		case runtime.StartCached:
			fmt.Fprintf(w, "cached: run %s succeeded before; its stored result is returned and nothing runs again\n", run.ID)
		case runtime.StartRunning:
			fmt.Fprintf(w, "running: run %s is under way in state %s; not started again\n", run.ID, run.State)
		default:
			fmt.Fprintf(w, "%s: run %s\n", res.Outcome, run.ID)
		}
		if s.again > 0 && s.again <= len(results) {
			if first := results[s.again-1].run.ID; first == run.ID {
				fmt.Fprintf(w, "the same run as submission %d\n", s.again)
			} else {
				fmt.Fprintf(w, "not the run of submission %d (%s)\n", s.again, first)
			}
		}
		fmt.Fprintln(w)
		if err := runprint.Run(w, run); err != nil {
			return err
		}
		steps, err := eng.Store().History(ctx, run.ID)
		if err != nil {
			return fmt.Errorf("submission %d: %w", i+1, err)
		}
		fmt.Fprintln(w)
		if prev, ok := shown[run.ID]; ok && prev == len(steps) {
			fmt.Fprintf(w, "history: the same %d rows as above; nothing ran again\n", len(steps))
		} else if err := runprint.History(w, steps, false); err != nil {
			return err
		}
		shown[run.ID] = len(steps)
		results = append(results, outcome{res.Outcome, run})
		if got := endOf(run); got != s.expect {
			unexpected = append(unexpected, fmt.Sprintf("submission %d ended %s, expected %s", i+1, got, s.expect))
		}
	}

	if err := driveBackground(ctx, w, eng, since); err != nil {
		return err
	}

	fmt.Fprintln(w, "\nSummary")
	tw := runprint.Table(w)
	fmt.Fprintln(tw, "#\tSUBMITTED\tSTART\tRUN\tSTATE\tOUTCOME")
	for i, r := range results {
		outcome := "-"
		if r.run.Result != nil {
			outcome = runprint.OrDash(r.run.Result.Outcome)
		}
		fmt.Fprintf(tw, "%d\t%s: %s\t%s\t%s\t%s\t%s\n", i+1, script[i].who, script[i].label, r.start, r.run.ID, r.run.State, outcome)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if !throwaway {
		fmt.Fprintf(w, "The runs stay in the database: fsmctl runs list -tenant %s; fsmctl runs show ID.\n", demoTenant)
	}
	for _, u := range unexpected {
		fmt.Fprintln(w, "note:", u)
	}
	for i, r := range results {
		if !r.run.Terminal() {
			return fmt.Errorf("submission %d: run %s stopped in state %s (%s)", i+1, r.run.ID, r.run.State, runprint.OrDash(r.run.LastError))
		}
	}
	if err := linearchain.Demo(ctx, pool, w); err != nil {
		return err
	}
	if !throwaway {
		fmt.Fprintf(w, "\nThe instances stay in the database: fsmctl chains list -type %s; fsmctl chains show ID.\n", linearchain.OrderProcessType)
	}
	if err := stepEngineDemo(ctx, w, pool, runsDir, opts.runsDir != "", !throwaway); err != nil {
		return err
	}
	if err := fchademo.Demo(ctx, pool, w, fmt.Sprintf("%d", time.Now().UnixNano())); err != nil {
		return err
	}
	if throwaway {
		fmt.Fprintf(w, "\nThe runs, instances and evidence above were in the throwaway cluster, which is removed now:\n"+
			"the fsmctl commands that read them need a database that keeps them. Run the demo on one to follow them up:\n"+
			"  %s=postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable make demo\n", envDatabaseURL)
	}
	return nil
}

// driveBackground lets the engine's workers drive the background runs the
// demo's runs enqueued (the video of a new solution) to their end, and
// prints them.
func driveBackground(ctx context.Context, w io.Writer, eng *engine.Engine, since time.Time) error {
	all, err := eng.Store().List(ctx, store.Filter{Filter: runtime.Filter{TenantID: demoTenant}, CreatedFrom: since})
	if err != nil {
		return fmt.Errorf("list background runs: %w", err)
	}
	var runs []runtime.Run
	for _, r := range all {
		if r.Type != rog.Type {
			runs = append(runs, r)
		}
	}
	if len(runs) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\n== Background runs the runs above enqueued, driven by the engine's workers (Work)\n\n")
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- eng.Work(wctx) }()
	var errs []error
	for i, r := range runs {
		tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		run, err := eng.Wait(tctx, r.ID)
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("wait for background run %s: %w", r.ID, err))
			continue
		}
		runs[i] = run
	}
	stop()
	if err := <-done; err != nil {
		errs = append(errs, fmt.Errorf("work: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return runprint.RunTable(w, runs)
}

// endOf is a run's state and outcome, as the demo's expectations say them.
func endOf(r runtime.Run) string {
	if r.Result != nil && r.Result.Outcome != "" {
		return r.State + " " + r.Result.Outcome
	}
	return r.State
}

// migrate applies the runtime's schema and the problembank schema of the
// RetrieveOrGenerate workflow's local adapters, and says what it did.
func migrate(ctx context.Context, pool *pgxpool.Pool, w io.Writer) error {
	before, err := appliedMigrations(ctx, pool)
	if err != nil {
		return err
	}
	if err := db.Migrate(ctx, pool); err != nil {
		return fmt.Errorf("migrate the runtime schema: %w", err)
	}
	after, err := appliedMigrations(ctx, pool)
	if err != nil {
		return err
	}
	if err := local.Migrate(ctx, pool); err != nil {
		return fmt.Errorf("migrate the problembank schema: %w", err)
	}
	fmt.Fprintf(w, "runtime schema: %d migrations, %d applied now\n", after, after-before)
	fmt.Fprintln(w, "problembank schema: up to date")
	return nil
}

// appliedMigrations counts the runtime's recorded migrations, 0 before the
// first.
func appliedMigrations(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	var exists bool
	if err := pool.QueryRow(ctx, `SELECT to_regclass('fsmgen_migrations') IS NOT NULL`).Scan(&exists); err != nil {
		return 0, fmt.Errorf("count applied migrations: %w", err)
	}
	if !exists {
		return 0, nil
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM fsmgen_migrations`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count applied migrations: %w", err)
	}
	return n, nil
}
