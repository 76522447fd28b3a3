-- Retention: finished runs are removed, with their log, evidence and
-- published outbox rows, once their type's retention period has passed,
-- by one function, fsmgen_purge_finished_runs. The log and the evidence
-- stay append-only for every other writer.
--
--   FS002 (as before) an UPDATE, DELETE or TRUNCATE of workflow_step_logs,
--         now except a DELETE made by fsmgen_purge_finished_runs;
--   FS007 (as before) the same for evidence_records;
--   FS008 a DELETE of workflow_runs made outside fsmgen_purge_finished_runs,
--         or a purge that would remove the log, evidence or row of a run
--         that is still running.
--
-- How the narrow path works: the function marks its own transaction
-- (set_config('fsmgen.purge', <its transaction id>, true)) for the span of
-- its DELETEs and clears the mark before it returns. Statement-level
-- triggers refuse any DELETE on the log, the evidence and the runs whose
-- transaction does not carry the mark, and, after the statement, any that
-- removed a row of a run that is not finished (checked once per statement
-- on its transition table, so that a purge costs no trigger call per row).
-- A session that forges the mark can therefore only do what retention
-- does: remove finished runs whole. UPDATE and TRUNCATE are refused always.

-- How many days each workflow type keeps its finished runs, counted from
-- finished_at. A type without a row keeps them for ever.
CREATE TABLE workflow_retention (
    workflow_type TEXT        PRIMARY KEY,
    keep_days     INTEGER     NOT NULL CHECK (keep_days >= 0),
    updated_at    TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- Finished runs by finish time, for the purge's scan.
CREATE INDEX workflow_runs_purge_idx ON workflow_runs (workflow_type, finished_at) WHERE status <> 'running';
-- The outbox rows and the evidence of a run, for the purge's deletes.
CREATE INDEX workflow_outbox_run_idx ON workflow_outbox (workflow_run_id);

-- fsmgen_purging reports whether the current transaction is inside
-- fsmgen_purge_finished_runs.
CREATE FUNCTION fsmgen_purging() RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT coalesce(current_setting('fsmgen.purge', true), '') = pg_current_xact_id()::text
$$;

-- The log: UPDATE refused per row as before; DELETE refused per statement
-- unless purging; TRUNCATE refused.
CREATE FUNCTION fsmgen_guard_log_delete() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT fsmgen_purging() THEN
        RAISE EXCEPTION 'workflow_step_logs is append-only: DELETE refused (finished runs are removed by retention: fsmgen_purge_finished_runs)'
            USING ERRCODE = 'FS002';
    END IF;
    RETURN NULL;
END
$$;

DROP TRIGGER workflow_step_logs_append_only ON workflow_step_logs;
CREATE TRIGGER workflow_step_logs_append_only
    BEFORE UPDATE ON workflow_step_logs
    FOR EACH ROW EXECUTE FUNCTION fsmgen_refuse_log_change();
CREATE TRIGGER workflow_step_logs_no_delete
    BEFORE DELETE ON workflow_step_logs
    FOR EACH STATEMENT EXECUTE FUNCTION fsmgen_guard_log_delete();

CREATE FUNCTION fsmgen_guard_evidence_delete() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT fsmgen_purging() THEN
        RAISE EXCEPTION 'evidence_records is append-only: DELETE refused (finished runs are removed by retention: fsmgen_purge_finished_runs)'
            USING ERRCODE = 'FS007';
    END IF;
    RETURN NULL;
END
$$;

DROP TRIGGER evidence_records_append_only ON evidence_records;
CREATE TRIGGER evidence_records_append_only
    BEFORE UPDATE ON evidence_records
    FOR EACH ROW EXECUTE FUNCTION fsmgen_refuse_evidence_change();
CREATE TRIGGER evidence_records_no_delete
    BEFORE DELETE ON evidence_records
    FOR EACH STATEMENT EXECUTE FUNCTION fsmgen_guard_evidence_delete();

CREATE FUNCTION fsmgen_guard_run_delete() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT fsmgen_purging() THEN
        RAISE EXCEPTION 'workflow_runs: DELETE refused: finished runs are removed by retention (fsmgen_purge_finished_runs), and no other way'
            USING ERRCODE = 'FS008';
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER workflow_runs_no_delete
    BEFORE DELETE ON workflow_runs
    FOR EACH STATEMENT EXECUTE FUNCTION fsmgen_guard_run_delete();

-- After a purge's DELETE: every row removed belonged to a finished run.
-- For the log and the evidence the run is still there (it goes last); for
-- the runs themselves the removed rows are checked.
CREATE FUNCTION fsmgen_check_purged_rows() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    bad UUID;
BEGIN
    IF TG_TABLE_NAME = 'workflow_runs' THEN
        SELECT g.id INTO bad FROM purged g WHERE g.status = 'running' LIMIT 1;
    ELSE
        -- The runs by their primary key: the cost follows the rows
        -- removed, not the size of workflow_runs.
        SELECT r.id INTO bad FROM workflow_runs r
        WHERE r.id = ANY (ARRAY(SELECT DISTINCT g.workflow_run_id FROM purged g)) AND r.status = 'running'
        LIMIT 1;
    END IF;
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION '%: DELETE refused: run % is still running; retention removes finished runs only', TG_TABLE_NAME, bad
            USING ERRCODE = 'FS008';
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER workflow_step_logs_purged
    AFTER DELETE ON workflow_step_logs
    REFERENCING OLD TABLE AS purged
    FOR EACH STATEMENT EXECUTE FUNCTION fsmgen_check_purged_rows();
CREATE TRIGGER evidence_records_purged
    AFTER DELETE ON evidence_records
    REFERENCING OLD TABLE AS purged
    FOR EACH STATEMENT EXECUTE FUNCTION fsmgen_check_purged_rows();
CREATE TRIGGER workflow_runs_purged
    AFTER DELETE ON workflow_runs
    REFERENCING OLD TABLE AS purged
    FOR EACH STATEMENT EXECUTE FUNCTION fsmgen_check_purged_rows();

-- fsmgen_purge_finished_runs removes (or, with dry_run, only counts) the
-- finished runs whose type has a retention period and whose finished_at is
-- older than it, max_runs of them (NULL: all), oldest first, together with
-- their children (so that a batch may hold a few more than max_runs), with
-- their log rows, evidence records and outbox rows, and returns the counts
-- per workflow type. It holds back, and counts as held:
--   - a run with an outbox row not yet published;
--   - a child run whose completion event its running parent has not had
--     yet (parent_delivered_at NULL);
--   - a run that is the parent of a run held or not finished, and so on up.
-- It never touches a run that is not finished. Call it in a transaction of
-- its own; a large backlog is best removed in batches (max_runs).
CREATE FUNCTION fsmgen_purge_finished_runs(dry_run boolean DEFAULT false, max_runs integer DEFAULT NULL)
RETURNS TABLE (workflow_type text, runs bigint, step_logs bigint, evidence bigint, outbox bigint, held bigint)
LANGUAGE plpgsql AS $$
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
    DROP TABLE IF EXISTS fsmgen_purge_due;
    CREATE TEMP TABLE fsmgen_purge_due ON COMMIT DROP AS
    SELECT w.id, w.workflow_type, w.finished_at, w.parent_run_id,
        EXISTS (SELECT 1 FROM workflow_outbox o WHERE o.workflow_run_id = w.id AND o.published_at IS NULL)
        OR (w.parent_run_id IS NOT NULL AND w.parent_delivered_at IS NULL
            AND EXISTS (SELECT 1 FROM workflow_runs p WHERE p.id = w.parent_run_id AND p.status = 'running')) AS held
    FROM workflow_retention k
    JOIN workflow_runs w ON w.workflow_type = k.workflow_type AND w.status <> 'running'
        AND w.finished_at < now() - make_interval(days => k.keep_days);
    CREATE UNIQUE INDEX ON fsmgen_purge_due (id);
    ANALYZE fsmgen_purge_due;
    -- A parent goes only with all its children: hold those with a child
    -- that stays, up the tree.
    LOOP
        UPDATE fsmgen_purge_due d SET held = true
        WHERE NOT d.held AND EXISTS (
            SELECT 1 FROM workflow_runs c
            WHERE c.parent_run_id = d.id
              AND NOT EXISTS (SELECT 1 FROM fsmgen_purge_due x WHERE x.id = c.id AND NOT x.held));
        GET DIAGNOSTICS n = ROW_COUNT;
        EXIT WHEN n = 0;
    END LOOP;

    -- The runs this call removes: all, or the oldest max_runs, each with
    -- its children (which are due and not held, else their parent would
    -- be held), down the tree.
    DROP TABLE IF EXISTS fsmgen_purge_set;
    CREATE TEMP TABLE fsmgen_purge_set ON COMMIT DROP AS
    SELECT d.id, d.workflow_type FROM fsmgen_purge_due d WHERE NOT d.held
    ORDER BY d.finished_at, d.id
    LIMIT max_runs;
    CREATE UNIQUE INDEX ON fsmgen_purge_set (id);
    IF max_runs IS NOT NULL THEN
        LOOP
            INSERT INTO fsmgen_purge_set (id, workflow_type)
            SELECT d.id, d.workflow_type
            FROM fsmgen_purge_due d JOIN workflow_runs c ON c.id = d.id
            WHERE NOT d.held
              AND c.parent_run_id IN (SELECT x.id FROM fsmgen_purge_set x)
              AND NOT EXISTS (SELECT 1 FROM fsmgen_purge_set x WHERE x.id = d.id);
            GET DIAGNOSTICS n = ROW_COUNT;
            EXIT WHEN n = 0;
        END LOOP;
    END IF;
    IF NOT dry_run THEN
        -- Lock the runs, then drop any that a concurrent retry restarted
        -- meanwhile: these statements see what committed before the locks.
        ids := ARRAY(SELECT s.id FROM fsmgen_purge_set s);
        PERFORM 1 FROM workflow_runs w WHERE w.id = ANY (ids) ORDER BY w.id FOR UPDATE OF w;
        DELETE FROM fsmgen_purge_set s
        WHERE s.id = ANY (ARRAY(SELECT w.id FROM workflow_runs w WHERE w.id = ANY (ids) AND w.status = 'running'));
    END IF;
    -- A parent cut off from one of its children (by a retry) stays with it.
    LOOP
        DELETE FROM fsmgen_purge_set s
        WHERE EXISTS (
            SELECT 1 FROM workflow_runs c
            WHERE c.parent_run_id = s.id AND NOT EXISTS (SELECT 1 FROM fsmgen_purge_set x WHERE x.id = c.id));
        GET DIAGNOSTICS n = ROW_COUNT;
        EXIT WHEN n = 0;
    END LOOP;

    -- Counted and removed through the runs' ids, by index: the cost
    -- follows the runs removed, not the size of the log.
    DROP TABLE IF EXISTS fsmgen_purge_counts;
    CREATE TEMP TABLE fsmgen_purge_counts ON COMMIT DROP AS
    SELECT t.workflow_type,
        count(s.id) AS runs,
        coalesce(sum((SELECT count(*) FROM workflow_step_logs l WHERE l.workflow_run_id = s.id)), 0)::bigint AS step_logs,
        coalesce(sum((SELECT count(*) FROM evidence_records e WHERE e.workflow_run_id = s.id)), 0)::bigint AS evidence,
        coalesce(sum((SELECT count(*) FROM workflow_outbox o WHERE o.workflow_run_id = s.id)), 0)::bigint AS outbox,
        (SELECT count(*) FROM fsmgen_purge_due d WHERE d.workflow_type = t.workflow_type AND d.held) AS held
    FROM (SELECT DISTINCT d.workflow_type FROM fsmgen_purge_due d) t
    LEFT JOIN fsmgen_purge_set s ON s.workflow_type = t.workflow_type
    GROUP BY t.workflow_type;

    IF NOT dry_run THEN
        ids := ARRAY(SELECT s.id FROM fsmgen_purge_set s);
        PERFORM set_config('fsmgen.purge', pg_current_xact_id()::text, true);
        DELETE FROM evidence_records e WHERE e.workflow_run_id = ANY (ids);
        DELETE FROM workflow_step_logs l WHERE l.workflow_run_id = ANY (ids);
        DELETE FROM workflow_outbox o WHERE o.workflow_run_id = ANY (ids);
        DELETE FROM workflow_runs w WHERE w.id = ANY (ids);
        PERFORM set_config('fsmgen.purge', '', true);
    END IF;

    RETURN QUERY SELECT c.workflow_type, c.runs, c.step_logs, c.evidence, c.outbox, c.held
        FROM fsmgen_purge_counts c ORDER BY c.workflow_type;
END
$$;
