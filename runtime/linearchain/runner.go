package linearchain

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	cryptorand "crypto/rand"

	"github.com/jackc/pgx/v5"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/internal/pgerr"
	"github.com/fsmgen/fsmgen/runtime/internal/worker"
	"github.com/fsmgen/fsmgen/runtime/linearchain/step"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// WorkerID returns a new worker id, app:host:pid:suffix, with a random
// suffix that sets apart the workers of one process.
func WorkerID(app string) string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	var b [4]byte
	if _, err := cryptorand.Read(b[:]); err != nil {
		panic(err) // crypto/rand.Read does not fail on supported platforms
	}
	return fmt.Sprintf("%s:%s:%d:%s", app, host, os.Getpid(), hex.EncodeToString(b[:]))
}

// ClaimOptions are the parameters of one Claim.
type ClaimOptions struct {
	// WorkerID is the lease holder written to locked_by.
	WorkerID string
	// Lease is how long a claimed step stays RUNNING under WorkerID
	// (locked_until = now + Lease) unless extended; default 30s.
	Lease time.Duration
	// Heartbeat is how often Execute extends, by Lease, the leases of the
	// steps WorkerID holds while a handler runs; default Lease/3, and it
	// must be shorter than Lease.
	Heartbeat time.Duration
	// Batch is the most READY steps claimed (and, with ClaimTimedOut, the
	// most timed-out WAITING steps besides); default 16.
	Batch int
	// ClaimTimedOut also claims WAITING steps whose deadline_at has passed,
	// as TaskWaitingTimeout tasks (phase 3 of the tick, optional), so that
	// their handler decides. Without it (the default) such a step is
	// timed out by the claim itself: DEAD with last_error
	// 'WAITING_TIMEOUT', its instance FAILED. Either way no step waits
	// past its deadline; the workers that run one workflow should agree
	// on this option.
	ClaimTimedOut bool
}

func (o ClaimOptions) withDefaults() ClaimOptions {
	if o.Lease <= 0 {
		o.Lease = 30 * time.Second
	}
	if o.Batch <= 0 {
		o.Batch = 16
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = o.Lease / 3
	}
	return o
}

// Claimed is what one Claim did: the steps whose expired leases it
// recovered, and the tasks it claimed.
type Claimed struct {
	Recovered int
	// Exhausted is how many of the Recovered steps had no attempt left and
	// ended DEAD, failing their instances.
	Exhausted int
	// TimedOut is how many WAITING steps past their deadline this Claim
	// ended DEAD (without ClaimTimedOut), failing their instances.
	TimedOut int
	Tasks    []Task
}

