// Package enginestore holds the store operations that only the engine may
// call: claims and leases, the fenced transition (Advance) with its
// effects, retries, parking, and the reads the engine drives runs with. It
// works on the persistence layer of a *store.Store (package pgstore), which
// package store declares its Store as; users of the runtime reach runs
// through package store and drive them through package engine.
package enginestore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/internal/dbsqlc"
	"github.com/fsmgen/fsmgen/runtime/internal/diag"
	"github.com/fsmgen/fsmgen/runtime/internal/pgstore"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// Store is the engine's access to a *store.Store.
type Store struct {
	st *store.Store
	db *pgstore.DB
	q  *dbsqlc.Queries
}

// New returns the engine's operations on st.
func New(st *store.Store) *Store {
	db := (*pgstore.DB)(st)
	return &Store{st: st, db: db, q: db.Queries(nil)}
}

// Store returns the store the operations work on.
func (s *Store) Store() *store.Store { return s.st }

// Lease is a worker's claim on a run: who holds it, the epoch the claim
// produced, and until when, by the database's clock. Every write made under
// a lease is fenced by (Owner, Epoch) and by the lease being live, so that a
// worker whose lease expired or was taken over writes nothing.
type Lease struct {
	RunID     string
	Owner     string
	Epoch     int64
	ExpiresAt time.Time
}

// TryKey is the key of a try of a handler: the run, the epoch of the lease
// the handler is called under and the run's row version at the call, as
// "<run id>/<epoch>/<row version>". A session calls a handler at most once
// per row version, and every claim has an epoch of its own, so no two
// calls share a key. The claim statement builds the same key for the
// lease_expired step of an interrupted try.
func TryKey(runID string, epoch, rowVersion int64) string {
	return fmt.Sprintf("%s/%d/%d", runID, epoch, rowVersion)
}

// Kind names a (type, version) a worker can drive.
type Kind struct {
	Type    string
	Version int
}

// ClaimParams says which runs to claim.
type ClaimParams struct {
	// Owner is the worker's id, stored as lease_owner.
	Owner string
	// Kinds are the definitions the worker drives; only their runs are
	// claimed.
	Kinds []Kind
	// Limit caps the number of runs claimed (1 when zero).
	Limit int
	// TTL is the lease's length.
	TTL time.Duration
	// RunID, when set, claims that run only (if it is due and free).
	RunID string
}

// Claim is a claimed run and its lease.
type Claim struct {
	Run   runtime.Run
	Lease Lease
	// Now is the database's time of the claim.
	Now time.Time
	// Events are the events recorded in the run's current attempt, oldest
	// first, read by the claim's statement, when EventsRead is set: when the
	// statement saw every change of state of the attempt. Otherwise a change
	// was committed while the claim waited for the run's lock, and the
	// events must be read with AttemptEvents.
	Events     []LoggedEvent
	EventsRead bool
	// TraceParent is the trace context stored with the run when it was
	// started (store.WithTraceParent), "" for none.
	TraceParent string
}

