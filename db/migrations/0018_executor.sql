-- Runs executed by another runtime, recorded here.
--
-- A run that another runtime executes (contrib/temporal's workflows) can be
-- recorded in these tables, so that its log, evidence, outbox, activity
-- cache and reads are those of a run of the engine. Its executor column
-- names that runtime; NULL, every run of the engine's, is this database's
-- engine. The column is fixed when the run is created (the runtime role
-- may insert it, not update it).
--
-- Such a run is never the engine's to claim, time, resume or drive, even
-- for an engine that registered its type and version:
--
--   - it is never due: every write of it leaves next_run_at, the lease
--     owner and its expiry NULL, so that the claim, which reads the due
--     runs of workflow_runs_claim_idx, never sees it, and its timers are
--     never fired here (its executor fires them);
--   - every UPDATE of it is refused (SQLSTATE FS009) unless the
--     transaction said that it writes for that executor, with
--     set_config('fsmgen.executor', <executor>, true), which the store's
--     recorder of such runs does and the engine never does: a signal, a
--     cancellation, a resume or an upgrade by the engine fails, and writes
--     nothing.
--
-- The triggers fire only for such runs (their WHEN), so that the engine's
-- writes of its own runs pay a test of one column, and the claim
-- statement is unchanged.

ALTER TABLE workflow_runs ADD COLUMN executor TEXT CHECK (executor <> '');

CREATE FUNCTION fsmgen_guard_executor() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        IF NEW.executor IS DISTINCT FROM OLD.executor THEN
            RAISE EXCEPTION 'run %: its executor cannot change', OLD.id
                USING ERRCODE = 'FS003';
        END IF;
        IF current_setting('fsmgen.executor', true) IS DISTINCT FROM OLD.executor THEN
            RAISE EXCEPTION 'run % of %/v% is executed by %: only a recorder of that executor writes it',
                OLD.id, OLD.workflow_type, OLD.definition_version, OLD.executor
                USING ERRCODE = 'FS009';
        END IF;
    END IF;
    NEW.next_run_at := NULL;
    NEW.lease_owner := NULL;
    NEW.lease_expires_at := NULL;
    RETURN NEW;
END
$$;

CREATE TRIGGER workflow_runs_executor_insert
    BEFORE INSERT ON workflow_runs
    FOR EACH ROW
    WHEN (NEW.executor IS NOT NULL)
    EXECUTE FUNCTION fsmgen_guard_executor();
CREATE TRIGGER workflow_runs_executor
    BEFORE UPDATE ON workflow_runs
    FOR EACH ROW
    WHEN (OLD.executor IS NOT NULL OR NEW.executor IS NOT NULL)
    EXECUTE FUNCTION fsmgen_guard_executor();

-- Pinned as every function of the schema (0014_least_privilege.sql).
DO $pin$
BEGIN
    EXECUTE format('ALTER FUNCTION fsmgen_guard_executor() SET search_path = pg_catalog, %I, pg_temp', current_schema());
END
$pin$;
