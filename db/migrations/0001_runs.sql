-- Runs, their append-only log, the registered transition tables and the
-- outbox. The columns of workflow_runs and workflow_step_logs keep the order of
-- the original contract; the columns the runtime needs on top follow them.

-- A machine definition registered by a process that runs it: one row per
-- (type, version), immutable once written.
CREATE TABLE workflow_definitions (
    workflow_type TEXT        NOT NULL,
    version       INTEGER     NOT NULL CHECK (version >= 1),
    initial_state TEXT        NOT NULL,
    -- digest of the canonical form of the table; registering the same
    -- (type, version) with another table is refused by the store.
    digest        TEXT        NOT NULL,
    -- the whole definition as JSON, for processes that did not register it.
    definition    JSONB       NOT NULL,
    created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (workflow_type, version)
);

-- The states of a registered definition with their generic status.
CREATE TABLE workflow_states (
    workflow_type TEXT    NOT NULL,
    version       INTEGER NOT NULL,
    state         TEXT    NOT NULL,
    status        TEXT    NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'cancelled')),
    outcome       TEXT,
    is_initial    BOOLEAN NOT NULL DEFAULT false,
    PRIMARY KEY (workflow_type, version, state),
    FOREIGN KEY (workflow_type, version) REFERENCES workflow_definitions (workflow_type, version)
);

-- The transition table of a registered definition: the only moves of
-- current_state the database accepts for runs of that type and version.
CREATE TABLE workflow_transitions (
    workflow_type TEXT    NOT NULL,
    version       INTEGER NOT NULL,
    from_state    TEXT    NOT NULL,
    event         TEXT    NOT NULL,
    to_state      TEXT    NOT NULL,
    PRIMARY KEY (workflow_type, version, from_state, event, to_state),
    FOREIGN KEY (workflow_type, version, from_state) REFERENCES workflow_states (workflow_type, version, state),
    FOREIGN KEY (workflow_type, version, to_state) REFERENCES workflow_states (workflow_type, version, state)
);
CREATE INDEX workflow_transitions_move_idx ON workflow_transitions (workflow_type, version, from_state, to_state);

CREATE TABLE workflow_runs (
    id                 UUID        PRIMARY KEY DEFAULT gen_random_uuid(),
    workflow_type      TEXT        NOT NULL,
    current_state      TEXT        NOT NULL,
    tenant_id          TEXT        NOT NULL,
    user_id            UUID,
    correlation_id     UUID        NOT NULL,
    idempotency_key    TEXT        NOT NULL,
    attempt_no         INTEGER     NOT NULL DEFAULT 1,
    policy_snapshot    JSONB,
    result             JSONB,
    created_at         TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at         TIMESTAMPTZ NOT NULL DEFAULT now(),
    -- the definition version the run follows.
    definition_version INTEGER     NOT NULL,
    -- grows by one with every change of current_state (the trigger below
    -- sees to it); writers compare it to detect a stale read.
    row_version        BIGINT      NOT NULL DEFAULT 1,
    -- generic status of current_state, kept in step by the trigger below.
    status             TEXT        NOT NULL DEFAULT 'running'
                                   CHECK (status IN ('running', 'succeeded', 'failed', 'cancelled')),
    input              JSONB,
    attempt_started_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    finished_at        TIMESTAMPTZ,
    -- leases of the worker that drives the run.
    lease_owner        TEXT,
    lease_expires_at   TIMESTAMPTZ,
    lease_epoch        BIGINT      NOT NULL DEFAULT 0,
    next_run_at        TIMESTAMPTZ,
    UNIQUE (workflow_type, idempotency_key),
    FOREIGN KEY (workflow_type, definition_version) REFERENCES workflow_definitions (workflow_type, version)
) WITH (fillfactor = 80);
-- No index holds current_state, row_version or updated_at, and free space is
-- left in every page, so that a transition between two non-terminal states
-- is a HOT update that touches no index.
CREATE INDEX workflow_runs_type_idx ON workflow_runs (workflow_type, created_at, id);
CREATE INDEX workflow_runs_tenant_idx ON workflow_runs (tenant_id, created_at, id);
CREATE INDEX workflow_runs_created_idx ON workflow_runs (created_at, id);
CREATE INDEX workflow_runs_finished_idx ON workflow_runs (workflow_type, finished_at DESC) WHERE status = 'succeeded';
CREATE INDEX workflow_runs_runnable_idx ON workflow_runs (next_run_at) WHERE status = 'running';