// Claim is the first phases of a tick, in one statement: lease recovery
// (every RUNNING step whose locked_until < now gets attempts + 1,
// last_error = 'LEASE_EXPIRED' and its lease cleared, and goes back to
// READY with next_run_at = now while attempts + 1 < max_attempts; a step
// whose lease expired on its last allowed try is exhausted, as a Retry
// would be: it goes DEAD, logged as RecoverLease, and its instance
// FAILED), the deadline of WAITING steps whose deadline_at <= now when
// ClaimTimedOut is off (DEAD, last_error 'WAITING_TIMEOUT', the instance
// FAILED), then the batch claim (READY steps with next_run_at <= now,
// oldest first, FOR UPDATE SKIP LOCKED, become RUNNING with locked_by =
// WorkerID and locked_until = now + Lease) and, with ClaimTimedOut, the
// claim of WAITING steps with deadline_at <= now. Claim takes only steps
// this engine can run: those of a workflow type and version registered
// here whose step type has a handler here. Steps of other workflows, of
// versions or step types this engine does not know (another application,
// or the newer workers of a rolling deploy) are left to the engines that
// do, with their attempts untouched. Steps of an instance that is not
// RUNNING (cancelled) are not claimed. The caller executes the tasks
// (Execute) before their lease runs out.
func (e *Engine) Claim(ctx context.Context, o ClaimOptions) (Claimed, error) {
	o = o.withDefaults()
	if o.WorkerID == "" {
		return Claimed{}, errors.New("linearchain: claim: no worker id")
	}
	if o.Heartbeat >= o.Lease {
		return Claimed{}, fmt.Errorf("linearchain: claim: heartbeat %v is not shorter than the lease %v", o.Heartbeat, o.Lease)
	}
	claimed := time.Now()
	types, versions, stepTypes := e.handled()
	rows, err := e.pool.Query(ctx, claimSQL, o.WorkerID, o.Lease.Microseconds(), o.Batch, o.ClaimTimedOut,
		types, versions, stepTypes)
	if err != nil {
		return Claimed{}, fmt.Errorf("linearchain: claim by %s: %w", o.WorkerID, translate(err))
	}
	var out Claimed
	for rows.Next() {
		var (
			t                          Task
			id                         *int64
			seq, attempts, maxAttempts *int
			version                    *int
			stepType, taskType, typ    *string
			waiting, key, evID, evType *string
			evPayload                  []byte
			until                      *time.Time
			dbNow                      time.Time
		)
		if err := rows.Scan(&out.Recovered, &out.Exhausted, &out.TimedOut, &id, &seq, &stepType, &attempts, &maxAttempts, &until,
			&taskType, &waiting, &typ, &version, &key, &t.Input, &evID, &evType, &evPayload, &dbNow); err != nil {
			rows.Close()
			return Claimed{}, fmt.Errorf("linearchain: claim by %s: %w", o.WorkerID, err)
		}
		if id == nil {
			continue // the row that only counts recovered leases
		}
		t.InstanceID, t.StepSeq, t.StepType, t.TaskType = *id, *seq, *stepType, TaskType(*taskType)
		t.Attempts, t.MaxAttempts, t.LockedUntil, t.WorkerID = *attempts, *maxAttempts, *until, o.WorkerID
		t.WorkflowType, t.WorkflowVersion, t.InstanceKey = *typ, *version, *key
		if waiting != nil {
			t.WaitingEventType = *waiting
		}
		if evID != nil {
			t.Event = &Event{ID: *evID, Type: *evType, Payload: evPayload}
		}
		// The lease's end on this process's clock: as far from now as
		// locked_until is from the database's now.
		t.deadline = claimed.Add(t.LockedUntil.Sub(dbNow))
		t.lease, t.heartbeat = o.Lease, o.Heartbeat
		out.Tasks = append(out.Tasks, t)
	}
	if err := rows.Err(); err != nil {
		return Claimed{}, fmt.Errorf("linearchain: claim by %s: %w", o.WorkerID, translate(err))
	}
	return out, nil
}

// runnable is the condition of a step s a worker may claim: its instance
// is RUNNING, and the worker's engine has a handler for the instance's
// workflow type and version and the step's type (in claimSQL's handled).
// It is a scalar subquery so that the planner cannot turn it into a join
// driven from the instances: whatever the table statistics, the claim
// scans the partial index of the steps' status and looks each instance up
// by its key.
const runnable = `(SELECT i.status = 'RUNNING' AND (i.workflow_type, i.workflow_version, s.step_type) IN (SELECT * FROM handled)
          FROM workflow_instance i WHERE i.id = s.instance_id)`

