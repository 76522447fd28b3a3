-- Versions side by side, and checked migrations of live runs between
-- them.
--
--   - workflow_migrations holds, per (type, from version, to version), the
--     registered migration as JSON with its digest; workflow_migration_rules
--     its rules, in the order they are tried. Both are immutable once
--     registered, like definitions (FS004).
--   - A change of a run's definition_version with the same attempt_no is a
--     migration: the guard trigger lets it through only when the registered
--     migration's first rule for the run's state whose condition admits the
--     run (when EVENT: its current attempt fired EVENT; unless EVENT: it did
--     not) moves it to the new current_state; a drain rule, no rule, or
--     another target is refused with FS001. The run stays running, its
--     row_version grows by one, and previous_state is NULL (as after a
--     restart), so that the registered-move foreign key does not apply.
--   - The log row of a migration has kind 'migrated' (event 'migrated'),
--     from the state left to the state entered, at the new version.

CREATE TABLE workflow_migrations (
    workflow_type TEXT        NOT NULL,
    from_version  INTEGER     NOT NULL,
    to_version    INTEGER     NOT NULL,
    -- no run moves: runs of from_version finish on it.
    drain         BOOLEAN     NOT NULL,
    digest        TEXT        NOT NULL,
    migration     JSONB       NOT NULL,
    created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (workflow_type, from_version, to_version),
    CHECK (from_version < to_version),
    FOREIGN KEY (workflow_type, from_version) REFERENCES workflow_definitions (workflow_type, version),
    FOREIGN KEY (workflow_type, to_version) REFERENCES workflow_definitions (workflow_type, version)
);

CREATE TABLE workflow_migration_rules (
    workflow_type TEXT    NOT NULL,
    from_version  INTEGER NOT NULL,
    to_version    INTEGER NOT NULL,
    -- the order in which the rules of a state are tried.
    ordinal       INTEGER NOT NULL,
    from_state    TEXT    NOT NULL,
    -- NULL for a drain rule.
    to_state      TEXT,
    drain         BOOLEAN NOT NULL,
    when_event    TEXT,
    unless_event  BOOLEAN NOT NULL DEFAULT false,
    PRIMARY KEY (workflow_type, from_version, to_version, ordinal),
    CHECK (drain = (to_state IS NULL)),
    FOREIGN KEY (workflow_type, from_version, to_version) REFERENCES workflow_migrations (workflow_type, from_version, to_version),
    FOREIGN KEY (workflow_type, from_version, from_state) REFERENCES workflow_states (workflow_type, version, state),
    FOREIGN KEY (workflow_type, to_version, to_state) REFERENCES workflow_states (workflow_type, version, state)
);
CREATE INDEX workflow_migration_rules_state_idx
    ON workflow_migration_rules (workflow_type, from_version, to_version, from_state, ordinal);

CREATE TRIGGER workflow_migrations_immutable
    BEFORE UPDATE OR DELETE ON workflow_migrations
    FOR EACH ROW EXECUTE FUNCTION fsmgen_refuse_definition_change();
CREATE TRIGGER workflow_migration_rules_immutable
    BEFORE UPDATE OR DELETE ON workflow_migration_rules
    FOR EACH ROW EXECUTE FUNCTION fsmgen_refuse_definition_change();

-- The rules of a migration are written by the transaction that registers
-- it, and never added to afterwards.
CREATE FUNCTION fsmgen_refuse_migration_extension() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (
        SELECT 1 FROM workflow_migrations m
        WHERE m.workflow_type = NEW.workflow_type AND m.from_version = NEW.from_version
          AND m.to_version = NEW.to_version AND m.xmin IS DISTINCT FROM pg_current_xact_id()::xid) THEN
        RAISE EXCEPTION 'workflow_migration_rules: the migration of % from v% to v% is registered: a registered migration is immutable: INSERT refused; register a new version instead',
            NEW.workflow_type, NEW.from_version, NEW.to_version
            USING ERRCODE = 'FS004';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER workflow_migration_rules_closed
    BEFORE INSERT ON workflow_migration_rules
    FOR EACH ROW EXECUTE FUNCTION fsmgen_refuse_migration_extension();

ALTER TABLE workflow_step_logs DROP CONSTRAINT workflow_step_logs_kind_check;
ALTER TABLE workflow_step_logs ADD CONSTRAINT workflow_step_logs_kind_check
    CHECK (kind IN ('created', 'transition', 'restarted', 'step', 'migrated'));

CREATE OR REPLACE FUNCTION fsmgen_guard_run() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    old_status TEXT;
    new_status TEXT;
    init_state TEXT;
    moved      BOOLEAN;
    target     TEXT;
    drains     BOOLEAN;
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

    IF NEW.definition_version IS DISTINCT FROM OLD.definition_version
       AND NEW.attempt_no IS NOT DISTINCT FROM OLD.attempt_no THEN
        -- A live run migrated to another version: the registered migration
        -- decides, by the first of its rules for the run's state whose
        -- condition on the run's current attempt admits it.
        IF OLD.status IS DISTINCT FROM 'running' THEN
            RAISE EXCEPTION 'run % of %/v%: it is % in %: only a live run migrates to another version',
                OLD.id, OLD.workflow_type, OLD.definition_version, OLD.status, OLD.current_state
                USING ERRCODE = 'FS001';
        END IF;
        SELECT r.to_state, r.drain INTO target, drains
        FROM workflow_migration_rules r
        WHERE r.workflow_type = OLD.workflow_type AND r.from_version = OLD.definition_version
          AND r.to_version = NEW.definition_version AND r.from_state = OLD.current_state
          AND (r.when_event IS NULL OR r.unless_event <> EXISTS (
                SELECT 1 FROM workflow_step_logs l
                WHERE l.workflow_run_id = OLD.id AND l.attempt_no = OLD.attempt_no
                  AND l.kind = 'transition' AND l.event = r.when_event))
        ORDER BY r.ordinal
        LIMIT 1;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'run % of %/v%: no registered migration to v% moves a run in %',
                OLD.id, OLD.workflow_type, OLD.definition_version, NEW.definition_version, OLD.current_state
                USING ERRCODE = 'FS001';
        END IF;
        IF drains THEN
            RAISE EXCEPTION 'run % of %/v%: the migration to v% leaves runs in % to drain on v%',
                OLD.id, OLD.workflow_type, OLD.definition_version, NEW.definition_version, OLD.current_state, OLD.definition_version
                USING ERRCODE = 'FS001';
        END IF;
        IF NEW.current_state IS DISTINCT FROM target THEN
            RAISE EXCEPTION 'run % of %/v%: the migration to v% moves this run from % to %, not to %',
                OLD.id, OLD.workflow_type, OLD.definition_version, NEW.definition_version, OLD.current_state, target, NEW.current_state
                USING ERRCODE = 'FS001';
        END IF;
        IF NEW.result IS NOT NULL OR NEW.finished_at IS NOT NULL THEN
            RAISE EXCEPTION 'run %: a migrated run has no result and no finished_at', OLD.id
                USING ERRCODE = 'FS003';
        END IF;
        NEW.status := 'running';
        NEW.row_version := OLD.row_version + 1;
        NEW.previous_state := NULL;
        RETURN NEW;
    END IF;

    IF NEW.attempt_no IS DISTINCT FROM OLD.attempt_no
       OR NEW.definition_version IS DISTINCT FROM OLD.definition_version THEN
        -- The only other legal way: a failed run reset to the initial state of the
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
