-- The functions of this schema find its tables, not a session's temporary
-- tables of the same name: the status guards (0002, 0003) with a pinned
-- search_path (for databases that applied them before fsmgen sql pinned
-- it), and workflow_now() with its table named with the schema (a function
-- without SET, so that the planner still inlines it).
DO $pin$
BEGIN
    EXECUTE format('ALTER FUNCTION workflow_instance_status_fsm() SET search_path = pg_catalog, %I, pg_temp', current_schema());
    EXECUTE format('ALTER FUNCTION workflow_step_status_fsm() SET search_path = pg_catalog, %I, pg_temp', current_schema());
    ALTER FUNCTION workflow_instance_status_log_immutable() SET search_path = pg_catalog, pg_temp;
    ALTER FUNCTION workflow_step_status_log_immutable() SET search_path = pg_catalog, pg_temp;
    EXECUTE format('CREATE OR REPLACE FUNCTION workflow_now() RETURNS timestamptz LANGUAGE sql STABLE '
                   'AS $$ SELECT pg_catalog.now() OPERATOR(pg_catalog.+) c.skew FROM %I.workflow_clock c $$', current_schema());
END
$pin$;