// claimSQL: $1 worker, $2 lease in microseconds, $3 batch, $4 claim
// timed-out WAITING steps, $5-$7 the columns of Engine.handled. Its rows are the claimed tasks, and one more
// with a NULL instance id when it claimed nothing, so that the count of
// recovered leases always arrives.
const claimSQL = `
WITH cfg AS (
    SELECT set_config('fsmgen.event', 'RecoverLease', true) AS e, set_config('fsmgen.worker', $1, true) AS w
), handled AS MATERIALIZED (
    SELECT * FROM unnest($5::text[], $6::int[], $7::text[]) AS h (workflow_type, workflow_version, step_type)
), expired AS (
    SELECT instance_id, step_seq FROM workflow_step
    WHERE status = 'RUNNING' AND locked_until < workflow_now()
    ORDER BY locked_until
    LIMIT 100
    FOR UPDATE SKIP LOCKED
), recovered AS (
    UPDATE workflow_step s
    SET status = CASE WHEN s.attempts + 1 < s.max_attempts THEN 'READY' ELSE 'DEAD' END,
        attempts = s.attempts + 1,
        next_run_at = CASE WHEN s.attempts + 1 < s.max_attempts THEN workflow_now() ELSE s.next_run_at END,
        last_error = 'LEASE_EXPIRED', locked_by = NULL, locked_until = NULL, updated_at = workflow_now()
    FROM expired, cfg
    WHERE s.instance_id = expired.instance_id AND s.step_seq = expired.step_seq
    RETURNING s.instance_id, s.status
), past_deadline AS (
    SELECT s.instance_id, s.step_seq FROM workflow_step s
    WHERE NOT $4 AND s.status = 'WAITING' AND s.deadline_at <= workflow_now()
      AND ` + runnable + `
    ORDER BY s.deadline_at
    LIMIT 100
    FOR UPDATE OF s SKIP LOCKED
), timed_out_dead AS (
    UPDATE workflow_step s
    SET status = 'DEAD', last_error = 'WAITING_TIMEOUT', updated_at = workflow_now()
    FROM past_deadline p, cfg
    WHERE s.instance_id = p.instance_id AND s.step_seq = p.step_seq
    RETURNING s.instance_id
), failed AS (
    UPDATE workflow_instance i SET status = 'FAILED', failed_at = workflow_now(), updated_at = workflow_now()
    FROM (SELECT instance_id FROM recovered WHERE status = 'DEAD' UNION SELECT instance_id FROM timed_out_dead) d
    WHERE i.id = d.instance_id AND i.status = 'RUNNING'
), due AS (
    SELECT s.instance_id, s.step_seq, 'RUN' AS task_type FROM workflow_step s
    WHERE s.status = 'READY' AND s.next_run_at <= workflow_now()
      AND ` + runnable + `
    ORDER BY s.next_run_at
    LIMIT $3
    FOR UPDATE OF s SKIP LOCKED
), timed_out AS (
    SELECT s.instance_id, s.step_seq, 'WAITING_TIMEOUT' AS task_type FROM workflow_step s
    WHERE $4 AND s.status = 'WAITING' AND s.deadline_at <= workflow_now()
      AND ` + runnable + `
    ORDER BY s.deadline_at
    LIMIT $3
    FOR UPDATE OF s SKIP LOCKED
), claimable AS (
    SELECT * FROM due UNION ALL SELECT * FROM timed_out
), claimed AS (
    UPDATE workflow_step s
    SET status = 'RUNNING', locked_by = $1, locked_until = workflow_now() + $2::bigint * interval '1 microsecond',
        updated_at = workflow_now()
    FROM claimable c, cfg
    WHERE s.instance_id = c.instance_id AND s.step_seq = c.step_seq
    RETURNING s.instance_id, s.step_seq, s.step_type, s.attempts, s.max_attempts, s.locked_until,
        c.task_type, s.waiting_event_type
), counted AS (
    SELECT count(*)::int AS n, count(*) FILTER (WHERE status = 'DEAD')::int AS dead,
        (SELECT count(*)::int FROM timed_out_dead) AS timed_out
    FROM recovered
)
SELECT counted.n, counted.dead, counted.timed_out, c.instance_id, c.step_seq, c.step_type, c.attempts, c.max_attempts, c.locked_until,
    c.task_type, c.waiting_event_type, i.workflow_type, i.workflow_version, i.instance_key, i.input,
    ev.event_id, ev.event_type, ev.payload, workflow_now()
FROM counted
LEFT JOIN claimed c ON true
LEFT JOIN workflow_instance i ON i.id = c.instance_id
LEFT JOIN LATERAL (
    SELECT x.event_id, x.event_type, x.payload FROM workflow_chain_inbox x
    WHERE x.instance_id = c.instance_id AND x.step_seq = c.step_seq AND x.outcome = 'applied'
    ORDER BY x.applied_at DESC NULLS LAST, x.received_at DESC, x.event_id DESC
    LIMIT 1
) ev ON true
ORDER BY c.instance_id, c.step_seq`

// Applied is what a result did, as Apply and Execute report it.
type Applied struct {
	Task Task
	// Result is the handler's result as applied.
	Result Result
	// Step is the step's new status: DONE, WAITING, READY (a retry
	// scheduled, or a Waiting whose event was already in the inbox, which
	// woke the step at once) or DEAD (Dead, or a retry exhausted).
	Step step.State
	// Instance is the instance's status after the write: RUNNING,
	// COMPLETED or FAILED; for a CANCELED instance, CANCELED.
	Instance string
	// Outbox is how many outbound events were written.
	Outbox int
}

// stepGuards are the step machine's guards in Apply. The lease conditions
// (LeaseHeld, and the lease part of AttemptsLeft) are the database's: the
// writes carry them in their WHERE clauses and fail with ErrLeaseLost. The
// attempts part of AttemptsLeft is read from the claimed row, which no one
// else may change while the lease is held; the write checks it again.
type stepGuards struct{ attemptsLeft bool }

func (stepGuards) Due(context.Context, step.Claim) bool                         { return true }
func (stepGuards) DeadlinePassed(context.Context, step.Event) bool              { return true }
func (stepGuards) LeaseExpired(context.Context, step.RecoverLease) bool         { return true }
func (stepGuards) RecoveryAttemptsLeft(context.Context, step.RecoverLease) bool { return true }
func (stepGuards) LeaseHeld(context.Context, step.Event) bool                   { return true }
func (g stepGuards) AttemptsLeft(context.Context, step.Retry) bool              { return g.attemptsLeft }
func (stepGuards) WaitingEventTypeMatches(context.Context, step.WakeUp) bool    { return true }

