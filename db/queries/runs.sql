-- name: InsertRun :one
-- Creates a run and its first log row, or does nothing when a run with the
-- same (type, key) exists. The run is due next_delay_us after now, or never
-- (NULL) when that is NULL: the schedule of the initial state. A created run is announced on fsmgen_runs
-- (store.NotifyChannel) with its type, at the commit of this statement.
-- A run another runtime executes (executor, see 0018_executor.sql) comes
-- with its id there and its attempt, is never due and is not announced.
-- trace_parent is the trace context of the span that started it, if any.
WITH ins AS (
    INSERT INTO workflow_runs (
        id, workflow_type, current_state, tenant_id, user_id, correlation_id, idempotency_key,
        attempt_no, policy_snapshot, created_at, updated_at, definition_version, input,
        attempt_started_at, next_run_at, executor, trace_parent)
    VALUES (
        coalesce(sqlc.narg('id')::uuid, gen_random_uuid()),
        @workflow_type, @initial_state, @tenant_id, sqlc.narg('user_id'),
        coalesce(sqlc.narg('correlation_id')::uuid, gen_random_uuid()), @idempotency_key,
        coalesce(sqlc.narg('attempt_no')::int, 1), sqlc.narg('policy_snapshot'),
        coalesce(sqlc.narg('now')::timestamptz, now()), coalesce(sqlc.narg('now')::timestamptz, now()),
        @definition_version, sqlc.narg('input'),
        coalesce(sqlc.narg('now')::timestamptz, now()),
        CASE WHEN sqlc.narg('next_delay_us')::bigint IS NULL THEN NULL
            ELSE coalesce(sqlc.narg('now')::timestamptz, now()) + sqlc.narg('next_delay_us')::bigint * interval '1 microsecond' END,
        sqlc.narg('executor')::text, sqlc.narg('trace_parent')::text)
    ON CONFLICT (workflow_type, idempotency_key) DO NOTHING
    RETURNING *
), logged AS (
    INSERT INTO workflow_step_logs (
        workflow_run_id, workflow_type, attempt_no, step_name, state_before, state_after,
        payload, occurred_at, kind, event, row_version, definition_version)
    SELECT ins.id, ins.workflow_type, ins.attempt_no, 'start', NULL, ins.current_state,
        NULL, ins.created_at, 'created', NULL, ins.row_version, ins.definition_version
    FROM ins
), notified AS (
    SELECT CASE WHEN ins.executor IS NULL THEN pg_notify('fsmgen_runs', ins.workflow_type) END AS n FROM ins
)
SELECT ins.* FROM ins CROSS JOIN notified;

-- name: GetRunByKey :one
-- Reads a run by (type, key) with the median duration of the last 100
-- succeeded attempts of its type, for an ETA.
SELECT sqlc.embed(r),
    coalesce((SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM (p.finished_at - p.attempt_started_at)))
     FROM (SELECT q.finished_at, q.attempt_started_at
           FROM workflow_runs q
           WHERE q.workflow_type = r.workflow_type AND q.status = 'succeeded'
           ORDER BY q.finished_at DESC
           LIMIT 100) p), -1)::float8 AS median_seconds
FROM workflow_runs r
WHERE r.workflow_type = @workflow_type AND r.idempotency_key = @idempotency_key;

-- name: RestartRun :one
-- Resets a failed run to the initial state of the given version, with
-- attempt_no + 1, due next_delay_us after now or never (NULL), and logs the
-- reset; nothing when the run moved meanwhile.
-- The restarted run is announced on fsmgen_runs as InsertRun announces a
-- new one.
WITH moved AS (
    UPDATE workflow_runs AS w SET
        attempt_no = w.attempt_no + 1,
        current_state = @initial_state,
        definition_version = @definition_version,
        row_version = w.row_version + 1,
        policy_snapshot = coalesce(sqlc.narg('policy_snapshot'), w.policy_snapshot),
        result = NULL,
        updated_at = coalesce(sqlc.narg('now')::timestamptz, now()),
        attempt_started_at = coalesce(sqlc.narg('now')::timestamptz, now()),
        finished_at = NULL,
        timer_anchors = NULL,
        history = NULL,
        next_run_at = CASE WHEN sqlc.narg('next_delay_us')::bigint IS NULL THEN NULL
            ELSE coalesce(sqlc.narg('now')::timestamptz, now()) + sqlc.narg('next_delay_us')::bigint * interval '1 microsecond' END,
        lease_owner = NULL,
        lease_expires_at = NULL
    WHERE w.id = @id AND w.row_version = @row_version AND w.current_state = @from_state::text AND w.status = 'failed'
    RETURNING w.*
), logged AS (
    INSERT INTO workflow_step_logs (
        workflow_run_id, workflow_type, attempt_no, step_name, state_before, state_after,
        payload, occurred_at, kind, event, row_version, definition_version)
    SELECT moved.id, moved.workflow_type, moved.attempt_no, 'restart', @from_state::text, moved.current_state,
        NULL, moved.updated_at, 'restarted', NULL, moved.row_version, moved.definition_version
    FROM moved
), notified AS (
    SELECT CASE WHEN moved.executor IS NULL THEN pg_notify('fsmgen_runs', moved.workflow_type) END AS n FROM moved
)
SELECT moved.* FROM moved CROSS JOIN notified;

