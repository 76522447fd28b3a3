package problems_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/machines/problems"
	"github.com/fsmgen/fsmgen/machines/problems/local"
	rog "github.com/fsmgen/fsmgen/machines/problems/retrieveorgenerate"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const (
	runID  = "0b6c3c52-6f5e-4c36-9d0e-6a2f4a3f0001"
	userID = "8a5f2c1e-0000-4000-8000-000000000001"
)

// Recorded effects, in the order a handler asked for them.
type step struct {
	Name    string
	Payload any
}

type emitted struct {
	Topic   string
	Payload any
}

type enqueued struct {
	Type, Key string
	Input     any
}

type result struct {
	Output any
	Cost   float64
}

type coded struct{ Code, Detail string }

// effects records what handlers ask of the runtime, and implements
// SetError, as the engine's do.
type effects struct {
	mu       sync.Mutex
	Steps    []step
	Emits    []emitted
	Enqueues []enqueued
	Results  []result
	Errors   []coded
}

func (f *effects) LogStep(name string, payload any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Steps = append(f.Steps, step{name, payload})
}

func (f *effects) Emit(topic string, payload any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Emits = append(f.Emits, emitted{topic, payload})
}

func (f *effects) Enqueue(typ, key string, input any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Enqueues = append(f.Enqueues, enqueued{typ, key, input})
}

func (f *effects) SetResult(output any, cost float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Results = append(f.Results, result{output, cost})
}

func (f *effects) SetError(code, detail string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Errors = append(f.Errors, coded{code, detail})
}

// fixture is a workflow on the local adapters and a database of its own.
type fixture struct {
	pool *pgxpool.Pool
	set  *local.Set
	wf   *problems.Workflow
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	pool := pgtest.NewPool(t)
	if err := local.Migrate(context.Background(), pool); err != nil {
		t.Fatal(err)
	}
	set := local.NewSet(pool, nil)
	wf, err := problems.New(set.Adapters())
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{pool: pool, set: set, wf: wf}
}

func snapshot(t *testing.T, p problems.ExecutionPolicy) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func input(t *testing.T, cmd problems.SubmitProblem) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(cmd)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// newRun builds the run a handler is given: its policy, input and the
// events recorded so far, with recording effects.
func newRun(t *testing.T, p problems.ExecutionPolicy, cmd problems.SubmitProblem, events ...runtime.Event) (*runtime.Run, *effects) {
	t.Helper()
	fx := &effects{}
	return &runtime.Run{
		ID: runID, Type: rog.Type, Version: rog.Version,
		IdempotencyKey: "key-1", Attempt: 1, StepAttempt: 1,
		Owner: runtime.Owner{TenantID: "tenant-1", UserID: userID},
		Input: input(t, cmd), Policy: snapshot(t, p),
		Events: events, Effects: fx,
	}, fx
}