// Apply writes the result r of the claimed task t, in one transaction, by
// firing r's event on the generated step machine in RUNNING, whose
// recorder is the write: A) Completed: the step DONE, the next step READY
// and the instance pointed at it, or the instance COMPLETED when the
// database holds no step t.StepSeq + 1; B) Waiting: the step WAITING with
// waiting_event_type and deadline_at = now + timeout, next_run_at cleared,
// the outbound events in the outbox, and, when an event of that type
// arrived early and waits in the inbox, the oldest such event applied at
// once (WakeUp: READY); C) Retry: the step READY with
// attempts + 1, next_run_at = now + backoff and last_error, when attempts
// + 1 < max_attempts, else D; D) Dead: the step DEAD with attempts + 1 and
// last_error, the instance FAILED. Every write requires status RUNNING,
// locked_by = t.WorkerID and locked_until >= now by the database clock;
// otherwise nothing changes and the error matches ErrLeaseLost.
func (e *Engine) Apply(ctx context.Context, t Task, r Result) (Applied, error) {
	return e.apply(ctx, t, r, t.deadline)
}

// apply is Apply for a lease that holds until until, on this process's
// clock: a write lost with its connection is tried again until then.
func (e *Engine) apply(ctx context.Context, t Task, r Result, until time.Time) (Applied, error) {
	if r.ev == nil {
		r = Retry(defaultBackoff(t), "handler returned the zero Result")
	}
	out := Applied{Task: t, Result: r}
	var woken bool
	rec := runtime.RecorderFunc(func(ctx context.Context, tr runtime.Transition) (err error) {
		woken, err = e.write(ctx, t, tr, r, &out, until)
		return err
	})
	m := step.New(stepGuards{attemptsLeft: t.Attempts+1 < t.MaxAttempts}, step.WithState(step.StateRunning), step.WithRecorder(rec))
	v, _ := m.InRunning()
	var err error
	switch ev := r.ev.(type) {
	case step.Completed:
		err = v.Completed(ctx, ev)
	case step.Waiting:
		err = v.Waiting(ctx, ev)
	case step.Retry:
		err = v.Retry(ctx, ev)
	case step.Dead:
		err = v.Dead(ctx, ev)
	default:
		err = fmt.Errorf("result %s is not a handler's result", ev.EventName())
	}
	if err != nil {
		return Applied{}, fmt.Errorf("linearchain: instance %d step %d (%s) %s by %s: %w",
			t.InstanceID, t.StepSeq, t.StepType, r.ev.EventName(), t.WorkerID, err)
	}
	out.Step = m.State()
	if woken {
		out.Step = step.StateReady
	}
	if out.Step == step.StateReady || (out.Step == step.StateDone && out.Instance == "RUNNING") {
		e.notify() // a step of this instance is runnable now
	}
	return out, nil
}

