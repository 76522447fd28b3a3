package linearchain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/linearchain/instance"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// instanceGuards are the instance machine's guards in Cancel, which does
// not fire StepCompleted.
type instanceGuards struct{}

func (instanceGuards) NextStepExists(context.Context, instance.StepCompleted) bool { return false }

// Cancel cancels a RUNNING instance: it fires the instance machine's
// cancel event (Cancel, RUNNING -> CANCELED) with reason, recording
// canceled_at and cancel_reason. Its steps are left as they are; none of
// them is claimed again, a step running now may still write its result to
// its own row, and no next step is activated. An instance that has ended
// gives an error matching ErrNotRunning (and runtime.ErrIllegalTransition);
// an unknown id, ErrInstanceNotFound.
func (e *Engine) Cancel(ctx context.Context, instanceID int64, reason string) error {
	err := pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
		var status string
		err := tx.QueryRow(ctx, `SELECT status FROM workflow_instance WHERE id = $1 FOR UPDATE`, instanceID).Scan(&status)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrInstanceNotFound
		}
		if err != nil {
			return err
		}
		st, err := instance.ParseState(status)
		if err != nil {
			return err
		}
		rec := runtime.RecorderFunc(func(ctx context.Context, tr runtime.Transition) error {
			_, err := tx.Exec(ctx, `
WITH cfg AS (SELECT set_config('fsmgen.event', $2, true) AS e, set_config('fsmgen.worker', '', true) AS w)
UPDATE workflow_instance SET status = $3, canceled_at = workflow_now(), cancel_reason = $4, updated_at = workflow_now()
FROM cfg WHERE id = $1 AND status = $5`, instanceID, tr.Event, tr.To, reason, tr.From)
			if err == nil && tr.Actions != nil {
				err = tr.Actions(store.WithTx(ctx, tx))
			}
			return translate(err)
		})
		m := instance.New(instanceGuards{}, instance.WithState(st), instance.WithRecorder(rec))
		if err := m.Cancel(ctx, instance.Cancel{Reason: reason}); err != nil {
			if errors.Is(err, runtime.ErrIllegalTransition) {
				return fmt.Errorf("%w: it is %s (%w)", ErrNotRunning, status, err)
			}
			return err
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("linearchain: cancel instance %d: %w", instanceID, err)
	}
	return nil
}

// Outcome is what a delivered external event did.
type Outcome string

// The outcomes of Deliver. Every one but Duplicate is recorded in
// workflow_chain_inbox with the event. No event accepted for a running
// instance leaves it stranded: it wakes a waiting step now (Woken) or
// when one starts waiting for it (Early), and a wait whose deadline passed
// ends by its deadline (Late) even with no worker claiming timed-out
// steps.
const (
	// Woken: the event was applied: the current step was WAITING for this
	// event type, before its deadline; it is READY now (next_run_at = now,
	// waiting_event_type and deadline_at cleared) and runs again, its
	// handler seeing the event (Task.Event).
	Woken Outcome = "applied"
	// Duplicate: an event with this id was delivered before; nothing
	// changed, and Delivery.First is what that delivery did.
	Duplicate Outcome = "duplicate"
	// Early: the instance is RUNNING but its current step is not WAITING
	// for this event type (not yet WAITING, or WAITING for another type).
	// The event is kept in the inbox; when a step of the instance starts
	// WAITING for its type, the oldest kept event of that type is applied
	// in the same transaction (its outcome becomes applied) and the step
	// goes on at once. An event that no step ever waits for stays early.
	Early Outcome = "early"
	// Late: the current step was WAITING for this event type and its
	// deadline has passed, or the instance has ended. The event is not
	// applied: the deadline wins, and the step times out (a worker with
	// ClaimOptions.ClaimTimedOut runs its handler as a
	// TaskWaitingTimeout; without, the claim ends it DEAD with last_error
	// 'WAITING_TIMEOUT' and its instance FAILED).
	Late Outcome = "late"
	// UnknownInstance: no instance matches the event's target.
	UnknownInstance Outcome = "unknown_instance"
)

// Inbound is an external event for an instance.
type Inbound struct {
	// ID is the event's id, unique upstream: a second delivery of the same
	// id is a Duplicate.
	ID string
	// Type is the event type, compared with the step's
	// waiting_event_type.
	Type string
	// InstanceID names the instance; or else WorkflowType and InstanceKey
	// do.
	InstanceID   int64
	WorkflowType string
	InstanceKey  string
	// Payload, if any, is kept in the inbox (valid JSON).
	Payload json.RawMessage
}

// Delivery is what Deliver did.
type Delivery struct {
	Outcome Outcome
	// InstanceID and StepSeq are the instance and its current step (zero
	// for UnknownInstance).
	InstanceID int64
	StepSeq    int
	// First is, for a Duplicate, the outcome of the first delivery.
	First Outcome
}

