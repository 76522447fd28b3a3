package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/evidence"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// The console's own reads: what the store has no call for, in plain SQL
// over the runtime's tables. Each is one statement; none writes.

// machine is a registered definition with its runs' figures.
type machine struct {
	Type         string
	Version      int
	Def          runtime.Definition
	RegisteredAt time.Time
	Runs         int64 // all runs
	Running      int64 // runs with status running
	Parked       int64
	Error        string // why Def is empty: the row does not decode
}

func (s *Server) machines(ctx context.Context) ([]machine, error) {
	rows, err := s.pool.Query(ctx, `
SELECT d.workflow_type, d.version, d.definition, d.created_at,
       count(r.id), count(r.id) FILTER (WHERE r.status = 'running'), count(r.id) FILTER (WHERE r.parked_at IS NOT NULL)
  FROM workflow_definitions d
  LEFT JOIN workflow_runs r ON r.workflow_type = d.workflow_type AND r.definition_version = d.version
 GROUP BY d.workflow_type, d.version
 ORDER BY d.workflow_type, d.version`)
	if err != nil {
		return nil, fmt.Errorf("list definitions: %w", err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (machine, error) {
		var m machine
		var raw []byte
		if err := row.Scan(&m.Type, &m.Version, &raw, &m.RegisteredAt, &m.Runs, &m.Running, &m.Parked); err != nil {
			return m, fmt.Errorf("list definitions: %w", err)
		}
		if err := json.Unmarshal(raw, &m.Def); err != nil {
			// One bad row must not hide the others: the row is listed
			// with what is wrong with it.
			m.Def = runtime.Definition{}
			m.Error = fmt.Sprintf("the definition does not decode: %v", err)
		}
		return m, nil
	})
}

// child is a run started by another, as its page lists it.
type child struct {
	ID, Type, State, Status string
	Version                 int
	Event                   string // the event fired on the parent when it finishes
	CreatedAt               time.Time
}

func (s *Server) children(ctx context.Context, runID string) ([]child, error) {
	rows, err := s.pool.Query(ctx, `
SELECT id::text, workflow_type, definition_version, current_state, status, coalesce(parent_event, ''), created_at
  FROM workflow_runs WHERE parent_run_id = $1::uuid ORDER BY created_at, id`, runID)
	if err != nil {
		return nil, fmt.Errorf("children of run %s: %w", runID, err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (child, error) {
		var c child
		err := row.Scan(&c.ID, &c.Type, &c.Version, &c.State, &c.Status, &c.Event, &c.CreatedAt)
		return c, err
	})
}

// activity is one execution of a typed activity of a run (its attempts).
type activity struct {
	Name, Status, ErrorCode, Error string
	Attempt                        int
	Input, Output                  string
	StartedAt, CompletedAt         time.Time
}

func (s *Server) activities(ctx context.Context, runID string) ([]activity, error) {
	rows, err := s.pool.Query(ctx, `
SELECT activity_name, status, coalesce(error_code, ''), coalesce(error, ''), attempt,
       input::text, coalesce(output::text, ''), started_at, completed_at
  FROM activity_executions WHERE workflow_id = $1 ORDER BY started_at, id`, runID)
	if err != nil {
		return nil, fmt.Errorf("activities of run %s: %w", runID, err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (activity, error) {
		var a activity
		var done *time.Time
		err := row.Scan(&a.Name, &a.Status, &a.ErrorCode, &a.Error, &a.Attempt, &a.Input, &a.Output, &a.StartedAt, &done)
		if done != nil {
			a.CompletedAt = *done
		}
		return a, err
	})
}

// evidenceOf returns a run's evidence records and whether the chain checks
// out (the break when it does not); no records is no error.
func (s *Server) evidenceOf(ctx context.Context, runID string) ([]evidence.Record, *evidence.Break, error) {
	recs, err := evidence.Records(ctx, s.pool, runID)
	if err != nil || len(recs) == 0 {
		return recs, nil, err
	}
	_, err = evidence.VerifyRecords(runID, recs)
	if brk := (*evidence.Break)(nil); errors.As(err, &brk) {
		return recs, brk, nil
	}
	return recs, nil, err
}

// path returns the states a run has been in (each leaf of a
// configuration) and the changes of state it made, as (from, to) pairs,
// from its log, each once.
func (s *Server) path(ctx context.Context, runID string) (visited []string, taken [][2]string, err error) {
	rows, err := s.pool.Query(ctx, `
SELECT DISTINCT kind, coalesce(state_before, ''), coalesce(state_after, '')
  FROM workflow_step_logs WHERE workflow_run_id = $1::uuid AND kind <> 'step'`, runID)
	if err != nil {
		return nil, nil, fmt.Errorf("path of run %s: %w", runID, err)
	}
	defer rows.Close()
	for rows.Next() {
		var kind, from, to string
		if err := rows.Scan(&kind, &from, &to); err != nil {
			return nil, nil, fmt.Errorf("path of run %s: %w", runID, err)
		}
		for _, st := range []string{from, to} {
			for _, leaf := range strings.Split(st, runtime.ConfigurationSeparator) {
				if leaf != "" && !slices.Contains(visited, leaf) {
					visited = append(visited, leaf)
				}
			}
		}
		if kind != string(store.KindTransition) || from == to {
			continue
		}
		// A step between configurations takes the arrow of each region
		// that changed leaf.
		froms, tos := strings.Split(from, runtime.ConfigurationSeparator), strings.Split(to, runtime.ConfigurationSeparator)
		for i, f := range froms {
			for j, t := range tos {
				if len(froms) == len(tos) && i != j || f == t {
					continue
				}
				if !slices.Contains(taken, [2]string{f, t}) {
					taken = append(taken, [2]string{f, t})
				}
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("path of run %s: %w", runID, err)
	}
	slices.Sort(visited)
	return visited, taken, nil
}

// history returns at most limit rows of a run's log, from the row after
// the one with id after (0: from the first), in order, and the number of
// rows before them: the first row's number is that plus one, as fsmctl
// runs show numbers them.
func (s *Server) history(ctx context.Context, runID string, after int64, limit int) ([]store.Step, int64, error) {
	var before int64
	if after > 0 {
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM workflow_step_logs WHERE workflow_run_id = $1::uuid AND id <= $2`,
			runID, after).Scan(&before); err != nil {
			return nil, 0, fmt.Errorf("history of run %s: %w", runID, err)
		}
	}
	rows, err := s.pool.Query(ctx, `
SELECT id, workflow_type, definition_version, attempt_no, kind, step_name, coalesce(event, ''),
       coalesce(state_before, ''), coalesce(state_after, ''), payload, row_version, occurred_at
  FROM workflow_step_logs WHERE workflow_run_id = $1::uuid AND id > $2 ORDER BY id LIMIT $3`, runID, after, limit)
	if err != nil {
		return nil, 0, fmt.Errorf("history of run %s: %w", runID, err)
	}
	steps, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Step, error) {
		st := store.Step{RunID: runID}
		var payload []byte
		err := row.Scan(&st.ID, &st.Type, &st.Version, &st.Attempt, &st.Kind, &st.Name, &st.Event, &st.From, &st.To, &payload, &st.RowVersion, &st.At)
		if len(payload) > 0 && string(payload) != "null" {
			st.Payload = payload
		}
		return st, err
	})
	return steps, before, err
}

// heat is what a machine's heatmap shows of one state.
type heat struct {
	State  string
	Runs   int
	Stuck  int
	Parked int
	// Median is the median time the runs that left the state spent in it,
	// and Left how many stays that median is over.
	Median time.Duration
	Left   int
}

// stayBudget bounds the stays a heatmap's medians are read from: the
// last stayBudget/len(states) stays of each state (at least 50, at most
// 1000), found by an index, so that a refresh costs the same on a log of
// any size.
const stayBudget = 1500

// heatOf reads, for the runs of (typ, version), how many are in each state
// now, how many of them are stuck or parked, and from the log the median
// time runs spent in each of states before they left it, over the last
// stays that ended there (see stayBudget). A run is stuck when its
// worker's lease ran out, or when it has been due for longer than
// stuckAfter with no worker holding it.
func (s *Server) heatOf(ctx context.Context, typ string, version int, states []string, stuckAfter time.Duration) (map[string]heat, error) {
	out := map[string]heat{}
	rows, err := s.pool.Query(ctx, `
SELECT current_state, count(*),
       count(*) FILTER (WHERE status = 'running' AND parked_at IS NULL AND (
           (lease_owner IS NOT NULL AND lease_expires_at < now()) OR
           (lease_owner IS NULL AND next_run_at < now() - make_interval(secs => $3)))),
       count(*) FILTER (WHERE parked_at IS NOT NULL)
  FROM workflow_runs
 WHERE workflow_type = $1 AND definition_version = $2
 GROUP BY current_state`, typ, version, stuckAfter.Seconds())
	if err != nil {
		return nil, fmt.Errorf("heat of %s v%d: %w", typ, version, err)
	}
	for rows.Next() {
		var h heat
		if err := rows.Scan(&h.State, &h.Runs, &h.Stuck, &h.Parked); err != nil {
			return nil, fmt.Errorf("heat of %s v%d: %w", typ, version, err)
		}
		out[h.State] = h
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("heat of %s v%d: %w", typ, version, err)
	}
	// A stay in a state ends with the row that leaves it (state_before)
	// and began with the run's change row before that one. The median is
	// over the last stays that ended in each state, at most stayBudget in
	// all (workflow_step_logs_left_idx, 0017_heat.sql): bounded work
	// whatever the size of the log.
	per := min(1000, max(50, stayBudget/max(1, len(states))))
	rows, err = s.pool.Query(ctx, `
SELECT s.state, count(*), percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM x.spent))
  FROM unnest($3::text[]) AS s(state)
 CROSS JOIN LATERAL (
       SELECT l.occurred_at - e.occurred_at AS spent
         FROM workflow_step_logs l
        CROSS JOIN LATERAL (
              SELECT p.occurred_at FROM workflow_step_logs p
               WHERE p.workflow_run_id = l.workflow_run_id AND p.row_version < l.row_version AND p.kind <> 'step'
               ORDER BY p.row_version DESC LIMIT 1) e
        WHERE l.workflow_type = $1 AND l.definition_version = $2 AND l.kind NOT IN ('step', 'created')
          AND l.state_before = s.state
        ORDER BY l.occurred_at DESC LIMIT $4) x
 GROUP BY s.state`, typ, version, states, per)
	if err != nil {
		return nil, fmt.Errorf("time in states of %s v%d: %w", typ, version, err)
	}
	for rows.Next() {
		var state string
		var n int
		var median float64
		if err := rows.Scan(&state, &n, &median); err != nil {
			return nil, fmt.Errorf("time in states of %s v%d: %w", typ, version, err)
		}
		h := out[state]
		h.State, h.Left, h.Median = state, n, time.Duration(median*float64(time.Second))
		out[state] = h
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("time in states of %s v%d: %w", typ, version, err)
	}
	return out, nil
}

// stuckRun is a run the heatmap lists under the diagram.
type stuckRun struct {
	ID, State, Why, Error string
	Since                 time.Time
}

func (s *Server) stuckRuns(ctx context.Context, typ string, version int, stuckAfter time.Duration, limit int) ([]stuckRun, error) {
	rows, err := s.pool.Query(ctx, `
SELECT id::text, current_state,
       CASE WHEN parked_at IS NOT NULL THEN 'parked'
            WHEN lease_owner IS NOT NULL THEN 'lease expired'
            ELSE 'due, unclaimed' END,
       coalesce(nullif(concat_ws(': ', last_error_code, last_error), ''), ''),
       coalesce(parked_at, lease_expires_at, next_run_at)
  FROM workflow_runs
 WHERE workflow_type = $1 AND definition_version = $2 AND status = 'running' AND (
       parked_at IS NOT NULL OR
       (lease_owner IS NOT NULL AND lease_expires_at < now()) OR
       (lease_owner IS NULL AND next_run_at < now() - make_interval(secs => $3)))
 ORDER BY 5, id LIMIT $4`, typ, version, stuckAfter.Seconds(), limit)
	if err != nil {
		return nil, fmt.Errorf("stuck runs of %s v%d: %w", typ, version, err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (stuckRun, error) {
		var r stuckRun
		err := row.Scan(&r.ID, &r.State, &r.Why, &r.Error, &r.Since)
		return r, err
	})
}