// Claim leases due runs to a worker in one statement: runs in a
// non-terminal state whose next_run_at has come and that no live lease
// holds, oldest due first across the kinds, locked with FOR UPDATE SKIP
// LOCKED so that concurrent workers never claim the same run. Each kind is
// read on its own from an index of (type, version, next_run_at), so that
// due runs of kinds the worker does not drive cost nothing. Each claim adds
// one to the run's lease epoch. A run whose previous lease expired
// unreleased (its worker died or stalled) or was given up with
// InterruptLease gets step_attempt + 1 and a lease_expired row in its log,
// naming the interrupted try's key (see TryKey): the interrupted try counts
// as a try. The
// events of each run's current attempt come with it (see Claim.Events).
func (s *Store) Claim(ctx context.Context, p ClaimParams) ([]Claim, error) {
	if p.Owner == "" || p.TTL <= 0 {
		return nil, pgstore.RunErr("claim", p.RunID, fmt.Errorf("%w: a claim needs an owner and a positive lease", runtime.ErrInvalidInput))
	}
	// "version/type": the version first, so that a type may hold a slash.
	kinds := make([]string, len(p.Kinds))
	for i, k := range p.Kinds {
		kinds[i] = fmt.Sprintf("%d/%s", k.Version, k.Type)
	}
	arg := dbsqlc.ClaimRunsParams{Now: s.db.Now(), Kinds: kinds, MaxRuns: int32(max(p.Limit, 1)), Owner: p.Owner, TtlUs: p.TTL.Microseconds()}
	if p.RunID != "" {
		id, err := pgstore.ParseRunID("claim", p.RunID)
		if err != nil {
			return nil, err
		}
		arg.ID = id
	}
	rows, err := s.q.ClaimRuns(ctx, arg)
	if err != nil {
		return nil, pgstore.RunErr("claim", p.RunID, pgstore.Translate(err))
	}
	out := make([]Claim, 0, len(rows))
	for _, r := range rows {
		run, err := pgstore.RunFromRow(claimedRun(r))
		if err != nil {
			return out, pgstore.RunErr("claim", run.ID, err)
		}
		c := Claim{
			Run:         run,
			Lease:       Lease{RunID: run.ID, Owner: p.Owner, Epoch: run.Lease.Epoch, ExpiresAt: run.Lease.ExpiresAt},
			Now:         run.Lease.ExpiresAt.Add(-time.Duration(arg.TtlUs) * time.Microsecond),
			TraceParent: r.TraceParent.String,
		}
		if r.LoggedVersion == r.RowVersion && len(r.EventNames) == len(r.EventPayloads) {
			c.EventsRead, c.Events = true, s.loggedEvents(r.EventNames, r.EventPayloads)
		}
		out = append(out, c)
	}
	return out, nil
}

// claimedRun returns the run columns of a claimed row.
func claimedRun(r dbsqlc.ClaimRunsRow) dbsqlc.WorkflowRun {
	return dbsqlc.WorkflowRun{
		ID: r.ID, WorkflowType: r.WorkflowType, CurrentState: r.CurrentState, TenantID: r.TenantID, UserID: r.UserID,
		CorrelationID: r.CorrelationID, IdempotencyKey: r.IdempotencyKey, AttemptNo: r.AttemptNo,
		PolicySnapshot: r.PolicySnapshot, Result: r.Result, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
		DefinitionVersion: r.DefinitionVersion, RowVersion: r.RowVersion, Status: r.Status, Input: r.Input,
		AttemptStartedAt: r.AttemptStartedAt, FinishedAt: r.FinishedAt, LeaseOwner: r.LeaseOwner,
		LeaseExpiresAt: r.LeaseExpiresAt, LeaseEpoch: r.LeaseEpoch, NextRunAt: r.NextRunAt, StepAttempt: r.StepAttempt,
		LastErrorCode: r.LastErrorCode, LastError: r.LastError, ParkedAt: r.ParkedAt, ParentRunID: r.ParentRunID,
		ParentEvent: r.ParentEvent, ParentDeliveredAt: r.ParentDeliveredAt, PreviousState: r.PreviousState,
		TimerAnchors: r.TimerAnchors, History: r.History,
	}
}

// ExtendLease extends a live lease to ttl from now. It fails with
// runtime.ErrLeaseLost when the lease expired or another claim took the run over.
func (s *Store) ExtendLease(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	id, err := pgstore.ParseRunID("extend lease", l.RunID)
	if err != nil {
		return l, err
	}
	at, err := s.q.ExtendLease(ctx, dbsqlc.ExtendLeaseParams{Now: s.db.Now(), TtlUs: ttl.Microseconds(), ID: id, Owner: l.Owner, Epoch: l.Epoch})
	if errors.Is(err, pgx.ErrNoRows) {
		return l, pgstore.RunErr("extend lease", l.RunID, fmt.Errorf("%w: epoch %d of %s", runtime.ErrLeaseLost, l.Epoch, l.Owner))
	}
	if err != nil {
		return l, pgstore.RunErr("extend lease", l.RunID, pgstore.Translate(err))
	}
	l.ExpiresAt = at.Time
	return l, nil
}

