package otelfsm

import (
	"context"
	"errors"
	"sync"

	"go.opentelemetry.io/otel/metric"

	"github.com/fsmgen/fsmgen/runtime/store"
)

// ObserveBacklog registers the gauges of the work waiting in st's
// database, per workflow type (fsmgen.type): fsmgen.runs.due,
// fsmgen.runs.due.lag, fsmgen.runs.parked, fsmgen.outbox.pending and
// fsmgen.outbox.lag. Each collection of the meter's reader (every
// interval of a periodic reader) reads them with one statement,
// store.Store.Backlog. A type once seen is reported with zeros when it has
// nothing waiting any more, rather than dropped.
//
// The figures are the database's, whichever process reads them: register
// the gauges in one process, or aggregate them across processes with max,
// not sum. Unregister the returned registration to stop.
func ObserveBacklog(st *store.Store, cfg Config) (metric.Registration, error) {
	meter := cfg.meter()
	var err, e error
	due, e := meter.Int64ObservableGauge("fsmgen.runs.due", metric.WithUnit("{run}"),
		metric.WithDescription("Running runs due now that no worker holds: waiting to be claimed."))
	err = errors.Join(err, e)
	dueLag, e := meter.Float64ObservableGauge("fsmgen.runs.due.lag", metric.WithUnit("s"),
		metric.WithDescription("How long the oldest due run that no worker holds has been due in its current state."))
	err = errors.Join(err, e)
	parked, e := meter.Int64ObservableGauge("fsmgen.runs.parked", metric.WithUnit("{run}"),
		metric.WithDescription("Parked runs, waiting for an operator."))
	err = errors.Join(err, e)
	outbox, e := meter.Int64ObservableGauge("fsmgen.outbox.pending", metric.WithUnit("{message}"),
		metric.WithDescription("Outbox messages not yet published."))
	err = errors.Join(err, e)
	outboxLag, e := meter.Float64ObservableGauge("fsmgen.outbox.lag", metric.WithUnit("s"),
		metric.WithDescription("Age of the oldest outbox message not yet published."))
	err = errors.Join(err, e)
	if err != nil {
		return nil, err
	}
	var (
		mu   sync.Mutex
		seen = map[string]bool{}
	)
	return meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		rows, err := st.Backlog(ctx)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		reported := map[string]bool{}
		for _, b := range rows {
			seen[b.Type], reported[b.Type] = true, true
			attrs := metric.WithAttributes(KeyType.String(b.Type))
			o.ObserveInt64(due, b.Due, attrs)
			o.ObserveFloat64(dueLag, b.DueLag.Seconds(), attrs)
			o.ObserveInt64(parked, b.Parked, attrs)
			o.ObserveInt64(outbox, b.Outbox, attrs)
			o.ObserveFloat64(outboxLag, b.OutboxLag.Seconds(), attrs)
		}
		for typ := range seen {
			if reported[typ] {
				continue
			}
			attrs := metric.WithAttributes(KeyType.String(typ))
			o.ObserveInt64(due, 0, attrs)
			o.ObserveFloat64(dueLag, 0, attrs)
			o.ObserveInt64(parked, 0, attrs)
			o.ObserveInt64(outbox, 0, attrs)
			o.ObserveFloat64(outboxLag, 0, attrs)
		}
		return nil
	}, due, dueLag, parked, outbox, outboxLag)
}
