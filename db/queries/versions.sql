-- name: InsertMigration :execrows
INSERT INTO workflow_migrations (workflow_type, from_version, to_version, drain, digest, migration, created_at)
VALUES (@workflow_type, @from_version, @to_version, @drain, @digest, @migration, coalesce(sqlc.narg('now')::timestamptz, now()))
ON CONFLICT (workflow_type, from_version, to_version) DO NOTHING;

-- name: InsertMigrationRules :exec
INSERT INTO workflow_migration_rules (workflow_type, from_version, to_version, ordinal, from_state, to_state, drain, when_event, unless_event)
SELECT @workflow_type::text, @from_version::int, @to_version::int, u.ordinal, u.from_state,
    nullif(u.to_state, ''), u.drain, nullif(u.when_event, ''), u.unless_event
FROM (SELECT unnest(@ordinals::int[]) AS ordinal, unnest(@from_states::text[]) AS from_state,
        unnest(@to_states::text[]) AS to_state, unnest(@drains::bool[]) AS drain,
        unnest(@when_events::text[]) AS when_event, unnest(@unless_events::bool[]) AS unless_event) AS u;

-- name: GetMigration :one
SELECT digest, migration
FROM workflow_migrations
WHERE workflow_type = @workflow_type AND from_version = @from_version AND to_version = @to_version;

-- name: MigrationsOf :many
-- The registered migrations of a type, oldest source first.
SELECT from_version, to_version, drain
FROM workflow_migrations
WHERE workflow_type = @workflow_type
ORDER BY from_version, to_version;

-- name: VersionsOf :many
-- The registered versions of a type with their runs: live (status
-- running), of which parked and leased, and finished.
SELECT d.version,
    count(r.id) FILTER (WHERE r.status = 'running')::bigint AS live,
    count(r.id) FILTER (WHERE r.status = 'running' AND r.parked_at IS NOT NULL)::bigint AS parked,
    count(r.id) FILTER (WHERE r.status = 'running' AND r.lease_owner IS NOT NULL
        AND r.lease_expires_at > coalesce(sqlc.narg('now')::timestamptz, now()))::bigint AS leased,
    count(r.id) FILTER (WHERE r.status <> 'running')::bigint AS finished
FROM workflow_definitions d
LEFT JOIN workflow_runs r ON r.workflow_type = d.workflow_type AND r.definition_version = d.version
WHERE d.workflow_type = @workflow_type
GROUP BY d.version
ORDER BY d.version;

-- name: LiveStates :many
-- The live runs of one version of a type, counted by state.
SELECT current_state, count(*)::bigint AS runs
FROM workflow_runs
WHERE workflow_type = @workflow_type AND definition_version = @version AND status = 'running'
GROUP BY current_state
ORDER BY current_state;

-- name: PlanRuns :many
-- Every live run of (type, from_version) with the first rule of the
-- registered migration to to_version that admits it, as the guard trigger
-- decides: its ordinal (-1 when none), target and drain flag, and whether
-- a live lease holds the run.
SELECT r.id, r.current_state,
    coalesce(d.ordinal, -1)::int AS ordinal,
    coalesce(d.to_state, '')::text AS to_state,
    coalesce(d.drain, false)::bool AS drain,
    (r.lease_owner IS NOT NULL AND r.lease_expires_at > coalesce(sqlc.narg('now')::timestamptz, now()))::bool AS leased,
    coalesce(r.lease_owner, '')::text AS lease_owner,
    r.lease_expires_at
FROM workflow_runs r
LEFT JOIN LATERAL (
    SELECT m.ordinal, m.to_state, m.drain
    FROM workflow_migration_rules m
    WHERE m.workflow_type = r.workflow_type AND m.from_version = r.definition_version
      AND m.to_version = @to_version AND m.from_state = r.current_state
      AND (m.when_event IS NULL OR m.unless_event <> EXISTS (
            SELECT 1 FROM workflow_step_logs l
            WHERE l.workflow_run_id = r.id AND l.attempt_no = r.attempt_no
              AND l.kind = 'transition' AND l.event = m.when_event))
    ORDER BY m.ordinal
    LIMIT 1
) d ON true
WHERE r.workflow_type = @workflow_type AND r.definition_version = @from_version AND r.status = 'running'
ORDER BY r.id;