// Due says when a run is due next after a write: NotDue (it waits for an
// event), DueIn(d), or KeepDue (unchanged).
type Due struct {
	keep  bool
	set   bool
	delay time.Duration
}

// KeepDue leaves next_run_at as it is.
var KeepDue = Due{keep: true}

// NotDue clears next_run_at: the run waits for an event and no worker
// claims it until something makes it due.
var NotDue = Due{}

// DueIn makes the run due d from now (by the database's clock).
func DueIn(d time.Duration) Due { return Due{set: true, delay: max(d, 0)} }

// Delay returns how long from the write the run falls due, and whether the
// write sets it (DueIn); false for NotDue and KeepDue.
func (d Due) Delay() (time.Duration, bool) { return d.delay, d.set }

func (d Due) delayParam() pgtype.Int8 {
	return pgtype.Int8{Int64: d.delay.Microseconds(), Valid: d.set}
}

// ReleaseLease gives a lease up and sets when the run is due next. A run
// with a finished child whose event was not fired yet is made due at once
// whatever due says (unless KeepDue). Releasing a lease that is no longer
// held fails with runtime.ErrLeaseLost.
func (s *Store) ReleaseLease(ctx context.Context, l Lease, due Due) error {
	return s.releaseLease(ctx, "release lease", l, due, false)
}

// InterruptLease gives up a lease under which a handler was called whose
// outcome could not be written: the run is due at once, and the lease is
// made to expire now rather than cleared, so that the next claim counts the
// try as interrupted and logs it (a lease_expired step naming its try key),
// as for a worker that died. It fails with runtime.ErrLeaseLost when the
// lease is no longer held.
func (s *Store) InterruptLease(ctx context.Context, l Lease) error {
	return s.releaseLease(ctx, "interrupt lease", l, DueIn(0), true)
}

func (s *Store) releaseLease(ctx context.Context, op string, l Lease, due Due, interrupted bool) error {
	id, err := pgstore.ParseRunID(op, l.RunID)
	if err != nil {
		return err
	}
	n, err := s.q.ReleaseLease(ctx, dbsqlc.ReleaseLeaseParams{Interrupted: interrupted, KeepSchedule: due.keep, Now: s.db.Now(),
		NextDelayUs: due.delayParam(), ID: id, Owner: l.Owner, Epoch: l.Epoch})
	if err != nil {
		return pgstore.RunErr(op, l.RunID, pgstore.Translate(err))
	}
	if n == 0 {
		return pgstore.RunErr(op, l.RunID, fmt.Errorf("%w: epoch %d of %s", runtime.ErrLeaseLost, l.Epoch, l.Owner))
	}
	return nil
}

// Effects are writes that belong to a transition and commit in its
// transaction, or not at all.
type Effects struct {
	// Steps are logged at the state the transition leaves, before it.
	Steps []StepEffect
	// Messages go to the outbox.
	Messages []MessageEffect
	// Starts are runs started on behalf of the run (background runs and
	// children), idempotently by (type, key).
	Starts []StartEffect
	// Delivered are child runs whose completion event this transition
	// fires; they are marked so that it fires only once.
	Delivered []string
	// Tx are functions called in the transition's transaction after the
	// run moved, in order; an error from one rolls the whole transition
	// back.
	Tx []TxFunc
}

// TxFunc writes in the transaction of a transition that moved the run; m
// tells which.
type TxFunc func(ctx context.Context, tx pgx.Tx, m Moved) error

// Moved identifies a transition recorded in the current transaction.
type Moved struct {
	// RunID is the run that moved.
	RunID string
	// RowVersion is the run's row version after the transition.
	RowVersion int64
	// At is when it moved, by the store's clock.
	At time.Time
}

func (e *Effects) empty() bool {
	return e == nil || len(e.Steps)+len(e.Messages)+len(e.Starts)+len(e.Delivered)+len(e.Tx) == 0
}

