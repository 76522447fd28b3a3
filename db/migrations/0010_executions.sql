-- Workflow executions and implied evidence.
--
-- workflow_executions is a run as seed 003's WorkflowExecution describes it,
-- one row per run, for the seed's query({workflowName, status,
-- organizationId}) and getWorkflow: the fields are the run's own columns
-- renamed (workflow_id is the idempotency key, organization_id the tenant,
-- actor_id the user, current_step the state), state_history the run's
-- transitions from workflow_step_logs (every attempt's, in order), and
-- evidence_ids the ids of its evidence records. A view, not a table: it is
-- never out of date and adds no write to a transition.
--
-- workflow_runs_query_idx serves the query: equality on workflow_type,
-- tenant_id and status, in (created_at, id) order, and its prefix
-- (workflow_type, tenant_id) when the status is not given.
CREATE INDEX workflow_runs_query_idx ON workflow_runs (workflow_type, tenant_id, status, created_at, id);

CREATE VIEW workflow_executions AS
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
       coalesce(ev.ids, '{}'::bigint[])::bigint[] AS evidence_ids
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

-- fsmgen_evidence_implied logs, after a transition row on the event its
-- trigger names, a step evidence.<TG_ARGV[0]> whose payload is the object
-- TG_ARGV[1] with the transition's payload merged in: the evidence that a
-- transition no handler makes (a timer's, a signal's) implies, written in
-- that transition's transaction, at the state it reached. evidence.Implied
-- installs one trigger per (workflow type, event); the evidence trigger of
-- the type then chains the step like any other.
CREATE FUNCTION fsmgen_evidence_implied() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    p JSONB := TG_ARGV[1]::jsonb;
BEGIN
    IF jsonb_typeof(NEW.payload) = 'object' THEN
        p := p || NEW.payload;
    END IF;
    INSERT INTO workflow_step_logs (
        workflow_run_id, workflow_type, attempt_no, step_name, state_before, state_after,
        payload, occurred_at, kind, event, row_version, definition_version)
    VALUES (NEW.workflow_run_id, NEW.workflow_type, NEW.attempt_no, 'evidence.' || TG_ARGV[0], NEW.state_after, NEW.state_after,
        p, NEW.occurred_at, 'step', NULL, NEW.row_version, NEW.definition_version);
    RETURN NULL;
END
$$;
