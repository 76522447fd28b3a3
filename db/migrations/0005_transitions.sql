-- A cheaper transition with the same guarantees.
--
-- Until now every change of current_state ran the PL/pgSQL guard
-- fsmgen_guard_run, which looked the move up in the registered table, and a
-- BEFORE INSERT trigger on the log that repeated the unique index
-- workflow_step_logs_change_idx. Now:
--
--   - workflow_moves holds the registered moves (from_state, to_state) of
--     each definition with the status of the state entered, filled from
--     workflow_transitions as they are registered;
--   - a run remembers the state it left (previous_state), and a composite
--     foreign key from (workflow_type, definition_version, previous_state,
--     current_state, status) to workflow_moves refuses a move the registered
--     table lacks, or a status that is not the state's, declaratively;
--   - the guard trigger fires only for writes that do not look like a
--     transition the runtime writes (row_version + 1, previous_state the
--     state left, identity, attempt and version unchanged, no result on a
--     running state): raw SQL that moves current_state alone, touches the
--     identity or sets status or row_version by hand still goes through it
--     and gets the same errors as before;
--   - a second change-of-state log row for the same row version is refused
--     by the unique index itself (SQLSTATE 23505 on
--     workflow_step_logs_change_idx, which the store reports as FS005 does);
--   - the log keeps two indexes instead of three: (workflow_run_id, id)
--     serves the history and the events of an attempt, the unique partial
--     index the change rows. The log's id stays a bigserial, unique by its
--     sequence; no query looks a row up by id alone.

CREATE TABLE workflow_moves (
    workflow_type TEXT    NOT NULL,
    version       INTEGER NOT NULL,
    from_state    TEXT    NOT NULL,
    to_state      TEXT    NOT NULL,
    -- the generic status of to_state.
    to_status     TEXT    NOT NULL,
    PRIMARY KEY (workflow_type, version, from_state, to_state, to_status),
    FOREIGN KEY (workflow_type, version, to_state) REFERENCES workflow_states (workflow_type, version, state)
);

INSERT INTO workflow_moves (workflow_type, version, from_state, to_state, to_status)
SELECT DISTINCT t.workflow_type, t.version, t.from_state, t.to_state, s.status
FROM workflow_transitions t
JOIN workflow_states s ON s.workflow_type = t.workflow_type AND s.version = t.version AND s.state = t.to_state;

CREATE FUNCTION fsmgen_add_move() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO workflow_moves (workflow_type, version, from_state, to_state, to_status)
    SELECT NEW.workflow_type, NEW.version, NEW.from_state, NEW.to_state, s.status
    FROM workflow_states s
    WHERE s.workflow_type = NEW.workflow_type AND s.version = NEW.version AND s.state = NEW.to_state
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$$;

CREATE TRIGGER workflow_transitions_moves
    AFTER INSERT ON workflow_transitions
    FOR EACH ROW EXECUTE FUNCTION fsmgen_add_move();
CREATE TRIGGER workflow_moves_immutable
    BEFORE UPDATE OR DELETE ON workflow_moves
    FOR EACH ROW EXECUTE FUNCTION fsmgen_refuse_definition_change();
CREATE TRIGGER workflow_moves_closed
    BEFORE INSERT ON workflow_moves
    FOR EACH ROW EXECUTE FUNCTION fsmgen_refuse_definition_extension();

-- The state the run's last change of state left; NULL before the first
-- one and after a restart.
ALTER TABLE workflow_runs ADD COLUMN previous_state TEXT;
ALTER TABLE workflow_runs ADD CONSTRAINT workflow_runs_move_fkey
    FOREIGN KEY (workflow_type, definition_version, previous_state, current_state, status)
    REFERENCES workflow_moves (workflow_type, version, from_state, to_state, to_status);

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
        NEW.previous_state := NULL;
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
        NEW.previous_state := NULL;
        RETURN NEW;
    END IF;

    -- A change of state is a move of current_state, or row_version + 1 for
    -- a transition from a state to itself. row_version moves by one, and
    -- status and previous_state follow current_state: none is set by hand.
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
        SELECT m.to_status INTO new_status
        FROM workflow_moves m
        WHERE m.workflow_type = OLD.workflow_type AND m.version = OLD.definition_version
          AND m.from_state = OLD.current_state AND m.to_state = NEW.current_state
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
        IF NEW.previous_state IS DISTINCT FROM OLD.previous_state AND NEW.previous_state IS DISTINCT FROM OLD.current_state THEN
            RAISE EXCEPTION 'run %: previous_state % is not %, the state the run leaves: previous_state follows current_state',
                OLD.id, NEW.previous_state, OLD.current_state
                USING ERRCODE = 'FS003';
        END IF;
        NEW.status := new_status;
        NEW.row_version := OLD.row_version + 1;
        NEW.previous_state := OLD.current_state;
    ELSIF NEW.status IS DISTINCT FROM OLD.status THEN
        RAISE EXCEPTION 'run %: status % cannot become % while the run stays in %: status follows current_state',
            OLD.id, OLD.status, NEW.status, OLD.current_state
            USING ERRCODE = 'FS003';
    ELSIF NEW.previous_state IS DISTINCT FROM OLD.previous_state THEN
        RAISE EXCEPTION 'run %: previous_state % cannot become % while the run stays in %: previous_state follows current_state',
            OLD.id, OLD.previous_state, NEW.previous_state, OLD.current_state
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

-- The runtime's transitions set row_version + 1, previous_state to the
-- state left and status to the state entered's, and the foreign key
-- workflow_runs_move_fkey checks the move and the status: the trigger is
-- not called for them. Every other write of the guarded columns goes
-- through the trigger.
DROP TRIGGER workflow_runs_guard ON workflow_runs;
CREATE TRIGGER workflow_runs_guard
    BEFORE UPDATE OF id, workflow_type, idempotency_key, current_state, attempt_no,
        definition_version, row_version, status, result, finished_at, previous_state ON workflow_runs
    FOR EACH ROW
    WHEN (NEW.id IS DISTINCT FROM OLD.id
        OR NEW.workflow_type IS DISTINCT FROM OLD.workflow_type
        OR NEW.idempotency_key IS DISTINCT FROM OLD.idempotency_key
        OR NEW.attempt_no IS DISTINCT FROM OLD.attempt_no
        OR NEW.definition_version IS DISTINCT FROM OLD.definition_version
        OR NEW.row_version IS DISTINCT FROM OLD.row_version + 1
        OR NEW.previous_state IS DISTINCT FROM OLD.current_state
        OR (NEW.status = 'running' AND (NEW.result IS NOT NULL OR NEW.finished_at IS NOT NULL)))
    EXECUTE FUNCTION fsmgen_guard_run();

-- The unique index refuses a second change row of a row version.
DROP TRIGGER workflow_step_logs_unique_change ON workflow_step_logs;
DROP FUNCTION fsmgen_check_log_unique();

-- (workflow_run_id, id) serves History (one run, in id order) and
-- AttemptEvents (one run's attempt, in id order) alike.
CREATE INDEX workflow_step_logs_run_idx ON workflow_step_logs (workflow_run_id, id);
DROP INDEX workflow_step_logs_workflow_run_id_attempt_no_idx;
ALTER TABLE workflow_step_logs DROP CONSTRAINT workflow_step_logs_pkey;
