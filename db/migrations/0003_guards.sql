-- The database refuses what raw SQL could do around the runtime's
-- statements:
--   FS001 (as before) a move of current_state the registered table lacks,
--         now also a transition from a state to itself that is not in it;
--   FS003 status or row_version set by hand (they follow current_state),
--         and result or finished_at on a run in a running state;
--   FS004 rows added to the states or transitions of a definition that an
--         earlier transaction registered;
--   FS005 a move of current_state without its log row, or a log row of a
--         state change that did not happen: a state change and its log row
--         are written by one statement (or one transaction that defers the
--         constraint triggers below).

CREATE OR REPLACE FUNCTION fsmgen_guard_run() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    old_status TEXT;
    new_status TEXT;
    init_state TEXT;
    moved      BOOLEAN;
BEGIN
    IF TG_OP = 'INSERT' THEN
        SELECT d.initial_state INTO init_state
        FROM workflow_definitions d
        WHERE d.workflow_type = NEW.workflow_type AND d.version = NEW.definition_version;
        IF NOT FOUND THEN
            RETURN NEW; -- the foreign key reports the unknown definition
        END IF;
        IF NEW.current_state IS DISTINCT FROM init_state THEN
            RAISE EXCEPTION 'run % of %/v%: a run starts in %, not %',
                NEW.id, NEW.workflow_type, NEW.definition_version, init_state, NEW.current_state
                USING ERRCODE = 'FS001';
        END IF;
        IF NEW.result IS NOT NULL OR NEW.finished_at IS NOT NULL THEN
            RAISE EXCEPTION 'run % of %/v%: a new run has no result and no finished_at',
                NEW.id, NEW.workflow_type, NEW.definition_version
                USING ERRCODE = 'FS003';
        END IF;
        NEW.status := 'running';
        NEW.row_version := 1;
        RETURN NEW;
    END IF;

    IF NEW.id IS DISTINCT FROM OLD.id
       OR NEW.workflow_type IS DISTINCT FROM OLD.workflow_type
       OR NEW.idempotency_key IS DISTINCT FROM OLD.idempotency_key THEN
        RAISE EXCEPTION 'run %: id, type and idempotency key cannot change', OLD.id
            USING ERRCODE = 'FS003';
    END IF;

    IF NEW.attempt_no IS DISTINCT FROM OLD.attempt_no
       OR NEW.definition_version IS DISTINCT FROM OLD.definition_version THEN
        -- The only legal way: a failed run reset to the initial state of the
        -- version it is restarted with, attempt_no + 1.
        SELECT s.status INTO old_status
        FROM workflow_states s
        WHERE s.workflow_type = OLD.workflow_type AND s.version = OLD.definition_version AND s.state = OLD.current_state;
        SELECT d.initial_state INTO init_state
        FROM workflow_definitions d
        WHERE d.workflow_type = NEW.workflow_type AND d.version = NEW.definition_version;
        IF old_status IS DISTINCT FROM 'failed'
           OR NEW.attempt_no IS DISTINCT FROM OLD.attempt_no + 1
           OR NEW.current_state IS DISTINCT FROM init_state THEN
            RAISE EXCEPTION 'run %: attempt_no and definition_version change only when a failed run is reset to its initial state with attempt_no + 1 (was % in %, attempt %; asked % in %, attempt %)',
                OLD.id, OLD.current_state, old_status, OLD.attempt_no, NEW.current_state, NEW.definition_version, NEW.attempt_no
                USING ERRCODE = 'FS003';
        END IF;
        IF NEW.result IS NOT NULL OR NEW.finished_at IS NOT NULL THEN
            RAISE EXCEPTION 'run %: a restarted run has no result and no finished_at', OLD.id
                USING ERRCODE = 'FS003';
        END IF;
        NEW.status := 'running';
        NEW.row_version := OLD.row_version + 1;
        RETURN NEW;
    END IF;

    -- A change of state is a move of current_state, or row_version + 1 for
    -- a transition from a state to itself. row_version moves by one, and
    -- status follows current_state: neither is set by hand.
    moved := NEW.current_state IS DISTINCT FROM OLD.current_state;
    IF NEW.row_version IS DISTINCT FROM OLD.row_version THEN
        IF NEW.row_version IS DISTINCT FROM OLD.row_version + 1 THEN
            RAISE EXCEPTION 'run %: row_version % cannot become %: it grows by one with each change of state',
                OLD.id, OLD.row_version, NEW.row_version
                USING ERRCODE = 'FS003';
        END IF;
        moved := true;
    END IF;

    IF moved THEN
        -- One lookup: the registered move and the status of its target.
        SELECT s.status INTO new_status
        FROM workflow_transitions t
        JOIN workflow_states s
          ON s.workflow_type = t.workflow_type AND s.version = t.version AND s.state = t.to_state
        WHERE t.workflow_type = OLD.workflow_type AND t.version = OLD.definition_version
          AND t.from_state = OLD.current_state AND t.to_state = NEW.current_state
        LIMIT 1;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'run % of %/v%: no transition % -> % in the registered table',
                OLD.id, OLD.workflow_type, OLD.definition_version, OLD.current_state, NEW.current_state
                USING ERRCODE = 'FS001';
        END IF;
        IF NEW.status IS DISTINCT FROM OLD.status AND NEW.status IS DISTINCT FROM new_status THEN
            RAISE EXCEPTION 'run %: status % does not go with state %, whose status is %',
                OLD.id, NEW.status, NEW.current_state, new_status
                USING ERRCODE = 'FS003';
        END IF;
        NEW.status := new_status;
        NEW.row_version := OLD.row_version + 1;
    ELSIF NEW.status IS DISTINCT FROM OLD.status THEN
        RAISE EXCEPTION 'run %: status % cannot become % while the run stays in %: status follows current_state',
            OLD.id, OLD.status, NEW.status, OLD.current_state
            USING ERRCODE = 'FS003';
    END IF;

    IF NEW.status = 'running' AND (NEW.result IS NOT NULL OR NEW.finished_at IS NOT NULL) THEN
        RAISE EXCEPTION 'run %: % is a running state: result and finished_at are set by the transition to a terminal state',
            OLD.id, NEW.current_state
            USING ERRCODE = 'FS003';
    END IF;
    RETURN NEW;