// Deliver records the external event ev in the inbox and, when it matches,
// wakes the instance's current step, in one transaction: a current step
// that is WAITING for ev.Type, before its deadline, of a RUNNING instance
// is woken (WakeUp: WAITING -> READY). An event that comes before its step
// waits for it is kept (Early) and applied when a step starts WAITING for
// its type; one that comes after the deadline of the wait it matches is
// Late and not applied. A repeated id changes nothing and reports
// Duplicate. The error is nil in every one of these cases.
func (e *Engine) Deliver(ctx context.Context, ev Inbound) (Delivery, error) {
	if ev.ID == "" || ev.Type == "" {
		return Delivery{}, errors.New("linearchain: deliver: the event needs an id and a type")
	}
	var payload any
	if len(ev.Payload) > 0 {
		if !json.Valid(ev.Payload) {
			return Delivery{}, fmt.Errorf("linearchain: deliver event %q: the payload is not valid JSON", ev.ID)
		}
		payload = ev.Payload
	}
	var d Delivery
	err := pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `
SELECT id FROM workflow_instance
WHERE CASE WHEN $1 <> 0 THEN id = $1 ELSE workflow_type = $2 AND instance_key = $3 END`,
			ev.InstanceID, ev.WorkflowType, ev.InstanceKey).Scan(&d.InstanceID)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			d = Delivery{Outcome: UnknownInstance}
		case err != nil:
			return err
		default:
			// After the lock, no Waiting write of this instance is under
			// way: the current step is read as it is.
			if _, err := tx.Exec(ctx, lockInstanceEvents, d.InstanceID); err != nil {
				return err
			}
			var (
				instStatus, stepStatus string
				waiting                *string
				passed                 bool
			)
			err := tx.QueryRow(ctx, `
SELECT i.status, s.step_seq, s.status, s.waiting_event_type, coalesce(s.deadline_at <= workflow_now(), false)
FROM workflow_instance i
JOIN workflow_step s ON s.instance_id = i.id AND s.step_seq = i.current_step_seq
WHERE i.id = $1
FOR UPDATE OF s`, d.InstanceID).Scan(&instStatus, &d.StepSeq, &stepStatus, &waiting, &passed)
			if err != nil {
				return err
			}
			matches := stepStatus == "WAITING" && waiting != nil && *waiting == ev.Type
			switch {
			case instStatus != "RUNNING", matches && passed:
				d.Outcome = Late
			case matches:
				d.Outcome = Woken
			default:
				d.Outcome = Early
			}
		}
		var instID, seq any
		if d.Outcome != UnknownInstance {
			instID, seq = d.InstanceID, d.StepSeq
		}
		tag, err := tx.Exec(ctx, `
INSERT INTO workflow_chain_inbox (event_id, instance_id, step_seq, event_type, payload, outcome, received_at, applied_at)
VALUES ($1, $2, $3, $4, $5, $6, workflow_now(), CASE WHEN $6 = 'applied' THEN workflow_now() END)
ON CONFLICT (event_id) DO NOTHING`, ev.ID, instID, seq, ev.Type, payload, string(d.Outcome))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			var first string
			var id *int64
			var s *int
			if err := tx.QueryRow(ctx, `SELECT outcome, instance_id, step_seq FROM workflow_chain_inbox WHERE event_id = $1`, ev.ID).Scan(&first, &id, &s); err != nil {
				return err
			}
			d = Delivery{Outcome: Duplicate, First: Outcome(first)}
			if id != nil && s != nil {
				d.InstanceID, d.StepSeq = *id, *s
			}
			return nil
		}
		if d.Outcome != Woken {
			return nil
		}
		tag, err = tx.Exec(ctx, `
WITH cfg AS (SELECT set_config('fsmgen.event', 'WakeUp', true) AS e, set_config('fsmgen.worker', '', true) AS w)
UPDATE workflow_step s
SET status = 'READY', next_run_at = workflow_now(), waiting_event_type = NULL, deadline_at = NULL,
    updated_at = workflow_now()
FROM cfg
WHERE s.instance_id = $1 AND s.step_seq = $2 AND s.status = 'WAITING' AND s.waiting_event_type = $3`,
			d.InstanceID, d.StepSeq, ev.Type)
		if err != nil {
			return translate(err)
		}
		if tag.RowsAffected() != 1 {
			return fmt.Errorf("the step left WAITING under a row lock")
		}
		return nil
	})
	if err != nil {
		return Delivery{}, fmt.Errorf("linearchain: deliver event %q: %w", ev.ID, err)
	}
	if d.Outcome == Woken {
		e.notify()
	}
	return d, nil
}

