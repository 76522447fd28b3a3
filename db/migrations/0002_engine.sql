-- What the engine that drives runs needs on top of the store: the current
-- state's attempt counter and last error, parking for operators, and the
-- link from a child run to the parent that waits for it.
--
-- The engine's scheduling rules, in terms of these columns:
--   - a run is claimable when status = 'running', next_run_at <= now and no
--     live lease holds it (lease_owner IS NULL or lease_expires_at <= now);
--   - every claim adds one to lease_epoch, and every write of a worker is
--     fenced by (lease_owner, lease_epoch, lease_expires_at > now);
--   - next_run_at is NULL while a run waits for an event with no timer, and
--     while it is parked (parked_at set) after its retries gave up;
--   - updated_at is the time of the last change of current_state: timers of
--     the current state count from it.

ALTER TABLE workflow_runs
    -- tries of the current state's handler, 1 for the first; reset to 1 by
    -- every change of current_state.
    ADD COLUMN step_attempt        INTEGER     NOT NULL DEFAULT 1,
    -- code and text of the error of the last failed try, NULL after a
    -- change of current_state.
    ADD COLUMN last_error_code     TEXT,
    ADD COLUMN last_error          TEXT,
    -- set when the run's retries gave up and its state names no event for
    -- that: the run stays in its state, unclaimed, until an operator resumes
    -- or cancels it.
    ADD COLUMN parked_at           TIMESTAMPTZ,
    -- a child run: the run that waits for it, the event fired on that run
    -- when this one reaches a terminal state, and when it was fired.
    ADD COLUMN parent_run_id       UUID        REFERENCES workflow_runs (id),
    ADD COLUMN parent_event        TEXT,
    ADD COLUMN parent_delivered_at TIMESTAMPTZ;

CREATE INDEX workflow_runs_parent_idx ON workflow_runs (parent_run_id) WHERE parent_run_id IS NOT NULL;
CREATE INDEX workflow_runs_parked_idx ON workflow_runs (parked_at) WHERE parked_at IS NOT NULL;

-- When a child run reaches a terminal state, whoever moved it (a worker, a
-- cancellation, raw SQL), its parent becomes due at once and idle workers
-- are told, so that the parent's worker fires the child's event.
CREATE FUNCTION fsmgen_wake_parent() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    parent_type TEXT;
BEGIN
    UPDATE workflow_runs p
    SET next_run_at = LEAST(coalesce(p.next_run_at, NEW.updated_at), NEW.updated_at)
    WHERE p.id = NEW.parent_run_id AND p.status = 'running' AND p.parked_at IS NULL
    RETURNING p.workflow_type INTO parent_type;
    IF FOUND THEN
        PERFORM pg_notify('fsmgen_runs', parent_type);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER workflow_runs_wake_parent
    AFTER UPDATE OF current_state ON workflow_runs
    FOR EACH ROW
    WHEN (NEW.parent_run_id IS NOT NULL AND OLD.status = 'running' AND NEW.status <> 'running')
    EXECUTE FUNCTION fsmgen_wake_parent();
