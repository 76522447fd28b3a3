package admin

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/store"
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
	var known bool
	if err := a.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM workflow_definitions WHERE workflow_type = $1)`, typ).Scan(&known); err != nil {
		return fail(store.Translate(err))
	}
	if !known {
		return fail(fmt.Errorf("%w: no version of %s is registered", runtime.ErrUnknownDefinition, typ))
	}
	p := Policy{Type: typ}
	err := a.pool.QueryRow(ctx, `
		INSERT INTO workflow_retention (workflow_type, keep_days) VALUES ($1, $2)
		ON CONFLICT (workflow_type) DO UPDATE SET keep_days = EXCLUDED.keep_days, updated_at = now()
		RETURNING keep_days, updated_at`, typ, days).Scan(&p.KeepDays, &p.UpdatedAt)
	if err != nil {
		return fail(store.Translate(err))
	}
	return p, nil
}

// ClearRetention removes the retention policy of typ: its finished runs
// are kept for ever. It reports whether typ had one.
func (a *Admin) ClearRetention(ctx context.Context, typ string) (bool, error) {
	tag, err := a.pool.Exec(ctx, `DELETE FROM workflow_retention WHERE workflow_type = $1`, typ)
	if err != nil {
		return false, runErr("clear retention of "+typ, "", store.Translate(err))
	}
	return tag.RowsAffected() > 0, nil
}

// Retention lists the retention policies by type.
func (a *Admin) Retention(ctx context.Context) ([]Policy, error) {
	rows, err := a.pool.Query(ctx, `SELECT workflow_type, keep_days, updated_at FROM workflow_retention ORDER BY workflow_type`)
	if err != nil {
		return nil, runErr("list retention", "", store.Translate(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Policy, error) {
		var p Policy
		err := r.Scan(&p.Type, &p.KeepDays, &p.UpdatedAt)
		return p, err
	})
	if err != nil {
		return nil, runErr("list retention", "", store.Translate(err))
	}
	return out, nil
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
		var limit *int
		if !opts.DryRun {
			limit = &batch
		}
		var got []Removed
		err := pgx.BeginFunc(ctx, a.pool, func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, `SELECT workflow_type, runs, step_logs, evidence, outbox, held FROM fsmgen_purge_finished_runs($1, $2)`, opts.DryRun, limit)
			if err != nil {
				return err
			}
			got, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (Removed, error) {
				var m Removed
				err := r.Scan(&m.Type, &m.Runs, &m.StepLogs, &m.Evidence, &m.Outbox, &m.Held)
				return m, err
			})
			return err
		})
		if err != nil {
			return rep, runErr("cleanup", "", store.Translate(err))
		}
		var runs int64
		for _, m := range got {
			i, ok := byType[m.Type]
			if !ok {
				i = len(rep.Types)
				byType[m.Type] = i
				rep.Types = append(rep.Types, Removed{Type: m.Type})
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