// Instance is an instance as Get reads it, with its steps.
type Instance struct {
	ID              int64
	WorkflowType    string
	WorkflowVersion int
	InstanceKey     string
	Status          string
	CurrentStepSeq  int
	CurrentStepType string
	Input           json.RawMessage
	CreatedAt       time.Time
	UpdatedAt       time.Time
	CompletedAt     *time.Time
	FailedAt        *time.Time
	CanceledAt      *time.Time
	CancelReason    *string
	Steps           []StepRow
}

// StepRow is a workflow_step row.
type StepRow struct {
	Seq              int
	Type             string
	Status           string
	NextRunAt        *time.Time
	LockedBy         *string
	LockedUntil      *time.Time
	Attempts         int
	MaxAttempts      int
	LastError        *string
	WaitingEventType *string
	DeadlineAt       *time.Time
}

// Get reads an instance and its steps, in step_seq order; an unknown id
// gives ErrInstanceNotFound.
func (e *Engine) Get(ctx context.Context, instanceID int64) (Instance, error) {
	return Get(ctx, e.pool, instanceID)
}

// Get reads an instance and its steps through q (see Engine.Get).
func Get(ctx context.Context, q Querier, instanceID int64) (Instance, error) {
	var in Instance
	err := q.QueryRow(ctx, `
SELECT id, workflow_type, workflow_version, instance_key, status, current_step_seq, current_step_type,
    input, created_at, updated_at, completed_at, failed_at, canceled_at, cancel_reason
FROM workflow_instance WHERE id = $1`, instanceID).Scan(&in.ID, &in.WorkflowType, &in.WorkflowVersion, &in.InstanceKey,
		&in.Status, &in.CurrentStepSeq, &in.CurrentStepType, &in.Input, &in.CreatedAt, &in.UpdatedAt,
		&in.CompletedAt, &in.FailedAt, &in.CanceledAt, &in.CancelReason)
	if errors.Is(err, pgx.ErrNoRows) {
		return Instance{}, fmt.Errorf("linearchain: get instance %d: %w", instanceID, ErrInstanceNotFound)
	}
	if err != nil {
		return Instance{}, fmt.Errorf("linearchain: get instance %d: %w", instanceID, err)
	}
	rows, err := q.Query(ctx, `
SELECT step_seq, step_type, status, next_run_at, locked_by, locked_until, attempts, max_attempts,
    last_error, waiting_event_type, deadline_at
FROM workflow_step WHERE instance_id = $1 ORDER BY step_seq`, instanceID)
	if err != nil {
		return Instance{}, fmt.Errorf("linearchain: get instance %d steps: %w", instanceID, err)
	}
	in.Steps, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (StepRow, error) {
		var s StepRow
		err := r.Scan(&s.Seq, &s.Type, &s.Status, &s.NextRunAt, &s.LockedBy, &s.LockedUntil, &s.Attempts,
			&s.MaxAttempts, &s.LastError, &s.WaitingEventType, &s.DeadlineAt)
		return s, err
	})
	if err != nil {
		return Instance{}, fmt.Errorf("linearchain: get instance %d steps: %w", instanceID, err)
	}
	return in, nil
}

// Change is one row of an instance's history: a status change of the
// instance (Step nil) or of one of its steps, from the logs the generated
// guards write.
type Change struct {
	At time.Time
	// Step is the step's seq, nil for the instance itself.
	Step *int
	// From is "" for the row's insertion.
	From, To string
	// Event is the machine's event; "" for an insertion.
	Event string
	// Worker is the worker that wrote the change, "" for none (start,
	// wake-up, cancel).
	Worker string
}

// History reads the status changes of an instance and its steps through
// q, oldest first; within one transaction, the instance's insertion first,
// then its steps' changes, then the instance's other changes.
func History(ctx context.Context, q Querier, instanceID int64) ([]Change, error) {
	rows, err := q.Query(ctx, `
SELECT at, NULL::int, coalesce(from_state, ''), to_state, coalesce(event, ''), coalesce(worker, ''),
    CASE WHEN from_state IS NULL THEN 0 ELSE 2 END AS rank, id
FROM workflow_instance_status_log WHERE row_key = jsonb_build_object('id', $1::bigint)
UNION ALL
SELECT at, (row_key->>'step_seq')::int, coalesce(from_state, ''), to_state, coalesce(event, ''), coalesce(worker, ''),
    1, id
FROM workflow_step_status_log
WHERE row_key IN (SELECT jsonb_build_object('instance_id', instance_id, 'step_seq', step_seq)
                  FROM workflow_step WHERE instance_id = $1)
ORDER BY 1, 7, 8`, instanceID)
	if err != nil {
		return nil, fmt.Errorf("linearchain: history of instance %d: %w", instanceID, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Change, error) {
		var c Change
		var rank int
		var id int64
		err := r.Scan(&c.At, &c.Step, &c.From, &c.To, &c.Event, &c.Worker, &rank, &id)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("linearchain: history of instance %d: %w", instanceID, err)
	}
	return out, nil
}
