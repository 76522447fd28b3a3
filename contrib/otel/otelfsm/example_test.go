package otelfsm_test

import (
	"context"
	"fmt"
	"log"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/fsmgen/fsmgen/contrib/otel/otelfsm"
	"github.com/fsmgen/fsmgen/machines/shop"
	"github.com/fsmgen/fsmgen/machines/shop/order"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// Example traces an order of machines/shop from its payment to its
// shipping, and reads the backlog gauges. A service would give the
// providers an exporter (OTLP) instead of the in-memory recorder and the
// manual reader.
func Example() {
	ctx := context.Background()
	pool, err := pgtest.OpenPool(ctx) // in a service: pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}

	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	cfg := otelfsm.Config{TracerProvider: tp, MeterProvider: mp}

	mw, err := otelfsm.NewMiddleware(cfg)
	if err != nil {
		log.Fatal(err)
	}
	st := store.New(pool)
	e, err := engine.New(st, engine.Config{Middleware: []engine.Middleware{mw}})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := otelfsm.ObserveBacklog(st, cfg); err != nil {
		log.Fatal(err)
	}
	w := &shop.Workflow{Warehouse: &warehouse{fails: map[string]int{}}, Payments: payments{}}
	if err := e.Register(ctx, w.Driver()); err != nil {
		log.Fatal(err)
	}

	res, err := e.Start(ctx, runtime.StartRequest{Type: "shop_order", IdempotencyKey: "order-1", Owner: runtime.Owner{TenantID: "acme"},
		Input: shop.Input{Items: []string{"book"}, TotalCents: 1200}})
	if err != nil {
		log.Fatal(err)
	}
	// A request pays the order and drives it inline: its spans are the
	// request's children.
	rctx, request := tp.Tracer("shop-api").Start(ctx, "POST /orders/pay")
	if _, err := e.Signal(rctx, res.Run.ID, order.Pay{PaymentRef: "pay-1"}); err != nil {
		log.Fatal(err)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil { // the paid order is due
		log.Fatal(err)
	}
	if _, err := e.Drive(rctx, res.Run.ID); err != nil {
		log.Fatal(err)
	}
	request.End()

	for _, s := range spans.Ended() {
		fmt.Println(s.Name())
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if g, ok := m.Data.(metricdata.Gauge[int64]); ok && m.Name == "fsmgen.runs.due" {
				fmt.Println(m.Name, g.DataPoints[0].Value)
			}
		}
	}
	// Output:
	// fsmgen.transition shop_order PENDING_PAYMENT on Pay
	// fsmgen.signal Pay
	// fsmgen.handle shop_order PACKING
	// fsmgen.transition shop_order PACKING on Packed
	// fsmgen.drive shop_order
	// POST /orders/pay
	// fsmgen.runs.due 1
}