CREATE TABLE workflow_step_logs (
    id                 BIGSERIAL   PRIMARY KEY,
    workflow_run_id    UUID        NOT NULL REFERENCES workflow_runs (id),
    workflow_type      TEXT        NOT NULL,
    attempt_no         INTEGER     NOT NULL,
    step_name          TEXT        NOT NULL,
    state_before       TEXT,
    state_after        TEXT,
    payload            JSONB,
    occurred_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
    -- created: the run's first row; transition: a move of current_state on
    -- event; restarted: a failed run reset to its initial state; step: an
    -- observable sub-step that does not change the state.
    kind               TEXT        NOT NULL CHECK (kind IN ('created', 'transition', 'restarted', 'step')),
    event              TEXT,
    -- the run's row_version after this row: for a state change, the version
    -- it produced.
    row_version        BIGINT      NOT NULL,
    definition_version INTEGER     NOT NULL
);
CREATE INDEX ON workflow_step_logs (workflow_run_id, attempt_no);
CREATE UNIQUE INDEX workflow_step_logs_change_idx ON workflow_step_logs (workflow_run_id, row_version)
    WHERE kind <> 'step';

-- Messages for the outside world, written in the transaction of the step
-- that produced them and published later by a relay.
CREATE TABLE workflow_outbox (
    id              BIGSERIAL   PRIMARY KEY,
    workflow_run_id UUID        NOT NULL REFERENCES workflow_runs (id),
    workflow_type   TEXT        NOT NULL,
    attempt_no      INTEGER     NOT NULL,
    topic           TEXT        NOT NULL,
    payload         JSONB,
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    published_at    TIMESTAMPTZ
);
CREATE INDEX workflow_outbox_pending_idx ON workflow_outbox (id) WHERE published_at IS NULL;

-- Guards. Errors use SQLSTATE class FS:
--   FS001 a change of current_state the registered table does not allow
--   FS002 an UPDATE, DELETE or TRUNCATE of workflow_step_logs
--   FS003 a change of a run's identity (id, type, key) or of its attempt or
--         definition version outside a reset of a failed run
--   FS004 an UPDATE or DELETE of a registered definition

CREATE FUNCTION fsmgen_guard_run() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    old_status TEXT;
    new_status TEXT;
    init_state TEXT;
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
        NEW.status := 'running';
        NEW.row_version := OLD.row_version + 1;
        RETURN NEW;
    END IF;

    IF NEW.current_state IS DISTINCT FROM OLD.current_state THEN
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
        NEW.status := new_status;
        NEW.row_version := OLD.row_version + 1;
    ELSE
        NEW.status := OLD.status;
        NEW.row_version := OLD.row_version;
    END IF;
    RETURN NEW;
END
$$;

-- The update trigger fires only for the columns it guards, so that other
-- writes (the worker's lease columns, for one) do not pay for it.
CREATE TRIGGER workflow_runs_guard_insert
    BEFORE INSERT ON workflow_runs
    FOR EACH ROW EXECUTE FUNCTION fsmgen_guard_run();
CREATE TRIGGER workflow_runs_guard
    BEFORE UPDATE OF id, workflow_type, idempotency_key, current_state, attempt_no,
        definition_version, row_version, status ON workflow_runs
    FOR EACH ROW EXECUTE FUNCTION fsmgen_guard_run();

CREATE FUNCTION fsmgen_refuse_log_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'workflow_step_logs is append-only: % refused', TG_OP
        USING ERRCODE = 'FS002';
END
$$;

CREATE TRIGGER workflow_step_logs_append_only
    BEFORE UPDATE OR DELETE ON workflow_step_logs
    FOR EACH ROW EXECUTE FUNCTION fsmgen_refuse_log_change();
CREATE TRIGGER workflow_step_logs_no_truncate
    BEFORE TRUNCATE ON workflow_step_logs
    FOR EACH STATEMENT EXECUTE FUNCTION fsmgen_refuse_log_change();

CREATE FUNCTION fsmgen_refuse_definition_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '%: a registered definition is immutable: % refused; register a new version instead', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'FS004';
END
$$;

CREATE TRIGGER workflow_definitions_immutable
    BEFORE UPDATE OR DELETE ON workflow_definitions
    FOR EACH ROW EXECUTE FUNCTION fsmgen_refuse_definition_change();
CREATE TRIGGER workflow_states_immutable
    BEFORE UPDATE OR DELETE ON workflow_states
    FOR EACH ROW EXECUTE FUNCTION fsmgen_refuse_definition_change();
CREATE TRIGGER workflow_transitions_immutable
    BEFORE UPDATE OR DELETE ON workflow_transitions
    FOR EACH ROW EXECUTE FUNCTION fsmgen_refuse_definition_change();
