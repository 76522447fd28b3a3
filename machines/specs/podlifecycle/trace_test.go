package podlifecycle_test

import (
	"context"
	"testing"

	"github.com/fsmgen/fsmgen/machines/specs/internal/spectrace"
	"github.com/fsmgen/fsmgen/machines/specs/podlifecycle/podlifecycle"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

type guards map[string]bool

func (g guards) RestartAlways(context.Context, podlifecycle.Event) bool { return g["RestartAlways"] }
func (g guards) RestartNever(context.Context, podlifecycle.Event) bool  { return g["RestartNever"] }

// TestTraces replays the traces of the Kubernetes documentation on the
// generated code, whose timers spectrace.Timers runs.
func TestTraces(t *testing.T) {
	t.Parallel()
	spectrace.Run(t, "podlifecycle.fsm", "trace.txt", func(g map[string]bool, _ *spectrace.Log) spectrace.Subject {
		var m *podlifecycle.Machine
		timers := spectrace.NewTimers(podlifecycle.Definition())
		return &spectrace.Timed{Timers: timers, Funcs: spectrace.Funcs{
			StartFunc: func(ctx context.Context) error {
				m = podlifecycle.New(guards(g), podlifecycle.WithRecorder(timers.Recorder()))
				return m.Settle(ctx)
			},
			FireFunc: func(ctx context.Context, name string, payload []byte) error {
				e, err := podlifecycle.DecodeEvent(name, payload)
				if err != nil {
					return err
				}
				return m.Fire(ctx, e)
			},
			LeafFunc: func() string { return m.Config().String() },
			Log:      &spectrace.Log{},
		}}
	})
}

// TestEngineTraces replays the traces on runs of the durable engine.
func TestEngineTraces(t *testing.T) {
	t.Parallel()
	decode := func(name string, payload []byte) (runtime.Event, error) {
		return podlifecycle.DecodeEvent(name, payload)
	}
	spectrace.RunEngine(t, "podlifecycle.fsm", "trace.txt", podlifecycle.Type, decode,
		func(g map[string]bool, _ *spectrace.Log) runtime.Driver {
			return podlifecycle.NewDriver(func(*runtime.Run) podlifecycle.Guards { return guards(g) })
		})
}
