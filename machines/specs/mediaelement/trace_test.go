package mediaelement_test

import (
	"context"
	"testing"

	"github.com/fsmgen/fsmgen/machines/specs/internal/spectrace"
	"github.com/fsmgen/fsmgen/machines/specs/mediaelement/mediaelement"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

type guards map[string]bool

func (g guards) AutoplayAttribute(context.Context, mediaelement.Event) bool {
	return g["AutoplayAttribute"]
}

// TestTraces replays the traces of the HTML standard on the generated
// code.
func TestTraces(t *testing.T) {
	t.Parallel()
	spectrace.Run(t, "mediaelement.fsm", "trace.txt", func(g map[string]bool, _ *spectrace.Log) spectrace.Subject {
		var m *mediaelement.Machine
		return &spectrace.Funcs{
			StartFunc: func(ctx context.Context) error {
				m = mediaelement.New(guards(g))
				return m.Settle(ctx)
			},
			FireFunc: func(ctx context.Context, name string, payload []byte) error {
				e, err := mediaelement.DecodeEvent(name, payload)
				if err != nil {
					return err
				}
				return m.Fire(ctx, e)
			},
			LeafFunc: func() string { return m.Config().String() },
			Log:      &spectrace.Log{},
		}
	})
}

// TestEngineTraces replays the traces on runs of the durable engine.
func TestEngineTraces(t *testing.T) {
	t.Parallel()
	decode := func(name string, payload []byte) (runtime.Event, error) {
		return mediaelement.DecodeEvent(name, payload)
	}
	spectrace.RunEngine(t, "mediaelement.fsm", "trace.txt", mediaelement.Type, decode,
		func(g map[string]bool, _ *spectrace.Log) runtime.Driver {
			return mediaelement.NewDriver(func(*runtime.Run) mediaelement.Guards { return guards(g) })
		})
}
