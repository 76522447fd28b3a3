-- One write mark for the schema's own writing functions.
--
-- Three functions write what the triggers refuse to anyone else, each with
-- a mark of its own: the purge (fsmgen.purge, fsmgen_purging) deletes
-- finished runs, the terminate (fsmgen.terminate, fsmgen_terminating) ends
-- live ones without a transition, and the group commit (fsmgen.write,
-- 0026) moves runs checked once per statement. Each mark was the current
-- transaction's id in a setting, counting only with the rights of the
-- function's owner.
--
-- Now there is one: fsmgen_marked(), the setting fsmgen.write holding the
-- current transaction's id, with the rights of the schema's owner (who runs
-- this migration, and owns the three functions). The three functions set
-- it while they write; the guards that fsmgen_purging and
-- fsmgen_terminating served call fsmgen_marked, and the triggers of 0026
-- test the same expression inline (a trigger's condition cannot call a
-- function without compiling it at every statement). A session of another
-- role that sets the mark is refused as before.
--
-- The functions are rewritten from their definitions with only the mark
-- changed, so that their bodies stay those of 0009, 0014, 0021 and 0024.

DO $mark$
DECLARE
    marked TEXT := format('CURRENT_USER = %L::name AND coalesce(current_setting(%L, true), %L) = pg_current_xact_id()::text',
        current_user, 'fsmgen.write', '');
    f      TEXT;
    def    TEXT;
BEGIN
    EXECUTE format('CREATE FUNCTION fsmgen_marked() RETURNS boolean LANGUAGE sql STABLE AS %L', 'SELECT ' || marked);
    EXECUTE format('ALTER FUNCTION fsmgen_marked() SET search_path = pg_catalog, %I, pg_temp', current_schema());

    FOREACH f IN ARRAY ARRAY['fsmgen_guard_evidence_delete', 'fsmgen_guard_log_delete', 'fsmgen_guard_run_delete',
        'fsmgen_guard_terminated', 'fsmgen_purge_finished_runs', 'fsmgen_terminate_run']
    LOOP
        def := pg_get_functiondef(f::regproc);
        def := replace(replace(def, 'fsmgen_purging()', 'fsmgen_marked()'), 'fsmgen_terminating()', 'fsmgen_marked()');
        def := replace(replace(def, '''fsmgen.purge''', '''fsmgen.write'''), '''fsmgen.terminate''', '''fsmgen.write''');
        IF def = pg_get_functiondef(f::regproc) THEN
            RAISE EXCEPTION '%: no mark to change', f;
        END IF;
        EXECUTE def;
    END LOOP;

    def := pg_get_triggerdef((SELECT t.oid FROM pg_trigger t
        WHERE t.tgrelid = 'workflow_runs'::regclass AND t.tgname = 'workflow_runs_guard'));
    IF strpos(def, 'fsmgen_terminating()') = 0 THEN
        RAISE EXCEPTION 'workflow_runs_guard: no mark to change';
    END IF;
    EXECUTE 'DROP TRIGGER workflow_runs_guard ON workflow_runs';
    EXECUTE replace(def, 'fsmgen_terminating()', 'fsmgen_marked()');
END
$mark$;

DROP FUNCTION fsmgen_purging();
DROP FUNCTION fsmgen_terminating();
