package natsrelay_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	natsrelay "github.com/fsmgen/fsmgen/contrib/nats"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/relay"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// A message of a run started with a trace context carries it in its
// traceparent header; a run started without one sends none.
func TestTraceParentHeader(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	traced, err := e.st.Start(store.WithTraceParent(e.ctx, tp), runtime.StartRequest{Type: "job", Version: 1, IdempotencyKey: "traced", Owner: runtime.Owner{TenantID: "t1"}})
	if err != nil {
		t.Fatal(err)
	}
	plain := e.start(t, 1)[0]
	for _, id := range []string{traced.Run.ID, plain} {
		if _, err := e.st.Emit(e.ctx, id, "job.done", nil); err != nil {
			t.Fatal(err)
		}
	}
	pub, err := natsrelay.New(e.js, natsrelay.Config{Stream: streamName})
	if err != nil {
		t.Fatal(err)
	}
	e.relayAll(t, pub, relay.Config{})
	got := map[string]string{}
	for _, m := range e.stored(t) {
		got[m.RunID] = m.TraceParent
	}
	if diff := cmp.Diff(map[string]string{traced.Run.ID: tp, plain: "-"}, got); diff != "" {
		t.Errorf("traceparent headers by run (-want +got):\n%s", diff)
	}
}
