package deviceauth_test

import (
	"context"
	"testing"

	"github.com/fsmgen/fsmgen/machines/specs/deviceauth/deviceauth"
	"github.com/fsmgen/fsmgen/machines/specs/internal/spectrace"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
)

type actions struct{ log *spectrace.Log }

func (a actions) RequestToken(context.Context) error { a.log.Add("RequestToken"); return nil }

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestTraces replays the traces of RFC 8628 on the generated code.
func TestTraces(t *testing.T) {
	t.Parallel()
	spectrace.Run(t, "deviceauth.fsm", "trace.txt", func(_ map[string]bool, log *spectrace.Log) spectrace.Subject {
		var m *deviceauth.Machine
		return &spectrace.Funcs{
			StartFunc: func(context.Context) error { m = deviceauth.New(actions{log}); return nil },
			FireFunc: func(ctx context.Context, name string, payload []byte) error {
				e, err := deviceauth.DecodeEvent(name, payload)
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
	decode := func(name string, payload []byte) (runtime.Event, error) { return deviceauth.DecodeEvent(name, payload) }
	spectrace.RunEngine(t, "deviceauth.fsm", "trace.txt", deviceauth.Type, decode,
		func(_ map[string]bool, log *spectrace.Log) runtime.Driver {
			return deviceauth.NewDriver(func(*runtime.Run) deviceauth.Actions { return actions{log} })
		})
}
