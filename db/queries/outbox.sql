-- name: ClaimOutbox :many
-- Locks the first unpublished row of up to @batch_size runs whose first
-- unpublished row is due (never tried, or its backoff is over), skipping
-- the rows other relays hold, and returns the unpublished rows of those
-- runs, at most @batch_size, in id order. Only the heads are taken with
-- SKIP LOCKED: a row that follows an unpublished row of its run is never
-- a head, so that two relays never publish rows of one run at once. Dead
-- letters (dead_at set) are neither published nor wait for.
WITH heads AS (
    SELECT h.workflow_run_id
    FROM workflow_outbox h
    WHERE h.published_at IS NULL AND h.dead_at IS NULL
      AND (h.next_attempt_at IS NULL OR h.next_attempt_at <= now())
      AND NOT EXISTS (
          SELECT 1 FROM workflow_outbox e
          WHERE e.workflow_run_id = h.workflow_run_id AND e.published_at IS NULL AND e.dead_at IS NULL AND e.id < h.id)
    ORDER BY h.id
    LIMIT @batch_size
    FOR UPDATE SKIP LOCKED
)
SELECT o.id, o.workflow_run_id, o.workflow_type, o.attempt_no, o.topic, o.payload, o.created_at, o.attempts, o.trace_parent
FROM workflow_outbox o
WHERE o.workflow_run_id IN (SELECT heads.workflow_run_id FROM heads) AND o.published_at IS NULL AND o.dead_at IS NULL
ORDER BY o.id
LIMIT @batch_size
FOR UPDATE OF o;

-- name: MarkOutboxPublished :execrows
-- Marks a row published, at the database's clock; @duplicate is the
-- broker's word that it had stored the message already.
UPDATE workflow_outbox
SET published_at = now(), last_attempt_at = now(), attempts = attempts + 1, next_attempt_at = NULL,
    duplicate = @duplicate
WHERE id = @id AND published_at IS NULL AND dead_at IS NULL;

-- name: MarkOutboxFailed :one
-- Records a failed try of a row: one more attempt, its error, one more
-- rejection in a row when @rejected (none otherwise), and the next try
-- @backoff from now, at the database's clock; or, when it is the
-- @dead_after-th rejection in a row, moves it to the dead letters (no next
-- try).
UPDATE workflow_outbox
SET attempts = attempts + 1, last_attempt_at = now(), last_error = @last_error,
    rejections = CASE WHEN @rejected::boolean THEN rejections + 1 ELSE 0 END,
    next_attempt_at = CASE WHEN @rejected::boolean AND rejections + 1 >= @dead_after::integer THEN NULL
                           ELSE now() + @backoff::interval END,
    dead_at = CASE WHEN @rejected::boolean AND rejections + 1 >= @dead_after::integer THEN now() END
WHERE id = @id AND published_at IS NULL AND dead_at IS NULL
RETURNING attempts, last_attempt_at, next_attempt_at, dead_at;

-- name: OutboxCounts :one
-- The outbox at a glance: pending rows, those of them whose publish failed
-- at least once, published rows, those of them the broker acknowledged as
-- duplicates, dead letters, and the database's clock.
SELECT count(*) FILTER (WHERE published_at IS NULL AND dead_at IS NULL)                 AS pending,
       count(*) FILTER (WHERE published_at IS NULL AND dead_at IS NULL AND attempts > 0) AS retrying,
       count(*) FILTER (WHERE published_at IS NOT NULL)                                 AS published,
       count(*) FILTER (WHERE published_at IS NOT NULL AND duplicate)                   AS duplicates,
       count(*) FILTER (WHERE dead_at IS NOT NULL)                                      AS dead,
       now()::timestamptz                                                               AS now
FROM workflow_outbox;

-- name: OldestPendingOutbox :many
-- The first unpublished row, in the order the relay publishes.
SELECT * FROM workflow_outbox WHERE published_at IS NULL AND dead_at IS NULL ORDER BY id LIMIT 1;

-- name: DeadOutbox :many
-- The dead letters, the latest moved aside first, at most @max_rows.
SELECT * FROM workflow_outbox WHERE dead_at IS NOT NULL ORDER BY dead_at DESC, id DESC LIMIT @max_rows;

-- name: RequeueDeadOutbox :execrows
-- Moves dead letters back to be published at the relay's next claim: all
-- of them, or those of @ids when it is not NULL. Their rejections start
-- again from 0; their tries and last error stay as the record of what
-- happened.
UPDATE workflow_outbox
SET dead_at = NULL, rejections = 0, next_attempt_at = NULL
WHERE dead_at IS NOT NULL AND published_at IS NULL
  AND (sqlc.narg('ids')::bigint[] IS NULL OR id = ANY (sqlc.narg('ids')::bigint[]));

-- name: CountDeadOutbox :one
-- The dead letters RequeueDeadOutbox would move back.
SELECT count(*) FROM workflow_outbox
WHERE dead_at IS NOT NULL AND published_at IS NULL
  AND (sqlc.narg('ids')::bigint[] IS NULL OR id = ANY (sqlc.narg('ids')::bigint[]));
