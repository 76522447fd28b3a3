-- name: QueryExecutions :many
-- Runs as seed 003's WorkflowExecution, selected as its query does: each
-- filter is optional; the three together (and workflow name with
-- organization) are served by workflow_runs_query_idx, in (started_at, id)
-- order.
SELECT * FROM workflow_executions
WHERE (sqlc.narg('workflow_name')::text IS NULL OR workflow_name = sqlc.narg('workflow_name')::text)
  AND (sqlc.narg('status')::text IS NULL OR status = sqlc.narg('status')::text)
  AND (sqlc.narg('organization_id')::text IS NULL OR organization_id = sqlc.narg('organization_id')::text)
ORDER BY started_at, id
LIMIT @max_rows;

-- name: GetExecution :one
SELECT * FROM workflow_executions WHERE id = @id;
