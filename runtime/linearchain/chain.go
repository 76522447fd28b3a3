package linearchain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/linearchain/step"
)

// Errors at the package's boundary, matched with errors.Is.
var (
	// ErrLeaseLost: a RUNNING -> * write found the step no longer RUNNING
	// under this worker with a lease that has not expired by the database
	// clock. Nothing was changed.
	ErrLeaseLost = errors.New("lease lost")
	// ErrUnknownWorkflow: no definition of this workflow type and version,
	// or no handler of this step type, is registered.
	ErrUnknownWorkflow = errors.New("unknown workflow")
	// ErrInstanceNotFound: no instance has this id.
	ErrInstanceNotFound = errors.New("instance not found")
	// ErrNotRunning: the instance has ended (COMPLETED, FAILED or
	// CANCELED), so it cannot be cancelled.
	ErrNotRunning = errors.New("instance not running")
	// ErrInvalidDefinition: a definition given to Register is not usable.
	ErrInvalidDefinition = errors.New("invalid definition")
	// ErrRefused: the database refused a status change that the machines of
	// linear_chain.fsm do not allow (SQLSTATE FS006 of the generated guards).
	ErrRefused = errors.New("status change refused by the machine's table")
)

// SQLStateRefused is the SQLSTATE of the generated guards on the two
// status columns (gen.SQLStateGuardRefused).
const SQLStateRefused = "FS006"

// DefaultMaxAttempts is a step's max_attempts when its Step leaves
// MaxAttempts zero.
const DefaultMaxAttempts = 3

// Querier is what the methods that act inside a caller's transaction take:
// pgx.Tx, *pgx.Conn and *pgxpool.Pool all satisfy it.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// Definition is a linear workflow: its type, its version and its steps in
// order (step_seq 0..N-1). The version is used at start only, to write the
// steps; after that the database holds the plan.
type Definition struct {
	Type    string
	Version int
	Steps   []Step
}

// Step is one step type of a Definition.
type Step struct {
	// Type is the step's stable name (step_type), unique in its Definition.
	Type string
	// MaxAttempts is the step's max_attempts: a Retry result is honoured
	// while attempts + 1 < MaxAttempts, so the handler runs at most
	// MaxAttempts times when it only ever retries. Zero means
	// DefaultMaxAttempts.
	MaxAttempts int
	// Handler does the step's work.
	Handler Handler
}

// Handler does the work of a claimed step and returns its Result, one of
// Completed, Waiting, Retry and Dead. It runs only after its step was
// claimed; it may run again for the same step (a retry, a wake-up, or a
// lease that expired while it ran), so its side effects must be
// idempotent per (instance, step, attempt) or tolerate repetition. A
// panic is taken as a Retry with last_error "panic: ..." after
// DefaultBackoff.
type Handler func(ctx context.Context, t Task) Result

// TaskType says why a handler runs.
type TaskType string

const (
	// TaskRun: the step was claimed READY.
	TaskRun TaskType = "RUN"
	// TaskWaitingTimeout: the step was WAITING and its deadline passed
	// (RunOptions.ClaimTimedOut); Task.WaitingEventType is what it waited
	// for.
	TaskWaitingTimeout TaskType = "WAITING_TIMEOUT"
)

// Task is a claimed step, as its handler sees it.
type Task struct {
	InstanceID      int64
	InstanceKey     string
	WorkflowType    string
	WorkflowVersion int
	Input           json.RawMessage
	StepSeq         int
	StepType        string
	TaskType        TaskType
	// Attempts is the step's attempts when claimed (0 on the first run),
	// MaxAttempts its max_attempts.
	Attempts, MaxAttempts int
	// WaitingEventType is the event type a timed-out step waited for.
	WaitingEventType string
	// WorkerID held the lease until LockedUntil (by the database clock)
	// when the step was claimed; Execute extends it while the handler runs.
	WorkerID    string
	LockedUntil time.Time
	// Event is the external event that last woke this step (Deliver), nil
	// when none did.
	Event *Event

	// deadline is LockedUntil on this process's clock; lease and heartbeat
	// are the claim's (ClaimOptions), for Execute's heartbeat.
	deadline         time.Time
	lease, heartbeat time.Duration
}

// Event is an external event that woke a step, as its handler sees it.
type Event struct {
	ID      string
	Type    string
	Payload json.RawMessage
}

// Result is what a handler returns. Only Completed, Waiting, Retry and
// Dead make one: each wraps the event of the generated step machine that
// the RUNNING state accepts from a handler, so a result the step machine
// cannot take in RUNNING (Activate, Claim, RecoverLease, WakeUp...) does
// not compile.
type Result struct {
	ev step.RunningEvent
}

