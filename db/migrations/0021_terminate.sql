-- An operator's terminate: the forced end of a live run, in whatever state
-- it is, without a transition of its machine (Temporal's terminate, beside
-- the cancel event that a machine declares).
--
--   - fsmgen_terminate_run(run, reason, by), SECURITY DEFINER, is the only
--     way: granted to the operator role, not to the runtime's. With the
--     run's live descendants (children, their children; not those another
--     runtime executes), it ends the run where it is in one statement:
--     current_state unchanged, status cancelled, previous_state NULL (the
--     foreign key to workflow_moves, which has no move from a state to
--     itself to cancelled, does not apply), row_version + 1, result error
--     code TERMINATED with "terminated by BY: REASON", finished_at now, no
--     schedule, no lease. Each gets a log row of kind terminated (from and
--     to its state, no event; payload {"reason", "by", "role", "root"},
--     role the session's login role, root the run terminated), which the
--     evidence chain records as any change row. A worker still holding a
--     run finds its writes refused: its row version and lease are gone.
--     It returns the runs ended, the run first; none when the run is not
--     running (finished, or no such run).
--   - The guard trigger lets that write through only inside the function:
--     the terminate mark counts only with the function's owner's rights,
--     as the purge mark does (fsmgen_terminating). Anyone else writing the
--     same shape gets the guard's errors (FS001/FS003).
--   - A log row of kind terminated is written only by the function (FS003),
--     so that no other role can log a move as a terminate.
--   - A terminated run changes state no more (FS003): it stays in its
--     state, whose rows would otherwise let a raw UPDATE move it on.

ALTER TABLE workflow_step_logs DROP CONSTRAINT workflow_step_logs_kind_check;
ALTER TABLE workflow_step_logs ADD CONSTRAINT workflow_step_logs_kind_check
    CHECK (kind IN ('created', 'transition', 'restarted', 'step', 'migrated', 'terminated')) NOT VALID;
ALTER TABLE workflow_step_logs VALIDATE CONSTRAINT workflow_step_logs_kind_check;

CREATE FUNCTION fsmgen_terminate_run(p_run UUID, p_reason TEXT, p_by TEXT)
RETURNS TABLE (run_id UUID, workflow_type TEXT, state TEXT, row_version BIGINT, finished_at TIMESTAMPTZ)
LANGUAGE plpgsql SECURITY DEFINER AS $$
DECLARE
    root_status   TEXT;
    root_executor TEXT;
    ids           UUID[];
BEGIN
    IF coalesce(btrim(p_reason), '') = '' OR coalesce(btrim(p_by), '') = '' THEN
        RAISE EXCEPTION 'fsmgen_terminate_run: run %: a reason and who terminates are needed', p_run
            USING ERRCODE = '22023';
    END IF;
    SELECT r.status, r.executor INTO root_status, root_executor
    FROM workflow_runs r WHERE r.id = p_run FOR UPDATE;
    IF NOT FOUND OR root_status <> 'running' THEN
        RETURN;
    END IF;
    IF root_executor IS NOT NULL THEN
        RAISE EXCEPTION 'run % is executed by %: terminate it there', p_run, root_executor
            USING ERRCODE = 'FS009';
    END IF;
    -- The live descendants run by this database's engine, locked in id
    -- order after the run.
    WITH RECURSIVE tree AS (
        SELECT c.id FROM workflow_runs c WHERE c.parent_run_id = p_run
        UNION
        SELECT c.id FROM workflow_runs c JOIN tree ON c.parent_run_id = tree.id
    )
    SELECT coalesce(array_agg(l.id), '{}') INTO ids
    FROM (SELECT c.id FROM workflow_runs c JOIN tree ON tree.id = c.id
          WHERE c.status = 'running' AND c.executor IS NULL
          ORDER BY c.id FOR UPDATE OF c) l;
    ids := p_run || ids;
    PERFORM set_config('fsmgen.terminate', pg_current_xact_id()::text, true);
    RETURN QUERY
    WITH ended AS (
        UPDATE workflow_runs w SET
            current_state = w.current_state,
            previous_state = NULL,
            status = 'cancelled',
            row_version = w.row_version + 1,
            updated_at = now(),
            finished_at = now(),
            result = jsonb_build_object(
                'status', 'cancelled', 'outcome', NULL, 'output', NULL,
                'workflow_run_id', w.id, 'attempt_no', w.attempt_no, 'cost_usd', 0,
                'duration_ms', (extract(epoch FROM (now() - w.attempt_started_at)) * 1000)::bigint,
                'error_code', 'TERMINATED',
                'error_detail', 'terminated by ' || p_by || ': ' || p_reason
                    || CASE WHEN w.id = p_run THEN '' ELSE ' (with its ancestor ' || p_run || ')' END),
            next_run_at = NULL,
            lease_owner = NULL,
            lease_expires_at = NULL,
            parked_at = NULL
        WHERE w.id = ANY (ids) AND w.status = 'running'
        RETURNING w.*
    ), logged AS (
        INSERT INTO workflow_step_logs (workflow_run_id, workflow_type, attempt_no, step_name, state_before,
            state_after, payload, occurred_at, kind, event, row_version, definition_version)
        SELECT e.id, e.workflow_type, e.attempt_no, 'terminate', e.current_state, e.current_state,
            jsonb_build_object('reason', p_reason, 'by', p_by, 'role', session_user::text, 'root', p_run),
            e.updated_at, 'terminated', NULL, e.row_version, e.definition_version
        FROM ended e
        RETURNING workflow_run_id
    )
    SELECT e.id, e.workflow_type, e.current_state, e.row_version, e.finished_at
    FROM ended e
    WHERE e.id IN (SELECT l.workflow_run_id FROM logged l)
    ORDER BY e.id <> p_run, e.id;
    PERFORM set_config('fsmgen.terminate', '', true);
END
$$;
REVOKE ALL ON FUNCTION fsmgen_terminate_run(UUID, TEXT, TEXT) FROM PUBLIC;

-- The terminate mark counts only inside fsmgen_terminate_run: with the
-- rights of its owner, which no other role has.
CREATE FUNCTION fsmgen_terminating() RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT coalesce(current_setting('fsmgen.terminate', true), '') = pg_current_xact_id()::text
        AND current_user = (SELECT pg_get_userbyid(p.proowner) FROM pg_proc p
                            WHERE p.oid = 'fsmgen_terminate_run(uuid, text, text)'::regprocedure)
$$;

-- As in 0016, but for the write of fsmgen_terminate_run.
DROP TRIGGER workflow_runs_guard ON workflow_runs;
CREATE TRIGGER workflow_runs_guard
    BEFORE UPDATE OF id, workflow_type, idempotency_key, current_state, attempt_no,
        definition_version, row_version, status, result, finished_at, previous_state ON workflow_runs
    FOR EACH ROW
    WHEN ((NEW.id IS DISTINCT FROM OLD.id
        OR NEW.workflow_type IS DISTINCT FROM OLD.workflow_type
        OR NEW.idempotency_key IS DISTINCT FROM OLD.idempotency_key
        OR NEW.attempt_no IS DISTINCT FROM OLD.attempt_no
        OR NEW.definition_version IS DISTINCT FROM OLD.definition_version
        OR NEW.row_version IS DISTINCT FROM OLD.row_version + 1
        OR NEW.previous_state IS DISTINCT FROM OLD.current_state
        OR (NEW.status = 'running' AND (NEW.result IS NOT NULL OR NEW.finished_at IS NOT NULL))
        OR strpos(NEW.current_state, '|') > 0 OR strpos(OLD.current_state, '|') > 0)
        AND NOT (OLD.status = 'running' AND NEW.status = 'cancelled' AND NEW.previous_state IS NULL
            AND NEW.current_state = OLD.current_state AND NEW.row_version = OLD.row_version + 1
            AND NEW.id = OLD.id AND NEW.workflow_type = OLD.workflow_type
            AND NEW.idempotency_key IS NOT DISTINCT FROM OLD.idempotency_key
            AND NEW.attempt_no = OLD.attempt_no AND NEW.definition_version = OLD.definition_version
            AND NEW.result IS NOT NULL AND NEW.finished_at IS NOT NULL
            AND fsmgen_terminating()))
    EXECUTE FUNCTION fsmgen_guard_run();

CREATE FUNCTION fsmgen_guard_terminated() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'workflow_step_logs' THEN
        IF NOT fsmgen_terminating() THEN
            RAISE EXCEPTION 'run %: a terminated row is written by fsmgen_terminate_run only', NEW.workflow_run_id
                USING ERRCODE = 'FS003';
        END IF;
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'run %: it was terminated in %: it changes state no more',
        OLD.id, OLD.current_state
        USING ERRCODE = 'FS003';
END
$$;

CREATE TRIGGER workflow_step_logs_terminated
    BEFORE INSERT ON workflow_step_logs
    FOR EACH ROW
    WHEN (NEW.kind = 'terminated')
    EXECUTE FUNCTION fsmgen_guard_terminated();
CREATE TRIGGER workflow_runs_terminated
    BEFORE UPDATE OF current_state, row_version ON workflow_runs
    FOR EACH ROW
    WHEN (OLD.status <> 'running' AND OLD.previous_state IS NULL AND OLD.result->>'error_code' = 'TERMINATED'
        AND NEW.attempt_no = OLD.attempt_no
        AND (NEW.row_version <> OLD.row_version OR NEW.current_state <> OLD.current_state))
    EXECUTE FUNCTION fsmgen_guard_terminated();

-- Pinned as every function of the schema (0014_least_privilege.sql).
DO $pin$
BEGIN
    EXECUTE format('ALTER FUNCTION fsmgen_terminate_run(uuid, text, text) SET search_path = pg_catalog, %I, pg_temp', current_schema());
    EXECUTE format('ALTER FUNCTION fsmgen_terminating() SET search_path = pg_catalog, %I, pg_temp', current_schema());
    EXECUTE format('ALTER FUNCTION fsmgen_guard_terminated() SET search_path = pg_catalog, %I, pg_temp', current_schema());
END
$pin$;
