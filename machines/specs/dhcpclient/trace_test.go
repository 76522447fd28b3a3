package dhcpclient_test

import (
	"context"
	"testing"

	"github.com/fsmgen/fsmgen/machines/specs/dhcpclient/dhcpclient"
	"github.com/fsmgen/fsmgen/machines/specs/internal/spectrace"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

type guards map[string]bool

func (g guards) RemembersAddress(context.Context, dhcpclient.Event) bool {
	return g["RemembersAddress"]
}
func (g guards) Acceptable(context.Context, dhcpclient.Ack) bool { return g["Acceptable"] }

type actions struct{ log *spectrace.Log }

func (a actions) SendDiscover(context.Context) error     { a.log.Add("SendDiscover"); return nil }
func (a actions) SendRequest(context.Context) error      { a.log.Add("SendRequest"); return nil }
func (a actions) BroadcastRequest(context.Context) error { a.log.Add("BroadcastRequest"); return nil }

// TestTraces replays the traces of RFC 2131 on the generated code.
func TestTraces(t *testing.T) {
	t.Parallel()
	spectrace.Run(t, "dhcpclient.fsm", "trace.txt", func(g map[string]bool, log *spectrace.Log) spectrace.Subject {
		var m *dhcpclient.Machine
		return &spectrace.Funcs{
			StartFunc: func(ctx context.Context) error {
				m = dhcpclient.New(guards(g), actions{log})
				return m.Settle(ctx)
			},
			FireFunc: func(ctx context.Context, name string, payload []byte) error {
				e, err := dhcpclient.DecodeEvent(name, payload)
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

// TestEngineTraces replays the traces on runs of the durable engine: a
// run starts in BOOT, whose eventless rows a worker takes at once.
func TestEngineTraces(t *testing.T) {
	t.Parallel()
	decode := func(name string, payload []byte) (runtime.Event, error) { return dhcpclient.DecodeEvent(name, payload) }
	spectrace.RunEngine(t, "dhcpclient.fsm", "trace.txt", dhcpclient.Type, decode,
		func(g map[string]bool, log *spectrace.Log) runtime.Driver {
			return dhcpclient.NewDriver(
				func(*runtime.Run) dhcpclient.Guards { return guards(g) },
				func(*runtime.Run) dhcpclient.Actions { return actions{log} })
		})
}
