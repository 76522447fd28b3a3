package admin

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/internal/dbsqlc"
	"github.com/fsmgen/fsmgen/runtime/internal/pgstore"
)

// Policy is the retention policy of one workflow type: its finished runs
// are kept for KeepDays days after they finished, then removed by Cleanup.
type Policy struct {
	Type      string
	KeepDays  int
	UpdatedAt time.Time
}

// SetRetention keeps the finished runs of type typ for days days (0:
// removed by the next Cleanup once finished). The type must be registered.
func (a *Admin) SetRetention(ctx context.Context, typ string, days int) (Policy, error) {
	fail := func(err error) (Policy, error) { return Policy{}, runErr("set retention of "+typ, "", err) }
	if days < 0 {
		return fail(fmt.Errorf("%w: %d days: want 0 or more", runtime.ErrInvalidInput, days))
	}
	q := a.db().Queries(nil)
	known, err := q.DefinitionTypeExists(ctx, typ)
	if err != nil {
		return fail(pgstore.Translate(err))
	}
	if !known {
		return fail(fmt.Errorf("%w: no version of %s is registered", runtime.ErrUnknownDefinition, typ))
	}
	if days > math.MaxInt32 {
		return fail(fmt.Errorf("%w: %d days: want at most %d", runtime.ErrInvalidInput, days, math.MaxInt32))
	}
	row, err := q.UpsertRetention(ctx, dbsqlc.UpsertRetentionParams{WorkflowType: typ, KeepDays: int32(days)})
	if err != nil {
		return fail(pgstore.Translate(err))
	}
	return policyOf(row), nil
}

// ClearRetention removes the retention policy of typ: its finished runs
// are kept for ever. It reports whether typ had one.
func (a *Admin) ClearRetention(ctx context.Context, typ string) (bool, error) {
	n, err := a.db().Queries(nil).DeleteRetention(ctx, typ)
	if err != nil {
		return false, runErr("clear retention of "+typ, "", pgstore.Translate(err))
	}
	return n > 0, nil
}

// Retention lists the retention policies by type.
func (a *Admin) Retention(ctx context.Context) ([]Policy, error) {
	rows, err := a.db().Queries(nil).ListRetention(ctx)
	if err != nil {
		return nil, runErr("list retention", "", pgstore.Translate(err))
	}
	out := make([]Policy, len(rows))
	for i, row := range rows {
		out[i] = policyOf(row)
	}
	return out, nil
}

func policyOf(row dbsqlc.WorkflowRetention) Policy {
	return Policy{Type: row.WorkflowType, KeepDays: int(row.KeepDays), UpdatedAt: row.UpdatedAt.Time}
}

// CleanupOptions tune Cleanup.
type CleanupOptions struct {
	// DryRun counts what Cleanup would remove and removes nothing.
	DryRun bool
	// BatchSize is how many runs one transaction removes (with their
	// children, which go with their parent); Cleanup goes on with the next
	// batch until one removes nothing. 0 means DefaultCleanupBatch.
	BatchSize int
}

// DefaultCleanupBatch is the number of runs a Cleanup transaction removes
// when CleanupOptions.BatchSize is 0.
const DefaultCleanupBatch = 10000

// Removed counts what Cleanup removed (or would remove) for one type.
type Removed struct {
	Type string
	// Runs, StepLogs, Evidence and Outbox count the finished runs removed
	// and their log rows, evidence records and (published) outbox rows.
	Runs, StepLogs, Evidence, Outbox int64
	// Held counts the finished runs past their retention that were kept:
	// a message of theirs is not published yet, their running parent has
	// not had their completion event, or a child of theirs stays.
	Held int64
}

// CleanupReport is what Cleanup did, per type with a retention policy and
// due runs, by type, and in total.
type CleanupReport struct {
	DryRun bool
	// Batches counts the transactions that removed runs (1 for a dry run).
	Batches int
	Types   []Removed
	Total   Removed
}

// Cleanup removes the finished runs older than their type's retention
// policy (see SetRetention), with their log rows, evidence records and
// published outbox rows, through the database function
// fsmgen_purge_finished_runs: the only path by which the log and the
// evidence lose rows. It never removes a run that is not finished or an
// outbox row that is not published (their runs are held, and counted as
// Held). Each batch is a transaction of its own. With DryRun it counts
// what it would remove, in one read, and removes nothing: on a database
// nobody else writes to, the counts are those the real run reports.
func (a *Admin) Cleanup(ctx context.Context, opts CleanupOptions) (CleanupReport, error) {
	batch := opts.BatchSize
	if batch <= 0 {
		batch = DefaultCleanupBatch
	}
	rep := CleanupReport{DryRun: opts.DryRun, Types: []Removed{}}
	byType := map[string]int{}
	for {
		var limit pgtype.Int4
		if !opts.DryRun {
			limit = pgtype.Int4{Int32: int32(min(batch, math.MaxInt32)), Valid: true}
		}
		// One statement, so one transaction: a batch commits alone.
		got, err := a.db().Queries(nil).PurgeFinishedRuns(ctx, dbsqlc.PurgeFinishedRunsParams{DryRun: opts.DryRun, MaxRuns: limit})
		if err != nil {
			return rep, runErr("cleanup", "", pgstore.Translate(err))
		}
		var runs int64
		for _, m := range got {
			i, ok := byType[m.WorkflowType]
			if !ok {
				i = len(rep.Types)
				byType[m.WorkflowType] = i
				rep.Types = append(rep.Types, Removed{Type: m.WorkflowType})
			}
			t := &rep.Types[i]
			t.Runs += m.Runs
			t.StepLogs += m.StepLogs
			t.Evidence += m.Evidence
			t.Outbox += m.Outbox
			t.Held = m.Held // the last batch's: what stays
			runs += m.Runs
		}
		if runs > 0 || opts.DryRun {
			rep.Batches++
		}
		if opts.DryRun || runs == 0 {
			break
		}
		if err := ctx.Err(); err != nil {
			return rep, runErr("cleanup", "", err)
		}
	}
	for _, t := range rep.Types {
		rep.Total.Runs += t.Runs
		rep.Total.StepLogs += t.StepLogs
		rep.Total.Evidence += t.Evidence
		rep.Total.Outbox += t.Outbox
		rep.Total.Held += t.Held
	}
	rep.Total.Type = "total"
	return rep, nil
}
