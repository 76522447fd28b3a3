-- What the database guarantees holds for a role that does not own the
-- schema (docs/security.md gives the role model and its grants):
--
--   - every function of the schema runs with a pinned search_path
--     (pg_catalog, the schema, pg_temp last), so that a session's temporary
--     tables cannot stand in for the schema's tables;
--   - the evidence chain is written only by the trigger on the log, a
--     SECURITY DEFINER function, and its head (the number of records and the
--     last hash of each run) is kept in evidence_heads, so that a record
--     removed from the end of a chain, or one that names no log row, is
--     seen by evidence.Verify; evidence.Enable and evidence.Implied install
--     their triggers through SECURITY DEFINER functions;
--   - the log, the evidence and the runs are deleted only by
--     fsmgen_purge_finished_runs, now a SECURITY DEFINER function: the
--     purge mark counts only when the statement runs with the rights of
--     that function's owner;
--   - the facts of a run are fixed (FS003): its tenant, user, correlation
--     id, input, creation time and parent link once created; its policy
--     snapshot but for a restart; its result, finish time and schedule once
--     finished but for a restart; parent_delivered_at is set once, on a
--     finished run; lease_epoch never goes down and a new lease owner comes
--     with lease_epoch + 1;
--   - a transition's log row names a row of the registered table (FS001),
--     and when its event is the completion event of a child run, a
--     finished child whose delivery the same transaction recorded; a step
--     row names no event.

-- The head of each run's evidence chain.
CREATE TABLE evidence_heads (
    workflow_run_id UUID    PRIMARY KEY REFERENCES workflow_runs (id),
    -- the number of records of the run, and the hash of the last.
    records         INTEGER NOT NULL CHECK (records >= 1),
    hash            TEXT    NOT NULL
);

INSERT INTO evidence_heads (workflow_run_id, records, hash)
SELECT DISTINCT ON (e.workflow_run_id) e.workflow_run_id, e.seq, e.hash
FROM evidence_records e
ORDER BY e.workflow_run_id, e.seq DESC;

CREATE OR REPLACE FUNCTION fsmgen_evidence_append() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER AS $$
DECLARE
    k       TEXT;
    c       JSONB;
    n       INTEGER;
    prev    TEXT;
    ch      TEXT;
    h       TEXT;
