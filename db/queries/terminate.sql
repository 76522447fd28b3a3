-- name: TerminateRun :many
-- An operator's terminate of a live run and its live descendants; see
-- fsmgen_terminate_run. No row when the run is not running.
SELECT t.run_id::uuid AS run_id, t.workflow_type::text AS workflow_type, t.state::text AS state,
    t.row_version::bigint AS row_version, t.finished_at::timestamptz AS finished_at
FROM fsmgen_terminate_run(@id::uuid, @reason::text, @by::text) AS t;
