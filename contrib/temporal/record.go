package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"go.temporal.io/sdk/temporal"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/activity"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// Executor names Temporal as the executor of the runs it records in
// PostgreSQL (store.External.Executor).
const Executor = "temporal"

// RecordActivityName is the name of the activity that records the start
// and the transitions of the runs of machine type typ in PostgreSQL, such
// as "nyc-application-compliance.record".
func RecordActivityName(typ string) string { return typ + ".record" }

// recordRefused is the error type of a record that no try would write:
// the run in PostgreSQL is not where the workflow is (another attempt,
// another transition at that row version), is another executor's, or the
// transition or a payload is refused.
const recordRefused = "RECORD_REFUSED"

// Transition is a transition of a run as the record writes it: the states
// before and after, the event and its payload as JSON, the outcome, and
// for a nested machine the states it exited and entered
// (runtime.Transition).
type Transition struct {
	From    string          `json:"from"`
	To      string          `json:"to"`
	Event   string          `json:"event"`
	Payload json.RawMessage `json:"payload,omitempty"`
	Outcome string          `json:"outcome,omitempty"`
	Exited  []string        `json:"exited,omitempty"`
	Entered []string        `json:"entered,omitempty"`
}

// RecordInput is the input of the record activity: the start of an attempt
// of a run (Start set), or one of its transitions (Transition set) with the
// effects of the handler whose event made it.
type RecordInput struct {
	// RunID, Type, Version and Attempt identify the run and its attempt.
	RunID   string `json:"runId"`
	Type    string `json:"type"`
	Version int    `json:"version"`
	Attempt int    `json:"attempt"`
	// Start is the run's input, for the record of its start.
	Start *Start `json:"start,omitempty"`
	// RowVersion is the run's row version before Transition: the row
	// version the start's record returned, plus one for each transition
	// recorded since.
	RowVersion int64       `json:"rowVersion,omitempty"`
	Transition *Transition `json:"transition,omitempty"`
	// Effects are the handler's: its steps, logged before the transition;
	// its messages, written to the outbox after it; its enqueued runs and
	// children, logged as steps named "enqueued" and "child" (their type,
	// key, run id and event); the cached activity results it used, marked
	// consumed; and, when the transition ends the run, the result.
	Effects Effects `json:"effects"`
}

// RecordOutput is what the record activity returns.
type RecordOutput struct {
	// RowVersion is the run's row version after the write.
	RowVersion int64 `json:"rowVersion"`
	// AlreadyApplied says an earlier try had written it.
	AlreadyApplied bool `json:"alreadyApplied,omitempty"`
}

// Option configures Register.
type Option func(*options)

type options struct {
	record *store.Store
}

// WithRecord records the machine's runs in the PostgreSQL tables of st,
// as the engine records its own: the workflow records its start and, after
// each transition, the transition with its handler's effects, by the
// activity RecordActivityName(type) (see the package documentation,
// "The record in PostgreSQL"). The machine's definition is registered in
// st by the activity.
func WithRecord(st *store.Store) Option { return func(o *options) { o.record = st } }

// record writes in as the record activity of def's runs, to st.
func record(ctx context.Context, st *store.Store, def runtime.Definition, in RecordInput) (RecordOutput, error) {
	out, err := recordIn(ctx, st, def, in)
	if err != nil && permanent(err) {
		return out, temporal.NewNonRetryableApplicationError(err.Error(), recordRefused, err)
	}
	return out, err
}

// permanent says whether no try would write what err refused.
func permanent(err error) bool {
	for _, p := range []error{runtime.ErrConflict, runtime.ErrOtherExecutor, runtime.ErrTransitionRefused, runtime.ErrInvalidInput,
		runtime.ErrInvalidID, runtime.ErrPayload, runtime.ErrDefinitionConflict, runtime.ErrInvalidDefinition, runtime.ErrDefinitionMismatch,
		runtime.ErrRunFinished, runtime.ErrRunNotFound, runtime.ErrUnknownState} {
		if errors.Is(err, p) {
			return true
		}
	}
	return false
}