// write is the step machine's recorder in Apply: one statement per
// transition of the table, each carrying the lease condition. A Waiting
// also applies, in the same transaction, an early event of its type that
// is in the inbox; woken says it did. A write the server could not serve
// (a lost connection) is tried again on a new one while the lease holds
// (until, on this process's clock); when a try lost with its connection
// had committed, the next is refused, and write finds the transition in
// the step's status log and reports it written.
func (e *Engine) write(ctx context.Context, t Task, tr runtime.Transition, r Result, out *Applied, until time.Time) (woken bool, err error) {
	var (
		sql  string
		args = []any{t.InstanceID, t.StepSeq, t.WorkerID, tr.Event}
	)
	switch ev := r.ev.(type) {
	case step.Completed:
		sql = completedSQL
	case step.Waiting:
		outbound := ev.OutboundEvents
		if outbound == nil {
			outbound = []json.RawMessage{}
		}
		for i, o := range outbound {
			if !json.Valid(o) {
				return false, fmt.Errorf("outbound event %d is not valid JSON", i)
			}
		}
		sql = waitingSQL
		args = append(args, ev.WaitingEventType, ev.Timeout.Microseconds(), outbound)
	case step.Retry:
		if tr.To == step.StateReady.String() {
			sql = retrySQL
			args = append(args, ev.LastError, ev.Backoff.Microseconds())
		} else {
			sql = exhaustedSQL
			args = append(args, ev.LastError)
		}
	case step.Dead:
		sql = deadSQL
		args = append(args, ev.LastError)
	}
	var (
		changed  int
		instance *string
		lostConn bool
	)
	scan := func(row pgx.Row) error { return row.Scan(&changed, &instance, &out.Outbox) }
	lostConn, err = worker.Statements.Retry(ctx, until, func() error {
		var err error
		if w, ok := r.ev.(step.Waiting); ok || tr.Actions != nil {
			err = pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
				if ok {
					if _, err := tx.Exec(ctx, lockInstanceEvents, t.InstanceID); err != nil {
						return err
					}
				}
				if err := scan(tx.QueryRow(ctx, sql, args...)); err != nil || changed == 0 {
					return err
				}
				if tr.Actions != nil {
					// Entry and exit actions, in the transition's transaction.
					if err := tr.Actions(store.WithTx(ctx, tx)); err != nil {
						return err
					}
				}
				if !ok {
					return nil
				}
				var n int
				err := tx.QueryRow(ctx, wakeEarlySQL, t.InstanceID, t.StepSeq, t.WorkerID, w.WaitingEventType).Scan(&n)
				woken = n == 1
				return err
			})
		} else {
			err = scan(e.pool.QueryRow(ctx, sql, args...))
		}
		return err
	}, nil)
	if err != nil {
		return false, translate(err)
	}
	if changed == 0 && lostConn {
		var written bool
		_, err := worker.Statements.Retry(ctx, until, func() error {
			return e.pool.QueryRow(ctx, writtenSQL, t.InstanceID, t.StepSeq, t.WorkerID, tr.To, tr.Event).Scan(&written, &woken, &instance)
		}, nil)
		if err != nil {
			return false, translate(err)
		}
		if written {
			changed = 1
			if w, ok := r.ev.(step.Waiting); ok {
				out.Outbox = len(w.OutboundEvents)
			}
		}
	}
	if changed == 0 {
		return false, fmt.Errorf("%w: the step is not RUNNING under %s with an unexpired lease; nothing changed", ErrLeaseLost, t.WorkerID)
	}
	if instance != nil {
		out.Instance = *instance
	}
	return woken, nil
}

// writtenSQL finds in the status log of step ($1 instance, $2 step_seq)
// whether worker $3, since it last claimed the step, moved it from RUNNING
// to $4 on event $5, and whether it then woke it (an early event applied
// by a Waiting); with the instance's status.
const writtenSQL = `
WITH k AS (
    SELECT jsonb_build_object('instance_id', $1::bigint, 'step_seq', $2::int) AS key
), since AS (
    SELECT coalesce(max(l.id), 0) AS id FROM workflow_step_status_log l, k
    WHERE l.row_key = k.key AND l.to_state = 'RUNNING' AND l.worker = $3
)
SELECT coalesce(bool_or(l.from_state = 'RUNNING' AND l.to_state = $4 AND l.event = $5), false),
       coalesce(bool_or(l.from_state = 'WAITING' AND l.to_state = 'READY' AND l.event = 'WakeUp'), false),
       (SELECT i.status FROM workflow_instance i WHERE i.id = $1)
FROM workflow_step_status_log l, k, since
WHERE l.row_key = k.key AND l.worker = $3 AND l.id > since.id`

// extendSQL extends by $2 microseconds the lease of every step worker $1
// holds (the task running and those of its batch waiting their turn), and
// reports whether step ($3 instance, $4 step_seq) is among them.
const extendSQL = `
WITH ext AS (
    UPDATE workflow_step
    SET locked_until = workflow_now() + $2::bigint * interval '1 microsecond'
    WHERE status = 'RUNNING' AND locked_by = $1 AND locked_until >= workflow_now()
    RETURNING instance_id, step_seq
)
SELECT count(*) FILTER (WHERE instance_id = $3 AND step_seq = $4) > 0 FROM ext`

// The result writes: $1 instance, $2 step_seq, $3 worker, $4 event name;
// each returns (steps changed, instance status, outbox rows).
const leaseHeld = `s.instance_id = $1 AND s.step_seq = $2 AND s.status = 'RUNNING' AND s.locked_by = $3
      AND s.locked_until >= workflow_now()`

const settings = `cfg AS (
    SELECT set_config('fsmgen.event', $4, true) AS e, set_config('fsmgen.worker', $3, true) AS w
)`