// Completed is result A: the step is DONE; the next step becomes READY and
// the instance points at it, or, when there is no next step, the instance
// is COMPLETED.
func Completed() Result { return Result{step.Completed{}} }

// Waiting is result B: the step waits (WAITING) for an external event of
// type eventType until now + timeout; outbound events are written to the
// outbox in the same transaction.
func Waiting(eventType string, timeout time.Duration, outbound ...json.RawMessage) Result {
	return Result{step.Waiting{WaitingEventType: eventType, Timeout: timeout, OutboundEvents: outbound}}
}

// Retry is result C: the step is READY again after backoff, with attempts
// + 1 and last_error; when attempts + 1 >= max_attempts it is exhausted
// and is result D instead.
func Retry(backoff time.Duration, lastError string) Result {
	return Result{step.Retry{Backoff: backoff, LastError: lastError}}
}

// Dead is result D: the step is DEAD (attempts + 1, last_error) and the
// instance FAILED.
func Dead(lastError string) Result { return Result{step.Dead{LastError: lastError}} }

// Event returns the step machine's event the result fires, nil for the
// zero Result.
func (r Result) Event() step.RunningEvent { return r.ev }

// DefaultBackoff spaces the tries of a step whose handler panicked or
// returned the zero Result, which is taken as a Retry: after its n-th
// attempt failed so, the step is due again after DefaultBackoff.Delay(n)
// spread by its jitter (1s, 2s, 4s, ... at most a minute, ±20%), as
// runtime/engine spaces a state's failed tries. Only its intervals,
// coefficient and jitter are used; the step's MaxAttempts bounds the
// tries.
var DefaultBackoff = runtime.RetryPolicy{InitialInterval: time.Second, Coefficient: 2, MaxInterval: time.Minute, Jitter: 0.2}

// Engine runs linear workflows on the tables Migrate creates. Register the
// definitions, Start instances, Run workers; Deliver external events and
// Cancel instances from anywhere. An Engine is safe for concurrent use.
type Engine struct {
	pool *pgxpool.Pool

	mu   sync.RWMutex
	defs map[defKey]*Definition
	// wake is closed and replaced when this process makes a step runnable,
	// so that its idle workers claim at once.
	wake chan struct{}
}

type defKey struct {
	typ     string
	version int
}

// New returns an engine on pool. Migrate the database first.
func New(pool *pgxpool.Pool) *Engine {
	return &Engine{pool: pool, defs: map[defKey]*Definition{}, wake: make(chan struct{})}
}

// Register adds a definition: its steps' handlers are what workers run,
// and Start writes its steps. It fails with ErrInvalidDefinition for an
// empty type, no steps, a step without a type or handler, two steps of one
// type, a negative MaxAttempts, or a type and version registered before.
func (e *Engine) Register(d Definition) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("linearchain: register %s v%d: %s: %w", d.Type, d.Version, fmt.Sprintf(format, args...), ErrInvalidDefinition)
	}
	if d.Type == "" {
		return bad("no workflow type")
	}
	if len(d.Steps) == 0 {
		return bad("no steps")
	}
	seen := map[string]bool{}
	for i, s := range d.Steps {
		switch {
		case s.Type == "":
			return bad("step %d has no type", i)
		case s.Handler == nil:
			return bad("step %d (%s) has no handler", i, s.Type)
		case s.MaxAttempts < 0:
			return bad("step %d (%s) has max attempts %d", i, s.Type, s.MaxAttempts)
		case seen[s.Type]:
			return bad("step type %s appears twice", s.Type)
		}
		seen[s.Type] = true
	}
	d.Steps = append([]Step(nil), d.Steps...)
	e.mu.Lock()
	defer e.mu.Unlock()
	k := defKey{d.Type, d.Version}
	if e.defs[k] != nil {
		return bad("already registered")
	}
	e.defs[k] = &d
	return nil
}

func (e *Engine) definition(typ string, version int) *Definition {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.defs[defKey{typ, version}]
}

// handler returns the handler of a step type of a registered definition.
func (e *Engine) handler(typ string, version int, stepType string) Handler {
	d := e.definition(typ, version)
	if d == nil {
		return nil
	}
	for _, s := range d.Steps {
		if s.Type == stepType {
			return s.Handler
		}
	}
	return nil
}

// handled returns, as three columns, every (workflow type, version, step
// type) that this engine has a handler for: what its workers may claim.
func (e *Engine) handled() (types []string, versions []int32, stepTypes []string) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	for k, d := range e.defs {
		for _, s := range d.Steps {
			types, versions, stepTypes = append(types, k.typ), append(versions, int32(k.version)), append(stepTypes, s.Type)
		}
	}
	return types, versions, stepTypes
}

