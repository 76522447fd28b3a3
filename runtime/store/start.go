package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/internal/dbsqlc"
)

// StartParams says which run to start.
type StartParams struct {
	// Type and Version name a registered definition.
	Type    string
	Version int
	// IdempotencyKey identifies the command: one run per (Type, key).
	IdempotencyKey string
	// TenantID is required; UserID and CorrelationID are UUIDs, UserID
	// optional, CorrelationID generated when empty.
	TenantID      string
	UserID        string
	CorrelationID string
	// Input is the run's input and PolicySnapshot the policy it runs under;
	// both are encoded to JSON (a json.RawMessage is taken as is) and may be
	// nil. A restart keeps the first attempt's input and replaces the policy
	// snapshot when a new one is given.
	Input          any
	PolicySnapshot any
	// ResolvePolicy, when set and PolicySnapshot is nil, resolves the
	// policy snapshot of a run that Start is about to create or restart.
	// It is called after the idempotency check, so a run that has the key
	// and has not failed (Cached, Running, Cancelled) is returned without
	// it: a policy engine that is down cannot refuse a cached result. Its
	// error refuses the start and writes nothing.
	ResolvePolicy func(ctx context.Context) (json.RawMessage, error)
}

// StartOutcome says which branch Start took.
type StartOutcome int

// The branches of Start.
const (
	// Created: no run had the key; a new one was inserted in the initial
	// state, attempt 1.
	Created StartOutcome = iota + 1
	// Cached: the run succeeded earlier; its result is returned and nothing
	// runs again.
	Cached
	// Running: the run is in a non-terminal state; its id and state are
	// returned with an ETA, and no duplicate is created.
	Running
	// Restarted: the run had failed; the same row was reset to the initial
	// state with attempt_no + 1.
	Restarted
	// Cancelled: the run was cancelled; a cancellation is final, so it is
	// returned as it is, with its result, and nothing runs again. Use a new
	// idempotency key to run the command anew.
	Cancelled
)

// String returns the outcome's name.
func (o StartOutcome) String() string {
	switch o {
	case Created:
		return "created"
	case Cached:
		return "cached"
	case Running:
		return "running"
	case Restarted:
		return "restarted"
	case Cancelled:
		return "cancelled"
	}
	return fmt.Sprintf("StartOutcome(%d)", int(o))
}

// StartResult is what Start did and the run it did it to.
type StartResult struct {
	Outcome StartOutcome
	Run     Run
	// ETA, for Running only, is when the run's current attempt is expected to
	// finish: its start plus the median duration of the last 100 succeeded
	// runs of its type. Zero when no run of the type has succeeded yet.
	// Remaining is the time from the database's now to the ETA, never
	// negative.
	ETA       time.Time
	Remaining time.Duration
}

// maxStartRounds bounds the insert-or-read loop of Start; each round ends
// only because another caller changed the row in between.
const maxStartRounds = 16

