-- The runtime's transitions of many runs, checked once per statement.
--
-- Three row triggers check every transition: workflow_runs_known_move
-- (the move is registered), workflow_runs_logged (the change has its log
-- row) and workflow_step_logs_change (the log row describes the change,
-- names a registered transition, and a child's end event comes with the
-- child's delivery). Each is a PL/pgSQL call per row, and they were most
-- of the cost of the engine's group commit, which writes many runs in one
-- statement.
--
--   - fsmgen_advance_runs writes the transitions that the engine and the
--     store batch together (AdvanceRuns), and checks the runs it moved in
--     the same statement, once for all of them, with the same errors as
--     the triggers (fsmgen_refuse_transition): 23503
--     workflow_runs_move_fkey for a move not registered, FS001 for a
--     transition not in the registered table or a child's end event
--     without the child's delivery. A change and its log row are written
--     together by construction. It is SECURITY DEFINER, owned by the
--     schema's owner, and granted to the runtime and operator roles
--     (db.Grant; roles granted before are granted it when this migrates).
--   - The write mark: while the function writes, the setting fsmgen.write
--     holds the current transaction's id. The three triggers skip a row
--     written with the mark by the function's owner, and only then: a
--     session of another role that sets the mark gains nothing, and the
--     owner's own statements outside the function are checked as before.
--     Every other trigger (the guards, the schedule, waking a parent, the
--     evidence chain) fires as before.

CREATE FUNCTION fsmgen_refuse_transition(p_run UUID, p_type TEXT, p_version INTEGER, p_previous TEXT,
    p_before TEXT, p_event TEXT, p_after TEXT, p_status TEXT) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    why TEXT;
BEGIN
    IF p_previous IS NOT NULL AND NOT EXISTS (
        SELECT 1 FROM workflow_moves m
        WHERE m.workflow_type = p_type AND m.version = p_version
          AND m.from_state = p_previous AND m.to_state = p_after AND m.to_status = p_status) THEN
        RAISE EXCEPTION 'insert or update on table "workflow_runs" violates foreign key constraint "workflow_runs_move_fkey"'
            USING ERRCODE = 'foreign_key_violation', CONSTRAINT = 'workflow_runs_move_fkey',
                TABLE = 'workflow_runs',
                SCHEMA = (SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                          WHERE c.oid = 'workflow_runs'::regclass),
                DETAIL = format('Key (workflow_type, definition_version, previous_state, current_state, status)=(%s, %s, %s, %s, %s) is not present in table "workflow_moves".',
                    p_type, p_version, p_previous, p_after, p_status);
    END IF;
    IF strpos(p_before, '|') > 0 OR strpos(p_after, '|') > 0 THEN
        why := fsmgen_parallel_refusal(p_type, p_version, p_before, p_event, p_after);
        IF why IS NOT NULL THEN
            RAISE EXCEPTION 'run % of %/v%: no transition % -[%]-> % in the registered table: %',
                p_run, p_type, p_version, p_before, p_event, p_after, why
                USING ERRCODE = 'FS001';
        END IF;
    ELSIF NOT EXISTS (
        SELECT 1 FROM workflow_transitions t
        WHERE t.workflow_type = p_type AND t.version = p_version
          AND t.from_state = p_before AND t.event = p_event AND t.to_state = p_after) THEN
        RAISE EXCEPTION 'run % of %/v%: no transition % -[%]-> % in the registered table',
            p_run, p_type, p_version, p_before, p_event, p_after
            USING ERRCODE = 'FS001';
    END IF;
    RAISE EXCEPTION 'run %: % is the event of the end of a child run: it is fired with the delivery of a finished child, in the same transaction',
        p_run, p_event
        USING ERRCODE = 'FS001';
END
$$;
REVOKE ALL ON FUNCTION fsmgen_refuse_transition(UUID, TEXT, INTEGER, TEXT, TEXT, TEXT, TEXT, TEXT) FROM PUBLIC;

-- As the query AdvanceRuns was, item n moving run p_ids[n]; see
-- db/queries/engine.sql.
CREATE FUNCTION fsmgen_advance_runs(
    p_ids UUID[], p_from_states TEXT[], p_to_states TEXT[], p_to_statuses TEXT[], p_row_versions BIGINT[],
    p_workflow_types TEXT[], p_definition_versions INTEGER[], p_events TEXT[], p_payloads JSONB[],
    p_next_delays_us BIGINT[], p_fenced BOOLEAN[], p_release_leases BOOLEAN[], p_owners TEXT[], p_epochs BIGINT[],
    p_finishes BOOLEAN[], p_result_statuses TEXT[], p_outcomes TEXT[], p_outputs JSONB[], p_costs_usd FLOAT8[],
    p_durations_ms BIGINT[], p_error_codes TEXT[], p_error_details TEXT[], p_now TIMESTAMPTZ)
RETURNS TABLE (id UUID, row_version BIGINT, occurred_at TIMESTAMPTZ, next_run_at TIMESTAMPTZ, busy BOOLEAN)
LANGUAGE plpgsql SECURITY DEFINER AS $$
#variable_conflict use_column
BEGIN
    PERFORM set_config('fsmgen.write', pg_current_xact_id()::text, true);
    RETURN QUERY
    WITH i AS (
        SELECT unnest(p_ids) AS id, unnest(p_from_states) AS from_state, unnest(p_to_states) AS to_state,
            unnest(p_to_statuses) AS to_status, unnest(p_row_versions) AS row_version,
            unnest(p_workflow_types) AS workflow_type, unnest(p_definition_versions) AS definition_version,
            unnest(p_events) AS event, unnest(p_payloads) AS payload, unnest(p_next_delays_us) AS next_delay_us,
            unnest(p_fenced) AS fenced, unnest(p_release_leases) AS release_lease, unnest(p_owners) AS owner,
            unnest(p_epochs) AS epoch, unnest(p_finishes) AS finish, unnest(p_result_statuses) AS result_status,
            unnest(p_outcomes) AS outcome, unnest(p_outputs) AS output, unnest(p_costs_usd) AS cost_usd,
            unnest(p_durations_ms) AS duration_ms, unnest(p_error_codes) AS error_code,
            unnest(p_error_details) AS error_detail
    ), locked AS MATERIALIZED (
        SELECT w.id FROM workflow_runs w WHERE w.id = ANY (p_ids)
        FOR UPDATE OF w SKIP LOCKED
    ), moved AS (
        UPDATE workflow_runs AS w SET
            current_state = i.to_state,
            previous_state = w.current_state,
            status = i.to_status,
            row_version = w.row_version + 1,
            updated_at = coalesce(p_now, now()),
            step_attempt = 1,
            last_error_code = NULL,
            last_error = NULL,
            parked_at = NULL,
            result = CASE WHEN i.finish THEN jsonb_build_object(
                'status', i.result_status,
                'outcome', nullif(i.outcome, ''),
                'output', i.output,
                'workflow_run_id', w.id,
                'attempt_no', w.attempt_no,
                'cost_usd', i.cost_usd,
                'duration_ms', coalesce(nullif(i.duration_ms, 0),
                    (extract(epoch FROM (coalesce(p_now, now()) - w.attempt_started_at)) * 1000)::bigint),
                'error_code', nullif(i.error_code, ''),
                'error_detail', nullif(i.error_detail, '')) ELSE w.result END,
            finished_at = CASE WHEN i.finish THEN coalesce(p_now, now()) ELSE w.finished_at END,
            next_run_at = CASE WHEN i.finish OR i.next_delay_us < 0 THEN NULL
                WHEN i.next_delay_us = 0 AND w.next_run_at <= coalesce(p_now, now()) THEN w.next_run_at
                ELSE coalesce(p_now, now()) + i.next_delay_us * interval '1 microsecond' END,
            lease_owner = CASE WHEN i.finish OR i.release_lease THEN NULL ELSE w.lease_owner END,
            lease_expires_at = CASE WHEN i.finish OR i.release_lease THEN NULL ELSE w.lease_expires_at END
        FROM i JOIN locked l ON l.id = i.id
        WHERE w.id = i.id AND w.current_state = i.from_state AND w.row_version = i.row_version
            AND w.workflow_type = i.workflow_type AND w.definition_version = i.definition_version
            AND (NOT i.fenced OR (w.lease_owner = i.owner AND w.lease_epoch = i.epoch
                 AND w.lease_expires_at > coalesce(p_now, now())))
        RETURNING w.id, w.workflow_type, w.attempt_no, w.row_version, w.updated_at, w.definition_version,
            w.next_run_at, w.previous_state, w.status, i.event, i.from_state, i.to_state, i.payload
    ), logged AS (
        INSERT INTO workflow_step_logs (
            workflow_run_id, workflow_type, attempt_no, step_name, state_before, state_after,
            payload, occurred_at, kind, event, row_version, definition_version)
        SELECT moved.id, moved.workflow_type, moved.attempt_no, moved.event, moved.from_state, moved.to_state,
            moved.payload, moved.updated_at, 'transition', moved.event, moved.row_version, moved.definition_version
        FROM moved
        RETURNING workflow_run_id, row_version, occurred_at
    ), refused AS (
        -- What workflow_runs_known_move and workflow_step_logs_change
        -- test for each row, for every run moved: the first that fails
        -- raises its error.
        SELECT fsmgen_refuse_transition(m.id, m.workflow_type, m.definition_version, m.previous_state,
            m.from_state, m.event, m.to_state, m.status)
        FROM moved m
        WHERE (m.previous_state IS NOT NULL AND NOT EXISTS (
                SELECT 1 FROM workflow_moves mv
                WHERE mv.workflow_type = m.workflow_type AND mv.version = m.definition_version
                  AND mv.from_state = m.previous_state AND mv.to_state = m.to_state AND mv.to_status = m.status))
           OR (CASE WHEN strpos(m.from_state, '|') > 0 OR strpos(m.to_state, '|') > 0
                THEN fsmgen_parallel_refusal(m.workflow_type, m.definition_version, m.from_state, m.event, m.to_state) IS NOT NULL
                ELSE NOT EXISTS (
                    SELECT 1 FROM workflow_transitions t
                    WHERE t.workflow_type = m.workflow_type AND t.version = m.definition_version
                      AND t.from_state = m.from_state AND t.event = m.event AND t.to_state = m.to_state) END)
           OR (EXISTS (SELECT 1 FROM workflow_runs c WHERE c.parent_run_id = m.id AND c.parent_event = m.event)
               AND NOT EXISTS (
                   SELECT 1 FROM workflow_runs c
                   WHERE c.parent_run_id = m.id AND c.parent_event = m.event
                     AND c.status <> 'running' AND c.parent_delivered_at IS NOT NULL
                     AND c.xmin = pg_current_xact_id()::xid))
    )
    SELECT logged.workflow_run_id, logged.row_version, logged.occurred_at, moved.next_run_at, false
    FROM logged JOIN moved ON moved.id = logged.workflow_run_id
    WHERE NOT EXISTS (SELECT 1 FROM refused)
    UNION ALL
    SELECT i.id, 0::bigint, NULL::timestamptz, NULL::timestamptz, true
    FROM i WHERE i.id NOT IN (SELECT l.id FROM locked l);
    PERFORM set_config('fsmgen.write', '', true);
END
$$;
REVOKE ALL ON FUNCTION fsmgen_advance_runs(UUID[], TEXT[], TEXT[], TEXT[], BIGINT[], TEXT[], INTEGER[], TEXT[],
    JSONB[], BIGINT[], BOOLEAN[], BOOLEAN[], TEXT[], BIGINT[], BOOLEAN[], TEXT[], TEXT[], JSONB[], FLOAT8[],
    BIGINT[], TEXT[], TEXT[], TIMESTAMPTZ) FROM PUBLIC;

DO $mark$
DECLARE
    -- The write mark counts for the owner of fsmgen_advance_runs, who
    -- runs this migration.
    mark TEXT := format('NOT (CURRENT_USER = %L::name AND coalesce(current_setting(%L, true), %L) = pg_current_xact_id()::text)',
        current_user, 'fsmgen.write', '');
BEGIN
    EXECUTE 'DROP TRIGGER workflow_runs_known_move ON workflow_runs';
    EXECUTE format('CREATE TRIGGER workflow_runs_known_move '
        'AFTER UPDATE OF workflow_type, definition_version, previous_state, current_state, status ON workflow_runs '
        'FOR EACH ROW WHEN (%s) EXECUTE FUNCTION fsmgen_check_move()', mark);
    EXECUTE 'DROP TRIGGER workflow_runs_logged ON workflow_runs';
    EXECUTE format('CREATE CONSTRAINT TRIGGER workflow_runs_logged AFTER UPDATE ON workflow_runs '
        'DEFERRABLE INITIALLY IMMEDIATE FOR EACH ROW '
        'WHEN (NEW.row_version IS DISTINCT FROM OLD.row_version AND %s) EXECUTE FUNCTION fsmgen_check_run_logged()', mark);
    EXECUTE 'DROP TRIGGER workflow_step_logs_change ON workflow_step_logs';
    EXECUTE format('CREATE CONSTRAINT TRIGGER workflow_step_logs_change AFTER INSERT ON workflow_step_logs '
        'DEFERRABLE INITIALLY IMMEDIATE FOR EACH ROW '
        'WHEN (NEW.kind <> %L AND %s) EXECUTE FUNCTION fsmgen_check_log_change()', 'step', mark);

    -- Pinned as every function of the schema (0014_least_privilege.sql).
    EXECUTE format('ALTER FUNCTION fsmgen_refuse_transition(UUID, TEXT, INTEGER, TEXT, TEXT, TEXT, TEXT, TEXT) '
        'SET search_path = pg_catalog, %I, pg_temp', current_schema());
    EXECUTE format('ALTER FUNCTION fsmgen_advance_runs(UUID[], TEXT[], TEXT[], TEXT[], BIGINT[], TEXT[], INTEGER[], '
        'TEXT[], JSONB[], BIGINT[], BOOLEAN[], BOOLEAN[], TEXT[], BIGINT[], BOOLEAN[], TEXT[], TEXT[], JSONB[], '
        'FLOAT8[], BIGINT[], TEXT[], TEXT[], TIMESTAMPTZ) SET search_path = pg_catalog, %I, pg_temp', current_schema());
END
$mark$;
