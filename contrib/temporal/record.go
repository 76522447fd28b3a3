package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

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

// recordSink is the record activity of def's runs, writing to st. It
// registers def in st once, at its first record, not at every one.
type recordSink struct {
	st         *store.Store
	def        runtime.Definition
	registered atomic.Bool
}

// record writes in, a record of def's runs, to st.
func (r *recordSink) record(ctx context.Context, in RecordInput) (RecordOutput, error) {
	out, err := r.recordIn(ctx, in)
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

func (r *recordSink) recordIn(ctx context.Context, in RecordInput) (RecordOutput, error) {
	st, def := r.st, r.def
	if in.Type != def.Type || in.Version != def.Version {
		return RecordOutput{}, fmt.Errorf("%w: record of %s v%d by the activity of %s v%d", runtime.ErrDefinitionMismatch, in.Type, in.Version, def.Type, def.Version)
	}
	if !r.registered.Load() {
		if err := st.Register(ctx, def); err != nil {
			return RecordOutput{}, err
		}
		r.registered.Store(true)
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
	t.Payload = raw(tr.Payload)
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
func (e Effects) store(runID string) store.ExternalEffects {
	var fx store.ExternalEffects
	for _, s := range e.Steps {
		fx.Steps = append(fx.Steps, store.ExternalStep{Name: s.Name, Payload: raw(s.Payload)})
	}
	started := func(name string, q Enqueued, event string) {
		payload := map[string]string{"type": q.Type, "idempotencyKey": q.IdempotencyKey, "runId": RunID(q.Type, q.IdempotencyKey)}
		if event != "" {
			payload["event"] = event
		}
		fx.Steps = append(fx.Steps, store.ExternalStep{Name: name, Payload: payload})
	}
	for _, q := range e.Enqueued {
		started("enqueued", q, "")
	}
	for _, c := range e.Children {
		started("child", c.Enqueued, c.Event)
	}
	for _, m := range e.Messages {
		fx.Messages = append(fx.Messages, store.ExternalMessage{Topic: m.Topic, Payload: raw(m.Payload)})
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
	if len(b) == 0 || string(b) == "null" {
		return nil
	}
	return b
}

// RecordTimeout bounds one try of the record activity.
const RecordTimeout = 30 * time.Second

// recordRetry is the retry policy of the record activity: tried until it
// succeeds (a database that is down, a lost connection), never for a
// record no try would write.
var recordRetry = &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute,
	NonRetryableErrorTypes: []string{recordRefused}}

// recorder records a run's start and transitions from its workflow, in
// order, one record activity at a time, by a coroutine of its own: the
// machine queues a record as it moves (and gives the handler's effects to
// the records of the transitions the handler's event made) and goes on;
// the run waits for its records before its workflow completes.
type recorder struct {
	typ     string
	version int
	// queue holds the records not written yet, the one being written
	// first.
	queue []RecordInput
	// rowVersion is the run's row version after the last record written.
	rowVersion int64
	// refused is the error of a record that no try would write: the
	// records after it are not written.
	refused error
}

// newRecorder returns the recorder of the run that starts with in, its
// start queued.
func newRecorder(def runtime.Definition, in Start) *recorder {
	r := &recorder{typ: def.Type, version: def.Version}
	start := in
	if start.IdempotencyKey == "" {
		start.IdempotencyKey = in.RunID
	}
	r.queue = append(r.queue, r.input(in, &start, nil))
	return r
}

// input is the record of in's run with start or t.
func (r *recorder) input(in Start, start *Start, t *Transition) RecordInput {
	return RecordInput{RunID: in.RunID, Type: r.typ, Version: r.version, Attempt: max(in.Attempt, 1), Start: start, Transition: t}
}

// run writes the queued records, in order, until ctx ends.
func (r *recorder) run(ctx workflow.Context) {
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: RecordTimeout, RetryPolicy: recordRetry})
	logger := workflow.GetLogger(ctx)
	for {
		if err := workflow.Await(ctx, func() bool { return len(r.queue) > 0 && r.refused == nil }); err != nil {
			return
		}
		in := r.queue[0]
		if in.Transition != nil {
			in.RowVersion = r.rowVersion
		}
		var out RecordOutput
		if err := workflow.ExecuteLocalActivity(lctx, RecordActivityName(r.typ), in).Get(ctx, &out); err != nil {
			if ctx.Err() != nil {
				return
			}
			r.refused = err
			logger.Error("the run's record in PostgreSQL stops: a record was refused", "records", len(r.queue), "error", err.Error())
			return
		}
		r.rowVersion = out.RowVersion
		r.queue = r.queue[1:]
	}
}

// queued is the number of records queued: the index of the next.
func (r *recorder) queued() int {
	if r == nil {
		return 0
	}
	return len(r.queue)
}

// transition queues the record of transition t.
func (r *recorder) transition(in Start, t runtime.Transition, payload json.RawMessage) {
	if r == nil {
		return
	}
	r.queue = append(r.queue, r.input(in, nil, &Transition{From: t.From, To: t.To, Event: t.Event, Payload: payload, Outcome: t.Outcome,
		Exited: t.Exited, Entered: t.Entered}))
}

// effects gives effs, what a handler asked for with its event, to the
// records queued from index n on, those of the transitions the event made:
// its steps, messages, runs and consumed results to the first, its result
// to the last when that one ends the run (def says which do).
func (r *recorder) effects(def runtime.Definition, n int, effs Effects) {
	if r == nil || n >= len(r.queue) {
		return
	}
	first := &r.queue[n]
	first.Effects = effs
	first.Effects.Result, first.Effects.Output, first.Effects.CostUSD, first.Effects.ErrorCode, first.Effects.ErrorDetail = false, nil, 0, "", ""
	last := &r.queue[len(r.queue)-1]
	if st, ok := def.StateOf(last.Transition.To); ok && st.Terminal() && effs.Result {
		last.Effects.Result, last.Effects.Output, last.Effects.CostUSD = true, effs.Output, effs.CostUSD
		last.Effects.ErrorCode, last.Effects.ErrorDetail = effs.ErrorCode, effs.ErrorDetail
	}
}

// wait waits until the queued records are written, or one was refused.
func (r *recorder) wait(ctx workflow.Context) {
	if r == nil {
		return
	}
	_ = workflow.Await(ctx, func() bool { return len(r.queue) == 0 || r.refused != nil })
}
