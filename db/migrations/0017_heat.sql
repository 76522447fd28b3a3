-- The console's heatmap reads the median time runs spent in each state
-- from the last stays that ended there, instead of every stay in the log
-- (a window over the whole log of a type, 1-8 s and a sort spilled to disk
-- at 2M log rows). A stay in S ends with the row that leaves S: a
-- transition or a restart whose state_before is S. This index finds the
-- latest of them per state, newest first; the row that began the stay is
-- the run's previous change row, found by workflow_step_logs_change_idx.
CREATE INDEX workflow_step_logs_left_idx ON workflow_step_logs (workflow_type, definition_version, state_before, occurred_at DESC)
    WHERE kind NOT IN ('step', 'created');