// Start starts a run idempotently, with the branches of the platform's
// contract, selected by the state of the run that has the same (Type,
// IdempotencyKey), if any:
//
//   - none: insert a run in the initial state, attempt 1 (Created);
//   - succeeded: return it with its cached result, run nothing (Cached);
//   - non-terminal: return its id, state and an ETA (Running);
//   - failed: reset the same row to the initial state with attempt_no + 1
//     (Restarted), following the Version given;
//   - cancelled: return it as it is, run nothing (Cancelled).
//
// It is correct under any number of concurrent callers with the same key:
// the unique (type, key) index decides who inserts (INSERT ... ON CONFLICT
// DO NOTHING, then a read), and the row version decides who restarts a
// failed run; every other caller sees the run the winner made.
//
// A created or restarted run is scheduled as its initial state is entered
// (see Record): due at once for a state with a handler, at its first timer
// for a state that waits, and never for one that waits without a timer,
// which only an event moves.
//
// A created or restarted run is announced on NotifyChannel, with its type,
// by the statement that writes it: idle workers listening there claim it at
// once, and the start costs one commit.
func (s *Store) Start(ctx context.Context, p StartParams) (StartResult, error) {
	op := fmt.Sprintf("start %s/%s", short(p.Type), short(p.IdempotencyKey))
	fail := func(err error) (StartResult, error) { return StartResult{}, runErr(op, "", err) }
	if p.Type == "" || p.IdempotencyKey == "" || p.TenantID == "" {
		return fail(fmt.Errorf("%w: type, idempotency key and tenant id are required", ErrInvalidInput))
	}
	for _, f := range [...]struct{ what, v string }{{"type", p.Type}, {"idempotency key", p.IdempotencyKey}, {"tenant id", p.TenantID}} {
		if err := s.checkText(f.what, f.v); err != nil {
			return fail(err)
		}
	}
	var userID, corrID pgtype.UUID
	var err error
	if p.UserID != "" {
		if userID, err = parseUUID("user id", p.UserID); err != nil {
			return fail(fmt.Errorf("%w: %w", ErrInvalidInput, err))
		}
	}
	if p.CorrelationID != "" {
		if corrID, err = parseUUID("correlation id", p.CorrelationID); err != nil {
			return fail(fmt.Errorf("%w: %w", ErrInvalidInput, err))
		}
	}
	input, err := s.encodeJSON("input", p.Input)
	if err != nil {
		return fail(err)
	}
	d, err := s.definition(ctx, p.Type, p.Version)
	if err != nil {
		return fail(err)
	}
	if p.PolicySnapshot == nil && p.ResolvePolicy != nil {
		got, err := s.q.GetRunByKey(ctx, dbsqlc.GetRunByKeyParams{Now: s.now(), WorkflowType: p.Type, IdempotencyKey: p.IdempotencyKey})
		switch {
		case err == nil:
			res, done, err := existingStart(got)
			if err != nil {
				return StartResult{}, runErr(op, res.Run.ID, err)
			}
			if done {
				return res, nil
			}
		case !errors.Is(err, pgx.ErrNoRows):
			return fail(Translate(err))
		}
		snap, err := p.ResolvePolicy(ctx)
		if err != nil {
			return fail(err)
		}
		p.PolicySnapshot = snap
	}
	policy, err := s.encodeJSON("policy snapshot", p.PolicySnapshot)
	if err != nil {
		return fail(err)
	}

	for range maxStartRounds {
		row, err := s.q.InsertRun(ctx, dbsqlc.InsertRunParams{
			WorkflowType: p.Type, InitialState: d.def.Initial, NextDelayUs: d.initialDelay(), TenantID: p.TenantID,
			UserID: userID, CorrelationID: corrID, IdempotencyKey: p.IdempotencyKey,
			PolicySnapshot: policy, Now: s.now(), DefinitionVersion: int32(p.Version), Input: input,
		})
		if err == nil {
			run, err := runFromRow(dbsqlc.WorkflowRun(row))
			if err != nil {
				return StartResult{}, runErr(op, run.ID, err)
			}
			return StartResult{Outcome: Created, Run: run}, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return fail(Translate(err))
		}

		got, err := s.q.GetRunByKey(ctx, dbsqlc.GetRunByKeyParams{Now: s.now(), WorkflowType: p.Type, IdempotencyKey: p.IdempotencyKey})
		if errors.Is(err, pgx.ErrNoRows) {
			continue // gone between the insert and the read: insert again
		}
		if err != nil {
			return fail(Translate(err))
		}
		res, done, err := existingStart(got)
		if err != nil {
			return StartResult{}, runErr(op, res.Run.ID, err)
		}
		if done {
			return res, nil
		}
		run := res.Run
		switch run.Status {
		case runtime.StatusFailed:
			moved, err := s.q.RestartRun(ctx, dbsqlc.RestartRunParams{
				InitialState: d.def.Initial, NextDelayUs: d.initialDelay(), DefinitionVersion: int32(p.Version), PolicySnapshot: policy,
				Now: s.now(), ID: got.WorkflowRun.ID, RowVersion: run.RowVersion, FromState: run.State,
			})
			if errors.Is(err, pgx.ErrNoRows) {
				continue // another caller restarted it first: read it again
			}
			if err != nil {
				return StartResult{}, runErr(op, run.ID, Translate(err))
			}
			run, err := runFromRow(dbsqlc.WorkflowRun(moved))
			if err != nil {
				return StartResult{}, runErr(op, run.ID, err)
			}
			return StartResult{Outcome: Restarted, Run: run}, nil
		default:
			return StartResult{}, runErr(op, run.ID, fmt.Errorf("%w: stored status %q", ErrUnknownState, run.Status))
		}
	}
	return fail(fmt.Errorf("%w: the run changed under %d consecutive reads", ErrConflict, maxStartRounds))
}

// existingStart returns the branch Start takes for got, the run that has
// the key: done for Cached, Running and Cancelled; not done, with the run,
// for a failed run, which Start restarts.
func existingStart(got dbsqlc.GetRunByKeyRow) (StartResult, bool, error) {
	run, err := runFromRow(got.WorkflowRun)
	if err != nil {
		return StartResult{Run: run}, false, err
	}
	switch run.Status {
	case runtime.StatusSucceeded:
		return StartResult{Outcome: Cached, Run: run}, true, nil
	case runtime.StatusCancelled:
		return StartResult{Outcome: Cancelled, Run: run}, true, nil
	case runtime.StatusRunning:
		res := StartResult{Outcome: Running, Run: run}
		if got.MedianSeconds >= 0 {
			res.ETA = run.AttemptStartedAt.Add(time.Duration(got.MedianSeconds * float64(time.Second)))
			res.Remaining = max(0, res.ETA.Sub(got.DbNow.Time))
		}
		return res, true, nil
	}
	return StartResult{Run: run}, false, nil
}
