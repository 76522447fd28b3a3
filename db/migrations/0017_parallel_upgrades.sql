-- Upgrades of runs in parallel states. A run in a configuration (its
-- leaves joined by '|', see 0016_parallel.sql) migrates leaf by leaf, as
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

-- As in 0016, with migrations to and from configurations.
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


-- CREATE OR REPLACE dropped the pinned search_path: pin it again, and
-- that of the new functions.
DO $pin$
DECLARE
    f regprocedure;
BEGIN
    FOR f IN
        SELECT p.oid::regprocedure FROM pg_proc p
        WHERE p.pronamespace = current_schema()::regnamespace
          AND p.proname IN ('fsmgen_guard_run', 'fsmgen_entered_leaves', 'fsmgen_upgrade_refusal')
    LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = pg_catalog, %I, pg_temp', f, current_schema());
    END LOOP;
END
$pin$;
