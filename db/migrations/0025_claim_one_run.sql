-- A claim of any due run never reads the runs that a claim of one run
-- reads.
--
-- fsm_claim_runs (0011_claim_plan.sql, 0012_interrupted_tries.sql) has two
-- branches: per kind, the claim index from the kind's oldest due run; and,
-- for a claim of one run (p_id), that run. Its plan is generic and made once
-- per connection, from the statistics of the moment. The second branch ran
-- at every claim, p_id NULL or not, and in a database whose statistics saw
-- few running runs (most finished) the planner served it from the claim
-- index by next_run_at alone, filtering on the id: a claim of any due run
-- then read every due run of every type, 1,395 buffers and 20 ms with 50,000
-- due runs of a type the worker does not drive, against 2 buffers and
-- 0.03 ms. The second branch now runs only with p_id (a one-time filter, as
-- the first runs only without), and reads the run through its primary key
-- whatever the statistics: its status test is written so that it does not
-- match the claim index's predicate, which the planner then cannot use.
CREATE OR REPLACE FUNCTION fsm_claim_runs(p_kinds text[], p_now timestamptz, p_max_runs integer, p_owner text, p_ttl_us bigint, p_id uuid)
RETURNS SETOF workflow_runs
LANGUAGE plpgsql
ROWS 10
SET plan_cache_mode = force_generic_plan
AS $fn$
BEGIN
RETURN QUERY
WITH kinds AS (
    SELECT substr(k, strpos(k, '/') + 1) AS workflow_type, split_part(k, '/', 1)::int AS version
    FROM unnest(p_kinds) AS k
), picked AS (
    -- Without p_id: per kind, the claim index from its oldest due run on,
    -- at most p_max_runs runs. With p_id: that run alone, through its
    -- primary key. p_id IS NULL is decided once per call, so the plan runs
    -- only the branch asked for.
    SELECT per.id, per.prev_owner, per.next_run_at
    FROM kinds CROSS JOIN LATERAL (
        SELECT r.id, r.lease_owner AS prev_owner, r.next_run_at
        FROM workflow_runs r
        WHERE p_id IS NULL
          AND r.status = 'running'
          AND r.workflow_type = kinds.workflow_type AND r.definition_version = kinds.version
          AND r.next_run_at <= coalesce(p_now, now())
          AND (r.lease_expires_at IS NULL OR r.lease_expires_at <= coalesce(p_now, now()))
        ORDER BY r.next_run_at
        LIMIT p_max_runs
        FOR UPDATE OF r SKIP LOCKED
    ) per
    UNION ALL
    SELECT one.id, one.prev_owner, one.next_run_at
    FROM (
        SELECT r.id, r.lease_owner AS prev_owner, r.next_run_at
        FROM workflow_runs r
        -- The status test does not match the claim index's predicate:
        -- the run is read through its primary key.
        WHERE p_id IS NOT NULL
          AND r.id = p_id
          AND coalesce(r.status = 'running', false)
          AND r.next_run_at <= coalesce(p_now, now())
          AND (r.lease_expires_at IS NULL OR r.lease_expires_at <= coalesce(p_now, now()))
          AND (r.workflow_type, r.definition_version) IN (SELECT kinds.workflow_type, kinds.version FROM kinds)
        FOR UPDATE OF r SKIP LOCKED
    ) one
    ORDER BY next_run_at
    LIMIT p_max_runs
), claimed AS (
    -- The runs are found through their primary key whatever the plan
    -- guesses of their number (= ANY), not by a join that a generic plan
    -- might make a scan of the table.
    UPDATE workflow_runs w SET
        lease_owner = p_owner,
        lease_expires_at = coalesce(p_now, now()) + p_ttl_us * interval '1 microsecond',
        lease_epoch = w.lease_epoch + 1,
        step_attempt = w.step_attempt + CASE WHEN picked.prev_owner IS NULL THEN 0 ELSE 1 END
    FROM picked
    WHERE w.id = ANY (ARRAY(SELECT p.id FROM picked p)) AND w.id = picked.id
    RETURNING w AS run, picked.prev_owner
), logged AS (
    INSERT INTO workflow_step_logs (
        workflow_run_id, workflow_type, attempt_no, step_name, state_before, state_after,
        payload, occurred_at, kind, event, row_version, definition_version)
    SELECT (c.run).id, (c.run).workflow_type, (c.run).attempt_no, 'lease_expired', (c.run).current_state, (c.run).current_state,
        jsonb_build_object('previous_owner', c.prev_owner, 'owner', (c.run).lease_owner, 'step_attempt', (c.run).step_attempt,
            'try_key', (c.run).id::text || '/' || ((c.run).lease_epoch - 1)::text || '/' || (c.run).row_version::text),
        coalesce(p_now, now()), 'step', NULL, (c.run).row_version, (c.run).definition_version
    FROM claimed c
    WHERE c.prev_owner IS NOT NULL
)
SELECT (c.run).* FROM claimed c;
END
$fn$;
