-- name: InsertStep :one
-- Logs an observable sub-step of a run at its current state: a running
-- run, or one the caller's transaction finished (its row's xmin is the
-- transaction's id); no row for a run finished before.
INSERT INTO workflow_step_logs (
    workflow_run_id, workflow_type, attempt_no, step_name, state_before, state_after,
    payload, occurred_at, kind, event, row_version, definition_version)
SELECT r.id, r.workflow_type, r.attempt_no, @step_name, r.current_state, r.current_state,
    sqlc.narg('payload'), coalesce(sqlc.narg('now')::timestamptz, now()), 'step', NULL, r.row_version, r.definition_version
FROM workflow_runs r
WHERE r.id = @id AND (r.status = 'running' OR r.xmin = pg_current_xact_id()::xid)
RETURNING id, occurred_at;

-- name: InsertLink :one
-- Logs, on a run in any status, a step row whose payload names another
-- existing run; no row when that run does not exist.
INSERT INTO workflow_step_logs (
    workflow_run_id, workflow_type, attempt_no, step_name, state_before, state_after,
    payload, occurred_at, kind, event, row_version, definition_version)
SELECT r.id, r.workflow_type, r.attempt_no, @step_name, r.current_state, r.current_state,
    jsonb_build_object('run_id', l.id::text), coalesce(sqlc.narg('now')::timestamptz, now()), 'step', NULL, r.row_version, r.definition_version
FROM workflow_runs r, workflow_runs l
WHERE r.id = @id AND l.id = @linked_id
RETURNING id, occurred_at, payload;

-- name: History :many
SELECT * FROM workflow_step_logs WHERE workflow_run_id = @id ORDER BY id;

-- name: RunExists :one
SELECT EXISTS (SELECT 1 FROM workflow_runs WHERE id = @id);

-- name: InsertOutbox :one
-- Queues a message for the outside world on behalf of a run: a running
-- run, or one the caller's transaction finished (its row's xmin is the
-- transaction's id); no row for a run finished before. The message carries
-- the run's trace context.
INSERT INTO workflow_outbox (workflow_run_id, workflow_type, attempt_no, topic, payload, created_at, trace_parent)
SELECT r.id, r.workflow_type, r.attempt_no, @topic, sqlc.narg('payload'), coalesce(sqlc.narg('now')::timestamptz, now()), r.trace_parent
FROM workflow_runs r
WHERE r.id = @id AND (r.status = 'running' OR r.xmin = pg_current_xact_id()::xid)
RETURNING id, created_at;

-- name: ListOutbox :many
SELECT * FROM workflow_outbox WHERE workflow_run_id = @id ORDER BY id;
