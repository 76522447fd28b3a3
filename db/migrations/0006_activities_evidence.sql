-- Activities and evidence.
--
-- activity_executions caches the result of an activity by its idempotency
-- key (the fields of seed 003's ActivityExecution). A row is written when
-- the activity starts, updated after each try, and holds the output once
-- it completed: a later call with the same key gets the output without
-- executing the activity again. The transition of the run that used the
-- result marks the row consumed in its own transaction (consumed_*).
CREATE TABLE activity_executions (
    id                   UUID        PRIMARY KEY DEFAULT gen_random_uuid(),
    -- the workflow (run) that executed the activity.
    workflow_id          TEXT        NOT NULL,
    activity_name        TEXT        NOT NULL,
    idempotency_key      TEXT        NOT NULL UNIQUE,
    status               TEXT        NOT NULL CHECK (status IN ('running', 'completed', 'failed')),
    input                JSONB       NOT NULL,
    output               JSONB,
    error                TEXT,
    error_code           TEXT,
    -- tries made so far, from 1.
    attempt              INTEGER     NOT NULL CHECK (attempt >= 1),
    started_at           TIMESTAMPTZ NOT NULL,
    completed_at         TIMESTAMPTZ,
    -- a completed result is not served after expires_at (the cache's TTL).
    expires_at           TIMESTAMPTZ,
    consumed_run_id      UUID,
    consumed_row_version BIGINT,
    consumed_at          TIMESTAMPTZ
);
CREATE INDEX activity_executions_workflow_idx ON activity_executions (workflow_id, started_at);

-- evidence_records is the tamper-evident evidence of the runs of the
-- workflow types that record it (evidence.Enable installs a trigger per
-- type on workflow_step_logs): one record per created row, transition and
-- step named evidence.<kind>, written by that trigger in the transaction
-- that writes the log row. Each record carries the SHA-256 of its content
-- (content::text) and hash = SHA-256(prev_hash || content_hash), prev_hash
-- being the hash of the run's previous record ('' for the first).
CREATE TABLE evidence_records (
    id              BIGSERIAL   PRIMARY KEY,
    workflow_run_id UUID        NOT NULL REFERENCES workflow_runs (id),
    workflow_type   TEXT        NOT NULL,
    seq             INTEGER     NOT NULL CHECK (seq >= 1),
    kind            TEXT        NOT NULL,
    step_log_id     BIGINT      NOT NULL UNIQUE,
    content         JSONB       NOT NULL,
    content_hash    TEXT        NOT NULL,
    prev_hash       TEXT        NOT NULL,
    hash            TEXT        NOT NULL,
    recorded_at     TIMESTAMPTZ NOT NULL,
    UNIQUE (workflow_run_id, seq)
);

CREATE FUNCTION fsmgen_evidence_append() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    k       TEXT;
    c       JSONB;
    n       INTEGER;
    prev    TEXT;
    ch      TEXT;
BEGIN
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
    SELECT seq, hash INTO n, prev FROM evidence_records
     WHERE workflow_run_id = NEW.workflow_run_id ORDER BY seq DESC LIMIT 1;
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
    INSERT INTO evidence_records (workflow_run_id, workflow_type, seq, kind, step_log_id, content,
                                  content_hash, prev_hash, hash, recorded_at)
    VALUES (NEW.workflow_run_id, NEW.workflow_type, n + 1, k, NEW.id, c, ch, prev,
            encode(sha256(convert_to(prev || ch, 'UTF8')), 'hex'), NEW.occurred_at);
    RETURN NULL;
END
$$;

-- FS007: an UPDATE, DELETE or TRUNCATE of evidence_records.
CREATE FUNCTION fsmgen_refuse_evidence_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'evidence_records is append-only: % refused', TG_OP
        USING ERRCODE = 'FS007';
END
$$;

CREATE TRIGGER evidence_records_append_only
    BEFORE UPDATE OR DELETE ON evidence_records
    FOR EACH ROW EXECUTE FUNCTION fsmgen_refuse_evidence_change();
CREATE TRIGGER evidence_records_no_truncate
    BEFORE TRUNCATE ON evidence_records
    FOR EACH STATEMENT EXECUTE FUNCTION fsmgen_refuse_evidence_change();
