-- Events that arrive before a step waits for them are kept in the inbox
-- (outcome 'early') until a step of their instance starts WAITING for
-- their type, which applies the oldest at once. applied_at is when an
-- event woke a step; step_seq is then that step (before: the instance's
-- current step when the event arrived). 'mismatch' and 'not_waiting' are
-- outcomes of earlier versions, which did not keep such events.
ALTER TABLE workflow_chain_inbox DROP CONSTRAINT workflow_chain_inbox_outcome_check;
ALTER TABLE workflow_chain_inbox ADD CONSTRAINT workflow_chain_inbox_outcome_check
    CHECK (outcome IN ('applied', 'early', 'late', 'unknown_instance', 'mismatch', 'not_waiting'));
ALTER TABLE workflow_chain_inbox ADD COLUMN applied_at timestamptz;
UPDATE workflow_chain_inbox SET applied_at = received_at WHERE outcome = 'applied';
CREATE INDEX workflow_chain_inbox_early ON workflow_chain_inbox (instance_id, event_type, received_at)
    WHERE outcome = 'early';
