-- Claims that cost the same however many due runs of other types wait.
--
-- A worker claims the due runs of the (type, version) pairs it drives,
-- oldest due first. The claim reads, for each pair, this index from its
-- oldest due run on, and stops after as many runs as it may claim: runs of
-- types the worker does not drive are never read. It replaces the index on
-- next_run_at alone, which made a claim read every due run of every type
-- before the first of its own.
CREATE INDEX workflow_runs_claim_idx ON workflow_runs (workflow_type, definition_version, next_run_at)
    WHERE status = 'running';
DROP INDEX workflow_runs_runnable_idx;
