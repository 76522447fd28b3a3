package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fsmgen/fsmgen/internal/cliout"
	"github.com/fsmgen/fsmgen/runtime/relay"
)

func outboxStatusCommand() *command {
	return &command{
		name:     "outbox status",
		synopsis: "[-database URL] [-o json]",
		summary:  "count the outbox's pending and published messages, show the oldest pending one",
		details: `Status prints how many outbox messages wait to be published (pending), how many
of those failed to publish at least once and wait for their next try
(retrying), how many were published, how many of those the broker
acknowledged as duplicates of a message it had stored already under the same
id (duplicates: expected after a relay died between a publish and its mark;
otherwise another publisher uses the same ids and the messages did not reach
the stream), and how many were moved to the dead letters because the broker
refused them, try after try (dead). Then the oldest pending message, the next
one a relay publishes: its id, run, type, topic, when it was written and how
long it has waited (by the database's clock), its failed tries, when it is
tried next and the last error; and the latest dead letters. A relay
(runtime/relay, with a publisher such as contrib/nats) publishes the outbox;
while none runs, pending only grows.
-o json prints {"pending", "retrying", "published", "duplicates", "dead", "now",
"oldest_pending", "dead_letters"}, oldest_pending null when nothing is pending.`,
		flags: func(fs *flag.FlagSet) { addDatabaseFlag(fs); addOutputFlag(fs) },
		run:   outboxStatus,
	}
}

func outboxRequeueCommand() *command {
	return &command{
		name:     "outbox requeue",
		synopsis: "[-database URL] [-dry-run] [-o json] all|ID...",
		summary:  "move dead letters back to be published",
		details: `Requeue moves dead letters (see outbox status) back to be published: those
whose ids are given, or every one with all. A relay tries each at its next
claim, before the later messages of its run that still wait, with its count of
rejections started again (rejected as many times in a row as the relay's
dead-letter limit, it is a dead letter again); its failed tries and last error
stay. Requeue once the cause is fixed (the stream created, the subject
allowed). An id that is not a dead letter is not counted.
-dry-run counts what would be requeued and changes nothing. It prints the count;
-o json prints {"requeued": N, "dry_run": BOOL}.`,
		flags: func(fs *flag.FlagSet) {
			addDatabaseFlag(fs)
			fs.Bool("dry-run", false, "count the dead letters that would be requeued; change nothing")
			addOutputFlag(fs)
		},
		run: outboxRequeue,
	}
}

func outboxRequeue(ctx context.Context, c *cli, fs *flag.FlagSet, args []string) error {
	var ids []int64
	switch {
	case len(args) == 0:
		return usagef(nil, "missing dead letter ids, or all")
	case len(args) == 1 && args[0] == "all":
	default:
		for _, a := range args {
			id, err := strconv.ParseInt(a, 10, 64)
			if err != nil || id < 1 {
				return usagef(nil, "%q is not an outbox message id (a positive number) nor all", a)
			}
			ids = append(ids, id)
		}
	}
	dry := fs.Lookup("dry-run").Value.String() == "true"
	pool, err := c.openPool(ctx, fs)
	if err != nil {
		return err
	}
	defer pool.Close()
	n, err := relay.Requeue(ctx, pool, ids, dry)
	if err != nil {
		return fmt.Errorf("outbox requeue: %w", outboxError(err))
	}
	if wantJSON(fs) {
		return cliout.WriteJSON(c.stdout, struct {
			Requeued int64 `json:"requeued"`
			DryRun   bool  `json:"dry_run"`
		}{n, dry})
	}
	if dry {
		fmt.Fprintf(c.stdout, "would requeue %d dead letters (dry run)\n", n)
		return nil
	}
	fmt.Fprintf(c.stdout, "requeued %d dead letters\n", n)
	return nil
}

type jsonOutboxStatus struct {
	Pending     int64               `json:"pending"`
	Retrying    int64               `json:"retrying"`
	Published   int64               `json:"published"`
	Duplicates  int64               `json:"duplicates"`
	Dead        int64               `json:"dead"`
	Now         *time.Time          `json:"now"`
	Oldest      *jsonPendingOutbox  `json:"oldest_pending"`
	DeadLetters []jsonPendingOutbox `json:"dead_letters"`
}

type jsonPendingOutbox struct {
	ID         int64           `json:"id"`
	RunID      string          `json:"run_id"`
	Type       string          `json:"workflow_type"`
	Attempt    int             `json:"attempt_no"`
	Topic      string          `json:"topic"`
	Payload    json.RawMessage `json:"payload"`
	CreatedAt  *time.Time      `json:"created_at"`
	AgeSeconds float64         `json:"age_seconds"`
	Tries      int             `json:"failed_tries"`
	LastTry    *time.Time      `json:"last_try_at"`
	NextTry    *time.Time      `json:"next_try_at"`
	LastError  string          `json:"last_error"`
	DeadAt     *time.Time      `json:"dead_at,omitempty"`
}