func recordIn(ctx context.Context, st *store.Store, def runtime.Definition, in RecordInput) (RecordOutput, error) {
	if in.Type != def.Type || in.Version != def.Version {
		return RecordOutput{}, fmt.Errorf("%w: record of %s v%d by the activity of %s v%d", runtime.ErrDefinitionMismatch, in.Type, in.Version, def.Type, def.Version)
	}
	if err := st.Register(ctx, def); err != nil {
		return RecordOutput{}, err
	}
	x := store.External{Executor: Executor, ID: in.RunID, Attempt: max(in.Attempt, 1)}
	switch {
	case in.Start != nil:
		s := in.Start
		p := runtime.StartRequest{Type: def.Type, Version: def.Version, IdempotencyKey: s.IdempotencyKey,
			Owner: runtime.Owner{TenantID: s.TenantID, UserID: s.UserID, CorrelationID: s.CorrelationID}}
		if len(s.Input) > 0 {
			p.Input = s.Input
		}
		if len(s.Policy) > 0 {
			p.Policy = s.Policy
		}
		res, err := st.StartExternal(ctx, x, p)
		if err != nil {
			return RecordOutput{}, err
		}
		return RecordOutput{RowVersion: res.Run.RowVersion}, nil
	case in.Transition == nil:
		return RecordOutput{}, fmt.Errorf("%w: a record of run %s holds neither its start nor a transition", runtime.ErrInvalidInput, in.RunID)
	}
	tr := in.Transition
	to, ok := def.StateOf(tr.To)
	if !ok {
		return RecordOutput{}, fmt.Errorf("%s: %w: %s", def.Type, runtime.ErrUnknownState, tr.To)
	}
	status := to.Status
	if status == "" {
		status = runtime.StatusRunning
	}
	t := runtime.Transition{Machine: def.Type, Version: def.Version, From: tr.From, To: tr.To, Event: tr.Event,
		Status: status, Outcome: tr.Outcome, Exited: tr.Exited, Entered: tr.Entered}
	if len(tr.Payload) > 0 {
		t.Payload = tr.Payload
	}
	fx := in.Effects.store(in.RunID)
	var res *runtime.Result
	if status.Terminal() && in.Effects.Result {
		res = &runtime.Result{Output: in.Effects.Output, CostUSD: in.Effects.CostUSD, ErrorCode: in.Effects.ErrorCode, ErrorDetail: in.Effects.ErrorDetail}
	}
	rec, err := st.RecordExternal(ctx, x, in.RowVersion, t, fx, res)
	if err != nil {
		return RecordOutput{}, err
	}
	return RecordOutput{RowVersion: rec.RowVersion, AlreadyApplied: rec.AlreadyApplied}, nil
}

// store returns the effects as the store writes them for run runID.
func (e Effects) store(runID string) store.Effects {
	var fx store.Effects
	for _, s := range e.Steps {
		fx.Steps = append(fx.Steps, store.StepEffect{Name: s.Name, Payload: raw(s.Payload)})
	}
	started := func(name string, q Enqueued, event string) {
		payload := map[string]string{"type": q.Type, "idempotencyKey": q.IdempotencyKey, "runId": RunID(q.Type, q.IdempotencyKey)}
		if event != "" {
			payload["event"] = event
		}
		fx.Steps = append(fx.Steps, store.StepEffect{Name: name, Payload: payload})
	}
	for _, q := range e.Enqueued {
		started("enqueued", q, "")
	}
	for _, c := range e.Children {
		started("child", c.Enqueued, c.Event)
	}
	for _, m := range e.Messages {
		fx.Messages = append(fx.Messages, store.MessageEffect{Topic: m.Topic, Payload: raw(m.Payload)})
	}
	if keys := e.Consumed; len(keys) > 0 {
		fx.InTx = func(ctx context.Context, tx pgx.Tx, rec store.Recorded) error {
			for _, k := range keys {
				if err := activity.MarkConsumed(ctx, tx, k, runID, rec.RowVersion, rec.At); err != nil {
					return err
				}
			}
			return nil
		}
	}
	return fx
}

// raw is a JSON payload as the store writes it: nil (no payload) when
// empty.
func raw(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	return b
}
