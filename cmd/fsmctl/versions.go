package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/store"
)

func versionsStatusCommand() *command {
	return &command{
		name:     "versions status",
		synopsis: "[-database URL] TYPE",
		summary:  "show the registered versions of a type and the runs left on each",
		details: `Status prints, for each registered version of TYPE, oldest first: its live
runs (not finished), of which parked and leased, its finished runs, and the
newer versions its runs are upgraded to (a registered upgrade) or drain beside;
then the live runs of each version by state. A version whose live runs are 0
is drained: its processes may stop registering it.`,
		flags: addDatabaseFlag,
		run:   versionsStatus,
	}
}

func versionsPlanCommand() *command {
	return &command{
		name:     "versions plan",
		synopsis: "[-database URL] [-limit N] TYPE FROM TO",
		summary:  "count the live runs each rule of an upgrade would move, and list those it cannot",
		details: `Plan reads the upgrade of TYPE from version FROM to version TO that the
newer version registered (its .fsm's "upgrade from FROM { ... }", registered
with its definition by the engine), and counts, for each rule in the order
the rules are tried, the live runs of FROM it admits now, as the database's
guard decides. It lists the runs it cannot move now, with the reason: left
to drain, admitted by no rule, or leased by a worker (those move once the
lease is given up). It writes nothing.`,
		flags: func(fs *flag.FlagSet) {
			addDatabaseFlag(fs)
			fs.Int("limit", defaultListLimit, fmt.Sprintf("list at most this many runs it cannot move, 1..%d", maxListLimit))
		},
		run: versionsPlan,
	}
}

func versionsUpgradeCommand() *command {
	return &command{
		name:     "versions upgrade",
		synopsis: "[-database URL] [-batch N] [-wait D] TYPE FROM TO",
		summary:  "move the live runs of a type from one version to another, as its upgrade says",
		details: `Upgrade moves the live runs of TYPE from version FROM to version TO as the
registered upgrade says, in batches of -batch runs read at once, each run
in a transaction of its own: the run at its new version and state, and its
log row (kind and event "migrated", from (FROM, state) to (TO, state)),
checked by the database against the registered upgrade. A run leased by a
worker is skipped and tried again, every second, until -wait has passed;
runs left to drain, or admitted by no rule, stay on FROM.

It prints a line per batch and a summary. It is idempotent and resumable:
after a crash or an interrupt, run it again; a run moved already is not
moved twice. It fails when leased runs are left after -wait (run it again
later) and when no upgrade from FROM to TO is registered.`,
		flags: func(fs *flag.FlagSet) {
			addDatabaseFlag(fs)
			fs.Int("batch", 100, "runs read at once, 1..10000")
			fs.Duration("wait", time.Minute, "how long to keep trying runs that a worker's lease holds")
		},
		run: versionsUpgrade,
	}
}

// typeAndVersions reads TYPE FROM TO.
func typeAndVersions(args []string) (string, int, int, error) {
	if len(args) != 3 {
		return "", 0, 0, usagef(nil, "want TYPE FROM TO, got %d arguments", len(args))
	}
	var vs [2]int
	for i, a := range args[1:] {
		n, err := strconv.Atoi(a)
		if err != nil || n < 1 {
			return "", 0, 0, usagef(nil, "version %q: want a whole number >= 1", a)
		}
		vs[i] = n
	}
	if vs[0] >= vs[1] {
		return "", 0, 0, usagef(nil, "runs are upgraded from an older version to a newer one, not from %d to %d", vs[0], vs[1])
	}
	return args[0], vs[0], vs[1], nil
}

// openStore connects to the command's database and returns a store on it
// and the function that closes it.
func (c *cli) openStore(ctx context.Context, fs *flag.FlagSet) (*store.Store, func(), error) {
	pool, err := c.openPool(ctx, fs)
	if err != nil {
		return nil, nil, err
	}
	return store.New(pool), pool.Close, nil
}

func versionsStatus(ctx context.Context, c *cli, fs *flag.FlagSet, args []string) error {
	if len(args) != 1 {
		return usagef(nil, "want one TYPE, got %d arguments", len(args))
	}
	st, closeDB, err := c.openStore(ctx, fs)
	if err != nil {
		return err
	}
	defer closeDB()
	vs, err := st.Versions(ctx, args[0])
	if err != nil {
		return err
	}
	return printVersions(c.stdout, args[0], vs)
}

func printVersions(w io.Writer, typ string, vs []store.VersionStatus) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "VERSION\tLIVE\tPARKED\tLEASED\tFINISHED\tUPGRADES TO\tDRAINS BESIDE")
	for _, v := range vs {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%s\t%s\n", v.Version, v.Live, v.Parked, v.Leased, v.Finished, versionList(v.UpgradesTo), versionList(v.Drains))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, v := range vs {
		if v.Live == 0 {
			continue
		}
		states := make([]string, 0, len(v.States))
		for s := range v.States {
			states = append(states, s)
		}
		slices.Sort(states)
		parts := make([]string, len(states))
		for i, s := range states {
			parts[i] = fmt.Sprintf("%s %d", s, v.States[s])
		}
		fmt.Fprintf(w, "\n%s v%d live runs by state: %s\n", typ, v.Version, strings.Join(parts, ", "))
	}
	return nil
}

