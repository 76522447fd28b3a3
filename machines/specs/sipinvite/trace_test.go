package sipinvite_test

import (
	"context"
	"testing"

	"github.com/fsmgen/fsmgen/machines/specs/internal/spectrace"
	"github.com/fsmgen/fsmgen/machines/specs/sipinvite/inviteclient"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
)

type actions struct{ log *spectrace.Log }

func (a actions) SendInvite(context.Context) error { a.log.Add("SendInvite"); return nil }
func (a actions) SendAck(context.Context) error    { a.log.Add("SendAck"); return nil }

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestTraces replays the traces of RFC 3261 on the generated code.
func TestTraces(t *testing.T) {
	t.Parallel()
	spectrace.Run(t, "sipinvite.fsm", "trace.txt", func(_ map[string]bool, log *spectrace.Log) spectrace.Subject {
		var m *inviteclient.Machine
		return &spectrace.Funcs{
			StartFunc: func(ctx context.Context) error {
				m = inviteclient.New(actions{log})
				return m.Enter(ctx)
			},
			FireFunc: func(ctx context.Context, name string, payload []byte) error {
				e, err := inviteclient.DecodeEvent(name, payload)
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
	decode := func(name string, payload []byte) (runtime.Event, error) {
		return inviteclient.DecodeEvent(name, payload)
	}
	spectrace.RunEngine(t, "sipinvite.fsm", "trace.txt", inviteclient.Type, decode,
		func(_ map[string]bool, log *spectrace.Log) runtime.Driver {
			return inviteclient.NewDriver(func(*runtime.Run) inviteclient.Actions { return actions{log} })
		})
}
