-- The outbox relay (runtime/relay) publishes the rows of workflow_outbox
-- and sets published_at in the transaction that follows the broker's
-- acknowledgement. A publish that fails is retried with backoff: the
-- columns below say how often the row was tried, when, when it is tried
-- next (the database's clock) and why the last try failed. Only the first
-- unpublished row of a run is ever tried or waits: the relay publishes a
-- run's rows in id order, and a row waits while an earlier row of its run
-- is unpublished.
ALTER TABLE workflow_outbox
    ADD COLUMN attempts        INTEGER     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    ADD COLUMN last_attempt_at TIMESTAMPTZ,
    ADD COLUMN next_attempt_at TIMESTAMPTZ,
    ADD COLUMN last_error      TEXT;

-- The first unpublished row of each run: the relay's claim looks for the
-- earlier unpublished rows of a run by (run, id).
CREATE INDEX workflow_outbox_pending_run_idx ON workflow_outbox (workflow_run_id, id) WHERE published_at IS NULL;