// StepEffect is an observable sub-step for the log.
type StepEffect struct {
	Name    string
	Payload any
}

// MessageEffect is a message for the outbox.
type MessageEffect struct {
	Topic   string
	Payload any
}

// StartEffect starts a run of the latest registered version of Type with
// the tenant, user and correlation of the run that starts it. With
// ParentEvent it is a child: ParentEvent is fired on the starting run when
// the child reaches a terminal state.
type StartEffect struct {
	Type           string
	IdempotencyKey string
	Input          any
	Policy         any
	ParentEvent    string
}

// AdvanceParams describes a transition made by the engine.
type AdvanceParams struct {
	// Lease fences the write; nil for writers that hold no lease (a signal,
	// a cancellation), fenced by the row version alone.
	Lease *Lease
	// RowVersion is the version the caller read.
	RowVersion int64
	// Transition is what the machine records.
	Transition runtime.Transition
	// Result is stored with a transition to a terminal state (see Finish).
	Result *runtime.Result
	// KeepLease keeps the lease: the worker goes on driving the run from
	// the state entered. Otherwise the lease is released. A terminal state
	// always releases the lease. The run's schedule is always the state
	// entered's, computed by the store from the registered definition as
	// for every transition: due at once for a driven state, at its first
	// timer for a state that waits, never for one without timers.
	KeepLease bool
	// Effects commit in the transition's transaction.
	Effects *Effects
	// Fired names the timer whose event the transition is the move of,
	// for a nested machine: a state the transition keeps marks it fired,
	// so that it fires once per entry. Nil otherwise.
	Fired *FiredTimer
	// Nested marks a transition of a nested machine, which Advance writes
	// alone, never in a shared statement (see Batchable).
	Nested bool
	// Notify announces the run on store.NotifyChannel, with its type, when
	// the transition makes it due at once (it enters a state with a
	// handler), in the same statement: idle workers are woken at its
	// commit. A writer that holds no lease sets it, for the workers to
	// take the run over.
	Notify bool
}

// FiredTimer is timer number Index (from 0) of the state or composite
// State.
type FiredTimer struct {
	State string
	Index int
}

// Advanced is what Advance did.
type Advanced struct {
	store.Recorded
	// Run is the run as the transition left it, read back by the
	// statement that wrote it. AdvanceBatch leaves it zero for the
	// transitions of its shared statement.
	Run runtime.Run
	// Started are the ids of the runs Effects.Starts created or found, in
	// order.
	Started []string
}