// notify wakes this process's idle workers.
func (e *Engine) notify() {
	e.mu.Lock()
	close(e.wake)
	e.wake = make(chan struct{})
	e.mu.Unlock()
}

func (e *Engine) woken() <-chan struct{} {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.wake
}

// Started is what Start returns: the instance's id, and whether this call
// created it (false: an instance with this type and key existed, and is
// returned as it is).
type Started struct {
	InstanceID int64
	Created    bool
}

// Start starts an instance of the registered workflow type and version
// with instanceKey and input (encoded as JSON), in one transaction: the
// workflow_instance row (RUNNING, current_step_seq 0, current_step_type of
// step 0) and every workflow_step row, step 0 READY with next_run_at = now
// and the others PENDING. Starting again with the same type and key
// returns the existing instance, whatever its version, input or status.
func (e *Engine) Start(ctx context.Context, workflowType string, version int, instanceKey string, input any) (Started, error) {
	s, err := e.StartTx(ctx, e.pool, workflowType, version, instanceKey, input)
	if err == nil && s.Created {
		e.notify()
	}
	return s, err
}

// StartTx is Start inside the caller's transaction q (or on any Querier):
// the instance exists when q commits.
func (e *Engine) StartTx(ctx context.Context, q Querier, workflowType string, version int, instanceKey string, input any) (Started, error) {
	d := e.definition(workflowType, version)
	if d == nil {
		return Started{}, fmt.Errorf("linearchain: start %s v%d key %q: %w", workflowType, version, instanceKey, ErrUnknownWorkflow)
	}
	in, err := json.Marshal(input)
	if err != nil {
		return Started{}, fmt.Errorf("linearchain: start %s key %q: encode the input: %w", workflowType, instanceKey, err)
	}
	types := make([]string, len(d.Steps))
	maxes := make([]int32, len(d.Steps))
	for i, s := range d.Steps {
		types[i] = s.Type
		maxes[i] = int32(s.MaxAttempts)
		if maxes[i] == 0 {
			maxes[i] = DefaultMaxAttempts
		}
	}
	var b pgx.Batch
	var out Started
	b.Queue(startInsert, workflowType, version, instanceKey, in, types, maxes).QueryRow(func(row pgx.Row) error {
		err := row.Scan(&out.InstanceID)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		out.Created = err == nil
		return err
	})
	b.Queue(startActivate, workflowType, instanceKey)
	b.Queue(`SELECT id FROM workflow_instance WHERE workflow_type = $1 AND instance_key = $2`, workflowType, instanceKey).
		QueryRow(func(row pgx.Row) error { return row.Scan(&out.InstanceID) })
	if err := q.SendBatch(ctx, &b).Close(); err != nil {
		return Started{}, fmt.Errorf("linearchain: start %s v%d key %q: %w", workflowType, version, instanceKey, translate(err))
	}
	return out, nil
}

// startInsert inserts the instance and all its steps PENDING, unless the
// (type, key) exists.
const startInsert = `
WITH cfg AS (
    SELECT set_config('fsmgen.worker', '', true) AS w
), ins AS (
    INSERT INTO workflow_instance (workflow_type, workflow_version, instance_key, status,
        current_step_seq, current_step_type, input, created_at, updated_at)
    SELECT $1, $2, $3, 'RUNNING', 0, ($5::text[])[1], $4, workflow_now(), workflow_now() FROM cfg
    ON CONFLICT (workflow_type, instance_key) DO NOTHING
    RETURNING id
), steps AS (
    INSERT INTO workflow_step (instance_id, step_seq, step_type, status, max_attempts, created_at, updated_at)
    SELECT ins.id, s.ord - 1, s.step_type, 'PENDING', s.max_attempts, workflow_now(), workflow_now()
    FROM ins, unnest($5::text[], $6::int[]) WITH ORDINALITY AS s (step_type, max_attempts, ord)
)
SELECT id FROM ins`

// startActivate activates step 0 of a new instance (Activate: PENDING ->
// READY, next_run_at = now); on an existing instance it changes nothing.
const startActivate = `
UPDATE workflow_step s SET status = 'READY', next_run_at = workflow_now(), updated_at = workflow_now()
WHERE s.instance_id = (SELECT id FROM workflow_instance WHERE workflow_type = $1 AND instance_key = $2)
  AND s.step_seq = 0 AND s.status = 'PENDING'`

// translate maps the database's refusals to the package's errors.
func translate(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == SQLStateRefused {
		return fmt.Errorf("%w: %s", ErrRefused, pgErr.Message)
	}
	return err
}
