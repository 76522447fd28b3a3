-- The outbox relay's dead letters and duplicates (runtime/relay).
--
-- rejections counts the latest failed tries of a row in a row whose error
-- said the broker refused the message itself (the publisher's error
-- matched relay.ErrRejected: no stream for its subject, too large, an
-- invalid subject); a failure of another kind (the broker unreachable)
-- sets it back to 0. dead_at: a row rejected as many times in a row as the
-- relay's Config.DeadLetterAfter is moved aside: it is not tried again,
-- and the run's later messages are published without it. It stays
-- unpublished (published_at NULL) for an operator to see (fsmctl outbox
-- status) and to deal with.
--
-- duplicate: the broker acknowledged the message as one it had stored
-- already under the same deduplication id (JetStream's Nats-Msg-Id): after
-- a relay died between a publish and its mark this is expected; otherwise
-- another publisher uses the same ids and the message was not delivered.
ALTER TABLE workflow_outbox
    ADD COLUMN rejections INTEGER     NOT NULL DEFAULT 0 CHECK (rejections >= 0),
    ADD COLUMN dead_at    TIMESTAMPTZ,
    ADD COLUMN duplicate  BOOLEAN     NOT NULL DEFAULT false;

-- The dead letters, newest first, for fsmctl outbox status.
CREATE INDEX workflow_outbox_dead_idx ON workflow_outbox (dead_at DESC, id DESC) WHERE dead_at IS NOT NULL;
