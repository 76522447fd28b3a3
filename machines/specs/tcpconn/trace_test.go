package tcpconn_test

import (
	"context"
	"testing"

	"github.com/fsmgen/fsmgen/machines/specs/internal/spectrace"
	"github.com/fsmgen/fsmgen/machines/specs/tcpconn/tcpconn"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
)

type guards map[string]bool

func (g guards) PassiveOpened(context.Context, tcpconn.RcvRst) bool { return g["PassiveOpened"] }

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestTraces replays the traces of RFC 9293 on the generated code.
func TestTraces(t *testing.T) {
	t.Parallel()
	spectrace.Run(t, "tcpconn.fsm", "trace.txt", func(g map[string]bool, log *spectrace.Log) spectrace.Subject {
		var m *tcpconn.Machine
		return &spectrace.Funcs{
			StartFunc: func(context.Context) error { m = tcpconn.New(guards(g)); return nil },
			FireFunc: func(ctx context.Context, name string, payload []byte) error {
				e, err := tcpconn.DecodeEvent(name, payload)
				if err != nil {
					return err
				}
				return m.Fire(ctx, e)
			},
			LeafFunc: func() string { return m.State().String() },
			Log:      log,
		}
	})
}

// TestEngineTraces replays the traces on runs of the durable engine.
func TestEngineTraces(t *testing.T) {
	t.Parallel()
	decode := func(name string, payload []byte) (runtime.Event, error) { return tcpconn.DecodeEvent(name, payload) }
	spectrace.RunEngine(t, "tcpconn.fsm", "trace.txt", tcpconn.Type, decode,
		func(g map[string]bool, _ *spectrace.Log) runtime.Driver {
			return tcpconn.NewDriver(func(*runtime.Run) tcpconn.Guards { return guards(g) })
		})
}