END
$$;

DROP TRIGGER workflow_runs_guard ON workflow_runs;
CREATE TRIGGER workflow_runs_guard
    BEFORE UPDATE OF id, workflow_type, idempotency_key, current_state, attempt_no,
        definition_version, row_version, status, result, finished_at ON workflow_runs
    FOR EACH ROW EXECUTE FUNCTION fsmgen_guard_run();

-- Every change of state has its log row: the row of the same run and row
-- version, of kind transition or restarted, that ends in the new state.
CREATE FUNCTION fsmgen_check_run_logged() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (
        SELECT 1 FROM workflow_step_logs l
        WHERE l.workflow_run_id = NEW.id AND l.row_version = NEW.row_version AND l.kind <> 'step'
          AND l.state_after = NEW.current_state) THEN
        RAISE EXCEPTION 'run %: % -> % at row version % has no log row: a change of state and its log row are written together',
            NEW.id, OLD.current_state, NEW.current_state, NEW.row_version
            USING ERRCODE = 'FS005';
    END IF;
    RETURN NULL;
END
$$;

CREATE CONSTRAINT TRIGGER workflow_runs_logged
    AFTER UPDATE ON workflow_runs
    DEFERRABLE INITIALLY IMMEDIATE
    FOR EACH ROW
    WHEN (NEW.row_version IS DISTINCT FROM OLD.row_version)
    EXECUTE FUNCTION fsmgen_check_run_logged();

-- A log row of a change of state (created, transition, restarted) is
-- written with that change: one per row version, and for a row version the
-- run has reached, ending in the run's state when it is the current one.
CREATE FUNCTION fsmgen_check_log_unique() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (
        SELECT 1 FROM workflow_step_logs l
        WHERE l.workflow_run_id = NEW.workflow_run_id AND l.row_version = NEW.row_version AND l.kind <> 'step') THEN
        RAISE EXCEPTION 'run %: row version % is logged already: a % row cannot be added to it',
            NEW.workflow_run_id, NEW.row_version, NEW.kind
            USING ERRCODE = 'FS005';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER workflow_step_logs_unique_change
    BEFORE INSERT ON workflow_step_logs
    FOR EACH ROW
    WHEN (NEW.kind <> 'step')
    EXECUTE FUNCTION fsmgen_check_log_unique();

CREATE FUNCTION fsmgen_check_log_change() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    run_state   TEXT;
    run_version BIGINT;
BEGIN
    SELECT r.current_state, r.row_version INTO run_state, run_version
    FROM workflow_runs r
    WHERE r.id = NEW.workflow_run_id;
    IF NEW.row_version > run_version
       OR (NEW.row_version = run_version AND NEW.state_after IS DISTINCT FROM run_state) THEN
        RAISE EXCEPTION 'run %: a % row to % at row version % describes no change of the run, which is in % at row version %',
            NEW.workflow_run_id, NEW.kind, NEW.state_after, NEW.row_version, run_state, run_version
            USING ERRCODE = 'FS005';
    END IF;
    RETURN NULL;
END
$$;

CREATE CONSTRAINT TRIGGER workflow_step_logs_change
    AFTER INSERT ON workflow_step_logs
    DEFERRABLE INITIALLY IMMEDIATE
    FOR EACH ROW
    WHEN (NEW.kind <> 'step')
    EXECUTE FUNCTION fsmgen_check_log_change();

-- The states and transitions of a definition are written by the
-- transaction that registers it, and never added to afterwards.
CREATE FUNCTION fsmgen_refuse_definition_extension() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (
        SELECT 1 FROM workflow_definitions d
        WHERE d.workflow_type = NEW.workflow_type AND d.version = NEW.version
          AND d.xmin IS DISTINCT FROM pg_current_xact_id()::xid) THEN
        RAISE EXCEPTION '%: %/v% is registered: a registered definition is immutable: INSERT refused; register a new version instead',
            TG_TABLE_NAME, NEW.workflow_type, NEW.version
            USING ERRCODE = 'FS004';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER workflow_states_closed
    BEFORE INSERT ON workflow_states
    FOR EACH ROW EXECUTE FUNCTION fsmgen_refuse_definition_extension();
CREATE TRIGGER workflow_transitions_closed
    BEFORE INSERT ON workflow_transitions
    FOR EACH ROW EXECUTE FUNCTION fsmgen_refuse_definition_extension();