// Advance records a transition of the engine: the state change and its log
// row in one statement, as Record does, fenced by the lease when one is
// given (runtime.ErrLeaseLost when it is no longer held), with the schedule of the
// state entered and the lease's fate folded into the same statement. Effects,
// when there are any, are written in the same transaction: if the
// transition is refused, none of them is. Steps alone are sent with the
// transition in one round trip (see InsertStepBefore). The transition's Actions, when
// set, are called in that transaction after the run moved, with the
// transaction in their context (store.Tx); their error rolls the
// transition back and is returned.
func (s *Store) Advance(ctx context.Context, runID string, p AdvanceParams) (Advanced, error) {
	const op = "advance"
	id, err := pgstore.ParseRunID(op, runID)
	if err != nil {
		return Advanced{}, err
	}
	fail := func(err error) (Advanced, error) { return Advanced{}, pgstore.RunErr(op, runID, err) }
	t := p.Transition
	arg, _, err := s.db.TransitionParams(ctx, id, p.RowVersion, t, p.Result)
	if err != nil {
		return fail(err)
	}
	arg.ReleaseLease = !p.KeepLease && p.Lease != nil
	arg.Notify = p.Notify
	if p.Fired != nil && arg.Anchored && !slices.Contains(arg.Entered, p.Fired.State) {
		// Marked as fired unless the transition enters its state again,
		// which restarts its timers.
		arg.FiredState = pgtype.Text{String: p.Fired.State, Valid: true}
		arg.FiredIndex = pgtype.Int4{Int32: int32(p.Fired.Index), Valid: true}
	}
	if p.Lease != nil {
		arg.Fenced, arg.Owner, arg.Epoch = true, p.Lease.Owner, p.Lease.Epoch
	}

	var out Advanced
	// oneTrip ends an advance written in one round trip: the run it
	// returned, or why it did not move.
	oneTrip := func(row dbsqlc.AdvanceRunRow, err error) (Advanced, error) {
		if errors.Is(err, pgx.ErrNoRows) {
			return fail(s.whyNot(ctx, id, p.Lease, t, p.RowVersion))
		}
		if err != nil {
			return fail(pgstore.Translate(err))
		}
		if err := s.advanced(&out, row); err != nil {
			return fail(err)
		}
		return out, nil
	}
	if p.Effects.empty() && t.Actions == nil {
		return oneTrip(s.q.AdvanceRun(ctx, arg))
	}
	if pipelined(p.Effects, t.Actions) {
		// Steps only: they and the transition go in one round trip.
		return oneTrip(s.advancePipelined(ctx, id, arg, p.Effects.Steps))
	}

	fx := p.Effects
	if fx == nil {
		fx = &Effects{} // the actions alone
	}
	moved := false
	err = pgx.BeginFunc(ctx, s.db.Pool(), func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		for _, st := range fx.Steps {
			if st.Name == "" {
				return fmt.Errorf("%w: empty step name", runtime.ErrInvalidInput)
			}
			if err := s.db.CheckText("step name", st.Name); err != nil {
				return err
			}
			raw, err := s.db.EncodeJSON("payload of step "+diag.Short(st.Name), st.Payload)
			if err != nil {
				return err
			}
			if _, err := q.InsertStep(ctx, dbsqlc.InsertStepParams{StepName: st.Name, Payload: raw, Now: s.db.Now(), ID: id}); err != nil {
				return err
			}
		}
		// A child's delivery is recorded before the transition on its
		// event: the database admits that transition only after it.
		for _, child := range fx.Delivered {
			cid, err := pgstore.ParseUUID("child run id", child)
			if err != nil {
				return fmt.Errorf("%w: %w", runtime.ErrInvalidID, err)
			}
			n, err := q.MarkChildDelivered(ctx, dbsqlc.MarkChildDeliveredParams{Now: s.db.Now(), ID: cid})
			if err != nil {
				return err
			}
			if n == 0 {
				return fmt.Errorf("%w: the event of child %s was fired already", runtime.ErrConflict, child)
			}
		}
		row, err := q.AdvanceRun(ctx, arg)
		if errors.Is(err, pgx.ErrNoRows) {
			return errNotMoved // rolls the steps back
		}
		if err != nil {
			return err
		}
		moved = true
		if err := s.advanced(&out, row); err != nil {
			return err
		}
		if t.Actions != nil {
			// The exit and entry actions, in the transaction of the
			// transition: their error rolls it back.
			if err := t.Actions(store.WithTx(ctx, tx)); err != nil {
				return &actionsError{err}
			}
		}
		for _, m := range fx.Messages {
			if m.Topic == "" {
				return fmt.Errorf("%w: empty topic", runtime.ErrInvalidInput)
			}
			if err := s.db.CheckText("topic", m.Topic); err != nil {
				return err
			}
			raw, err := s.db.EncodeJSON("payload of message "+diag.Short(m.Topic), m.Payload)
			if err != nil {
				return err
			}
			if _, err := q.InsertOutbox(ctx, dbsqlc.InsertOutboxParams{Topic: m.Topic, Payload: raw, Now: s.db.Now(), ID: id}); err != nil {
				return err
			}
		}
		for _, st := range fx.Starts {
			if st.Type == "" || st.IdempotencyKey == "" {
				return fmt.Errorf("%w: a started run needs a type and an idempotency key", runtime.ErrInvalidInput)
			}
			for _, f := range [...]struct{ what, v string }{{"type", st.Type}, {"idempotency key", st.IdempotencyKey}, {"parent event", st.ParentEvent}} {
				if err := s.db.CheckText(f.what, f.v); err != nil {
					return err
				}
			}
			input, err := s.db.EncodeJSON("input of "+diag.Short(st.Type), st.Input)
			if err != nil {
				return err
			}
			policy, err := s.db.EncodeJSON("policy snapshot of "+diag.Short(st.Type), st.Policy)
			if err != nil {
				return err
			}
			// The latest version, scheduled as Start schedules a run:
			// as its initial state is entered.
			version, err := q.LatestVersion(ctx, st.Type)
			if err != nil {
				return err
			}
			unknown := fmt.Errorf("%w: start %s/%s: no version of %s is registered", runtime.ErrUnknownDefinition, diag.Short(st.Type), diag.Short(st.IdempotencyKey), diag.Short(st.Type))
			if version == 0 {
				return unknown
			}
			delay, err := s.db.InitialDelay(ctx, st.Type, int(version))
			if err != nil {
				return err
			}
			r, err := q.EnqueueRun(ctx, dbsqlc.EnqueueRunParams{
				WorkflowType: st.Type, DefinitionVersion: version, IdempotencyKey: st.IdempotencyKey, ParentID: id, PolicySnapshot: policy,
				Now: s.db.Now(), Input: input, NextDelayUs: delay, ParentEvent: pgtype.Text{String: st.ParentEvent, Valid: st.ParentEvent != ""},
			})
			if err != nil {
				return err
			}
			if !r.KnownType {
				return unknown
			}
			out.Started = append(out.Started, pgstore.UUIDString(r.RunID))
		}
		for _, f := range fx.Tx {
			if err := f(ctx, tx, Moved{RunID: runID, RowVersion: out.RowVersion, At: out.At}); err != nil {
				return err
			}
		}
		return nil
	})
	if errors.Is(err, errNotMoved) || (err == nil && !moved) {
		return fail(s.whyNot(ctx, id, p.Lease, t, p.RowVersion))
	}
	if ae := (*actionsError)(nil); errors.As(err, &ae) {
		return fail(ae.err)
	}
	if err != nil {
		return fail(pgstore.Translate(err))
	}
	return out, nil
}

