package otelfsm_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/fsmgen/fsmgen/contrib/otel/otelfsm"
	"github.com/fsmgen/fsmgen/machines/shop"
	"github.com/fsmgen/fsmgen/machines/shop/order"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
	"github.com/fsmgen/fsmgen/runtime/fsmtest"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// warehouse packs parcels, failing for an order as many times as fails
// says.
type warehouse struct {
	mu    sync.Mutex
	fails map[string]int
}

func (w *warehouse) Pack(_ context.Context, orderID string, _ []string) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fails[orderID] > 0 {
		w.fails[orderID]--
		return "", runtime.WithCode("CLOSED", errors.New("the warehouse is closed"))
	}
	return "parcel-" + orderID[:4], nil
}

func (w *warehouse) failFor(orderID string, n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.fails[orderID] = n
}

type payments struct{}

func (payments) Refund(_ context.Context, orderID string, _ int64) (string, error) {
	return "refund-" + orderID[:4], nil
}

// fixture is an engine driving the shop's orders on a database of its
// own, with the middleware on an SDK tracer provider that records every
// span and a meter provider read by hand.
type fixture struct {
	ctx    context.Context
	clock  *fsmtest.Clock
	st     *store.Store
	e      *engine.Engine
	wh     *warehouse
	spans  *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
	reader *sdkmetric.ManualReader
	cfg    otelfsm.Config
	// names maps run ids to the names the test gives them.
	names map[string]string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{ctx: context.Background(), clock: fsmtest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)),
		wh: &warehouse{fails: map[string]int{}}, spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader(),
		names: map[string]string{}}
	f.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(f.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(f.reader))
	t.Cleanup(func() {
		_ = f.tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	f.cfg = otelfsm.Config{TracerProvider: f.tp, MeterProvider: mp}
	mw, err := otelfsm.NewMiddleware(f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	pool := pgtest.NewPool(t)
	f.st = store.New(pool, store.WithClock(f.clock.Now))
	f.e, err = engine.New(f.st, engine.Config{
		WorkerID: "worker-1", Middleware: []engine.Middleware{mw},
		Jitter: func() float64 { return 0.5 }, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	w := &shop.Workflow{Warehouse: f.wh, Payments: payments{}}
	if err := f.e.Register(f.ctx, w.Driver()); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) start(t *testing.T, name string) string {
	t.Helper()
	res, err := f.e.Start(f.ctx, runtime.StartRequest{Type: "shop_order", IdempotencyKey: name, Owner: runtime.Owner{TenantID: "acme", UserID: "00000000-0000-4000-8000-00000000a11c"}, Input: shop.Input{Items: []string{"book"}, TotalCents: 1200}})
	if err != nil {
		t.Fatal(err)
	}
	f.names[res.Run.ID] = name
	return res.Run.ID
}

func (f *fixture) signal(t *testing.T, ctx context.Context, id string, ev runtime.Event) {
	t.Helper()
	if _, err := f.e.Signal(ctx, id, ev); err != nil {
		t.Fatalf("signal %s to %s: %v", ev.EventName(), f.names[id], err)
	}
}

func (f *fixture) runDue(t *testing.T, want int) {
	t.Helper()
	n, err := f.e.RunDue(f.ctx)
	if err != nil || n != want {
		t.Fatalf("RunDue = %d, %v; want %d runs", n, err, want)
	}
}

// span is what the test compares of a recorded span: its parent is named
// by its position among the ended spans and its name, run ids by the
// names the test gave the runs.
type span struct {
	Name   string
	Parent string
	Kind   trace.SpanKind
	Attrs  map[string]string
	Status codes.Code
	Desc   string
	Events []string
	// Links are the span's links, each "N NAME k=v": the linked span by
	// its position among the ended spans and its name, and the link's
	// attributes.
	Links []string
}

func (f *fixture) ended(t *testing.T) []span {
	t.Helper()
	ended := f.spans.Ended()
	index := map[trace.SpanID]int{}
	for i, s := range ended {
		index[s.SpanContext().SpanID()] = i
	}
	out := make([]span, len(ended))
	for i, s := range ended {
		sp := span{Name: s.Name(), Kind: s.SpanKind(), Attrs: map[string]string{}, Status: s.Status().Code, Desc: s.Status().Description}
		if p := s.Parent(); p.IsValid() {
			j, ok := index[p.SpanID()]
			if !ok {
				t.Fatalf("span %s has a parent that did not end", s.Name())
			}
			if p.TraceID() != s.SpanContext().TraceID() {
				t.Errorf("span %s is not in its parent's trace", s.Name())
			}
			sp.Parent = fmt.Sprintf("%d %s", j, ended[j].Name())
		}
		for _, a := range s.Attributes() {
			v := a.Value.String()
			if n, ok := f.names[v]; ok {
				v = n
			}
			sp.Attrs[string(a.Key)] = v
		}
		for _, l := range s.Links() {
			j, ok := index[l.SpanContext.SpanID()]
			if !ok {
				t.Fatalf("span %s links to a span that did not end", s.Name())
			}
			link := fmt.Sprintf("%d %s", j, ended[j].Name())
			for _, a := range l.Attributes {
				link += " " + string(a.Key) + "=" + a.Value.String()
			}
			sp.Links = append(sp.Links, link)
		}
		for _, ev := range s.Events() {
			e := ev.Name
			for _, a := range ev.Attributes {
				if a.Key == "exception.message" {
					e += ": " + a.Value.String()
				}
			}
			sp.Events = append(sp.Events, e)
		}
		out[i] = sp
	}
	return out
}

// attrs builds the attributes of a span, "key=value" each.
func attrs(kv ...string) map[string]string {
	m := map[string]string{}
	for _, s := range kv {
		k, v, _ := strings.Cut(s, "=")
		m[k] = v
	}
	return m
}

// TestTracesAndMetrics drives two orders: the first signalled and driven
// inline under a request's span, then refused an event; the second
// signalled without a span and worked by RunDue, its packing failing once
// and retried. The spans, their parents and attributes, and the metrics
// are compared exactly (the durations by their counts).
func TestTracesAndMetrics(t *testing.T) {
	t.Parallel()
	f := newFixture(t)

	o1 := f.start(t, "o1")
	ctx, request := f.tp.Tracer("test").Start(f.ctx, "request")
	f.signal(t, ctx, o1, order.Pay{PaymentRef: "pay-1"})
	run, err := f.e.Drive(ctx, o1)
	if err != nil || run.State != "IN_TRANSIT" {
		t.Fatalf("Drive = %s, %v", run.State, err)
	}
	f.signal(t, ctx, o1, order.Delivered{})
	if _, err := f.e.Signal(ctx, o1, order.Pay{PaymentRef: "pay-2"}); !errors.Is(err, runtime.ErrIllegalTransition) {
		t.Fatalf("Pay on a delivered order = %v, want ErrIllegalTransition", err)
	}
	request.End()

	o2 := f.start(t, "o2")
	f.wh.failFor(o2, 1)
	f.signal(t, f.ctx, o2, order.Pay{PaymentRef: "pay-3"})
	f.runDue(t, 1) // fails: retried in a second
	f.clock.Advance(time.Minute)
	f.runDue(t, 1)

	common := func(id string, kv ...string) map[string]string {
		return attrs(append([]string{"fsmgen.run.id=" + id, "fsmgen.type=shop_order", "fsmgen.version=1", "fsmgen.run.attempt=1"}, kv...)...)
	}
	const (
		internal = trace.SpanKindInternal
		consumer = trace.SpanKindConsumer
	)
	refused := "shop_order: illegal transition: state DELIVERED has no transition on event Pay"
	signal := func(id, event, state string, kv ...string) map[string]string {
		return attrs(append([]string{"fsmgen.run.id=" + id, "fsmgen.type=shop_order", "fsmgen.version=1", "fsmgen.command=signal",
			"fsmgen.event=" + event, "fsmgen.state=" + state}, kv...)...)
	}
	want := []span{
		{Name: "fsmgen.transition shop_order PENDING_PAYMENT on Pay", Parent: "1 fsmgen.signal Pay", Kind: internal,
			Attrs: common("o1", "fsmgen.from=PENDING_PAYMENT", "fsmgen.event=Pay", "fsmgen.to=PACKING", "fsmgen.attempt=1", "fsmgen.outcome=recorded")},
		{Name: "fsmgen.signal Pay", Parent: "9 request", Kind: internal, Attrs: signal("o1", "Pay", "PACKING", "fsmgen.outcome=ok")},
		{Name: "fsmgen.handle shop_order PACKING", Parent: "4 fsmgen.drive shop_order", Kind: internal,
			Attrs: common("o1", "fsmgen.state=PACKING", "fsmgen.attempt=1", "fsmgen.event=Packed", "fsmgen.outcome=ok")},
		{Name: "fsmgen.transition shop_order PACKING on Packed", Parent: "4 fsmgen.drive shop_order", Kind: internal,
			Attrs: common("o1", "fsmgen.from=PACKING", "fsmgen.event=Packed", "fsmgen.to=IN_TRANSIT", "fsmgen.attempt=1", "fsmgen.outcome=recorded")},
		{Name: "fsmgen.drive shop_order", Parent: "9 request", Kind: consumer,
			Attrs: common("o1", "fsmgen.state=PACKING", "fsmgen.attempt=1", "fsmgen.worker=worker-1", "fsmgen.end_state=IN_TRANSIT", "fsmgen.status=running")},
		{Name: "fsmgen.transition shop_order IN_TRANSIT on Delivered", Parent: "6 fsmgen.signal Delivered", Kind: internal,
			Attrs: common("o1", "fsmgen.from=IN_TRANSIT", "fsmgen.event=Delivered", "fsmgen.to=DELIVERED", "fsmgen.attempt=1", "fsmgen.outcome=recorded")},
		{Name: "fsmgen.signal Delivered", Parent: "9 request", Kind: internal, Attrs: signal("o1", "Delivered", "DELIVERED", "fsmgen.outcome=ok")},
		{Name: "fsmgen.transition shop_order DELIVERED on Pay", Parent: "8 fsmgen.signal Pay", Kind: internal,
			Attrs:  common("o1", "fsmgen.from=DELIVERED", "fsmgen.event=Pay", "fsmgen.attempt=1", "fsmgen.outcome=refused", "error.type=illegal_transition"),
			Status: codes.Error, Desc: refused, Events: []string{"exception: " + refused}},
		{Name: "fsmgen.signal Pay", Parent: "9 request", Kind: internal,
			Attrs:  signal("o1", "Pay", "DELIVERED", "fsmgen.outcome=refused", "error.type=illegal_transition"),
			Status: codes.Error, Desc: "engine: signal Pay run " + o1 + ": " + refused, Events: []string{"exception: engine: signal Pay run " + o1 + ": " + refused}},
		{Name: "request", Kind: internal, Attrs: map[string]string{}},

		{Name: "fsmgen.transition shop_order PENDING_PAYMENT on Pay", Parent: "11 fsmgen.signal Pay", Kind: internal,
			Attrs: common("o2", "fsmgen.from=PENDING_PAYMENT", "fsmgen.event=Pay", "fsmgen.to=PACKING", "fsmgen.attempt=1", "fsmgen.outcome=recorded")},
		{Name: "fsmgen.signal Pay", Kind: internal, Attrs: signal("o2", "Pay", "PACKING", "fsmgen.outcome=ok")},
		{Name: "fsmgen.handle shop_order PACKING", Parent: "13 fsmgen.drive shop_order", Kind: internal,
			Attrs:  common("o2", "fsmgen.state=PACKING", "fsmgen.attempt=1", "fsmgen.outcome=error", "fsmgen.error.code=CLOSED", "error.type=CLOSED"),
			Status: codes.Error, Desc: "CLOSED: the warehouse is closed", Events: []string{"exception: CLOSED: the warehouse is closed"}},
		{Name: "fsmgen.drive shop_order", Kind: consumer,
			Attrs: common("o2", "fsmgen.state=PACKING", "fsmgen.attempt=1", "fsmgen.worker=worker-1", "fsmgen.end_state=PACKING", "fsmgen.status=running")},
		{Name: "fsmgen.handle shop_order PACKING", Parent: "16 fsmgen.drive shop_order", Kind: internal,
			Attrs: common("o2", "fsmgen.state=PACKING", "fsmgen.attempt=2", "fsmgen.event=Packed", "fsmgen.outcome=ok")},
		{Name: "fsmgen.transition shop_order PACKING on Packed", Parent: "16 fsmgen.drive shop_order", Kind: internal,
			Attrs: common("o2", "fsmgen.from=PACKING", "fsmgen.event=Packed", "fsmgen.to=IN_TRANSIT", "fsmgen.attempt=2", "fsmgen.outcome=recorded")},
		{Name: "fsmgen.drive shop_order", Kind: consumer,
			Attrs: common("o2", "fsmgen.state=PACKING", "fsmgen.attempt=2", "fsmgen.worker=worker-1", "fsmgen.end_state=IN_TRANSIT", "fsmgen.status=running")},
	}
	if diff := cmp.Diff(want, f.ended(t)); diff != "" {
		t.Errorf("spans (-want +got):\n%s", diff)
	}

	wantMetrics := map[string]map[string]float64{
		"fsmgen.transitions": {
			"fsmgen.outcome=recorded,fsmgen.type=shop_order": 5,
			"fsmgen.outcome=refused,fsmgen.type=shop_order":  1,
		},
		"fsmgen.handler.duration (count)": {
			"fsmgen.outcome=ok,fsmgen.state=PACKING,fsmgen.type=shop_order":    2,
			"fsmgen.outcome=error,fsmgen.state=PACKING,fsmgen.type=shop_order": 1,
		},
		"fsmgen.claim.duration (count)": {"fsmgen.outcome=ok": 3},
		"fsmgen.claim.runs":             {"": 3},
		"fsmgen.commands": {
			"fsmgen.command=signal,fsmgen.outcome=ok,fsmgen.type=shop_order":                                    3,
			"error.type=illegal_transition,fsmgen.command=signal,fsmgen.outcome=refused,fsmgen.type=shop_order": 1,
		},
	}
	if diff := cmp.Diff(wantMetrics, f.metrics(t)); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
}

// metrics collects the metrics: the value of each point of a sum or a
// gauge, the count of each point of a histogram (named "NAME (count)"),
// by the point's attributes as "k=v,k=v".
func (f *fixture) metrics(t *testing.T) map[string]map[string]float64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := f.reader.Collect(f.ctx, &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]float64{}
	key := func(s attribute.Set) string {
		var kv []string
		for _, a := range s.ToSlice() {
			kv = append(kv, string(a.Key)+"="+a.Value.String())
		}
		sort.Strings(kv)
		return strings.Join(kv, ",")
	}
	put := func(name, k string, v float64) {
		if out[name] == nil {
			out[name] = map[string]float64{}
		}
		out[name][k] = v
	}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != otelfsm.ScopeName {
			t.Errorf("scope %q, want %q", sm.Scope.Name, otelfsm.ScopeName)
		}
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					put(m.Name, key(p.Attributes), float64(p.Value))
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					put(m.Name, key(p.Attributes), float64(p.Value))
				}
			case metricdata.Gauge[float64]:
				for _, p := range d.DataPoints {
					put(m.Name, key(p.Attributes), p.Value)
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					if p.Sum < 0 {
						t.Errorf("%s %s: negative sum %v", m.Name, key(p.Attributes), p.Sum)
					}
					put(m.Name+" (count)", key(p.Attributes), float64(p.Count))
				}
			default:
				t.Errorf("metric %s: unexpected data %T", m.Name, m.Data)
			}
		}
	}
	return out
}

