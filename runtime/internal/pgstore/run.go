package pgstore

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/internal/dbsqlc"
	"github.com/fsmgen/fsmgen/runtime/internal/diag"
)

// RunFromRow converts a row of workflow_runs.
func RunFromRow(r dbsqlc.WorkflowRun) (runtime.Run, error) {
	run := runtime.Run{
		ID:             UUIDString(r.ID),
		Type:           r.WorkflowType,
		Version:        int(r.DefinitionVersion),
		IdempotencyKey: r.IdempotencyKey,
		State:          r.CurrentState,
		Status:         runtime.Status(r.Status),
		Attempt:        int(r.AttemptNo),
		StepAttempt:    int(r.StepAttempt),
		Owner: runtime.Owner{
			TenantID:      r.TenantID,
			UserID:        UUIDString(r.UserID),
			CorrelationID: UUIDString(r.CorrelationID),
		},
		Input:         RawJSON(r.Input),
		Policy:        RawJSON(r.PolicySnapshot),
		CreatedAt:     r.CreatedAt.Time,
		UpdatedAt:     r.UpdatedAt.Time,
		StartedAt:     r.AttemptStartedAt.Time,
		FinishedAt:    r.FinishedAt.Time,
		NextRunAt:     r.NextRunAt.Time,
		ParkedAt:      r.ParkedAt.Time,
		LastErrorCode: r.LastErrorCode.String,
		LastError:     r.LastError.String,
		ParentID:      UUIDString(r.ParentRunID),
		ParentEvent:   r.ParentEvent.String,
		RowVersion:    r.RowVersion,
		Lease: runtime.Lease{
			Owner:     r.LeaseOwner.String,
			Epoch:     r.LeaseEpoch,
			ExpiresAt: r.LeaseExpiresAt.Time,
		},
	}
	if len(r.Result) > 0 {
		var res runtime.Result
		if err := json.Unmarshal(r.Result, &res); err != nil {
			return run, fmt.Errorf("%w: stored result does not decode: %w", runtime.ErrPayload, err)
		}
		if string(res.Output) == "null" {
			res.Output = nil
		}
		run.Result = &res
	}
	if len(r.History) > 0 && string(r.History) != "null" {
		if err := json.Unmarshal(r.History, &run.History); err != nil {
			return run, fmt.Errorf("%w: stored history does not decode: %w", runtime.ErrPayload, err)
		}
	}
	if len(r.TimerAnchors) > 0 && string(r.TimerAnchors) != "null" {
		anchors, err := DecodeAnchors(r.TimerAnchors)
		if err != nil {
			return run, err
		}
		run.TimerAnchors = anchors
	}
	return run, nil
}

// storedAnchor is a timer anchor as workflow_runs.timer_anchors holds it.
type storedAnchor struct {
	At      time.Time `json:"at"`
	AfterUS []int64   `json:"after_us"`
}

// DecodeAnchors decodes workflow_runs.timer_anchors.
func DecodeAnchors(raw []byte) (map[string]runtime.TimerAnchor, error) {
	var stored map[string]storedAnchor
	if err := json.Unmarshal(raw, &stored); err != nil {
		return nil, fmt.Errorf("%w: stored timer anchors do not decode: %w", runtime.ErrPayload, err)
	}
	out := make(map[string]runtime.TimerAnchor, len(stored))
	for state, a := range stored {
		ta := runtime.TimerAnchor{At: a.At, After: make([]time.Duration, len(a.AfterUS))}
		for i, us := range a.AfterUS {
			ta.After[i] = time.Duration(us) * time.Microsecond
		}
		out[state] = ta
	}
	return out, nil
}

// RawJSON maps an empty or null JSONB value to nil.
func RawJSON(b []byte) json.RawMessage {
	if len(b) == 0 || string(b) == "null" {
		return nil
	}
	return json.RawMessage(b)
}

// UUIDString is u in its canonical text form, "" when NULL.
func UUIDString(u pgtype.UUID) string {
	if !u.Valid {
		return ""
	}
	return u.String()
}

// ParseUUID parses a UUID; what names the parameter in the error.
func ParseUUID(what, s string) (pgtype.UUID, error) {
	var u pgtype.UUID
	if err := u.Scan(s); err != nil {
		return u, fmt.Errorf("%s %s is not a UUID", what, diag.Quote(s))
	}
	return u, nil
}

// ParseRunID parses a run id, failing with the store's error for op.
func ParseRunID(op, id string) (pgtype.UUID, error) {
	u, err := ParseUUID("run id", id)
	if err != nil {
		return u, RunErr(op, diag.Short(id), fmt.Errorf("%w: %w", runtime.ErrInvalidID, err))
	}
	return u, nil
}
