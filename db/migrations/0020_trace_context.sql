-- A run's trace context: the W3C traceparent of the span that started the
-- run (written when the run is created, by a caller whose engine has a
-- tracing middleware, such as contrib/otel's; a child run takes its
-- parent's), so that every later session on the run, in whichever worker
-- and however long after, links its span to it. NULL without tracing.
-- The outbox rows a run writes carry it too, for the relay's publisher to
-- propagate (contrib/nats sets the traceparent header).
ALTER TABLE workflow_runs ADD COLUMN trace_parent TEXT;
ALTER TABLE workflow_outbox ADD COLUMN trace_parent TEXT;