func versionList(vs []int) string {
	if len(vs) == 0 {
		return "-"
	}
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = "v" + strconv.Itoa(v)
	}
	return strings.Join(parts, ", ")
}

func versionsPlan(ctx context.Context, c *cli, fs *flag.FlagSet, args []string) error {
	typ, from, to, err := typeAndVersions(args)
	if err != nil {
		return err
	}
	limit := fs.Lookup("limit").Value.(flag.Getter).Get().(int)
	if limit < 1 || limit > maxListLimit {
		return usagef(nil, "-limit %d is not in 1..%d", limit, maxListLimit)
	}
	st, closeDB, err := c.openStore(ctx, fs)
	if err != nil {
		return err
	}
	defer closeDB()
	plan, err := st.PlanUpgrade(ctx, typ, from, to)
	if err != nil {
		return err
	}
	return printPlan(c.stdout, plan, limit)
}

func printPlan(w io.Writer, p store.UpgradePlan, limit int) error {
	if p.Drain {
		fmt.Fprintf(w, "%s v%d -> v%d: the upgrade drains: its %d live runs finish on v%d\n", p.Type, p.From, p.To, p.Live, p.From)
		return nil
	}
	fmt.Fprintf(w, "%s v%d -> v%d: %d live runs, %d to move now\n\n", p.Type, p.From, p.To, p.Live, p.Movable())
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "RULE\tRUNS\tLEASED")
	for _, m := range p.Moves {
		fmt.Fprintf(tw, "%s\t%d\t%d\n", store.DescribeRule(m.Rule), m.Runs, m.Leased)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(p.Stuck) == 0 {
		fmt.Fprintln(w, "\nevery live run can move now")
		return nil
	}
	fmt.Fprintf(w, "\n%d runs cannot move now:\n", len(p.Stuck))
	tw = tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tREASON")
	for i, s := range p.Stuck {
		if i == limit {
			fmt.Fprintf(tw, "... and %d more (-limit)\n", len(p.Stuck)-limit)
			break
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.RunID, s.State, s.Reason)
	}
	return tw.Flush()
}

func versionsUpgrade(ctx context.Context, c *cli, fs *flag.FlagSet, args []string) error {
	typ, from, to, err := typeAndVersions(args)
	if err != nil {
		return err
	}
	batch := fs.Lookup("batch").Value.(flag.Getter).Get().(int)
	if batch < 1 || batch > maxListLimit {
		return usagef(nil, "-batch %d is not in 1..%d", batch, maxListLimit)
	}
	wait := fs.Lookup("wait").Value.(flag.Getter).Get().(time.Duration)
	if wait < 0 {
		return usagef(nil, "-wait %v is negative", wait)
	}
	st, closeDB, err := c.openStore(ctx, fs)
	if err != nil {
		return err
	}
	defer closeDB()
	return upgradeVersions(ctx, c.stdout, st, typ, from, to, batch, wait)
}

// upgradeVersions runs passes of store.Upgrade until no leased run is left
// or wait has passed, and reports.
func upgradeVersions(ctx context.Context, w io.Writer, st *store.Store, typ string, from, to, batch int, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	total := 0
	for pass := 1; ; pass++ {
		rep, err := st.Upgrade(ctx, typ, from, to, store.UpgradeOptions{BatchSize: batch, Progress: func(r store.UpgradeReport) {
			fmt.Fprintf(w, "pass %d: moved %d, leased %d, left to drain %d, admitted by no rule %d\n", pass, r.Moved, r.Leased, r.Drained, r.Unmatched)
		}})
		total += rep.Moved
		if errors.Is(err, runtime.ErrUpgradeRefused) {
			return fmt.Errorf("%w\n(%d runs moved; the runs named stay on v%d: their configurations map to no state of v%d)", err, total, from, to)
		}
		if err != nil {
			return fmt.Errorf("%w (%d runs moved before; run the command again to go on)", err, total)
		}
		if rep.Leased == 0 {
			fmt.Fprintf(w, "%s v%d -> v%d: %d runs moved; %d left on v%d to drain, %d admitted by no rule\n", typ, from, to, total, rep.Drained, from, rep.Unmatched)
			return nil
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("%s v%d -> v%d: %d runs moved; %d runs are still leased by workers after %v: run the command again later",
				typ, from, to, total, rep.Leased, wait)
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), fmt.Errorf("%d runs moved", total))
		case <-time.After(min(time.Second, time.Until(deadline))):
		}
	}
}