BEGIN
    -- Only as a trigger on the log: a trigger on any other table would
    -- hand this function rows that are not log rows.
    IF TG_RELID IS DISTINCT FROM 'workflow_step_logs'::regclass OR TG_OP <> 'INSERT' OR TG_LEVEL <> 'ROW' THEN
        RAISE EXCEPTION 'fsmgen_evidence_append: only an AFTER INSERT trigger on workflow_step_logs records evidence, not one on %', TG_TABLE_NAME
            USING ERRCODE = 'FS007';
    END IF;
    IF NEW.kind = 'step' THEN
        IF NEW.step_name NOT LIKE 'evidence.%' THEN
            RETURN NULL;
        END IF;
        k := substr(NEW.step_name, 10);
    ELSIF NEW.kind = 'transition' THEN
        k := 'transition';
    ELSE
        k := NEW.kind;
    END IF;
    -- one writer per run at a time: the chain is a sequence.
    PERFORM 1 FROM workflow_runs WHERE id = NEW.workflow_run_id FOR UPDATE;
    SELECT eh.records, eh.hash INTO n, prev FROM evidence_heads eh WHERE eh.workflow_run_id = NEW.workflow_run_id;
    IF n IS NULL THEN
        n := 0;
        prev := '';
    END IF;
    c := jsonb_build_object(
        'run_id', NEW.workflow_run_id, 'workflow_type', NEW.workflow_type,
        'seq', n + 1, 'kind', k, 'attempt_no', NEW.attempt_no,
        'state_before', NEW.state_before, 'state_after', NEW.state_after,
        'event', NEW.event, 'payload', NEW.payload,
        'occurred_at', to_char(NEW.occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'));
    ch := encode(sha256(convert_to(c::text, 'UTF8')), 'hex');
    h := encode(sha256(convert_to(prev || ch, 'UTF8')), 'hex');
    INSERT INTO evidence_records (workflow_run_id, workflow_type, seq, kind, step_log_id, content,
                                  content_hash, prev_hash, hash, recorded_at)
    VALUES (NEW.workflow_run_id, NEW.workflow_type, n + 1, k, NEW.id, c, ch, prev, h, NEW.occurred_at);
    INSERT INTO evidence_heads (workflow_run_id, records, hash) VALUES (NEW.workflow_run_id, n + 1, h)
    ON CONFLICT (workflow_run_id) DO UPDATE SET records = EXCLUDED.records, hash = EXCLUDED.hash;
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION fsmgen_evidence_append() FROM PUBLIC;

-- evidence.Enable: the evidence trigger of a workflow type, installed by
-- the schema's owner (only an owner creates triggers).
CREATE FUNCTION fsmgen_enable_evidence(p_workflow_type text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER AS $$
BEGIN
    IF p_workflow_type IS NULL OR p_workflow_type = '' THEN
        RAISE EXCEPTION 'fsmgen_enable_evidence: invalid workflow type %', coalesce(quote_literal(p_workflow_type), 'NULL')
            USING ERRCODE = '22023';
    END IF;
    EXECUTE format('CREATE OR REPLACE TRIGGER %I AFTER INSERT ON workflow_step_logs FOR EACH ROW '
                   'WHEN (NEW.workflow_type = %L) EXECUTE FUNCTION fsmgen_evidence_append()',
        'evidence_' || left(md5(p_workflow_type), 16), p_workflow_type);
END
$$;
REVOKE ALL ON FUNCTION fsmgen_enable_evidence(text) FROM PUBLIC;

-- evidence.Implied: the trigger that logs the evidence a transition on an
-- event implies, installed by the schema's owner. Its name sorts after the
-- type's evidence trigger, which fires first.
CREATE FUNCTION fsmgen_enable_implied_evidence(p_workflow_type text, p_event text, p_kind text, p_payload jsonb) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER AS $$
BEGIN
    IF coalesce(p_workflow_type, '') = '' OR coalesce(p_event, '') = '' OR coalesce(p_kind, '') = '' THEN
        RAISE EXCEPTION 'fsmgen_enable_implied_evidence: a workflow type, an event and a kind are needed'
            USING ERRCODE = '22023';
    END IF;
    IF jsonb_typeof(p_payload) IS DISTINCT FROM 'object' THEN
        RAISE EXCEPTION 'fsmgen_enable_implied_evidence: the payload must be a JSON object'
            USING ERRCODE = '22023';
    END IF;
    EXECUTE format('CREATE OR REPLACE TRIGGER %I AFTER INSERT ON workflow_step_logs FOR EACH ROW '
                   'WHEN (NEW.workflow_type = %L AND NEW.kind = ''transition'' AND NEW.event = %L) '
                   'EXECUTE FUNCTION fsmgen_evidence_implied(%L, %L)',
        'evidence_implied_' || left(md5(convert_to(p_workflow_type, 'UTF8') || '\x00'::bytea
            || convert_to(p_event, 'UTF8') || '\x00'::bytea || convert_to(p_kind, 'UTF8')), 16),
        p_workflow_type, p_event, p_kind, p_payload::text);
END
$$;
REVOKE ALL ON FUNCTION fsmgen_enable_implied_evidence(text, text, text, jsonb) FROM PUBLIC;

-- The purge mark counts only inside fsmgen_purge_finished_runs: with the
-- rights of its owner, which no other role has.
CREATE OR REPLACE FUNCTION fsmgen_purging() RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT coalesce(current_setting('fsmgen.purge', true), '') = pg_current_xact_id()::text
        AND current_user = (SELECT pg_get_userbyid(p.proowner) FROM pg_proc p
                            WHERE p.oid = 'fsmgen_purge_finished_runs(boolean, integer)'::regprocedure)
$$;

CREATE TRIGGER evidence_heads_no_delete
    BEFORE DELETE ON evidence_heads
    FOR EACH STATEMENT EXECUTE FUNCTION fsmgen_guard_evidence_delete();
CREATE TRIGGER evidence_heads_no_truncate
    BEFORE TRUNCATE ON evidence_heads
    FOR EACH STATEMENT EXECUTE FUNCTION fsmgen_refuse_evidence_change();
CREATE TRIGGER evidence_heads_purged
    AFTER DELETE ON evidence_heads
    REFERENCING OLD TABLE AS purged
    FOR EACH STATEMENT EXECUTE FUNCTION fsmgen_check_purged_rows();

-- As in 0009, with the rights of its owner, its temporary tables named in
-- pg_temp, and the heads of the evidence chains removed with them.
CREATE OR REPLACE FUNCTION fsmgen_purge_finished_runs(dry_run boolean DEFAULT false, max_runs integer DEFAULT NULL)
RETURNS TABLE (workflow_type text, runs bigint, step_logs bigint, evidence bigint, outbox bigint, held bigint)
LANGUAGE plpgsql SECURITY DEFINER AS $$
DECLARE
    n   integer;
    ids uuid[];
BEGIN
    IF NOT dry_run THEN
        -- One purge at a time: a second waits for the first to commit and
        -- then finds what is left.
        PERFORM pg_advisory_xact_lock(hashtext('fsmgen_purge_finished_runs'));
    END IF;
    -- The finished runs past their type's retention, and whether each is
    -- held back by what it is.
    DROP TABLE IF EXISTS pg_temp.fsmgen_purge_due;
    CREATE TEMP TABLE fsmgen_purge_due ON COMMIT DROP AS
    SELECT w.id, w.workflow_type, w.finished_at, w.parent_run_id,
        EXISTS (SELECT 1 FROM workflow_outbox o WHERE o.workflow_run_id = w.id AND o.published_at IS NULL)
        OR (w.parent_run_id IS NOT NULL AND w.parent_delivered_at IS NULL
            AND EXISTS (SELECT 1 FROM workflow_runs p WHERE p.id = w.parent_run_id AND p.status = 'running')) AS held
    FROM workflow_retention k
    JOIN workflow_runs w ON w.workflow_type = k.workflow_type AND w.status <> 'running'
        AND w.finished_at < now() - make_interval(days => k.keep_days);
    CREATE UNIQUE INDEX ON pg_temp.fsmgen_purge_due (id);
    ANALYZE pg_temp.fsmgen_purge_due;
    -- A parent goes only with all its children: hold those with a child
    -- that stays, up the tree.
    LOOP
        UPDATE pg_temp.fsmgen_purge_due d SET held = true
        WHERE NOT d.held AND EXISTS (
            SELECT 1 FROM workflow_runs c
            WHERE c.parent_run_id = d.id
              AND NOT EXISTS (SELECT 1 FROM pg_temp.fsmgen_purge_due x WHERE x.id = c.id AND NOT x.held));
        GET DIAGNOSTICS n = ROW_COUNT;
        EXIT WHEN n = 0;
    END LOOP;

    -- The runs this call removes: all, or the oldest max_runs, each with
    -- its children (which are due and not held, else their parent would
    -- be held), down the tree.
    DROP TABLE IF EXISTS pg_temp.fsmgen_purge_set;
    CREATE TEMP TABLE fsmgen_purge_set ON COMMIT DROP AS
    SELECT d.id, d.workflow_type FROM pg_temp.fsmgen_purge_due d WHERE NOT d.held
    ORDER BY d.finished_at, d.id
    LIMIT max_runs;
    CREATE UNIQUE INDEX ON pg_temp.fsmgen_purge_set (id);
    IF max_runs IS NOT NULL THEN
        LOOP
            INSERT INTO pg_temp.fsmgen_purge_set (id, workflow_type)
            SELECT d.id, d.workflow_type
            FROM pg_temp.fsmgen_purge_due d JOIN workflow_runs c ON c.id = d.id
            WHERE NOT d.held
              AND c.parent_run_id IN (SELECT x.id FROM pg_temp.fsmgen_purge_set x)
              AND NOT EXISTS (SELECT 1 FROM pg_temp.fsmgen_purge_set x WHERE x.id = d.id);
            GET DIAGNOSTICS n = ROW_COUNT;
            EXIT WHEN n = 0;
        END LOOP;
    END IF;
    IF NOT dry_run THEN
        -- Lock the runs, then drop any that a concurrent retry restarted
        -- meanwhile: these statements see what committed before the locks.
        ids := ARRAY(SELECT s.id FROM pg_temp.fsmgen_purge_set s);
        PERFORM 1 FROM workflow_runs w WHERE w.id = ANY (ids) ORDER BY w.id FOR UPDATE OF w;
        DELETE FROM pg_temp.fsmgen_purge_set s
        WHERE s.id = ANY (ARRAY(SELECT w.id FROM workflow_runs w WHERE w.id = ANY (ids) AND w.status = 'running'));
    END IF;
    -- A parent cut off from one of its children (by a retry) stays with it.
    LOOP
        DELETE FROM pg_temp.fsmgen_purge_set s
        WHERE EXISTS (
            SELECT 1 FROM workflow_runs c
            WHERE c.parent_run_id = s.id AND NOT EXISTS (SELECT 1 FROM pg_temp.fsmgen_purge_set x WHERE x.id = c.id));
        GET DIAGNOSTICS n = ROW_COUNT;
        EXIT WHEN n = 0;
    END LOOP;

    -- Counted and removed through the runs' ids, by index: the cost
    -- follows the runs removed, not the size of the log.
    DROP TABLE IF EXISTS pg_temp.fsmgen_purge_counts;
    CREATE TEMP TABLE fsmgen_purge_counts ON COMMIT DROP AS
    SELECT t.workflow_type,
        count(s.id) AS runs,
        coalesce(sum((SELECT count(*) FROM workflow_step_logs l WHERE l.workflow_run_id = s.id)), 0)::bigint AS step_logs,
        coalesce(sum((SELECT count(*) FROM evidence_records e WHERE e.workflow_run_id = s.id)), 0)::bigint AS evidence,
        coalesce(sum((SELECT count(*) FROM workflow_outbox o WHERE o.workflow_run_id = s.id)), 0)::bigint AS outbox,
        (SELECT count(*) FROM pg_temp.fsmgen_purge_due d WHERE d.workflow_type = t.workflow_type AND d.held) AS held
    FROM (SELECT DISTINCT d.workflow_type FROM pg_temp.fsmgen_purge_due d) t
    LEFT JOIN pg_temp.fsmgen_purge_set s ON s.workflow_type = t.workflow_type
    GROUP BY t.workflow_type;

    IF NOT dry_run THEN
        ids := ARRAY(SELECT s.id FROM pg_temp.fsmgen_purge_set s);
        PERFORM set_config('fsmgen.purge', pg_current_xact_id()::text, true);
        DELETE FROM evidence_records e WHERE e.workflow_run_id = ANY (ids);
        DELETE FROM evidence_heads eh WHERE eh.workflow_run_id = ANY (ids);
        DELETE FROM workflow_step_logs l WHERE l.workflow_run_id = ANY (ids);
        DELETE FROM workflow_outbox o WHERE o.workflow_run_id = ANY (ids);
        DELETE FROM workflow_runs w WHERE w.id = ANY (ids);
        PERFORM set_config('fsmgen.purge', '', true);
    END IF;

    RETURN QUERY SELECT c.workflow_type, c.runs, c.step_logs, c.evidence, c.outbox, c.held
        FROM pg_temp.fsmgen_purge_counts c ORDER BY c.workflow_type;
END
$$;
REVOKE ALL ON FUNCTION fsmgen_purge_finished_runs(boolean, integer) FROM PUBLIC;

-- The facts of a run. Two triggers, so that the runtime's writes pay only
-- for the columns they set: the first fires for columns the runtime sets
-- only at a restart, the second for the result and the schedule.
CREATE FUNCTION fsmgen_guard_run_facts() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.tenant_id IS DISTINCT FROM OLD.tenant_id OR NEW.user_id IS DISTINCT FROM OLD.user_id
       OR NEW.correlation_id IS DISTINCT FROM OLD.correlation_id OR NEW.created_at IS DISTINCT FROM OLD.created_at
       OR NEW.parent_run_id IS DISTINCT FROM OLD.parent_run_id OR NEW.parent_event IS DISTINCT FROM OLD.parent_event
       OR NEW.input IS DISTINCT FROM OLD.input THEN
        RAISE EXCEPTION 'run %: tenant_id, user_id, correlation_id, input, created_at, parent_run_id and parent_event are fixed when the run is created', OLD.id
            USING ERRCODE = 'FS003';
    END IF;
    IF NEW.policy_snapshot IS DISTINCT FROM OLD.policy_snapshot AND NEW.attempt_no IS NOT DISTINCT FROM OLD.attempt_no THEN
        RAISE EXCEPTION 'run %: policy_snapshot changes only when a failed run is restarted', OLD.id
            USING ERRCODE = 'FS003';
    END IF;
    IF OLD.parent_delivered_at IS NOT NULL AND NEW.parent_delivered_at IS DISTINCT FROM OLD.parent_delivered_at THEN
        RAISE EXCEPTION 'run %: parent_delivered_at is set once', OLD.id
            USING ERRCODE = 'FS003';
    END IF;
    IF NEW.parent_delivered_at IS NOT NULL AND OLD.parent_delivered_at IS NULL AND OLD.status = 'running' THEN
        RAISE EXCEPTION 'run %: it is running in %: parent_delivered_at is set when its parent has had the event of its end', OLD.id, OLD.current_state
            USING ERRCODE = 'FS003';
    END IF;
    IF NEW.lease_epoch < OLD.lease_epoch
       OR (NEW.lease_owner IS NOT NULL AND NEW.lease_owner IS DISTINCT FROM OLD.lease_owner AND NEW.lease_epoch <> OLD.lease_epoch + 1) THEN
        RAISE EXCEPTION 'run %: lease_epoch % cannot become % with lease owner %: it grows by one with each claim',
            OLD.id, OLD.lease_epoch, NEW.lease_epoch, coalesce(NEW.lease_owner, 'NULL')
            USING ERRCODE = 'FS003';
    END IF;
    IF OLD.status <> 'running' AND NEW.attempt_no = OLD.attempt_no AND (
        NEW.result IS DISTINCT FROM OLD.result OR NEW.finished_at IS DISTINCT FROM OLD.finished_at
        OR NEW.next_run_at IS NOT NULL OR NEW.lease_owner IS NOT NULL OR NEW.lease_expires_at IS NOT NULL
        OR NEW.parked_at IS NOT NULL OR NEW.lease_epoch <> OLD.lease_epoch OR NEW.step_attempt <> OLD.step_attempt
        OR NEW.last_error IS DISTINCT FROM OLD.last_error OR NEW.last_error_code IS DISTINCT FROM OLD.last_error_code
        OR NEW.attempt_started_at <> OLD.attempt_started_at OR NEW.updated_at <> OLD.updated_at) THEN
        RAISE EXCEPTION 'run %: it is % in %: the result, finish time and schedule of a finished run are fixed (a restart clears them)',
            OLD.id, OLD.status, OLD.current_state
            USING ERRCODE = 'FS003';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER workflow_runs_facts
    BEFORE UPDATE OF tenant_id, user_id, correlation_id, created_at, parent_run_id, parent_event, input,
        policy_snapshot ON workflow_runs
    FOR EACH ROW
    WHEN (NEW.tenant_id IS DISTINCT FROM OLD.tenant_id OR NEW.user_id IS DISTINCT FROM OLD.user_id
        OR NEW.correlation_id IS DISTINCT FROM OLD.correlation_id OR NEW.created_at IS DISTINCT FROM OLD.created_at
        OR NEW.parent_run_id IS DISTINCT FROM OLD.parent_run_id OR NEW.parent_event IS DISTINCT FROM OLD.parent_event
        OR NEW.input IS DISTINCT FROM OLD.input
        OR (NEW.policy_snapshot IS DISTINCT FROM OLD.policy_snapshot AND NEW.attempt_no IS NOT DISTINCT FROM OLD.attempt_no))
    EXECUTE FUNCTION fsmgen_guard_run_facts();
CREATE TRIGGER workflow_runs_schedule
    BEFORE UPDATE OF result, finished_at, parent_delivered_at, lease_owner, lease_epoch, lease_expires_at,
        next_run_at, parked_at, step_attempt, last_error_code, last_error, attempt_started_at, updated_at ON workflow_runs
    FOR EACH ROW
    WHEN ((OLD.parent_delivered_at IS NOT NULL AND NEW.parent_delivered_at IS DISTINCT FROM OLD.parent_delivered_at)
        OR (NEW.parent_delivered_at IS NOT NULL AND OLD.parent_delivered_at IS NULL AND OLD.status = 'running')
        OR NEW.lease_epoch < OLD.lease_epoch
        OR (NEW.lease_owner IS NOT NULL AND NEW.lease_owner IS DISTINCT FROM OLD.lease_owner AND NEW.lease_epoch <> OLD.lease_epoch + 1)
        OR (OLD.status <> 'running' AND NEW.attempt_no = OLD.attempt_no AND (
            NEW.result IS DISTINCT FROM OLD.result OR NEW.finished_at IS DISTINCT FROM OLD.finished_at
            OR NEW.next_run_at IS NOT NULL OR NEW.lease_owner IS NOT NULL OR NEW.lease_expires_at IS NOT NULL
            OR NEW.parked_at IS NOT NULL OR NEW.lease_epoch <> OLD.lease_epoch OR NEW.step_attempt <> OLD.step_attempt
            OR NEW.last_error IS DISTINCT FROM OLD.last_error OR NEW.last_error_code IS DISTINCT FROM OLD.last_error_code
            OR NEW.attempt_started_at <> OLD.attempt_started_at OR NEW.updated_at <> OLD.updated_at)))
    EXECUTE FUNCTION fsmgen_guard_run_facts();

-- A change row of the log describes the run's change: as in 0003, and now
-- also of the run's type and version, a transition along a row of the
-- registered table, and the completion event of a child fired with the
-- delivery of a finished child, recorded earlier in the same transaction.
CREATE OR REPLACE FUNCTION fsmgen_check_log_change() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    run_state   TEXT;
    run_version BIGINT;
    run_type    TEXT;
    run_def     INTEGER;
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
    IF NEW.kind = 'transition' THEN
        PERFORM 1 FROM workflow_transitions t
        WHERE t.workflow_type = NEW.workflow_type AND t.version = NEW.definition_version
          AND t.from_state = NEW.state_before AND t.event = NEW.event AND t.to_state = NEW.state_after;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'run % of %/v%: no transition % -[%]-> % in the registered table',
                NEW.workflow_run_id, NEW.workflow_type, NEW.definition_version, NEW.state_before, NEW.event, NEW.state_after
                USING ERRCODE = 'FS001';
        END IF;
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

-- A step changes no state and names no event (checked for the rows written
-- from now on).
ALTER TABLE workflow_step_logs ADD CONSTRAINT workflow_step_logs_step_event_check
    CHECK (kind <> 'step' OR event IS NULL) NOT VALID;

-- Every function of the schema looks up names in pg_catalog, then in the
-- schema, and in the session's temporary schema last.
DO $pin$
DECLARE
    f regprocedure;
BEGIN
    FOR f IN
        SELECT p.oid::regprocedure FROM pg_proc p
        WHERE p.pronamespace = current_schema()::regnamespace
          AND p.proname IN ('fsmgen_guard_run', 'fsmgen_refuse_log_change', 'fsmgen_refuse_definition_change',
              'fsmgen_wake_parent', 'fsmgen_check_run_logged', 'fsmgen_check_log_change',
              'fsmgen_refuse_definition_extension', 'fsmgen_add_move', 'fsmgen_evidence_append',
              'fsmgen_refuse_evidence_change', 'fsmgen_refuse_migration_extension', 'fsmgen_purging',
              'fsmgen_guard_log_delete', 'fsmgen_guard_evidence_delete', 'fsmgen_guard_run_delete',
              'fsmgen_check_purged_rows', 'fsmgen_purge_finished_runs', 'fsmgen_evidence_implied',
              'fsm_claim_runs', 'fsmgen_enable_evidence', 'fsmgen_enable_implied_evidence',
              'fsmgen_guard_run_facts')
    LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = pg_catalog, %I, pg_temp', f, current_schema());
    END LOOP;
END
$pin$;