-- name: TransitionOutcome :one
-- Tells, after an unfenced AdvanceRun moved nothing, where the run is and whether
-- the very transition asked for was applied already.
SELECT r.current_state, r.row_version, r.workflow_type, r.definition_version,
    EXISTS (
        SELECT 1 FROM workflow_step_logs l
        WHERE l.workflow_run_id = r.id AND l.kind = 'transition'
          AND l.row_version - 1 = @row_version
          AND l.state_before = @from_state::text AND l.state_after = @to_state::text
          AND l.event = @event::text
          AND l.payload IS NOT DISTINCT FROM sqlc.narg('payload')::jsonb
    ) AS applied
FROM workflow_runs r
WHERE r.id = @id;

-- name: GetRun :one
SELECT * FROM workflow_runs WHERE id = @id;

-- name: ListRuns :many
-- The runs that match, oldest first, from the one after after_id (keyset
-- paging: an index range from the cursor, no offset). search matches an
-- idempotency key, or an id in [id_from, id_to] (the ids a prefix of hex
-- digits covers).
SELECT * FROM workflow_runs
WHERE (sqlc.narg('workflow_type')::text IS NULL OR workflow_type = sqlc.narg('workflow_type')::text)
  AND (cardinality(@states::text[]) = 0 OR current_state = ANY (@states::text[]))
  AND (sqlc.narg('status')::text IS NULL OR status = sqlc.narg('status')::text)
  AND (sqlc.narg('tenant_id')::text IS NULL OR tenant_id = sqlc.narg('tenant_id')::text)
  AND (sqlc.narg('idempotency_key')::text IS NULL OR idempotency_key = sqlc.narg('idempotency_key')::text)
  AND (sqlc.narg('created_from')::timestamptz IS NULL OR created_at >= sqlc.narg('created_from')::timestamptz)
  AND (sqlc.narg('created_to')::timestamptz IS NULL OR created_at < sqlc.narg('created_to')::timestamptz)
  AND (sqlc.narg('search')::text IS NULL OR idempotency_key = sqlc.narg('search')::text
       OR id BETWEEN sqlc.narg('id_from')::uuid AND sqlc.narg('id_to')::uuid)
  AND (NOT @parked::boolean OR parked_at IS NOT NULL)
  AND (sqlc.narg('after_id')::uuid IS NULL
       OR (created_at, id) > (SELECT a.created_at, a.id FROM workflow_runs a WHERE a.id = sqlc.narg('after_id')::uuid))
ORDER BY created_at, id
LIMIT @max_rows;

-- name: ListRunsNewest :many
-- ListRuns newest first, from the one before before_id.
SELECT * FROM workflow_runs
WHERE (sqlc.narg('workflow_type')::text IS NULL OR workflow_type = sqlc.narg('workflow_type')::text)
  AND (cardinality(@states::text[]) = 0 OR current_state = ANY (@states::text[]))
  AND (sqlc.narg('status')::text IS NULL OR status = sqlc.narg('status')::text)
  AND (sqlc.narg('tenant_id')::text IS NULL OR tenant_id = sqlc.narg('tenant_id')::text)
  AND (sqlc.narg('idempotency_key')::text IS NULL OR idempotency_key = sqlc.narg('idempotency_key')::text)
  AND (sqlc.narg('created_from')::timestamptz IS NULL OR created_at >= sqlc.narg('created_from')::timestamptz)
  AND (sqlc.narg('created_to')::timestamptz IS NULL OR created_at < sqlc.narg('created_to')::timestamptz)
  AND (sqlc.narg('search')::text IS NULL OR idempotency_key = sqlc.narg('search')::text
       OR id BETWEEN sqlc.narg('id_from')::uuid AND sqlc.narg('id_to')::uuid)
  AND (NOT @parked::boolean OR parked_at IS NOT NULL)
  AND (sqlc.narg('before_id')::uuid IS NULL
       OR (created_at, id) < (SELECT a.created_at, a.id FROM workflow_runs a WHERE a.id = sqlc.narg('before_id')::uuid))
ORDER BY created_at DESC, id DESC
LIMIT @max_rows;

-- name: CountRuns :one
-- The number of runs ListRuns selects, over all its pages.
SELECT count(*) FROM workflow_runs
WHERE (sqlc.narg('workflow_type')::text IS NULL OR workflow_type = sqlc.narg('workflow_type')::text)
  AND (cardinality(@states::text[]) = 0 OR current_state = ANY (@states::text[]))
  AND (sqlc.narg('status')::text IS NULL OR status = sqlc.narg('status')::text)
  AND (sqlc.narg('tenant_id')::text IS NULL OR tenant_id = sqlc.narg('tenant_id')::text)
  AND (sqlc.narg('idempotency_key')::text IS NULL OR idempotency_key = sqlc.narg('idempotency_key')::text)
  AND (sqlc.narg('created_from')::timestamptz IS NULL OR created_at >= sqlc.narg('created_from')::timestamptz)
  AND (sqlc.narg('created_to')::timestamptz IS NULL OR created_at < sqlc.narg('created_to')::timestamptz)
  AND (sqlc.narg('search')::text IS NULL OR idempotency_key = sqlc.narg('search')::text
       OR id BETWEEN sqlc.narg('id_from')::uuid AND sqlc.narg('id_to')::uuid)
  AND (NOT @parked::boolean OR parked_at IS NOT NULL);

-- name: ActForExecutor :exec
-- Says that the current transaction writes for a run the executor
-- executes (see 0018_executor.sql): the guard of such runs admits its
-- UPDATEs until the transaction ends.
SELECT set_config('fsmgen.executor', @executor::text, true);