func jsonPendingOf(st relay.Status, o relay.Pending) jsonPendingOutbox {
	return jsonPendingOutbox{
		ID: o.ID, RunID: o.RunID, Type: o.Type, Attempt: o.Attempt, Topic: o.Topic, Payload: jsonDoc(o.Payload),
		CreatedAt: jsonTime(o.CreatedAt), AgeSeconds: st.Now.Sub(o.CreatedAt).Seconds(), Tries: o.Tries,
		LastTry: jsonTime(o.LastTry), NextTry: jsonTime(o.NextTry), LastError: o.LastError, DeadAt: jsonTime(o.DeadAt),
	}
}

func outboxStatus(ctx context.Context, c *cli, fs *flag.FlagSet, args []string) error {
	if len(args) > 0 {
		return usagef(nil, "unexpected arguments %q", args)
	}
	pool, err := c.openPool(ctx, fs)
	if err != nil {
		return err
	}
	defer pool.Close()
	st, err := relay.ReadStatus(ctx, pool)
	if err != nil {
		return fmt.Errorf("outbox status: %w", outboxError(err))
	}
	if wantJSON(fs) {
		out := jsonOutboxStatus{Pending: st.Pending, Retrying: st.Retrying, Published: st.Published,
			Duplicates: st.Duplicates, Dead: st.Dead, Now: jsonTime(st.Now), DeadLetters: []jsonPendingOutbox{}}
		if o := st.Oldest; o != nil {
			j := jsonPendingOf(st, *o)
			out.Oldest = &j
		}
		for _, d := range st.DeadLetters {
			out.DeadLetters = append(out.DeadLetters, jsonPendingOf(st, d))
		}
		return cliout.WriteJSON(c.stdout, out)
	}
	tw := newTable(c.stdout)
	fmt.Fprintf(tw, "pending\t%d\n", st.Pending)
	fmt.Fprintf(tw, "retrying\t%d\n", st.Retrying)
	fmt.Fprintf(tw, "published\t%d\n", st.Published)
	fmt.Fprintf(tw, "duplicates\t%d\n", st.Duplicates)
	fmt.Fprintf(tw, "dead\t%d\n", st.Dead)
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := printOldestPending(c, st); err != nil {
		return err
	}
	if len(st.DeadLetters) == 0 {
		return nil
	}
	fmt.Fprintf(c.stdout, "\ndead letters (the latest %d of %d):\n", len(st.DeadLetters), st.Dead)
	tw = newTable(c.stdout)
	fmt.Fprintln(tw, "  ID\tRUN\tTOPIC\tTRIES\tDEAD AT\tLAST ERROR")
	for _, d := range st.DeadLetters {
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%d\t%s\t%s\n", d.ID, d.RunID, d.Topic, d.Tries, formatTime(d.DeadAt), orDash(d.LastError))
	}
	return tw.Flush()
}

// printOldestPending prints the oldest pending message of st.
func printOldestPending(c *cli, st relay.Status) error {
	o := st.Oldest
	if o == nil {
		fmt.Fprintln(c.stdout, "\noldest pending: none")
		return nil
	}
	fmt.Fprintln(c.stdout, "\noldest pending:")
	tw := newTable(c.stdout)
	fmt.Fprintf(tw, "  id\t%d\n", o.ID)
	fmt.Fprintf(tw, "  run\t%s\n", o.RunID)
	fmt.Fprintf(tw, "  type\t%s (attempt %d)\n", o.Type, o.Attempt)
	fmt.Fprintf(tw, "  topic\t%s\n", o.Topic)
	fmt.Fprintf(tw, "  created\t%s (waiting %s)\n", formatTime(o.CreatedAt), roundAge(st.Age()))
	fmt.Fprintf(tw, "  failed tries\t%d\n", o.Tries)
	if o.Tries > 0 {
		next := "at the next claim"
		if !o.NextTry.IsZero() {
			next = formatTime(o.NextTry)
		}
		fmt.Fprintf(tw, "  last try\t%s\n", formatTime(o.LastTry))
		fmt.Fprintf(tw, "  next try\t%s\n", next)
		fmt.Fprintf(tw, "  last error\t%s\n", orDash(o.LastError))
	}
	return tw.Flush()
}

// roundAge rounds d to the second, or to the millisecond under a second.
func roundAge(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Second)
}

// outboxError words an error of the outbox's status for an operator: a
// database whose schema predates the relay's columns is told to migrate.
func outboxError(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "42703" { // undefined_column
		return &reworded{msg: "the database's schema is older than this fsmctl (" + pe.Message + "): run fsmctl migrate", err: err}
	}
	return operatorError(err)
}
