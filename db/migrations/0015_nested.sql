-- Nested machines (statecharts): a run is in a leaf, and the composite
-- states above it are active with it.
--
--   - workflow_runs.timer_anchors: for each active state with timers (the
--     leaf and its composite ancestors), when the run entered it and the
--     durations of its timers, in microseconds, in declaration order (-1
--     for a timer that fired and keeps its state): {"STATE": {"at":
--     "2026-01-02T03:04:05.000006Z", "after_us": [30000000]}}. A state
--     neither exited nor entered by a transition keeps its anchor, so its
--     timers keep running across moves below it. NULL for a run of a flat
--     machine, whose timers count from updated_at as before.
--   - workflow_runs.history: the records of the run's history
--     pseudostates, each history's name mapped to the state it recorded
--     (the child of its composite for a shallow history, the leaf for a
--     deep one). NULL until a composite with history is exited.
--   - workflow_step_logs.exited, entered: the states a transition exited,
--     innermost first, and entered, outermost first; NULL for a flat
--     machine's transitions, which exit their source and enter their target.
--
-- All three are written by the statement that records the transition
-- (AdvanceRun), and the evidence chain covers exited and entered.

ALTER TABLE workflow_runs
    ADD COLUMN timer_anchors JSONB,
    ADD COLUMN history       JSONB;

ALTER TABLE workflow_step_logs
    ADD COLUMN exited  TEXT[],
    ADD COLUMN entered TEXT[];

-- The timer anchors after a transition: the anchors of old for the states
-- of keep (an object, state -> the durations of its timers, used for a
-- state entered when the attempt started, which has no anchor yet: it is
-- anchored at started), and an anchor at at for each state of enter (state
-- -> durations). With fired_state, the timer number fired_index (from 0)
-- of that state fired: it is marked -1, so that it fires once per entry.
CREATE FUNCTION fsmgen_timer_anchors(old JSONB, keep JSONB, enter JSONB, at TIMESTAMPTZ, started TIMESTAMPTZ,
    fired_state TEXT, fired_index INTEGER)
RETURNS JSONB
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce(jsonb_object_agg(a.state, CASE
            WHEN a.state = fired_state AND fired_index IS NOT NULL
                THEN jsonb_set(a.anchor, ARRAY['after_us', fired_index::text], '-1'::jsonb)
            ELSE a.anchor END), '{}'::jsonb)
    FROM (
        SELECT k.key AS state, coalesce(old -> k.key, jsonb_build_object(
                'at', to_char(started AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
                'after_us', k.value)) AS anchor
        FROM jsonb_each(coalesce(keep, '{}'::jsonb)) k
        WHERE NOT coalesce(enter, '{}'::jsonb) ? k.key
        UNION ALL
        SELECT e.key, jsonb_build_object(
                'at', to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
                'after_us', e.value)
        FROM jsonb_each(coalesce(enter, '{}'::jsonb)) e
    ) a
$$;

-- When the first timer of anchors falls due: NULL when there is none.
CREATE FUNCTION fsmgen_timer_due(anchors JSONB)
RETURNS TIMESTAMPTZ
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT min((a.value ->> 'at')::timestamptz + d.us * interval '1 microsecond')
    FROM jsonb_each(coalesce(anchors, '{}'::jsonb)) a
    CROSS JOIN LATERAL (SELECT x::bigint AS us FROM jsonb_array_elements_text(a.value -> 'after_us') x) d
    WHERE d.us >= 0
$$;

-- The evidence of a transition of a nested machine names the states it
-- exited and entered; the content of every other record is as before.
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
    IF NEW.exited IS NOT NULL OR NEW.entered IS NOT NULL THEN
        c := c || jsonb_build_object('exited', to_jsonb(coalesce(NEW.exited, '{}'::text[])),
                                     'entered', to_jsonb(coalesce(NEW.entered, '{}'::text[])));
    END IF;
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

-- CREATE OR REPLACE dropped the pinned search_path of 0014: pin it again.
DO $pin$
BEGIN
    EXECUTE format('ALTER FUNCTION fsmgen_evidence_append() SET search_path = pg_catalog, %I, pg_temp', current_schema());
END
$pin$;