// actionsError carries the error of a transition's actions out of its
// transaction as they returned it.
type actionsError struct{ err error }

func (e *actionsError) Error() string { return e.err.Error() }
func (e *actionsError) Unwrap() error { return e.err }

var errNotMoved = errors.New("nothing moved")

// advanced fills out from the row AdvanceRun returned.
func (s *Store) advanced(out *Advanced, row dbsqlc.AdvanceRunRow) error {
	run, err := pgstore.RunFromRow(dbsqlc.WorkflowRun(row))
	if err != nil {
		return err
	}
	out.Run = run
	out.RowVersion, out.At, out.NextRunAt = row.RowVersion, row.UpdatedAt.Time, row.NextRunAt.Time
	return nil
}

// whyNot tells why a fenced write moved nothing: runtime.ErrLeaseLost when the
// lease is no longer held, runtime.ErrConflict when the run moved, runtime.ErrRunNotFound.
func (s *Store) whyNot(ctx context.Context, id pgtype.UUID, l *Lease, t runtime.Transition, rowVersion int64) error {
	st, err := s.q.LeaseState(ctx, dbsqlc.LeaseStateParams{Now: s.db.Now(), ID: id})
	if errors.Is(err, pgx.ErrNoRows) {
		return runtime.ErrRunNotFound
	}
	if err != nil {
		return pgstore.Translate(err)
	}
	if l != nil && (st.LeaseOwner.String != l.Owner || st.LeaseEpoch != l.Epoch || !st.LeaseLive) {
		return fmt.Errorf("%w: epoch %d of %s; the run is leased by %q at epoch %d (live: %t)",
			runtime.ErrLeaseLost, l.Epoch, l.Owner, st.LeaseOwner.String, st.LeaseEpoch, st.LeaseLive)
	}
	if t.From == "" {
		return fmt.Errorf("%w: expected row version %d, the run is in %s at row version %d", runtime.ErrConflict, rowVersion, st.CurrentState, st.RowVersion)
	}
	return fmt.Errorf("%w: expected %s at row version %d, the run is in %s at row version %d",
		runtime.ErrConflict, t.From, rowVersion, st.CurrentState, st.RowVersion)
}

