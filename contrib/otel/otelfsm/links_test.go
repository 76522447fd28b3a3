package otelfsm_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/fsmgen/fsmgen/machines/shop/order"
	"github.com/fsmgen/fsmgen/runtime"
)

// A run started under a span keeps that span's trace context: its
// sessions, each a trace of its own started by a worker (the first fails
// and the second, a minute later, retries), link to the span, and its
// outbox messages carry it.
func TestSessionsLinkedToRunStart(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx, request := f.tp.Tracer("test").Start(f.ctx, "POST /orders")
	res, err := f.e.Start(ctx, runtime.StartRequest{Type: "shop_order", IdempotencyKey: "o1", Owner: runtime.Owner{TenantID: "acme"},
		Input: map[string]any{"items": []string{"book"}, "total_cents": 1200}})
	if err != nil {
		t.Fatal(err)
	}
	request.End()
	o1 := res.Run.ID
	f.names[o1] = "o1"
	f.wh.failFor(o1, 1)
	f.signal(t, f.ctx, o1, order.Pay{PaymentRef: "pay-1"})
	f.runDue(t, 1) // fails: retried in a second
	f.clock.Advance(time.Minute)
	f.runDue(t, 1)
	if _, err := f.st.Emit(f.ctx, o1, "orders.packed", nil); err != nil {
		t.Fatal(err)
	}

	spans := f.ended(t)
	var drives [][]string
	for _, s := range spans {
		if s.Name == "fsmgen.drive shop_order" {
			drives = append(drives, s.Links)
			if s.Parent != "" {
				t.Errorf("session span %+v has a parent", s)
			}
		}
	}
	link := []string{"0 POST /orders fsmgen.link=run.start"}
	if diff := cmp.Diff([][]string{link, link}, drives); diff != "" {
		t.Errorf("the sessions' links (-want +got):\n%s", diff)
	}
	rec := f.spans.Ended()
	if rec[0].Name() != "POST /orders" {
		t.Fatalf("first span %s", rec[0].Name())
	}
	want := "00-" + rec[0].SpanContext().TraceID().String() + "-" + rec[0].SpanContext().SpanID().String() + "-01"
	var run, message string
	err = f.st.Pool().QueryRow(f.ctx, `SELECT r.trace_parent, o.trace_parent FROM workflow_runs r JOIN workflow_outbox o ON o.workflow_run_id = r.id WHERE r.id = $1`, o1).Scan(&run, &message)
	if err != nil {
		t.Fatal(err)
	}
	if run != want || message != want {
		t.Errorf("trace context of the run %q and of its message %q, want %q", run, message, want)
	}
	for _, s := range rec[1:] {
		if s.SpanContext().TraceID() == rec[0].SpanContext().TraceID() {
			t.Errorf("span %s is in the start's trace; the sessions start traces of their own", s.Name())
		}
	}
}

// A cancel by a user who does not own the run is refused before any
// transition: it is a span of its own, failed, with error.type, and it is
// counted.
func TestRefusedCommandsCounted(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	o1 := f.start(t, "o1")
	if _, err := f.e.Cancel(f.ctx, o1, "mallory"); !errors.Is(err, runtime.ErrNotOwner) {
		t.Fatalf("Cancel by another user = %v, want ErrNotOwner", err)
	}
	if _, err := f.e.Signal(f.ctx, o1, order.Delivered{}); !errors.Is(err, runtime.ErrIllegalTransition) {
		t.Fatalf("Delivered on an unpaid order = %v, want ErrIllegalTransition", err)
	}
	notOwner := "engine: cancel run " + o1 + `: not authorized: not the run's owner: user "mallory" may not cancel a run of user "00000000-0000-4000-8000-00000000a11c"`
	illegal := "shop_order: illegal transition: state PENDING_PAYMENT has no transition on event Delivered"
	want := []span{
		{Name: "fsmgen.cancel", Kind: trace.SpanKindInternal,
			Attrs: attrs("fsmgen.run.id=o1", "fsmgen.command=cancel", "fsmgen.type=shop_order", "fsmgen.version=1", "fsmgen.state=PENDING_PAYMENT",
				"fsmgen.outcome=refused", "error.type=not_owner"),
			Status: codes.Error, Desc: notOwner, Events: []string{"exception: " + notOwner}},
		{Name: "fsmgen.transition shop_order PENDING_PAYMENT on Delivered", Parent: "2 fsmgen.signal Delivered", Kind: trace.SpanKindInternal,
			Attrs: attrs("fsmgen.run.id=o1", "fsmgen.type=shop_order", "fsmgen.version=1", "fsmgen.run.attempt=1", "fsmgen.attempt=1",
				"fsmgen.from=PENDING_PAYMENT", "fsmgen.event=Delivered", "fsmgen.outcome=refused", "error.type=illegal_transition"),
			Status: codes.Error, Desc: illegal, Events: []string{"exception: " + illegal}},
		{Name: "fsmgen.signal Delivered", Kind: trace.SpanKindInternal,
			Attrs: attrs("fsmgen.run.id=o1", "fsmgen.command=signal", "fsmgen.event=Delivered", "fsmgen.type=shop_order", "fsmgen.version=1",
				"fsmgen.state=PENDING_PAYMENT", "fsmgen.outcome=refused", "error.type=illegal_transition"),
			Status: codes.Error, Desc: "engine: signal Delivered run " + o1 + ": " + illegal,
			Events: []string{"exception: engine: signal Delivered run " + o1 + ": " + illegal}},
	}
	if diff := cmp.Diff(want, f.ended(t)); diff != "" {
		t.Errorf("spans (-want +got):\n%s", diff)
	}
	got := f.metrics(t)["fsmgen.commands"]
	wantCommands := map[string]float64{
		"error.type=not_owner,fsmgen.command=cancel,fsmgen.outcome=refused,fsmgen.type=shop_order":          1,
		"error.type=illegal_transition,fsmgen.command=signal,fsmgen.outcome=refused,fsmgen.type=shop_order": 1,
	}
	if diff := cmp.Diff(wantCommands, got); diff != "" {
		t.Errorf("fsmgen.commands (-want +got):\n%s", diff)
	}
}
