-- name: DefinitionTypeExists :one
-- Whether any version of a workflow type is registered.
SELECT EXISTS (SELECT 1 FROM workflow_definitions WHERE workflow_type = @workflow_type)::bool;

-- name: UpsertRetention :one
INSERT INTO workflow_retention (workflow_type, keep_days) VALUES (@workflow_type, @keep_days)
ON CONFLICT (workflow_type) DO UPDATE SET keep_days = EXCLUDED.keep_days, updated_at = now()
RETURNING workflow_type, keep_days, updated_at;

-- name: DeleteRetention :execrows
DELETE FROM workflow_retention WHERE workflow_type = @workflow_type;

-- name: ListRetention :many
SELECT workflow_type, keep_days, updated_at FROM workflow_retention ORDER BY workflow_type;

-- name: PurgeFinishedRuns :many
-- One batch of retention's purge (at most max_runs runs, NULL for no
-- limit), or with dry_run its counts alone; see fsmgen_purge_finished_runs.
SELECT p.workflow_type::text AS workflow_type, p.runs::bigint AS runs, p.step_logs::bigint AS step_logs,
    p.evidence::bigint AS evidence, p.outbox::bigint AS outbox, p.held::bigint AS held
FROM fsmgen_purge_finished_runs(@dry_run::boolean, sqlc.narg('max_runs')::integer) AS p;
