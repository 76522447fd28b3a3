package temporal

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/fsmgen/fsmgen/runtime"
)

// Effects are what a handler asked of the runtime besides its event, as
// its activity returns them (Handled.Effects): serializable, so that they
// are in the workflow's history with the event. The workflow starts the
// children and the enqueued runs once the handler's event moved the run,
// and puts the result in the run's Result when that move ends it; a
// handler's effects are dropped with its event (an update moved the run
// meanwhile).
type Effects struct {
	// Steps are the sub-steps the handler logged (runtime.Effects.LogStep).
	Steps []LoggedStep `json:"steps,omitempty"`
	// Messages are the domain events it emitted (runtime.Effects.Emit).
	Messages []Message `json:"messages,omitempty"`
	// Enqueued are the runs it started in the background
	// (runtime.Effects.Enqueue), Children those it waits for
	// (runtime.StartChild).
	Enqueued []Enqueued `json:"enqueued,omitempty"`
	Children []Child    `json:"children,omitempty"`
	// Result says the handler set the run's result record
	// (runtime.Effects.SetResult, SetError): its output and cost, its
	// error code and detail.
	Result      bool            `json:"result,omitempty"`
	Output      json.RawMessage `json:"output,omitempty"`
	CostUSD     float64         `json:"costUSD,omitempty"`
	ErrorCode   string          `json:"errorCode,omitempty"`
	ErrorDetail string          `json:"errorDetail,omitempty"`
	// Consumed are the keys of the cached activity results the handler
	// used (runtime/activity's ExecuteInRun): the record marks them
	// consumed by the transition it records, in its transaction.
	Consumed []string `json:"consumed,omitempty"`
}

// LoggedStep is a sub-step a handler logged, its payload as JSON.
type LoggedStep struct {
	Name    string          `json:"name"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// Message is a domain event a handler emitted to a topic, as JSON.
type Message struct {
	Topic   string          `json:"topic"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// Enqueued is a run of another machine a handler started in the
// background, by type and idempotency key, with its input as JSON.
type Enqueued struct {
	Type           string          `json:"type"`
	IdempotencyKey string          `json:"idempotencyKey"`
	Input          json.RawMessage `json:"input,omitempty"`
}

// Child is a child run a handler started (runtime.Child, its input as
// JSON): the workflow fires Event on the run when the child ends.
type Child struct {
	Enqueued
	Event string `json:"event"`
}

// effects collects a handler's effects (runtime.Effects, and StartChild
// for runtime.StartChild).
type effects struct {
	mu  sync.Mutex
	out Effects
	// err is the first payload that did not encode.
	err error
}

var _ runtime.Effects = (*effects)(nil)

// newEffects returns an empty collector.
func newEffects() *effects { return &effects{} }

// encode returns v as JSON; a value that does not encode is kept as the
// collector's error.
func (f *effects) encode(what string, v any) json.RawMessage {
	if v == nil {
		return nil
	}
	raw, err := json.Marshal(v)
	if err != nil && f.err == nil {
		f.err = fmt.Errorf("%w: %s of type %T: %w", runtime.ErrPayload, what, v, err)
	}
	return raw
}

// LogStep implements runtime.Effects.
func (f *effects) LogStep(name string, payload any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.out.Steps = append(f.out.Steps, LoggedStep{Name: name, Payload: f.encode("step "+name, payload)})
}

// Emit implements runtime.Effects.
func (f *effects) Emit(topic string, payload any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.out.Messages = append(f.out.Messages, Message{Topic: topic, Payload: f.encode("message to "+topic, payload)})
}

// Enqueue implements runtime.Effects.
func (f *effects) Enqueue(workflowType, idempotencyKey string, input any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.out.Enqueued = append(f.out.Enqueued, Enqueued{Type: workflowType, IdempotencyKey: idempotencyKey, Input: f.encode("input of "+workflowType, input)})
}

// SetResult implements runtime.Effects.
func (f *effects) SetResult(output any, costUSD float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.out.Result, f.out.Output, f.out.CostUSD = true, f.encode("result output", output), costUSD
}

// SetError implements runtime.Effects.
func (f *effects) SetError(code, detail string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.out.Result, f.out.ErrorCode, f.out.ErrorDetail = true, code, detail
}

// StartChild starts a child run for runtime.StartChild, which has checked
// c and filled in its key.
func (f *effects) StartChild(c runtime.Child) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.out.Children = append(f.out.Children, Child{Enqueued: Enqueued{Type: c.Type, IdempotencyKey: c.IdempotencyKey, Input: f.encode("input of child "+c.Type, c.Input)}, Event: c.Event})
	return nil
}

// ConsumeActivity keeps the key of a cached activity result the handler
// used, for runtime/activity's ExecuteInRun.
func (f *effects) ConsumeActivity(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.out.Consumed = append(f.out.Consumed, key)
}

// collected returns the effects collected, or the error of a payload that
// did not encode.
func (f *effects) collected() (Effects, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.out, f.err
}
