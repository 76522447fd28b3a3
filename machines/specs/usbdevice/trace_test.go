package usbdevice_test

import (
	"context"
	"testing"

	"github.com/fsmgen/fsmgen/machines/specs/internal/spectrace"
	"github.com/fsmgen/fsmgen/machines/specs/usbdevice/usbdevice"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestTraces replays the traces of the USB 2.0 specification on the
// generated code.
func TestTraces(t *testing.T) {
	t.Parallel()
	spectrace.Run(t, "usbdevice.fsm", "trace.txt", func(_ map[string]bool, log *spectrace.Log) spectrace.Subject {
		var m *usbdevice.Machine
		return &spectrace.Funcs{
			StartFunc: func(context.Context) error { m = usbdevice.New(); return nil },
			FireFunc: func(ctx context.Context, name string, payload []byte) error {
				e, err := usbdevice.DecodeEvent(name, payload)
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
	decode := func(name string, payload []byte) (runtime.Event, error) { return usbdevice.DecodeEvent(name, payload) }
	spectrace.RunEngine(t, "usbdevice.fsm", "trace.txt", usbdevice.Type, decode,
		func(map[string]bool, *spectrace.Log) runtime.Driver { return usbdevice.NewDriver() })
}