// completedSQL is A): the step DONE; the next step, if the database holds
// one, READY (for a RUNNING instance) and the instance pointed at it; else
// the instance COMPLETED.
const completedSQL = `
WITH ` + settings + `, cur AS (
    UPDATE workflow_step s
    SET status = 'DONE', locked_by = NULL, locked_until = NULL, waiting_event_type = NULL, deadline_at = NULL,
        updated_at = workflow_now()
    FROM cfg
    WHERE ` + leaseHeld + `
    RETURNING s.instance_id, s.step_seq
), nxt AS (
    SELECT n.step_seq, n.step_type FROM workflow_step n, cur
    WHERE n.instance_id = cur.instance_id AND n.step_seq = cur.step_seq + 1
), inst AS (
    UPDATE workflow_instance i
    SET status = CASE WHEN nxt.step_seq IS NULL THEN 'COMPLETED' ELSE 'RUNNING' END,
        current_step_seq = coalesce(nxt.step_seq, i.current_step_seq),
        current_step_type = coalesce(nxt.step_type, i.current_step_type),
        completed_at = CASE WHEN nxt.step_seq IS NULL THEN workflow_now() END,
        updated_at = workflow_now()
    FROM cur LEFT JOIN nxt ON true
    WHERE i.id = cur.instance_id AND i.status = 'RUNNING'
    RETURNING i.status
), act AS (
    UPDATE workflow_step n
    SET status = 'READY', next_run_at = workflow_now(), updated_at = workflow_now()
    FROM cur, nxt, inst
    WHERE n.instance_id = cur.instance_id AND n.step_seq = nxt.step_seq AND n.status = 'PENDING'
    RETURNING n.step_seq
)
SELECT (SELECT count(*)::int FROM cur),
       coalesce((SELECT status FROM inst), (SELECT i.status FROM workflow_instance i, cur WHERE i.id = cur.instance_id)),
       (SELECT count(*)::int FROM act)`

// waitingSQL is B): $5 waiting_event_type, $6 timeout in microseconds, $7
// the outbound events.
const waitingSQL = `
WITH ` + settings + `, cur AS (
    UPDATE workflow_step s
    SET status = 'WAITING', waiting_event_type = $5,
        deadline_at = workflow_now() + $6::bigint * interval '1 microsecond',
        next_run_at = NULL, locked_by = NULL, locked_until = NULL, updated_at = workflow_now()
    FROM cfg
    WHERE ` + leaseHeld + `
    RETURNING s.instance_id, s.step_seq, s.attempts
), ob AS (
    INSERT INTO workflow_chain_outbox (instance_id, step_seq, attempt, payload, created_at)
    SELECT cur.instance_id, cur.step_seq, cur.attempts, p, workflow_now()
    FROM cur, unnest($7::jsonb[]) WITH ORDINALITY AS o (p, n)
    ORDER BY o.n
    RETURNING 1
)
SELECT (SELECT count(*)::int FROM cur),
       (SELECT i.status FROM workflow_instance i, cur WHERE i.id = cur.instance_id),
       (SELECT count(*)::int FROM ob)`

// lockInstanceEvents serializes, per instance ($1), the deliveries of
// external events (Deliver) with the Waiting writes that take early ones,
// so that an event is either seen by the wait or finds the step waiting.
const lockInstanceEvents = `SELECT pg_advisory_xact_lock(` + instanceEventsLockKey + `, hashint8($1::bigint))`

// instanceEventsLockKey is the first key of lockInstanceEvents ("lcev" in
// ASCII).
const instanceEventsLockKey = "1818453366"

// wakeEarlySQL applies to the step that has just started WAITING ($1
// instance, $2 step_seq, $3 worker, $4 waiting_event_type) the oldest early
// event of its type in the inbox, if any: WakeUp, WAITING -> READY, and
// the event applied to this step. It returns how many steps it woke.
const wakeEarlySQL = `
WITH cfg AS (
    SELECT set_config('fsmgen.event', 'WakeUp', true) AS e, set_config('fsmgen.worker', $3, true) AS w
), ev AS (
    SELECT x.event_id FROM workflow_chain_inbox x
    WHERE x.instance_id = $1 AND x.event_type = $4 AND x.outcome = 'early'
    ORDER BY x.received_at, x.event_id
    LIMIT 1
    FOR UPDATE
), woke AS (
    UPDATE workflow_step s
    SET status = 'READY', next_run_at = workflow_now(), waiting_event_type = NULL, deadline_at = NULL,
        updated_at = workflow_now()
    FROM ev, cfg
    WHERE s.instance_id = $1 AND s.step_seq = $2 AND s.status = 'WAITING' AND s.waiting_event_type = $4
    RETURNING s.step_seq
), applied AS (
    UPDATE workflow_chain_inbox x SET outcome = 'applied', step_seq = woke.step_seq, applied_at = workflow_now()
    FROM ev, woke
    WHERE x.event_id = ev.event_id
)
SELECT count(*)::int FROM woke`

