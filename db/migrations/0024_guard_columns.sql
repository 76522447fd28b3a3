-- Smaller trigger conditions on the runtime's transitions.
--
-- A trigger's WHEN is compiled at every statement that may fire it, before
-- any row is tested; the guard's, which every transition fires, tested
-- the run's identity, attempt and version and the shape of a terminate on
-- top of the transition's shape. Now:
--
--   - workflow_runs_guard_identity fires for a write that sets id,
--     workflow_type, idempotency_key, attempt_no or definition_version (a
--     restart, a migration to another version, raw SQL), without a WHEN:
--     fsmgen_guard_run refuses or admits it as before (called twice when
--     workflow_runs_guard fires too: it is idempotent, the second call
--     seeing the row the first one made);
--   - workflow_runs_guard fires for a write of the state's columns that is
--     not shaped as the runtime's transitions or as the write of
--     fsmgen_terminate_run, whose identity, attempt and version are then
--     unchanged: a write that sets one of them fires the trigger above.
--
-- The runtime's transitions set none of the identity's columns, and
-- compile the smaller condition only. Likewise workflow_runs_terminated
-- fires for a finished run only (OLD.status <> 'running'), and
-- fsmgen_guard_terminated tests there the rest of what its WHEN tested: a
-- run that fsmgen_terminate_run ended changes state no more (FS003).

DROP TRIGGER workflow_runs_guard ON workflow_runs;
CREATE TRIGGER workflow_runs_guard
    BEFORE UPDATE OF current_state, row_version, status, result, finished_at, previous_state ON workflow_runs
    FOR EACH ROW
    WHEN ((NEW.row_version IS DISTINCT FROM OLD.row_version + 1
        OR NEW.previous_state IS DISTINCT FROM OLD.current_state
        OR (NEW.status = 'running' AND (NEW.result IS NOT NULL OR NEW.finished_at IS NOT NULL))
        OR strpos(NEW.current_state, '|') > 0 OR strpos(OLD.current_state, '|') > 0)
        AND NOT (OLD.status = 'running' AND NEW.status = 'cancelled' AND NEW.previous_state IS NULL
            AND NEW.current_state = OLD.current_state AND NEW.row_version = OLD.row_version + 1
            AND NEW.result IS NOT NULL AND NEW.finished_at IS NOT NULL
            AND fsmgen_terminating()))
    EXECUTE FUNCTION fsmgen_guard_run();
CREATE TRIGGER workflow_runs_guard_identity
    BEFORE UPDATE OF id, workflow_type, idempotency_key, attempt_no, definition_version ON workflow_runs
    FOR EACH ROW EXECUTE FUNCTION fsmgen_guard_run();

CREATE OR REPLACE FUNCTION fsmgen_guard_terminated() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'workflow_step_logs' THEN
        IF NOT fsmgen_terminating() THEN
            RAISE EXCEPTION 'run %: a terminated row is written by fsmgen_terminate_run only', NEW.workflow_run_id
                USING ERRCODE = 'FS003';
        END IF;
        RETURN NEW;
    END IF;
    IF (OLD.status <> 'running' AND OLD.previous_state IS NULL AND OLD.result->>'error_code' = 'TERMINATED'
        AND NEW.attempt_no = OLD.attempt_no
        AND (NEW.row_version <> OLD.row_version OR NEW.current_state <> OLD.current_state)) IS NOT TRUE THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'run %: it was terminated in %: it changes state no more',
        OLD.id, OLD.current_state
        USING ERRCODE = 'FS003';
END
$$;

DROP TRIGGER workflow_runs_terminated ON workflow_runs;
CREATE TRIGGER workflow_runs_terminated
    BEFORE UPDATE OF current_state, row_version ON workflow_runs
    FOR EACH ROW
    WHEN (OLD.status <> 'running')
    EXECUTE FUNCTION fsmgen_guard_terminated();

-- CREATE OR REPLACE dropped the pinned search_path (0014): pin it again.
DO $pin$
BEGIN
    EXECUTE format('ALTER FUNCTION fsmgen_guard_terminated() SET search_path = pg_catalog, %I, pg_temp', current_schema());
END
$pin$;
