-- Parallel states: a run inside a parallel state is in one leaf of each
-- of its regions, and persists them in region order joined by '|'
-- (runtime.ConfigurationSeparator): current_state 'Pending|Running'. No
-- state name holds '|', so a state that holds one is a configuration.
--
--   - workflow_states: a leaf inside a region of a parallel state names
--     that state (parallel_state), the region's number from 1 (region) and
--     how many regions the state has (regions); NULL elsewhere. A
--     definition with parallel states also registers, with status
--     running, each parallel state (the source of the rows written on it)
--     and each configuration a row enters (the target of a row entering a
--     parallel state), so that workflow_transitions holds every row as the
--     definition lists it: bounded by its rows, never the product of the
--     regions.
--   - fsmgen_parallel_refusal says why a move from one persisted state to
--     another on an event (on any event when the event is NULL) is not
--     one the registered table allows, or returns NULL when it is:
--       * a row from the old leaf, or from the old configuration's
--         parallel state or one of its leaves, to the whole new state (a
--         leaf, or a configuration entered whole): entering, leaving, or
--         leaving and entering again;
--       * else, between two configurations of one parallel state: the
--         region of each changed position moved along a row from its old
--         leaf to its new one; with no position changed, a row from one
--         of its leaves to itself;
--       * a configuration must have one leaf of each region of one
--         parallel state, in region order.
--   - fsmgen_guard_run: a move of current_state to or from a
--     configuration is checked by fsmgen_parallel_refusal rather than by
--     the registered-move foreign key: the guard trigger's WHEN sends
--     every such write to it (two strpos calls, all that a flat move
--     pays more), and it sets previous_state NULL, so that the foreign
--     key, which lists no configuration's moves, does not apply, and the
--     status (running for a configuration, the leaf's otherwise).
--   - fsmgen_check_log_change: a transition's log row to or from a
--     configuration is checked by fsmgen_parallel_refusal with its event,
--     so that the rows of the regions that moved in one step are rows on
--     that event.
--
-- Upgrades of runs in parallel states. A run in a configuration (its
-- leaves joined by '|') migrates leaf by leaf, as
-- runtime.Upgrade.Map decides:
--
--   - each leaf moves as the first rule of the registered migration for
--     it that admits the run says; a leaf that no rule names keeps its
--     name when the newer version has it as a leaf that is not final; a
--     leaf whose rule drains, or that no rule admits, is refused;
--   - the states the leaves map to, a parallel state standing for its
--     initial configuration, make the new state: a single leaf outside
--     parallel states, or a configuration of one parallel state holding
--     every leaf mapped to, each region that none lies in at its initial
--     leaf.
--
-- A run in a leaf migrates as in 0007, and also when its rule targets a
-- parallel state or a leaf of one of its regions: the run then moves to
-- the configuration, checked as above. fsmgen_guard_run sends every
-- migration to or from a configuration to fsmgen_upgrade_refusal, and
-- refuses to leave a run in a parallel state or a lone leaf of a region.
-- The initial leaves are read from the registered definition's JSON.

ALTER TABLE workflow_states
    ADD COLUMN parallel_state TEXT,
    ADD COLUMN region         INTEGER CHECK (region >= 1),
    ADD COLUMN regions        INTEGER CHECK (regions >= 2),
    ADD CONSTRAINT workflow_states_parallel_check
        CHECK ((parallel_state IS NULL) = (region IS NULL) AND (region IS NULL) = (regions IS NULL) AND region <= regions);

-- The parallel state whose configuration leaves is, one leaf of each of
-- its regions in region order; NULL when leaves is none.
CREATE FUNCTION fsmgen_parallel_of(p_type TEXT, p_version INTEGER, leaves TEXT[])
RETURNS TEXT
LANGUAGE sql STABLE AS $$
    SELECT min(s.parallel_state)
    FROM unnest(leaves) WITH ORDINALITY u(leaf, n)
    LEFT JOIN workflow_states s ON s.workflow_type = p_type AND s.version = p_version AND s.state = u.leaf
    HAVING count(*) > 1 AND count(s.parallel_state) = count(*) AND count(DISTINCT s.parallel_state) = 1
        AND bool_and(s.region = u.n) AND bool_and(s.regions = cardinality(leaves))
$$;

-- Why the registered table of (p_type, p_version) has no move from
-- p_from to p_to on p_event (any event when NULL), one of them a
-- configuration; NULL when it has one. See the top of this file.
CREATE FUNCTION fsmgen_parallel_refusal(p_type TEXT, p_version INTEGER, p_from TEXT, p_event TEXT, p_to TEXT)
RETURNS TEXT
LANGUAGE plpgsql STABLE AS $$
DECLARE
    olds  TEXT[] := string_to_array(p_from, '|');
    news  TEXT[] := string_to_array(p_to, '|');
    op    TEXT;
    np    TEXT;
    moved BOOLEAN := false;
BEGIN
    IF cardinality(olds) > 1 THEN
        op := fsmgen_parallel_of(p_type, p_version, olds);
        IF op IS NULL THEN
            RETURN format('%s is not a configuration: one leaf of each region of a parallel state, in region order', p_from);
        END IF;
    END IF;
    IF cardinality(news) > 1 THEN
        np := fsmgen_parallel_of(p_type, p_version, news);
        IF np IS NULL THEN
            RETURN format('%s is not a configuration: one leaf of each region of a parallel state, in region order', p_to);
        END IF;
    END IF;
    PERFORM 1 FROM workflow_transitions t
    WHERE t.workflow_type = p_type AND t.version = p_version
      AND t.from_state = ANY (CASE WHEN op IS NULL THEN olds ELSE olds || op END)
      AND t.to_state = p_to AND (p_event IS NULL OR t.event = p_event);
    IF FOUND THEN
        RETURN NULL;
    END IF;
    IF op IS NULL OR op IS DISTINCT FROM np THEN
        RETURN format('no row from %s to %s', coalesce(op || ' or its leaves', p_from), p_to);
    END IF;
    FOR i IN 1 .. cardinality(olds) LOOP
        CONTINUE WHEN olds[i] = news[i];
        PERFORM 1 FROM workflow_transitions t
        WHERE t.workflow_type = p_type AND t.version = p_version
          AND t.from_state = olds[i] AND t.to_state = news[i] AND (p_event IS NULL OR t.event = p_event);
        IF NOT FOUND THEN
            RETURN format('region %s of %s: no row %s -> %s', i, op, olds[i], news[i]);
        END IF;
        moved := true;
    END LOOP;
    IF moved THEN
        RETURN NULL;
    END IF;
    PERFORM 1 FROM workflow_transitions t
    WHERE t.workflow_type = p_type AND t.version = p_version
      AND t.from_state = ANY (olds) AND t.to_state = t.from_state AND (p_event IS NULL OR t.event = p_event);
    IF FOUND THEN
        RETURN NULL;
    END IF;
    RETURN format('no row of a region of %s from its leaf to itself', op);
END
$$;

-- The leaves a move to state p_state of (p_type, p_version) enters: the
-- state for a leaf; for a composite its initial child's; for a parallel
-- state those of each region, in region order.
CREATE FUNCTION fsmgen_entered_leaves(p_type TEXT, p_version INTEGER, p_state TEXT)
RETURNS TEXT[]
LANGUAGE plpgsql STABLE AS $$
DECLARE
    comps  JSONB;
    c      JSONB;
    region TEXT;
    leaves TEXT[] := '{}';
BEGIN
    SELECT coalesce(d.definition->'Composites', '[]'::jsonb) INTO comps
    FROM workflow_definitions d
    WHERE d.workflow_type = p_type AND d.version = p_version;
    SELECT e INTO c FROM jsonb_array_elements(coalesce(comps, '[]'::jsonb)) e WHERE e->>'Name' = p_state;
    IF c IS NULL THEN
        RETURN ARRAY[p_state];
    END IF;
    IF coalesce((c->>'Parallel')::boolean, false) THEN
        FOR region IN
            SELECT x.e->>'Name' FROM jsonb_array_elements(comps) WITH ORDINALITY x(e, n)
            WHERE x.e->>'Parent' = p_state ORDER BY x.n
        LOOP
            leaves := leaves || fsmgen_entered_leaves(p_type, p_version, region);
        END LOOP;
        RETURN leaves;
    END IF;
    RETURN fsmgen_entered_leaves(p_type, p_version, c->>'Initial');
END
$$;

-- Why the registered migration of p_type from p_from_version to
-- p_to_version does not move run p_run (whose current attempt is
-- p_attempt) from p_from to p_to, one of them a configuration; NULL when
-- it does. See the top of this file.
CREATE FUNCTION fsmgen_upgrade_refusal(p_run UUID, p_attempt INTEGER, p_type TEXT, p_from_version INTEGER,
    p_to_version INTEGER, p_from TEXT, p_to TEXT)
RETURNS TEXT
LANGUAGE plpgsql STABLE AS $$
DECLARE
    olds    TEXT[] := string_to_array(p_from, '|');
    news    TEXT[] := string_to_array(p_to, '|');
    mapped  TEXT[] := '{}';
    leaf    TEXT;
    target  TEXT;
    drains  BOOLEAN;
    np      TEXT;
    initial TEXT[];
BEGIN
    IF cardinality(olds) > 1 AND fsmgen_parallel_of(p_type, p_from_version, olds) IS NULL THEN
        RETURN format('%s is not a configuration of v%s', p_from, p_from_version);
    END IF;
    FOREACH leaf IN ARRAY olds LOOP
        SELECT r.to_state, r.drain INTO target, drains
        FROM workflow_migration_rules r
        WHERE r.workflow_type = p_type AND r.from_version = p_from_version
          AND r.to_version = p_to_version AND r.from_state = leaf
          AND (r.when_event IS NULL OR r.unless_event <> EXISTS (
                SELECT 1 FROM workflow_step_logs l
                WHERE l.workflow_run_id = p_run AND l.attempt_no = p_attempt
                  AND l.kind = 'transition' AND l.event = r.when_event))
        ORDER BY r.ordinal
        LIMIT 1;
        IF NOT FOUND THEN
            IF cardinality(olds) = 1
               OR EXISTS (SELECT 1 FROM workflow_migration_rules r
                          WHERE r.workflow_type = p_type AND r.from_version = p_from_version
                            AND r.to_version = p_to_version AND r.from_state = leaf)
               OR NOT EXISTS (SELECT 1 FROM workflow_states s
                              WHERE s.workflow_type = p_type AND s.version = p_to_version
                                AND s.state = leaf AND s.status = 'running')
               OR fsmgen_entered_leaves(p_type, p_to_version, leaf) <> ARRAY[leaf] THEN
                RETURN format('no rule moves a run in %s', leaf);
            END IF;
            target := leaf;
        ELSIF drains THEN
            RETURN format('the migration leaves runs in %s to drain', leaf);
        END IF;
        mapped := mapped || fsmgen_entered_leaves(p_type, p_to_version, target);
    END LOOP;
    IF cardinality(news) = 1 THEN
        IF EXISTS (SELECT 1 FROM unnest(mapped) m WHERE m <> p_to)
           OR EXISTS (SELECT 1 FROM workflow_states s
                      WHERE s.workflow_type = p_type AND s.version = p_to_version
                        AND s.state = p_to AND s.parallel_state IS NOT NULL) THEN
            RETURN format('its leaves map to %s', array_to_string(mapped, ', '));
        END IF;
        RETURN NULL;
    END IF;
    np := fsmgen_parallel_of(p_type, p_to_version, news);
    IF np IS NULL THEN
        RETURN format('%s is not a configuration of v%s', p_to, p_to_version);
    END IF;
    IF NOT mapped <@ news THEN
        RETURN format('its leaves map to %s', array_to_string(mapped, ', '));
    END IF;
    initial := fsmgen_entered_leaves(p_type, p_to_version, np);
    FOR i IN 1 .. cardinality(news) LOOP
        IF NOT news[i] = ANY (mapped) AND news[i] IS DISTINCT FROM initial[i] THEN
            RETURN format('region %s of %s: %s is neither a leaf its leaves map to (%s) nor the initial leaf %s',
                i, np, news[i], array_to_string(mapped, ', '), initial[i]);
        END IF;
    END LOOP;
    RETURN NULL;
END
$$;

-- As in 0007, with moves and migrations to and from configurations.
CREATE OR REPLACE FUNCTION fsmgen_guard_run() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    old_status TEXT;
    new_status TEXT;
    init_state TEXT;
    moved      BOOLEAN;
    target     TEXT;
    drains     BOOLEAN;
    parallel   BOOLEAN;
    why        TEXT;
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
        -- condition on the run's current attempt admits it; to or from a
        -- configuration, leaf by leaf (fsmgen_upgrade_refusal).
        IF OLD.status IS DISTINCT FROM 'running' THEN
            RAISE EXCEPTION 'run % of %/v%: it is % in %: only a live run migrates to another version',
                OLD.id, OLD.workflow_type, OLD.definition_version, OLD.status, OLD.current_state
                USING ERRCODE = 'FS001';
        END IF;
        IF strpos(OLD.current_state, '|') > 0 OR strpos(NEW.current_state, '|') > 0 THEN
            why := fsmgen_upgrade_refusal(OLD.id, OLD.attempt_no, OLD.workflow_type, OLD.definition_version,
                NEW.definition_version, OLD.current_state, NEW.current_state);
            IF why IS NOT NULL THEN
                RAISE EXCEPTION 'run % of %/v%: the migration to v% does not move this run from % to %: %',
                    OLD.id, OLD.workflow_type, OLD.definition_version, NEW.definition_version, OLD.current_state, NEW.current_state, why
                    USING ERRCODE = 'FS001';
            END IF;
        ELSE
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
            IF fsmgen_entered_leaves(OLD.workflow_type, NEW.definition_version, target) <> ARRAY[target]
               OR EXISTS (SELECT 1 FROM workflow_states s
                          WHERE s.workflow_type = OLD.workflow_type AND s.version = NEW.definition_version
                            AND s.state = target AND s.parallel_state IS NOT NULL) THEN
                RAISE EXCEPTION 'run % of %/v%: the migration to v% cannot leave this run in %, a parallel state or a leaf of one of its regions: it moves to a configuration',
                    OLD.id, OLD.workflow_type, OLD.definition_version, NEW.definition_version, target
                    USING ERRCODE = 'FS001';
            END IF;
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

    parallel := strpos(NEW.current_state, '|') > 0 OR strpos(OLD.current_state, '|') > 0;
    IF moved AND parallel THEN
        -- To or from a configuration: the rows of the regions, or the row
        -- entering or leaving the parallel state (fsmgen_parallel_refusal).
        why := fsmgen_parallel_refusal(OLD.workflow_type, OLD.definition_version, OLD.current_state, NULL, NEW.current_state);
        IF why IS NOT NULL THEN
            RAISE EXCEPTION 'run % of %/v%: no transition % -> % in the registered table: %',
                OLD.id, OLD.workflow_type, OLD.definition_version, OLD.current_state, NEW.current_state, why
                USING ERRCODE = 'FS001';
        END IF;
        new_status := 'running';
        IF strpos(NEW.current_state, '|') = 0 THEN
            SELECT s.status INTO new_status
            FROM workflow_states s
            WHERE s.workflow_type = OLD.workflow_type AND s.version = OLD.definition_version AND s.state = NEW.current_state;
        END IF;
    ELSIF moved THEN
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
    END IF;

    IF moved THEN
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
        -- NULL after a move to or from a configuration: the foreign key to
        -- workflow_moves, which lists no configuration's moves, then does
        -- not apply; this trigger checked the move.
        NEW.previous_state := CASE WHEN parallel THEN NULL ELSE OLD.current_state END;
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

-- As in 0014, with log rows to and from configurations.
CREATE OR REPLACE FUNCTION fsmgen_check_log_change() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    run_state   TEXT;
    run_version BIGINT;
    run_type    TEXT;
    run_def     INTEGER;
    why         TEXT;
BEGIN
    SELECT r.current_state, r.row_version, r.workflow_type, r.definition_version
    INTO run_state, run_version, run_type, run_def
    FROM workflow_runs r
    WHERE r.id = NEW.workflow_run_id;
    IF NEW.row_version > run_version
       OR (NEW.row_version = run_version AND NEW.state_after IS DISTINCT FROM run_state) THEN
        RAISE EXCEPTION 'run %: a % row to % at row version % describes no change of the run, which is in % at row version %',
            NEW.workflow_run_id, NEW.kind, NEW.state_after, NEW.row_version, run_state, run_version
            USING ERRCODE = 'FS005';
    END IF;
    IF NEW.workflow_type IS DISTINCT FROM run_type OR (NEW.row_version = run_version AND NEW.definition_version IS DISTINCT FROM run_def) THEN
        RAISE EXCEPTION 'run %: a % row of %/v% for a run of %/v%',
            NEW.workflow_run_id, NEW.kind, NEW.workflow_type, NEW.definition_version, run_type, run_def
            USING ERRCODE = 'FS005';
    END IF;
    IF NEW.kind = 'transition' AND (strpos(NEW.state_before, '|') > 0 OR strpos(NEW.state_after, '|') > 0) THEN
        why := fsmgen_parallel_refusal(NEW.workflow_type, NEW.definition_version, NEW.state_before, NEW.event, NEW.state_after);
        IF why IS NOT NULL THEN
            RAISE EXCEPTION 'run % of %/v%: no transition % -[%]-> % in the registered table: %',
                NEW.workflow_run_id, NEW.workflow_type, NEW.definition_version, NEW.state_before, NEW.event, NEW.state_after, why
                USING ERRCODE = 'FS001';
        END IF;
    ELSIF NEW.kind = 'transition' THEN
        PERFORM 1 FROM workflow_transitions t
        WHERE t.workflow_type = NEW.workflow_type AND t.version = NEW.definition_version
          AND t.from_state = NEW.state_before AND t.event = NEW.event AND t.to_state = NEW.state_after;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'run % of %/v%: no transition % -[%]-> % in the registered table',
                NEW.workflow_run_id, NEW.workflow_type, NEW.definition_version, NEW.state_before, NEW.event, NEW.state_after
                USING ERRCODE = 'FS001';
        END IF;
    END IF;
    IF NEW.kind = 'transition' THEN
        IF EXISTS (SELECT 1 FROM workflow_runs c WHERE c.parent_run_id = NEW.workflow_run_id AND c.parent_event = NEW.event)
           AND NOT EXISTS (
                SELECT 1 FROM workflow_runs c
                WHERE c.parent_run_id = NEW.workflow_run_id AND c.parent_event = NEW.event
                  AND c.status <> 'running' AND c.parent_delivered_at IS NOT NULL
                  AND c.xmin = pg_current_xact_id()::xid) THEN
            RAISE EXCEPTION 'run %: % is the event of the end of a child run: it is fired with the delivery of a finished child, in the same transaction',
                NEW.workflow_run_id, NEW.event
                USING ERRCODE = 'FS001';
        END IF;
    END IF;
    RETURN NULL;
END
$$;

-- As in 0005, and every write to or from a configuration too.
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
        OR (NEW.status = 'running' AND (NEW.result IS NOT NULL OR NEW.finished_at IS NOT NULL))
        OR strpos(NEW.current_state, '|') > 0 OR strpos(OLD.current_state, '|') > 0)
    EXECUTE FUNCTION fsmgen_guard_run();

-- CREATE OR REPLACE dropped the pinned search_path of 0014: pin it again,
-- and that of the new functions.
DO $pin$
DECLARE
    f regprocedure;
BEGIN
    FOR f IN
        SELECT p.oid::regprocedure FROM pg_proc p
        WHERE p.pronamespace = current_schema()::regnamespace
          AND p.proname IN ('fsmgen_guard_run', 'fsmgen_check_log_change', 'fsmgen_parallel_of', 'fsmgen_parallel_refusal',
                            'fsmgen_entered_leaves', 'fsmgen_upgrade_refusal')
    LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = pg_catalog, %I, pg_temp', f, current_schema());
    END LOOP;
END
$pin$;