// retrySQL is C) scheduled: $5 last_error, $6 backoff in microseconds;
// only while attempts + 1 < max_attempts.
const retrySQL = `
WITH ` + settings + `, cur AS (
    UPDATE workflow_step s
    SET status = 'READY', attempts = s.attempts + 1,
        next_run_at = workflow_now() + $6::bigint * interval '1 microsecond', last_error = $5,
        locked_by = NULL, locked_until = NULL, waiting_event_type = NULL, deadline_at = NULL,
        updated_at = workflow_now()
    FROM cfg
    WHERE ` + leaseHeld + ` AND s.attempts + 1 < s.max_attempts
    RETURNING s.instance_id
)
SELECT (SELECT count(*)::int FROM cur),
       (SELECT i.status FROM workflow_instance i, cur WHERE i.id = cur.instance_id), 0`

// deadStatement is D): $5 last_error, with extra, a condition on the step.
func deadStatement(extra string) string {
	return `
WITH ` + settings + `, cur AS (
    UPDATE workflow_step s
    SET status = 'DEAD', attempts = s.attempts + 1, last_error = $5,
        locked_by = NULL, locked_until = NULL, waiting_event_type = NULL, deadline_at = NULL,
        updated_at = workflow_now()
    FROM cfg
    WHERE ` + leaseHeld + extra + `
    RETURNING s.instance_id
), inst AS (
    UPDATE workflow_instance i SET status = 'FAILED', failed_at = workflow_now(), updated_at = workflow_now()
    FROM cur
    WHERE i.id = cur.instance_id AND i.status = 'RUNNING'
    RETURNING i.status
)
SELECT (SELECT count(*)::int FROM cur),
       coalesce((SELECT status FROM inst), (SELECT i.status FROM workflow_instance i, cur WHERE i.id = cur.instance_id)), 0`
}

var (
	deadSQL = deadStatement("")
	// exhaustedSQL is C) exhausted, D) for a Retry: only when attempts + 1
	// >= max_attempts.
	exhaustedSQL = deadStatement(" AND s.attempts + 1 >= s.max_attempts")
)

// Execute runs the handler of the claimed task t and applies its result
// (Apply). While the handler runs, a heartbeat extends by the claim's
// Lease, every Heartbeat, the leases of the steps t.WorkerID holds (this
// one and those of its batch waiting their turn); the handler's context is
// cancelled, with a cause matching ErrLeaseLost, when the lease is lost
// (another worker recovered the step) or when no extension succeeded for
// a whole lease, and nothing is written then. A result whose write is lost
// with its connection is written again on a new one while the lease
// holds. Claim only hands out tasks this engine has a handler for; a task
// with none here (one that another engine claimed) gives an error
// matching ErrUnknownWorkflow and changes nothing.
func (e *Engine) Execute(ctx context.Context, t Task) (Applied, error) {
	h := e.handler(t.WorkflowType, t.WorkflowVersion, t.StepType)
	if h == nil {
		return Applied{}, fmt.Errorf("linearchain: instance %d step %d: no handler for %s v%d step %s: %w",
			t.InstanceID, t.StepSeq, t.WorkflowType, t.WorkflowVersion, t.StepType, ErrUnknownWorkflow)
	}
	until := t.deadline
	hctx, cancel := context.WithCancelCause(ctx)
	stop := func() {}
	switch {
	case t.heartbeat > 0:
		stop = e.heartbeat(t, &until).Start(hctx, cancel)
	case !until.IsZero():
		var c context.CancelFunc
		hctx, c = context.WithDeadline(hctx, until)
		defer c()
	}
	r := call(hctx, h, t)
	stop()
	cause := context.Cause(hctx)
	cancel(nil)
	if errors.Is(cause, ErrLeaseLost) {
		return Applied{}, fmt.Errorf("linearchain: instance %d step %d (%s) by %s: %w", t.InstanceID, t.StepSeq, t.StepType, t.WorkerID, cause)
	}
	return e.apply(ctx, t, r, until)
}

