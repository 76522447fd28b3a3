-- name: QueryExecutions :many
-- Runs with their state history and evidence ids, from the view
-- workflow_executions (the compliance workflow's WorkflowExecution),
-- selected as that workflow's query does: each filter is optional; the three together (and type
-- with tenant) are served by workflow_runs_query_idx, in (created_at, id)
-- order.
SELECT sqlc.embed(r), x.state_history, x.evidence_ids
FROM workflow_runs r JOIN workflow_executions x ON x.id = r.id
WHERE (sqlc.narg('workflow_type')::text IS NULL OR r.workflow_type = sqlc.narg('workflow_type')::text)
  AND (sqlc.narg('status')::text IS NULL OR r.status = sqlc.narg('status')::text)
  AND (sqlc.narg('tenant_id')::text IS NULL OR r.tenant_id = sqlc.narg('tenant_id')::text)
ORDER BY r.created_at, r.id
LIMIT @max_rows;

-- name: GetExecution :one
SELECT sqlc.embed(r), x.state_history, x.evidence_ids
FROM workflow_runs r JOIN workflow_executions x ON x.id = r.id
WHERE r.id = @id;