// ScheduleRetry gives up the failed try number stepAttempt of the run's
// current state: the run is due again after delay, its lease is released,
// step_attempt grows by one and the error is kept on the run and logged
// (an attempt_failed step with the delay and the time it is due).
func (s *Store) ScheduleRetry(ctx context.Context, l Lease, rowVersion int64, stepAttempt int, delay time.Duration, code, detail string) (time.Time, error) {
	id, err := pgstore.ParseRunID("schedule retry", l.RunID)
	if err != nil {
		return time.Time{}, err
	}
	at, err := s.q.ScheduleRetry(ctx, dbsqlc.ScheduleRetryParams{
		Now: s.db.Now(), DelayUs: max(delay, 0).Microseconds(), ErrorCode: pgtype.Text{String: diag.Sanitize(code), Valid: code != ""},
		ErrorDetail: diag.Sanitize(detail), ID: id, RowVersion: rowVersion, StepAttempt: int32(stepAttempt), Owner: l.Owner, Epoch: l.Epoch,
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, pgstore.RunErr("schedule retry", l.RunID, s.whyNot(ctx, id, &l, runtime.Transition{}, rowVersion))
	}
	if err != nil {
		return time.Time{}, pgstore.RunErr("schedule retry", l.RunID, pgstore.Translate(err))
	}
	return at.Time, nil
}

// Park parks a run whose retries gave up: it stays in its state with its
// error, unscheduled and unleased, until Resume or a cancellation; the
// parking is logged.
func (s *Store) Park(ctx context.Context, l Lease, rowVersion int64, code, detail string) error {
	id, err := pgstore.ParseRunID("park", l.RunID)
	if err != nil {
		return err
	}
	_, err = s.q.ParkRun(ctx, dbsqlc.ParkRunParams{Now: s.db.Now(), ErrorCode: pgtype.Text{String: diag.Sanitize(code), Valid: code != ""},
		ErrorDetail: diag.Sanitize(detail), ID: id, RowVersion: rowVersion, Owner: l.Owner, Epoch: l.Epoch})
	if errors.Is(err, pgx.ErrNoRows) {
		return pgstore.RunErr("park", l.RunID, s.whyNot(ctx, id, &l, runtime.Transition{}, rowVersion))
	}
	if err != nil {
		return pgstore.RunErr("park", l.RunID, pgstore.Translate(err))
	}
	return nil
}

// Child is a finished child run whose event was not fired on its parent yet.
type Child struct {
	ID     string
	Type   string
	State  string
	Status runtime.Status
	Result *runtime.Result
	// Event is the event to fire on the parent.
	Event string
}

// FinishedChildren returns the children of a run that reached a terminal
// state and whose event was not fired on the run yet, first finished first.
func (s *Store) FinishedChildren(ctx context.Context, runID string) ([]Child, error) {
	id, err := pgstore.ParseRunID("finished children", runID)
	if err != nil {
		return nil, err
	}
	rows, err := s.q.FinishedChildren(ctx, id)
	if err != nil {
		return nil, pgstore.RunErr("finished children", runID, pgstore.Translate(err))
	}
	out := make([]Child, 0, len(rows))
	for _, r := range rows {
		c := Child{ID: pgstore.UUIDString(r.ID), Type: r.WorkflowType, State: r.CurrentState, Status: runtime.Status(r.Status), Event: r.ParentEvent.String}
		if len(r.Result) > 0 {
			var res runtime.Result
			if err := json.Unmarshal(r.Result, &res); err != nil {
				return nil, pgstore.RunErr("finished children", runID, fmt.Errorf("%w: result of child %s does not decode: %w", runtime.ErrPayload, c.ID, err))
			}
			c.Result = &res
		}
		out = append(out, c)
	}
	return out, nil
}

// LoggedEvent is an event recorded by a transition: its name and payload.
type LoggedEvent struct {
	Name    string
	Payload json.RawMessage
}

// ForEvent is a run read to be sent an event from outside (a caller's
// signal, a cancellation), with what deciding on the event takes.
type ForEvent struct {
	Run runtime.Run
	// ChildEvent reports whether a child of the run, finished or not,
	// names the event as the one fired on the run when it finishes.
	ChildEvent bool
	// Events are the events recorded in the run's current attempt, oldest
	// first, when EventsRead: when the run is in one of the guarded states
	// ReadForEvent was given.
	Events     []LoggedEvent
	EventsRead bool
}

// KindState is a state of a definition.
type KindState struct {
	Kind
	State string
}

// ReadForEvent reads a run about to be sent an event from outside, in one
// statement: the run; whether one of its children names childEvent as the
// one fired on it when it finishes (not asked when childEvent is empty);
// and, when the run is in one of guarded (the states whose rows on the
// event have guards, which may read them), the events recorded in its
// current attempt. A run that does not exist fails with
// runtime.ErrRunNotFound, as store.Store.Get does.
func (s *Store) ReadForEvent(ctx context.Context, runID, childEvent string, guarded []KindState) (ForEvent, error) {
	const op = "get"
	id, err := pgstore.ParseRunID(op, runID)
	if err != nil {
		return ForEvent{}, err
	}
	arg := dbsqlc.ReadRunForEventParams{ID: id, ChildEvent: pgtype.Text{String: childEvent, Valid: childEvent != ""},
		GuardedTypes: make([]string, len(guarded)), GuardedVersions: make([]int32, len(guarded)), GuardedStates: make([]string, len(guarded))}
	for i, g := range guarded {
		arg.GuardedTypes[i], arg.GuardedVersions[i], arg.GuardedStates[i] = g.Type, int32(g.Version), g.State
	}
	row, err := s.q.ReadRunForEvent(ctx, arg)
	if err != nil {
		return ForEvent{}, pgstore.RunErr(op, runID, pgstore.Translate(err))
	}
	run, err := pgstore.RunFromRow(row.WorkflowRun)
	if err != nil {
		return ForEvent{Run: run}, pgstore.RunErr(op, runID, err)
	}
	out := ForEvent{Run: run, ChildEvent: row.ChildEventNamed, EventsRead: row.EventsRead}
	if out.EventsRead {
		out.Events = s.loggedEvents(row.EventNames, row.EventPayloads)
	}
	return out, nil
}

// loggedEvents pairs the names and payloads of logged events, as a
// statement aggregates them.
func (s *Store) loggedEvents(names []string, payloads [][]byte) []LoggedEvent {
	out := make([]LoggedEvent, min(len(names), len(payloads)))
	for i := range out {
		out[i] = LoggedEvent{Name: names[i], Payload: pgstore.RawJSON(payloads[i])}
	}
	return out
}

// AttemptEvents returns the events recorded in the given attempt of a run,
// oldest first.
func (s *Store) AttemptEvents(ctx context.Context, runID string, attempt int) ([]LoggedEvent, error) {
	id, err := pgstore.ParseRunID("attempt events", runID)
	if err != nil {
		return nil, err
	}
	rows, err := s.q.AttemptEvents(ctx, dbsqlc.AttemptEventsParams{ID: id, AttemptNo: int32(attempt)})
	if err != nil {
		return nil, pgstore.RunErr("attempt events", runID, pgstore.Translate(err))
	}
	out := make([]LoggedEvent, len(rows))
	for i, r := range rows {
		out[i] = LoggedEvent{Name: r.Event.String, Payload: pgstore.RawJSON(r.Payload)}
	}
	return out, nil
}
