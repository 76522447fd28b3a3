-- A transition takes no row lock but its run's.
--
-- A foreign key locks the row it finds (FOR KEY SHARE), so that no other
-- transaction deletes it until the checking one ends, and a lock is a
-- write: a WAL record, and, when transactions of many runs lock the same
-- row, a MultiXact. Every transition locked two rows that way: the row of
-- workflow_moves its move names (shared by every run of the type), and
-- the run's own new row version, which the log row's foreign key found.
-- Neither row can go while it matters:
--
--   - the rows of workflow_moves are immutable (triggers, FS004) and only
--     the schema's owner may TRUNCATE them;
--   - a change row (created, transition, restarted, migrated) goes with a
--     change of its run in the same transaction (workflow_runs_logged,
--     workflow_step_logs_change), which holds the run's row locked; and a
--     run is deleted only by fsmgen_purge_finished_runs, after its log.
--
-- So the two foreign keys become checks that read without locking, with
-- the same names, SQLSTATE (23503) and messages as the keys:
--
--   - workflow_runs_known_move: a run's (workflow_type, definition_version,
--     previous_state, current_state, status), when previous_state is set
--     and one of them changes, is a row of workflow_moves (the trigger's
--     name sorts before workflow_runs_logged, as the key's trigger did, so
--     that a write both refuse gets the key's error);
--   - a change row of the log names an existing run
--     (fsmgen_check_log_change, FS005, as for any change row that
--     describes no change of its run); a step row names an existing run,
--     which it locks as the key did (workflow_step_logs_run), so that a
--     concurrent purge waits for it.

ALTER TABLE workflow_runs DROP CONSTRAINT workflow_runs_move_fkey;

CREATE FUNCTION fsmgen_check_move() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.previous_state IS NULL
       OR (NEW.workflow_type, NEW.definition_version, NEW.previous_state, NEW.current_state, NEW.status)
          IS NOT DISTINCT FROM (OLD.workflow_type, OLD.definition_version, OLD.previous_state, OLD.current_state, OLD.status) THEN
        RETURN NULL;
    END IF;
    PERFORM 1 FROM workflow_moves m
    WHERE m.workflow_type = NEW.workflow_type AND m.version = NEW.definition_version
      AND m.from_state = NEW.previous_state AND m.to_state = NEW.current_state AND m.to_status = NEW.status;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'insert or update on table "workflow_runs" violates foreign key constraint "workflow_runs_move_fkey"'
            USING ERRCODE = 'foreign_key_violation', CONSTRAINT = 'workflow_runs_move_fkey',
                TABLE = 'workflow_runs', SCHEMA = TG_TABLE_SCHEMA,
                DETAIL = format('Key (workflow_type, definition_version, previous_state, current_state, status)=(%s, %s, %s, %s, %s) is not present in table "workflow_moves".',
                    NEW.workflow_type, NEW.definition_version, NEW.previous_state, NEW.current_state, NEW.status);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER workflow_runs_known_move
    AFTER UPDATE OF workflow_type, definition_version, previous_state, current_state, status ON workflow_runs
    FOR EACH ROW EXECUTE FUNCTION fsmgen_check_move();

ALTER TABLE workflow_step_logs DROP CONSTRAINT workflow_step_logs_workflow_run_id_fkey;

CREATE FUNCTION fsmgen_check_log_run() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM workflow_runs r WHERE r.id = NEW.workflow_run_id FOR KEY SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'insert or update on table "workflow_step_logs" violates foreign key constraint "workflow_step_logs_workflow_run_id_fkey"'
            USING ERRCODE = 'foreign_key_violation', CONSTRAINT = 'workflow_step_logs_workflow_run_id_fkey',
                TABLE = 'workflow_step_logs', SCHEMA = TG_TABLE_SCHEMA,
                DETAIL = format('Key (workflow_run_id)=(%s) is not present in table "workflow_runs".', NEW.workflow_run_id);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER workflow_step_logs_run
    AFTER INSERT ON workflow_step_logs
    FOR EACH ROW
    WHEN (NEW.kind = 'step')
    EXECUTE FUNCTION fsmgen_check_log_run();

-- Pinned as every function of the schema (0014_least_privilege.sql).
DO $pin$
BEGIN
    EXECUTE format('ALTER FUNCTION fsmgen_check_move() SET search_path = pg_catalog, %I, pg_temp', current_schema());
    EXECUTE format('ALTER FUNCTION fsmgen_check_log_run() SET search_path = pg_catalog, %I, pg_temp', current_schema());
END
$pin$;
