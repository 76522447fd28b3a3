package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"time"

	"github.com/fsmgen/fsmgen/internal/cliout"
	"github.com/fsmgen/fsmgen/runtime/admin"
)

func retentionListCommand() *command {
	return &command{
		name:     "retention list",
		synopsis: "[-database URL] [-o json]",
		summary:  "list the retention policies: how long each type keeps its finished runs",
		details: `List prints each workflow type's retention policy: how many days its finished
runs are kept after they finished before cleanup removes them. A type without a
policy keeps its runs for ever.`,
		flags: func(fs *flag.FlagSet) { addDatabaseFlag(fs); addOutputFlag(fs) },
		run:   retentionList,
	}
}

func retentionSetCommand() *command {
	return &command{
		name:     "retention set",
		synopsis: "[-database URL] TYPE DAYS",
		summary:  "keep the finished runs of a type for DAYS days",
		details: `Set stores the retention policy of workflow type TYPE (a registered type): its
finished runs (succeeded, failed or cancelled) are removed by fsmctl cleanup once
DAYS days have passed since they finished. 0 removes them at the next cleanup.`,
		flags: addDatabaseFlag,
		run:   retentionSet,
	}
}

func retentionClearCommand() *command {
	return &command{
		name:     "retention clear",
		synopsis: "[-database URL] TYPE",
		summary:  "remove a type's retention policy: its finished runs are kept for ever",
		details:  `Clear removes the retention policy of TYPE: cleanup no longer removes its runs.`,
		flags:    addDatabaseFlag,
		run:      retentionClear,
	}
}

func cleanupCommand() *command {
	return &command{
		name:     "cleanup",
		synopsis: "[-database URL] [-dry-run] [-batch N] [-o json]",
		summary:  "remove finished runs older than their type's retention, with their logs",
		details: `Cleanup removes the finished runs older than their type's retention policy
(fsmctl retention set), with their log rows, evidence records and published
outbox rows, through the database's fsmgen_purge_finished_runs, the only path by
which the append-only log and evidence lose rows. It never removes a run that
is not finished, nor an outbox row not yet published: such a run is held (and
counted), as is a child whose running parent has not had its completion event,
and a parent whose child stays. Each batch of -batch runs is a transaction.

-dry-run counts what would be removed, and removes nothing. It prints per type
the runs, log rows, evidence records and outbox rows removed and the runs held.`,
		flags: func(fs *flag.FlagSet) {
			addDatabaseFlag(fs)
			fs.Bool("dry-run", false, "count what would be removed; remove nothing")
			fs.Int("batch", admin.DefaultCleanupBatch, "runs removed per transaction")
			addOutputFlag(fs)
		},
		run: cleanup,
	}
}

type jsonPolicy struct {
	Type      string     `json:"type"`
	KeepDays  int        `json:"keep_days"`
	UpdatedAt *time.Time `json:"updated_at"`
}

func retentionList(ctx context.Context, c *cli, fs *flag.FlagSet, args []string) error {
	if len(args) > 0 {
		return usagef(nil, "unexpected arguments %q", args)
	}
	return c.withAdmin(ctx, fs, func(a *admin.Admin) error {
		ps, err := a.Retention(ctx)
		if err != nil {
			return fmt.Errorf("list retention: %w", operatorError(err))
		}
		if wantJSON(fs) {
			out := make([]jsonPolicy, len(ps))
			for i, p := range ps {
				out[i] = jsonPolicy{p.Type, p.KeepDays, jsonTime(p.UpdatedAt)}
			}
			return cliout.WriteJSON(c.stdout, out)
		}
		if len(ps) == 0 {
			fmt.Fprintln(c.stdout, "no retention policies: every finished run is kept")
			return nil
		}
		tw := newTable(c.stdout)
		fmt.Fprintln(tw, "TYPE\tKEEP\tSET")
		for _, p := range ps {
			fmt.Fprintf(tw, "%s\t%d days\t%s\n", p.Type, p.KeepDays, formatTime(p.UpdatedAt))
		}
		return tw.Flush()
	})
}

