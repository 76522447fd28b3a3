-- name: ClaimOutbox :many
-- Locks the first unpublished row of up to @batch_size runs whose first
-- unpublished row is due (never tried, or its backoff is over), skipping
-- the rows other relays hold, and returns the unpublished rows of those
-- runs, at most @batch_size, in id order. Only the heads are taken with
-- SKIP LOCKED: a row that follows an unpublished row of its run is never
-- a head, so that two relays never publish rows of one run at once.
WITH heads AS (
    SELECT h.workflow_run_id
    FROM workflow_outbox h
    WHERE h.published_at IS NULL
      AND (h.next_attempt_at IS NULL OR h.next_attempt_at <= now())
      AND NOT EXISTS (
          SELECT 1 FROM workflow_outbox e
          WHERE e.workflow_run_id = h.workflow_run_id AND e.published_at IS NULL AND e.id < h.id)
    ORDER BY h.id
    LIMIT @batch_size
    FOR UPDATE SKIP LOCKED
)
SELECT o.id, o.workflow_run_id, o.workflow_type, o.attempt_no, o.topic, o.payload, o.created_at, o.attempts
FROM workflow_outbox o
WHERE o.workflow_run_id IN (SELECT heads.workflow_run_id FROM heads) AND o.published_at IS NULL
ORDER BY o.id
LIMIT @batch_size
FOR UPDATE OF o;

-- name: MarkOutboxPublished :execrows
-- Marks rows published, at the database's clock.
UPDATE workflow_outbox
SET published_at = now(), last_attempt_at = now(), attempts = attempts + 1, next_attempt_at = NULL
WHERE id = ANY(@ids::bigint[]) AND published_at IS NULL;

-- name: MarkOutboxFailed :one
-- Records a failed try of a row: one more attempt, its error, and the next
-- try @backoff from now, at the database's clock.
UPDATE workflow_outbox
SET attempts = attempts + 1, last_attempt_at = now(), last_error = @last_error,
    next_attempt_at = now() + @backoff::interval
WHERE id = @id AND published_at IS NULL
RETURNING attempts, last_attempt_at, next_attempt_at;

-- name: OutboxCounts :one
-- The outbox at a glance: pending rows, those of them whose publish failed
-- at least once, published rows, and the database's clock.
SELECT count(*) FILTER (WHERE published_at IS NULL)                 AS pending,
       count(*) FILTER (WHERE published_at IS NULL AND attempts > 0) AS retrying,
       count(*) FILTER (WHERE published_at IS NOT NULL)             AS published,
       now()::timestamptz                                           AS now
FROM workflow_outbox;

-- name: OldestPendingOutbox :many
-- The first unpublished row, in the order the relay publishes.
SELECT * FROM workflow_outbox WHERE published_at IS NULL ORDER BY id LIMIT 1;
