-- workflow_now() reads the schema's workflow_clock, not a session's
-- temporary table of that name: the table is named with its schema, and
-- the function has no SET clause, so that the planner still inlines it.
-- (The status guards, 0002 and 0003, pin their search_path themselves.)
DO $pin$
BEGIN
    EXECUTE format('CREATE OR REPLACE FUNCTION workflow_now() RETURNS timestamptz LANGUAGE sql STABLE '
                   'AS $$ SELECT pg_catalog.now() OPERATOR(pg_catalog.+) c.skew FROM %I.workflow_clock c $$', current_schema());
END
$pin$;