func retentionSet(ctx context.Context, c *cli, fs *flag.FlagSet, args []string) error {
	if len(args) != 2 {
		return usagef(nil, "want TYPE DAYS, got %d arguments", len(args))
	}
	days, err := strconv.Atoi(args[1])
	if err != nil || days < 0 {
		return usagef(nil, "days %q is not a whole number from 0", args[1])
	}
	return c.withAdmin(ctx, fs, func(a *admin.Admin) error {
		p, err := a.SetRetention(ctx, args[0], days)
		if err != nil {
			return fmt.Errorf("retention of %s: %w", args[0], operatorError(err))
		}
		fmt.Fprintf(c.stdout, "%s: finished runs are kept %d days\n", p.Type, p.KeepDays)
		return nil
	})
}

func retentionClear(ctx context.Context, c *cli, fs *flag.FlagSet, args []string) error {
	if len(args) != 1 {
		return usagef(nil, "want TYPE, got %d arguments", len(args))
	}
	return c.withAdmin(ctx, fs, func(a *admin.Admin) error {
		had, err := a.ClearRetention(ctx, args[0])
		if err != nil {
			return fmt.Errorf("retention of %s: %w", args[0], operatorError(err))
		}
		if !had {
			fmt.Fprintf(c.stdout, "%s had no retention policy\n", args[0])
			return nil
		}
		fmt.Fprintf(c.stdout, "%s: finished runs are kept for ever\n", args[0])
		return nil
	})
}

type jsonRemoved struct {
	Type     string `json:"type"`
	Runs     int64  `json:"runs"`
	StepLogs int64  `json:"step_logs"`
	Evidence int64  `json:"evidence"`
	Outbox   int64  `json:"outbox"`
	Held     int64  `json:"held"`
}

func cleanup(ctx context.Context, c *cli, fs *flag.FlagSet, args []string) error {
	if len(args) > 0 {
		return usagef(nil, "unexpected arguments %q", args)
	}
	batch := fs.Lookup("batch").Value.(flag.Getter).Get().(int)
	if batch < 1 {
		return usagef(nil, "-batch %d: want 1 or more", batch)
	}
	dry := fs.Lookup("dry-run").Value.String() == "true"
	return c.withAdmin(ctx, fs, func(a *admin.Admin) error {
		rep, err := a.Cleanup(ctx, admin.CleanupOptions{DryRun: dry, BatchSize: batch})
		if err != nil {
			return fmt.Errorf("cleanup: %w", operatorError(err))
		}
		conv := func(r admin.Removed) jsonRemoved {
			return jsonRemoved{r.Type, r.Runs, r.StepLogs, r.Evidence, r.Outbox, r.Held}
		}
		if wantJSON(fs) {
			types := make([]jsonRemoved, len(rep.Types))
			for i, t := range rep.Types {
				types[i] = conv(t)
			}
			return cliout.WriteJSON(c.stdout, struct {
				DryRun bool          `json:"dry_run"`
				Types  []jsonRemoved `json:"types"`
				Total  jsonRemoved   `json:"total"`
			}{rep.DryRun, types, conv(rep.Total)})
		}
		verb := "removed"
		if dry {
			verb = "would remove"
		}
		if len(rep.Types) == 0 {
			fmt.Fprintf(c.stdout, "nothing to remove: no finished run is older than its type's retention\n")
			return nil
		}
		tw := newTable(c.stdout)
		fmt.Fprintln(tw, "TYPE\tRUNS\tLOG ROWS\tEVIDENCE\tOUTBOX\tHELD")
		for _, t := range append(rep.Types, rep.Total) {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\n", t.Type, t.Runs, t.StepLogs, t.Evidence, t.Outbox, t.Held)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "%s %d finished runs", verb, rep.Total.Runs)
		if rep.Total.Held > 0 {
			fmt.Fprintf(c.stdout, "; %d held (unpublished messages, undelivered or running children)", rep.Total.Held)
		}
		fmt.Fprintln(c.stdout)
		return nil
	})
}
