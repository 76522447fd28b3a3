package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The linear chain engine's tables are read here by SQL: fsmctl does
// not import the engine (runtime/linearchain).

// chainStatuses are the statuses of workflow_instance.
var chainStatuses = []string{"RUNNING", "COMPLETED", "FAILED", "CANCELED"}

func chainsListCommand() *command {
	return &command{
		name:     "chains list",
		synopsis: "[-database URL] [-type T] [-status S[,S...]] [-key K] [-limit N] [-after ID]",
		summary:  "list linear chain instances, filtered by type, status and key",
		details: `List prints the linear chain instances (table workflow_instance) that match every
filter given, oldest first: id, type and version, status, current step (seq
and type), the steps done of all, the instance key, and when the instance was
created and last changed (UTC). When more match than -limit, the last line
says how to ask for the next page.`,
		flags: func(fs *flag.FlagSet) {
			addDatabaseFlag(fs)
			fs.String("type", "", "only instances of this workflow type (order.process)")
			fs.String("status", "", "only instances with one of these statuses, comma-separated: "+strings.Join(chainStatuses, ","))
			fs.String("key", "", "only the instance with this instance key")
			fs.Int("limit", defaultListLimit, fmt.Sprintf("at most this many instances, 1..%d", maxListLimit))
			fs.Int64("after", 0, "the instances after this id (the last of the previous page)")
		},
		run: chainsList,
	}
}

