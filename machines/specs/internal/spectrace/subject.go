package spectrace

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/fsmgen/fsmgen/dsl"
	"github.com/fsmgen/fsmgen/runtime"
)

// Log records the actions a subject runs.
type Log struct {
	mu   sync.Mutex
	acts []string
}

// Add records that action a ran.
func (l *Log) Add(a string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.acts = append(l.acts, a)
}

// Take returns the actions recorded since the last call.
func (l *Log) Take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	a := l.acts
	l.acts = nil
	return a
}

// Funcs is a Subject made of functions: a generated machine's.
type Funcs struct {
	StartFunc func(ctx context.Context) error
	FireFunc  func(ctx context.Context, event string, payload []byte) error
	LeafFunc  func() string
	Log       *Log
}

// Start implements Subject.
func (f *Funcs) Start(ctx context.Context) error { return f.StartFunc(ctx) }

// Fire implements Subject.
func (f *Funcs) Fire(ctx context.Context, event string, payload []byte) error {
	return f.FireFunc(ctx, event, payload)
}

// Leaf implements Subject.
func (f *Funcs) Leaf(context.Context) (string, error) { return f.LeafFunc(), nil }

// Actions implements Subject.
func (f *Funcs) Actions() []string { return f.Log.Take() }

// LoadMachine checks the .fsm file at path and returns its only machine.
func LoadMachine(t testing.TB, path string) *dsl.Machine {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	spec, ds := dsl.Load(filepath.Base(path), src)
	if spec == nil || ds.HasErrors() {
		t.Fatalf("%s does not check:\n%v", path, ds.Err())
	}
	if len(spec.Machines) != 1 {
		t.Fatalf("%s has %d machines, want 1", path, len(spec.Machines))
	}
	return spec.Machines[0]
}

// Run replays every trace of the trace file on a new subject each, built
// by subject with the map its guards read and the log its actions write.
func Run(t *testing.T, fsm, traces string, subject func(guards map[string]bool, log *Log) Subject) {
	t.Helper()
	m := LoadMachine(t, fsm)
	trs, err := ParseFile(traces)
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range trs {
		t.Run(tr.Name, func(t *testing.T) {
			guards := map[string]bool{}
			for _, err := range Replay(t.Context(), m, tr, subject(guards, &Log{}), guards) {
				t.Error(err)
			}
		})
	}
}

// RunEngine replays every trace of the trace file on a run of the durable
// engine each, on a fresh database: driver returns the machine's driver
// with the map its guards read and the log its actions write; typ is the
// machine's type and decode its DecodeEvent.
func RunEngine(t *testing.T, fsm, traces, typ string, decode func(name string, payload []byte) (runtime.Event, error), driver func(guards map[string]bool, log *Log) runtime.Driver) {
	t.Helper()
	m := LoadMachine(t, fsm)
	trs, err := ParseFile(traces)
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range trs {
		t.Run(tr.Name, func(t *testing.T) {
			guards, log := map[string]bool{}, &Log{}
			eng := NewEngine(t, driver(guards, log), typ, tr.Name, decode, log)
			for _, err := range Replay(t.Context(), m, tr, eng, guards) {
				t.Error(err)
			}
			if t.Failed() {
				moves, err := eng.Moves(t.Context())
				t.Logf("the run's moves: %q (%v)", moves, err)
			}
		})
	}
}
