-- name: Backlog :many
-- The work waiting in the database, per workflow type: running runs due by
-- now that no live lease holds (what workers have yet to claim) and when
-- the oldest of them became due in its current state (a run driven from
-- one state with a handler to the next keeps the due time of the first,
-- so the later of that and its last change of state); parked runs; outbox
-- messages not yet published (dead letters aside) and when the oldest was written. A type
-- without any of these has no row. Each count reads a partial index's
-- rows (claims, parked runs, pending messages), not the whole tables.
WITH due AS (
    SELECT r.workflow_type, count(*) AS n, min(greatest(r.next_run_at, r.updated_at))::timestamptz AS oldest
    FROM workflow_runs r
    WHERE r.status = 'running'
      AND r.next_run_at <= coalesce(sqlc.narg('now')::timestamptz, now())
      AND (r.lease_expires_at IS NULL OR r.lease_expires_at <= coalesce(sqlc.narg('now')::timestamptz, now()))
    GROUP BY r.workflow_type
), parked AS (
    SELECT r.workflow_type, count(*) AS n
    FROM workflow_runs r
    WHERE r.parked_at IS NOT NULL AND r.status = 'running'
    GROUP BY r.workflow_type
), pending AS (
    SELECT o.workflow_type, count(*) AS n, min(o.created_at)::timestamptz AS oldest
    FROM workflow_outbox o
    WHERE o.published_at IS NULL AND o.dead_at IS NULL
    GROUP BY o.workflow_type
), types AS (
    SELECT workflow_type FROM due UNION SELECT workflow_type FROM parked UNION SELECT workflow_type FROM pending
)
SELECT t.workflow_type,
    coalesce(due.n, 0)::bigint AS due,
    due.oldest AS oldest_due,
    coalesce(parked.n, 0)::bigint AS parked,
    coalesce(pending.n, 0)::bigint AS outbox,
    pending.oldest AS oldest_outbox,
    coalesce(sqlc.narg('now')::timestamptz, now())::timestamptz AS now
FROM types t
LEFT JOIN due ON due.workflow_type = t.workflow_type
LEFT JOIN parked ON parked.workflow_type = t.workflow_type
LEFT JOIN pending ON pending.workflow_type = t.workflow_type
ORDER BY t.workflow_type;
