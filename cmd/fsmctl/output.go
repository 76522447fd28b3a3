package main

import (
	"encoding/json"
	"flag"
	"time"

	"github.com/fsmgen/fsmgen/internal/cliout"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// The JSON forms of what the read commands print with -o json: snake_case
// fields, times in RFC 3339 UTC (null when unset), JSON documents as
// stored, and a run's result as the store keeps it (runtime.Result).

type jsonRun struct {
	ID               string          `json:"id"`
	Type             string          `json:"type"`
	Version          int             `json:"version"`
	State            string          `json:"state"`
	Status           string          `json:"status"`
	RowVersion       int64           `json:"row_version"`
	Attempt          int             `json:"attempt_no"`
	TenantID         string          `json:"tenant_id"`
	UserID           string          `json:"user_id"`
	CorrelationID    string          `json:"correlation_id"`
	IdempotencyKey   string          `json:"idempotency_key"`
	Input            json.RawMessage `json:"input"`
	Result           *runtime.Result `json:"result"`
	CreatedAt        *time.Time      `json:"created_at"`
	UpdatedAt        *time.Time      `json:"updated_at"`
	AttemptStartedAt *time.Time      `json:"attempt_started_at"`
	FinishedAt       *time.Time      `json:"finished_at"`
	NextRunAt        *time.Time      `json:"next_run_at"`
	ParkedAt         *time.Time      `json:"parked_at"`
	StepAttempt      int             `json:"step_attempt"`
	LastErrorCode    string          `json:"last_error_code"`
	LastError        string          `json:"last_error"`
	LeaseOwner       string          `json:"lease_owner"`
	LeaseExpiresAt   *time.Time      `json:"lease_expires_at"`
	ParentID         string          `json:"parent_run_id"`
	ParentEvent      string          `json:"parent_event"`
}

type jsonStep struct {
	Seq        int             `json:"seq"`
	At         *time.Time      `json:"at"`
	Kind       string          `json:"kind"`
	Name       string          `json:"name"`
	Event      string          `json:"event"`
	From       string          `json:"state_before"`
	To         string          `json:"state_after"`
	Attempt    int             `json:"attempt_no"`
	RowVersion int64           `json:"row_version"`
	Payload    json.RawMessage `json:"payload"`
}

// jsonTime is t in UTC, or nil for the zero time.
func jsonTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

// jsonDoc is a stored JSON document, or nil (null) when there is none.
func jsonDoc(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	return b
}

func toJSONRun(r runtime.Run) jsonRun {
	out := jsonRun{
		ID: r.ID, Type: r.Type, Version: r.Version, State: r.State, Status: string(r.Status),
		RowVersion: r.RowVersion, Attempt: r.Attempt, TenantID: r.TenantID, UserID: r.UserID,
		CorrelationID: r.CorrelationID, IdempotencyKey: r.IdempotencyKey, Input: jsonDoc(r.Input),
		CreatedAt: jsonTime(r.CreatedAt), UpdatedAt: jsonTime(r.UpdatedAt), AttemptStartedAt: jsonTime(r.StartedAt),
		FinishedAt: jsonTime(r.FinishedAt), NextRunAt: jsonTime(r.NextRunAt), ParkedAt: jsonTime(r.ParkedAt),
		StepAttempt: r.StepAttempt, LastErrorCode: r.LastErrorCode, LastError: r.LastError,
		LeaseOwner: r.Lease.Owner, LeaseExpiresAt: jsonTime(r.Lease.ExpiresAt), ParentID: r.ParentID, ParentEvent: r.ParentEvent,
		Result: r.Result,
	}
	return out
}

func toJSONSteps(steps []store.Step) []jsonStep {
	out := make([]jsonStep, len(steps))
	for i, s := range steps {
		out[i] = jsonStep{
			Seq: i + 1, At: jsonTime(s.At), Kind: string(s.Kind), Name: s.Name, Event: s.Event,
			From: s.From, To: s.To, Attempt: s.Attempt, RowVersion: s.RowVersion, Payload: jsonDoc(s.Payload),
		}
	}
	return out
}

// wantJSON reports whether the command was asked for -o json.
func wantJSON(fs *flag.FlagSet) bool { return cliout.FromFlags(fs) == cliout.JSON }

// addOutputFlag declares -o (text or json) on a command's flag set.
func addOutputFlag(fs *flag.FlagSet) { cliout.AddFlag(fs) }