func chainsList(ctx context.Context, c *cli, fs *flag.FlagSet, args []string) error {
	if len(args) > 0 {
		return usagef(nil, "unexpected arguments %q", args)
	}
	states := []string{} // not nil, which pgx sends as NULL: cardinality(NULL) = 0 is not true
	if s := flagString(fs, "status"); s != "" {
		for _, st := range strings.Split(s, ",") {
			st = strings.TrimSpace(st)
			if !contains(chainStatuses, st) {
				return usagef(nil, "-status %q is not one of %s", st, strings.Join(chainStatuses, ", "))
			}
			states = append(states, st)
		}
	}
	limit := fs.Lookup("limit").Value.(flag.Getter).Get().(int)
	if limit < 1 || limit > maxListLimit {
		return usagef(nil, "-limit %d is not in 1..%d", limit, maxListLimit)
	}
	after := fs.Lookup("after").Value.(flag.Getter).Get().(int64)
	pool, err := c.openPool(ctx, fs)
	if err != nil {
		return err
	}
	defer pool.Close()
	rows, err := pool.Query(ctx, `
SELECT i.id, i.workflow_type, i.workflow_version, i.status, i.current_step_seq, i.current_step_type,
    (SELECT count(*) FILTER (WHERE s.status = 'DONE') || '/' || count(*) FROM workflow_step s WHERE s.instance_id = i.id),
    i.instance_key, i.created_at, i.updated_at
FROM workflow_instance i
WHERE ($1 = '' OR i.workflow_type = $1) AND (cardinality($2::text[]) = 0 OR i.status = ANY ($2))
  AND ($3 = '' OR i.instance_key = $3) AND i.id > $4
ORDER BY i.id
LIMIT $5`, flagString(fs, "type"), states, flagString(fs, "key"), after, limit)
	if err != nil {
		return chainError(err)
	}
	tw := newTable(c.stdout)
	fmt.Fprintln(tw, "ID\tTYPE\tSTATUS\tSTEP\tDONE\tKEY\tCREATED\tUPDATED")
	n := 0
	var last int64
	for rows.Next() {
		var (
			id               int64
			typ, status, st  string
			version, seq     int
			done, key        string
			created, updated time.Time
		)
		if err := rows.Scan(&id, &typ, &version, &status, &seq, &st, &done, &key, &created, &updated); err != nil {
			return chainError(err)
		}
		fmt.Fprintf(tw, "%d\t%s v%d\t%s\t%d %s\t%s\t%s\t%s\t%s\n", id, typ, version, status, seq, st, done, key,
			formatTime(created), formatTime(updated))
		n++
		last = id
	}
	if err := rows.Err(); err != nil {
		return chainError(err)
	}
	if n == 0 {
		fmt.Fprintln(c.stdout, "no instances match")
		return nil
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if n == limit {
		fmt.Fprintf(c.stdout, "(%d instances shown; more may match: add -after %d)\n", n, last)
	}
	return nil
}

func chainsShowCommand() *command {
	return &command{
		name:     "chains show",
		synopsis: "[-database URL] ID",
		summary:  "show a linear chain instance: its steps, attempts, errors and history",
		details: `Show prints the instance (type, key, status, current step, input, times), its
steps (status, attempts of max attempts, last error, lease, schedule, the event
it waits for and its deadline), its history from the append-only status logs
that the database writes (every change of the instance and of each step, with
its event and worker), the external events delivered to it (inbox) and the
events its steps sent (outbox).`,
		flags: addDatabaseFlag,
		run:   chainsShow,
	}
}

func chainsShow(ctx context.Context, c *cli, fs *flag.FlagSet, args []string) error {
	switch {
	case len(args) == 0:
		return usagef(nil, "missing instance id")
	case len(args) > 1:
		return usagef(nil, "want one instance id, got %d arguments", len(args))
	}
	id, err := strconv.ParseInt(args[0], 10, 64)
	if err != nil || id < 1 {
		return usagef(nil, "instance id %q is not a positive integer", args[0])
	}
	pool, err := c.openPool(ctx, fs)
	if err != nil {
		return err
	}
	defer pool.Close()
	w := c.stdout
	var (
		typ, key, status, stepType, input string
		version, seq                      int
		created, updated                  time.Time
		completed, failed, canceled       *time.Time
		reason                            *string
	)
	err = pool.QueryRow(ctx, `
SELECT workflow_type, workflow_version, instance_key, status, current_step_seq, current_step_type,
    coalesce(input::text, ''), created_at, updated_at, completed_at, failed_at, canceled_at, cancel_reason
FROM workflow_instance WHERE id = $1`, id).Scan(&typ, &version, &key, &status, &seq, &stepType, &input,
		&created, &updated, &completed, &failed, &canceled, &reason)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("instance %d: not found", id)
	}
	if err != nil {
		return chainError(err)
	}
	tw := newTable(w)
	line := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, v) }
	line("instance", strconv.FormatInt(id, 10))
	line("type", fmt.Sprintf("%s v%d", typ, version))
	line("key", key)
	line("status", status)
	line("step", fmt.Sprintf("%d %s", seq, stepType))
	line("input", orDash(input))
	line("created", formatTime(created))
	line("updated", formatTime(updated))
	for _, t := range []struct {
		k string
		v *time.Time
	}{{"completed", completed}, {"failed", failed}, {"canceled", canceled}} {
		if t.v != nil {
			line(t.k, formatTime(*t.v))
		}
	}
	if reason != nil {
		line("reason", *reason)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintln(w, "\nsteps")
	rows, err := pool.Query(ctx, `
SELECT step_seq, step_type, status, attempts, max_attempts, coalesce(last_error, ''), coalesce(locked_by, ''),
    locked_until, next_run_at, coalesce(waiting_event_type, ''), deadline_at
FROM workflow_step WHERE instance_id = $1 ORDER BY step_seq`, id)
	if err != nil {
		return chainError(err)
	}
	tw = newTable(w)
	fmt.Fprintln(tw, "SEQ\tTYPE\tSTATUS\tATTEMPTS\tLAST ERROR\tLOCKED BY\tLOCKED UNTIL\tNEXT RUN\tWAITING FOR\tDEADLINE")
	for rows.Next() {
		var (
			s, attempts, max                 int
			st, status, lastErr, by, waiting string
			until, next, deadline            *time.Time
		)
		if err := rows.Scan(&s, &st, &status, &attempts, &max, &lastErr, &by, &until, &next, &waiting, &deadline); err != nil {
			return chainError(err)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d/%d\t%s\t%s\t%s\t%s\t%s\t%s\n", s, st, status, attempts, max, orDash(lastErr),
			orDash(by), optTime(until), optTime(next), orDash(waiting), optTime(deadline))
	}
	if err := rows.Err(); err != nil {
		return chainError(err)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintln(w, "\nhistory")
	rows, err = pool.Query(ctx, `
SELECT at, 'instance', coalesce(from_state, ''), to_state, coalesce(event, ''), coalesce(worker, ''),
    CASE WHEN from_state IS NULL THEN 0 ELSE 2 END, id
FROM workflow_instance_status_log WHERE row_key = jsonb_build_object('id', $1::bigint)
UNION ALL
SELECT at, 'step ' || (row_key->>'step_seq'), coalesce(from_state, ''), to_state, coalesce(event, ''),
    coalesce(worker, ''), 1, id
FROM workflow_step_status_log
WHERE row_key IN (SELECT jsonb_build_object('instance_id', instance_id, 'step_seq', step_seq)
                  FROM workflow_step WHERE instance_id = $1)
ORDER BY 1, 7, 8`, id)
	if err != nil {
		return chainError(err)
	}
	tw = newTable(w)
	fmt.Fprintln(tw, "TIME\tOF\tFROM\tTO\tEVENT\tWORKER")
	for rows.Next() {
		var (
			at                          time.Time
			of, from, to, event, worker string
			rank                        int
			logID                       int64
		)
		if err := rows.Scan(&at, &of, &from, &to, &event, &worker, &rank, &logID); err != nil {
			return chainError(err)
		}
		if from == "" {
			from = "(inserted)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", formatTime(at), of, from, to, orDash(event), orDash(worker))
	}
	if err := rows.Err(); err != nil {
		return chainError(err)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintln(w, "\ninbox")
	rows, err = pool.Query(ctx, `
SELECT received_at, event_id, event_type, coalesce(step_seq::text, '-'), outcome, coalesce(payload::text, '')
FROM workflow_chain_inbox WHERE instance_id = $1 ORDER BY received_at, event_id`, id)
	if err != nil {
		return chainError(err)
	}
	if err := printRows(w, rows, "RECEIVED\tEVENT ID\tTYPE\tSTEP\tOUTCOME\tPAYLOAD"); err != nil {
		return err
	}
	fmt.Fprintln(w, "\noutbox")
	rows, err = pool.Query(ctx, `
SELECT created_at, id::text, step_seq::text, attempt::text, payload::text,
    CASE WHEN published_at IS NULL THEN '-' ELSE to_char(published_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') END
FROM workflow_chain_outbox WHERE instance_id = $1 ORDER BY id`, id)
	if err != nil {
		return chainError(err)
	}
	return printRows(w, rows, "CREATED\tID\tSTEP\tATTEMPT\tPAYLOAD\tPUBLISHED")
}

// printRows prints rows whose first column is a time and the others text,
// under header, or "none".
func printRows(w interface{ Write([]byte) (int, error) }, rows pgx.Rows, header string) error {
	tw := newTable(w)
	fmt.Fprintln(tw, header)
	n := 0
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return chainError(err)
		}
		cells := make([]string, len(vals))
		for i, v := range vals {
			switch v := v.(type) {
			case time.Time:
				cells[i] = formatTime(v)
			default:
				cells[i] = orDash(fmt.Sprint(v))
			}
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
		n++
	}
	if err := rows.Err(); err != nil {
		return chainError(err)
	}
	if n == 0 {
		_, err := fmt.Fprintln(w, "none")
		return err
	}
	return tw.Flush()
}

func optTime(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return formatTime(*t)
}

// chainError says what to do when the linear chain's tables are missing.
func chainError(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P01" {
		return fmt.Errorf("the linear chain's tables are missing (%s): they are created by linearchain.Migrate (runtime/linearchain), which make demo runs", pgErr.Message)
	}
	return fmt.Errorf("read the linear chain's tables: %w", err)
}