// heartbeat is the lease's heartbeat while t's handler runs; each
// extension moves until, the lease's end on this process's clock.
func (e *Engine) heartbeat(t Task, until *time.Time) worker.Heartbeat {
	return worker.Heartbeat{
		Every: t.heartbeat, Lease: t.lease,
		Extend: func(ctx context.Context) error {
			began := time.Now()
			var held bool
			if err := e.pool.QueryRow(ctx, extendSQL, t.WorkerID, t.lease.Microseconds(), t.InstanceID, t.StepSeq).Scan(&held); err != nil {
				return translate(err)
			}
			if !held {
				return fmt.Errorf("%w: the step is no longer RUNNING under %s", ErrLeaseLost, t.WorkerID)
			}
			*until = began.Add(t.lease)
			return nil
		},
		Lost: func(err error) bool { return errors.Is(err, ErrLeaseLost) },
		Expired: func(err error) error {
			return fmt.Errorf("%w: no extension succeeded for %v: %w", ErrLeaseLost, t.lease, err)
		},
	}
}

// defaultBackoff is the backoff of the Retry a panicking handler of t, or
// one returning the zero Result, is taken to have returned.
func defaultBackoff(t Task) time.Duration {
	return DefaultBackoff.Jittered(DefaultBackoff.Delay(t.Attempts+1), rand.Float64())
}

// call runs h, taking a panic as a Retry.
func call(ctx context.Context, h Handler, t Task) (r Result) {
	defer func() {
		if p := recover(); p != nil {
			r = Retry(defaultBackoff(t), fmt.Sprintf("panic: %v", p))
		}
	}()
	return h(ctx, t)
}

// RunOptions configure Run.
type RunOptions struct {
	// App is the first part of the workers' ids (WorkerID); default
	// "linearchain".
	App string
	// Workers is how many workers run, each with its own worker id,
	// claiming and executing in turn; default 1.
	Workers int
	// Lease, Heartbeat, Batch and ClaimTimedOut are those of each Claim
	// (ClaimOptions).
	Lease, Heartbeat time.Duration
	Batch            int
	ClaimTimedOut    bool
	// Poll is how long an idle worker waits before claiming again, unless
	// this process makes a step runnable first; default 100ms, with up to
	// 20% added at random.
	Poll time.Duration
	// OnClaimed, when set, is called after each Claim that did something
	// (recovered a lease, timed out a wait or claimed a task), from the
	// worker that made it, before its tasks run.
	OnClaimed func(Claimed)
	// OnApplied, when set, is called after each result is written, from
	// the worker that wrote it.
	OnApplied func(Applied)
	// OnError, when set, is called with each error of a claim or a write
	// (ErrLeaseLost included); the worker goes on.
	OnError func(error)
}

// Run runs workers until ctx is done, then returns ctx's error after every
// worker has finished the task it was executing. Each worker loops over a
// tick: Claim (lease recovery, batch claim, optionally timed-out WAITING
// steps), then Execute each claimed task in order; it waits Poll only when
// a tick found nothing.
func (e *Engine) Run(ctx context.Context, o RunOptions) error {
	if o.App == "" {
		o.App = "linearchain"
	}
	if o.Workers <= 0 {
		o.Workers = 1
	}
	if o.Poll <= 0 {
		o.Poll = 100 * time.Millisecond
	}
	var wg sync.WaitGroup
	for range o.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.work(ctx, o, ClaimOptions{WorkerID: WorkerID(o.App), Lease: o.Lease, Heartbeat: o.Heartbeat, Batch: o.Batch, ClaimTimedOut: o.ClaimTimedOut})
		}()
	}
	wg.Wait()
	return ctx.Err()
}

func (e *Engine) work(ctx context.Context, o RunOptions, co ClaimOptions) {
	report := func(err error) {
		if o.OnError != nil && ctx.Err() == nil {
			o.OnError(err)
		}
	}
	// reclaim is how soon to claim again after a claim the server could
	// not serve.
	var reclaim time.Duration
	for ctx.Err() == nil {
		wake := e.woken()
		c, err := e.Claim(ctx, co)
		if err != nil {
			report(err)
		}
		if pgerr.Unavailable(err) {
			reclaim = worker.Statements.Next(reclaim)
		} else {
			reclaim = 0
		}
		busy := len(c.Tasks) > 0 || c.Recovered > 0 || c.TimedOut > 0
		if busy && o.OnClaimed != nil {
			o.OnClaimed(c)
		}
		for _, t := range c.Tasks {
			// A claimed task runs even when ctx ends meanwhile: its lease
			// would otherwise have to expire first.
			a, err := e.Execute(context.WithoutCancel(ctx), t)
			if err != nil {
				report(err)
				continue
			}
			if o.OnApplied != nil {
				o.OnApplied(a)
			}
		}
		if busy {
			continue
		}
		wait := o.Poll + time.Duration(rand.Int64N(int64(o.Poll)/5+1))
		if reclaim > 0 {
			wait = min(wait, reclaim)
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-wake:
		case <-timer.C:
		}
		timer.Stop()
	}
}
