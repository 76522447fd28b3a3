-- The error code of an execution.
--
-- workflow_executions gains error_code, the code of the run's error from
-- its result (the code of the error that exhausted a state, empty when
-- there is none), beside error, its message: a failed execution reports
-- both. The other columns are those of 0010_executions.sql, unchanged.
CREATE OR REPLACE VIEW workflow_executions AS
SELECT r.id,
       r.idempotency_key                 AS workflow_id,
       r.id                              AS run_id,
       r.workflow_type                   AS workflow_name,
       r.definition_version              AS workflow_version,
       r.status,
       r.input,
       nullif(r.result -> 'output', 'null'::jsonb)::jsonb AS output,
       coalesce(r.result ->> 'outcome', '')::text      AS outcome,
       coalesce(r.result ->> 'error_detail', '')::text AS error,
       r.current_state                   AS current_step,
       coalesce(h.state_history, '[]'::jsonb)::jsonb AS state_history,
       r.user_id                         AS actor_id,
       r.tenant_id                       AS organization_id,
       r.created_at                      AS started_at,
       r.finished_at                     AS completed_at,
       r.attempt_no,
       coalesce(ev.ids, '{}'::bigint[])::bigint[] AS evidence_ids,
       coalesce(r.result ->> 'error_code', '')::text   AS error_code
FROM workflow_runs r
LEFT JOIN LATERAL (
    SELECT jsonb_agg(jsonb_build_object(
               'from', l.state_before, 'to', l.state_after, 'event', l.event,
               'at', to_char(l.occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))
           ORDER BY l.id) AS state_history
    FROM workflow_step_logs l
    WHERE l.workflow_run_id = r.id AND l.kind = 'transition'
) h ON true
LEFT JOIN LATERAL (
    SELECT array_agg(e.id ORDER BY e.seq) AS ids
    FROM evidence_records e
    WHERE e.workflow_run_id = r.id
) ev ON true;