-- name: MigrationCandidates :many
-- The next live runs of (type, version) after the run id after, in id order.
SELECT id
FROM workflow_runs
WHERE workflow_type = @workflow_type AND definition_version = @version AND status = 'running'
  AND id > @after::uuid
ORDER BY id
LIMIT @max_runs::int;

-- name: LockRunForMigration :one
-- A run about to be migrated, locked until its transaction ends.
SELECT id, workflow_type, definition_version, current_state, status, attempt_no, row_version,
    (lease_owner IS NOT NULL AND lease_expires_at > coalesce(sqlc.narg('now')::timestamptz, now()))::bool AS leased,
    coalesce(lease_owner, '')::text AS lease_owner,
    (parked_at IS NOT NULL)::bool AS parked
FROM workflow_runs
WHERE id = @id
FOR UPDATE;

-- name: FiredEvents :many
-- The distinct events fired in one attempt of a run.
SELECT DISTINCT l.event::text AS event
FROM workflow_step_logs l
WHERE l.workflow_run_id = @id AND l.attempt_no = @attempt_no AND l.kind = 'transition';

-- name: MigrateRun :one
-- Moves a run from (from_version, from_state) to (to_version, to_state) at
-- row version row_version and logs the move, in one statement. schedule
-- says when the run is next due: keep (as it was: a retry under way in the
-- same state), now, never, or timer (delay_us after the time its timers
-- count from: the run's entry into from_state, or now with
-- restart_timers). A parked run stays parked, unscheduled. The lease is
-- given up and its epoch moved on, so that a worker whose lease expired
-- writes nothing more. keep_attempts keeps the tries of the state.
WITH upd AS (
    UPDATE workflow_runs w SET
        definition_version = sqlc.arg('to_version'),
        current_state = sqlc.arg('to_state'),
        row_version = w.row_version + 1,
        previous_state = NULL,
        -- The anchors name the states of the old version: the new one's
        -- timers count from updated_at (see 0015_nested.sql).
        timer_anchors = NULL,
        updated_at = CASE WHEN sqlc.arg('restart_timers')::bool THEN coalesce(sqlc.narg('now')::timestamptz, now()) ELSE w.updated_at END,
        next_run_at = CASE
            WHEN w.parked_at IS NOT NULL THEN NULL
            WHEN sqlc.arg('schedule')::text = 'keep' THEN w.next_run_at
            WHEN sqlc.arg('schedule')::text = 'now' THEN coalesce(sqlc.narg('now')::timestamptz, now())
            WHEN sqlc.arg('schedule')::text = 'never' THEN NULL
            ELSE (CASE WHEN sqlc.arg('restart_timers')::bool THEN coalesce(sqlc.narg('now')::timestamptz, now()) ELSE w.updated_at END)
                + sqlc.arg('delay_us')::bigint * interval '1 microsecond'
        END,
        step_attempt = CASE WHEN sqlc.arg('keep_attempts')::bool THEN w.step_attempt ELSE 1 END,
        last_error_code = CASE WHEN sqlc.arg('keep_attempts')::bool THEN w.last_error_code END,
        last_error = CASE WHEN sqlc.arg('keep_attempts')::bool THEN w.last_error END,
        lease_owner = NULL,
        lease_expires_at = NULL,
        lease_epoch = w.lease_epoch + 1
    WHERE w.id = sqlc.arg('id') AND w.workflow_type = sqlc.arg('workflow_type') AND w.definition_version = sqlc.arg('from_version')
      AND w.current_state = sqlc.arg('from_state') AND w.row_version = sqlc.arg('row_version') AND w.status = 'running'
    RETURNING w.id, w.workflow_type, w.attempt_no, w.current_state, w.row_version, w.definition_version, w.next_run_at
), logged AS (
    INSERT INTO workflow_step_logs (workflow_run_id, workflow_type, attempt_no, step_name, state_before, state_after,
        payload, occurred_at, kind, event, row_version, definition_version)
    SELECT upd.id, upd.workflow_type, upd.attempt_no, 'migrated', sqlc.arg('from_state')::text, upd.current_state,
        sqlc.arg('payload')::jsonb, coalesce(sqlc.narg('now')::timestamptz, now()), 'migrated', 'migrated', upd.row_version, upd.definition_version
    FROM upd
    RETURNING workflow_run_id
)
SELECT upd.row_version, upd.next_run_at FROM upd JOIN logged ON logged.workflow_run_id = upd.id;