// TestBacklogGauges: the gauges follow the database through a collection
// each: a run due and unclaimed with the lag of its due time, outbox
// messages pending with their age, a run parked after its tries were used
// up (its session's span says so), and zeros, not silence, once the type
// has nothing waiting.
func TestBacklogGauges(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	reg, err := otelfsm.ObserveBacklog(f.st, f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Unregister() })
	if diff := cmp.Diff(map[string]map[string]float64{}, f.metrics(t)); diff != "" {
		t.Errorf("an empty database (-want +got):\n%s", diff)
	}

	// An order whose packing always fails: three tries, then parked.
	broken := f.start(t, "broken")
	f.wh.failFor(broken, 100)
	f.signal(t, f.ctx, broken, order.Pay{PaymentRef: "pay-1"})
	for range 3 {
		f.runDue(t, 1)
		f.clock.Advance(time.Hour)
	}
	spans := f.ended(t)
	last := spans[len(spans)-1]
	if diff := cmp.Diff(attrs("fsmgen.run.id=broken", "fsmgen.type=shop_order", "fsmgen.version=1", "fsmgen.run.attempt=1",
		"fsmgen.state=PACKING", "fsmgen.attempt=3", "fsmgen.worker=worker-1", "fsmgen.end_state=PACKING", "fsmgen.status=running",
		"fsmgen.parked=true", "fsmgen.error.code=CLOSED"), last.Attrs); diff != "" {
		t.Errorf("the span of the session that parked the run (-want +got):\n%s", diff)
	}

	// A paid order no worker has claimed for half a minute, with two
	// messages in the outbox.
	paid := f.start(t, "paid")
	f.signal(t, f.ctx, paid, order.Pay{PaymentRef: "pay-2"})
	for _, topic := range []string{"orders.paid", "mail.receipt"} {
		if _, err := f.st.Emit(f.ctx, paid, topic, map[string]any{"order": "paid"}); err != nil {
			t.Fatal(err)
		}
	}
	f.clock.Advance(30 * time.Second)
	const shop = "fsmgen.type=shop_order"
	gauges := func(due, dueLag, parked, outbox, outboxLag float64) map[string]map[string]float64 {
		return map[string]map[string]float64{
			"fsmgen.runs.due": {shop: due}, "fsmgen.runs.due.lag": {shop: dueLag}, "fsmgen.runs.parked": {shop: parked},
			"fsmgen.outbox.pending": {shop: outbox}, "fsmgen.outbox.lag": {shop: outboxLag},
		}
	}
	// The metrics of the middleware are left aside here.
	backlog := func() map[string]map[string]float64 {
		got := f.metrics(t)
		for name := range got {
			if !strings.HasPrefix(name, "fsmgen.runs.") && !strings.HasPrefix(name, "fsmgen.outbox.") {
				delete(got, name)
			}
		}
		return got
	}
	if diff := cmp.Diff(gauges(1, 30, 1, 2, 30), backlog()); diff != "" {
		t.Errorf("one due, one parked, two pending (-want +got):\n%s", diff)
	}

	// The paid order is packed, the messages published, the broken order
	// cancelled and refunded: nothing waits.
	f.runDue(t, 1)
	if _, err := f.st.Pool().Exec(f.ctx, `UPDATE workflow_outbox SET published_at = now() WHERE workflow_run_id = $1`, paid); err != nil {
		t.Fatal(err)
	}
	if _, err := f.e.Cancel(f.ctx, broken, "00000000-0000-4000-8000-00000000a11c"); err != nil {
		t.Fatal(err)
	}
	f.runDue(t, 1)
	if run, err := f.st.Get(f.ctx, broken); err != nil || run.State != "REFUNDED" {
		t.Fatalf("broken order in %s, %v", run.State, err)
	}
	if diff := cmp.Diff(gauges(0, 0, 0, 0, 0), backlog()); diff != "" {
		t.Errorf("nothing waiting (-want +got):\n%s", diff)
	}
}
