-- name: ClaimRuns :many
-- Leases up to max_runs due runs of the kinds, each "version/type", to
-- owner: a new epoch, an expiry ttl_us from now. A run whose previous lease
-- expired (or was given up as interrupted) gets step_attempt + 1 and a
-- lease_expired row in its log, which names the try key of the interrupted
-- try: "<run id>/<previous epoch>/<row version>".
--
-- Each kind is read on its own from workflow_runs_claim_idx, oldest due
-- first, and at most max_runs of its runs are locked; the oldest due of
-- those across kinds are claimed. Due runs of other kinds are never read,
-- so a claim costs the same however many of them wait. With id, only that
-- run is claimed, when it is due, free and of one of the kinds.
--
-- With every run come the events recorded in its current attempt (names
-- and payloads, oldest first) and the highest row version among the
-- attempt's changes of state that the statement saw: when that is not the
-- run's row version, a change committed while the claim waited for the
-- run is missing from the events, and they must be read again.
--
-- The leasing is fsm_claim_runs's (migrations/0011_claim_plan.sql,
-- 0012_interrupted_tries.sql, 0025_claim_one_run.sql), a
-- function so that its plan is made once per connection rather than at
-- every call.
SELECT c.*,
    coalesce(ev.names, '{}')::text[] AS event_names,
    coalesce(ev.payloads, '{}')::jsonb[] AS event_payloads,
    coalesce(ev.logged_version, 0)::bigint AS logged_version
FROM fsm_claim_runs(@kinds::text[], sqlc.narg('now')::timestamptz, @max_runs::int, @owner::text, @ttl_us::bigint, sqlc.narg('id')::uuid) c
LEFT JOIN LATERAL (
    SELECT array_agg(l.event ORDER BY l.id) FILTER (WHERE l.kind = 'transition') AS names,
        array_agg(l.payload ORDER BY l.id) FILTER (WHERE l.kind = 'transition') AS payloads,
        max(l.row_version) AS logged_version
    FROM workflow_step_logs l
    WHERE l.workflow_run_id = c.id AND l.attempt_no = c.attempt_no AND l.kind <> 'step'
) ev ON true
ORDER BY c.next_run_at;

-- name: ExtendLease :one
-- Extends a live lease; no row when the lease is lost.
UPDATE workflow_runs w SET
    lease_expires_at = coalesce(sqlc.narg('now')::timestamptz, now()) + sqlc.arg('ttl_us')::bigint * interval '1 microsecond'
WHERE w.id = @id AND w.lease_owner = @owner::text AND w.lease_epoch = @epoch
  AND w.lease_expires_at > coalesce(sqlc.narg('now')::timestamptz, now())
RETURNING w.lease_expires_at;

-- name: ReleaseLease :execrows
-- Gives a lease up. With keep_schedule next_run_at stays; otherwise it is
-- due after next_delay_us, or NULL (waiting) when that is NULL, or now when
-- a child run finished and is not delivered yet. With interrupted the lease
-- is not cleared but made to expire now: the next claim counts the try
-- under way as interrupted and logs it, as for a worker that died.
UPDATE workflow_runs w SET
    lease_owner = CASE WHEN @interrupted::bool THEN w.lease_owner ELSE NULL END,
    lease_expires_at = CASE WHEN @interrupted::bool THEN coalesce(sqlc.narg('now')::timestamptz, now()) ELSE NULL END,
    next_run_at = CASE
        WHEN @keep_schedule::bool THEN w.next_run_at
        WHEN EXISTS (SELECT 1 FROM workflow_runs c
                     WHERE c.parent_run_id = w.id AND c.status <> 'running' AND c.parent_delivered_at IS NULL)
            THEN coalesce(sqlc.narg('now')::timestamptz, now())
        WHEN sqlc.narg('next_delay_us')::bigint IS NULL THEN NULL
        ELSE coalesce(sqlc.narg('now')::timestamptz, now()) + sqlc.narg('next_delay_us')::bigint * interval '1 microsecond'
    END
WHERE w.id = @id AND w.lease_owner = @owner::text AND w.lease_epoch = @epoch;

-- name: AdvanceRun :one
-- Every transition, in one statement: moves the run from the state and row
-- version the caller read and logs the move; with finish, stores the result
-- record too; when fenced, only under the caller's live lease; sets the
-- schedule of the state entered and the lease's fate. With notify, a run
-- made due at once (a state with a handler) is announced on fsmgen_runs
-- (store.NotifyChannel) with its type, at the commit. It returns the run as
-- it left it (its updated_at is the log row's occurred_at); no row when the
-- run is not where the caller thought it was or the lease is lost.
WITH moved AS (
    UPDATE workflow_runs AS w SET
        current_state = @to_state::text,
        previous_state = w.current_state,
        status = @to_status::text,
        row_version = w.row_version + 1,
        updated_at = coalesce(sqlc.narg('now')::timestamptz, now()),
        step_attempt = 1,
        last_error_code = NULL,
        last_error = NULL,
        parked_at = NULL,
        result = CASE WHEN @finish::bool THEN jsonb_build_object(
            'status', @result_status::text,
            'outcome', sqlc.narg('outcome')::text,
            'output', sqlc.narg('output')::jsonb,
            'workflow_run_id', w.id,
            'attempt_no', w.attempt_no,
            'cost_usd', @cost_usd::float8,
            'duration_ms', coalesce(sqlc.narg('duration_ms')::bigint,
                (extract(epoch FROM (coalesce(sqlc.narg('now')::timestamptz, now()) - w.attempt_started_at)) * 1000)::bigint),
            'error_code', sqlc.narg('error_code')::text,
            'error_detail', sqlc.narg('error_detail')::text) ELSE w.result END,
        finished_at = CASE WHEN @finish::bool THEN coalesce(sqlc.narg('now')::timestamptz, now()) ELSE w.finished_at END,
        -- A run due at once that was already due stays due from when it
        -- became so: next_run_at, which workflow_runs_claim_idx holds,
        -- keeps its value, so that a move between two running states
        -- changes no indexed column and is a HOT update.
        -- A nested machine's (anchored): the anchors of its active states'
        -- timers, and the records of its histories (see 0015_nested.sql).
        -- A kept state without an anchor (entered when the attempt started,
        -- or before an upgrade cleared them) is anchored at updated_at.
        timer_anchors = CASE WHEN @anchored::bool THEN fsmgen_timer_anchors(w.timer_anchors,
            sqlc.narg('anchor_keep')::jsonb, sqlc.narg('anchor_enter')::jsonb, coalesce(sqlc.narg('now')::timestamptz, now()),
            w.updated_at, sqlc.narg('fired_state')::text, sqlc.narg('fired_index')::int) ELSE w.timer_anchors END,
        history = CASE WHEN sqlc.narg('history_set')::jsonb IS NULL THEN w.history
            ELSE coalesce(w.history, '{}'::jsonb) || sqlc.narg('history_set')::jsonb END,
        next_run_at = CASE
            WHEN @finish::bool THEN NULL
            WHEN @keep_schedule::bool THEN w.next_run_at
            -- A nested machine's state that waits: its first timer, or
            -- that of a composite above it.
            WHEN @anchored::bool AND sqlc.narg('next_delay_us')::bigint IS NULL THEN fsmgen_timer_due(fsmgen_timer_anchors(w.timer_anchors,
                sqlc.narg('anchor_keep')::jsonb, sqlc.narg('anchor_enter')::jsonb, coalesce(sqlc.narg('now')::timestamptz, now()),
                w.updated_at, sqlc.narg('fired_state')::text, sqlc.narg('fired_index')::int))
            WHEN sqlc.narg('next_delay_us')::bigint IS NULL THEN NULL
            WHEN sqlc.narg('next_delay_us')::bigint = 0
                AND w.next_run_at <= coalesce(sqlc.narg('now')::timestamptz, now()) THEN w.next_run_at
            ELSE coalesce(sqlc.narg('now')::timestamptz, now()) + sqlc.narg('next_delay_us')::bigint * interval '1 microsecond'
        END,
        lease_owner = CASE WHEN @finish::bool OR @release_lease::bool THEN NULL ELSE w.lease_owner END,
        lease_expires_at = CASE WHEN @finish::bool OR @release_lease::bool THEN NULL ELSE w.lease_expires_at END
    WHERE w.id = @id AND w.current_state = @from_state::text AND w.row_version = @row_version
        AND w.workflow_type = @workflow_type AND w.definition_version = @definition_version
        AND (NOT @fenced::bool OR (w.lease_owner = @owner::text AND w.lease_epoch = @epoch
             AND w.lease_expires_at > coalesce(sqlc.narg('now')::timestamptz, now())))
    RETURNING w.*
), logged AS (
    INSERT INTO workflow_step_logs (
        workflow_run_id, workflow_type, attempt_no, step_name, state_before, state_after,
        payload, occurred_at, kind, event, row_version, definition_version, exited, entered)
    SELECT moved.id, moved.workflow_type, moved.attempt_no, @event::text, @from_state::text, @to_state::text,
        sqlc.narg('payload'), moved.updated_at, 'transition', @event::text, moved.row_version, moved.definition_version,
        sqlc.narg('exited')::text[], sqlc.narg('entered')::text[]
    FROM moved
    RETURNING occurred_at
), notified AS (
    SELECT CASE WHEN @notify::bool AND NOT @finish::bool AND sqlc.narg('next_delay_us')::bigint = 0
        THEN pg_notify('fsmgen_runs', moved.workflow_type) END AS n
    FROM moved
)
SELECT moved.* FROM moved CROSS JOIN logged CROSS JOIN notified;

-- name: LeaseState :one
-- Where a run and its lease are, to tell why a fenced write moved nothing.
SELECT r.current_state, r.row_version, r.status, r.lease_owner, r.lease_epoch,
    coalesce(r.lease_expires_at > coalesce(sqlc.narg('now')::timestamptz, now()), false)::bool AS lease_live
FROM workflow_runs r
WHERE r.id = @id;

-- name: ScheduleRetry :one
-- Gives up a failed try of the current state: step_attempt + 1, due again
-- after delay_us, lease released, error kept; logs the failed try.
WITH upd AS (
    UPDATE workflow_runs w SET
        step_attempt = w.step_attempt + 1,
        next_run_at = coalesce(sqlc.narg('now')::timestamptz, now()) + sqlc.arg('delay_us')::bigint * interval '1 microsecond',
        lease_owner = NULL,
        lease_expires_at = NULL,
        last_error_code = sqlc.narg('error_code')::text,
        last_error = @error_detail::text
    WHERE w.id = @id AND w.row_version = @row_version AND w.step_attempt = @step_attempt
      AND w.lease_owner = @owner::text AND w.lease_epoch = @epoch
      AND w.lease_expires_at > coalesce(sqlc.narg('now')::timestamptz, now())
    RETURNING w.*
)
INSERT INTO workflow_step_logs (
    workflow_run_id, workflow_type, attempt_no, step_name, state_before, state_after,
    payload, occurred_at, kind, event, row_version, definition_version)
SELECT upd.id, upd.workflow_type, upd.attempt_no, 'attempt_failed', upd.current_state, upd.current_state,
    jsonb_build_object('step_attempt', @step_attempt::int, 'error_code', sqlc.narg('error_code')::text,
        'error', @error_detail::text, 'delay_ms', sqlc.arg('delay_us')::bigint / 1000, 'retry', true,
        'next_run_at', upd.next_run_at),
    coalesce(sqlc.narg('now')::timestamptz, now()), 'step', NULL, upd.row_version, upd.definition_version
FROM upd
RETURNING occurred_at;

-- name: ParkRun :one
-- Parks a run whose retries gave up: no schedule, lease released, error
-- kept for operators; logs why.
WITH upd AS (
    UPDATE workflow_runs w SET
        parked_at = coalesce(sqlc.narg('now')::timestamptz, now()),
        next_run_at = NULL,
        lease_owner = NULL,
        lease_expires_at = NULL,
        last_error_code = sqlc.narg('error_code')::text,
        last_error = @error_detail::text
    WHERE w.id = @id AND w.row_version = @row_version
      AND w.lease_owner = @owner::text AND w.lease_epoch = @epoch
      AND w.lease_expires_at > coalesce(sqlc.narg('now')::timestamptz, now())
    RETURNING w.*
)
INSERT INTO workflow_step_logs (
    workflow_run_id, workflow_type, attempt_no, step_name, state_before, state_after,
    payload, occurred_at, kind, event, row_version, definition_version)
SELECT upd.id, upd.workflow_type, upd.attempt_no, 'parked', upd.current_state, upd.current_state,
    jsonb_build_object('step_attempt', upd.step_attempt, 'error_code', sqlc.narg('error_code')::text,
        'error', @error_detail::text, 'retry', false),
    upd.parked_at, 'step', NULL, upd.row_version, upd.definition_version
FROM upd
RETURNING occurred_at;

-- name: ResumeRun :execrows
-- Makes a parked run due again with a fresh attempt counter, logs it, and
-- announces it on fsmgen_runs (store.NotifyChannel) with its type at the
-- commit of this statement: 1 row when it did, 0 when the run is not parked.
WITH upd AS (
    UPDATE workflow_runs w SET
        parked_at = NULL,
        step_attempt = 1,
        next_run_at = coalesce(sqlc.narg('now')::timestamptz, now())
    WHERE w.id = @id AND w.parked_at IS NOT NULL AND w.status = 'running'
    RETURNING w.*
), logged AS (
    INSERT INTO workflow_step_logs (
        workflow_run_id, workflow_type, attempt_no, step_name, state_before, state_after,
        payload, occurred_at, kind, event, row_version, definition_version)
    SELECT upd.id, upd.workflow_type, upd.attempt_no, 'resumed', upd.current_state, upd.current_state,
        NULL, coalesce(sqlc.narg('now')::timestamptz, now()), 'step', NULL, upd.row_version, upd.definition_version
    FROM upd
), notified AS (
    SELECT pg_notify('fsmgen_runs', upd.workflow_type) AS n FROM upd
)
SELECT 1 FROM upd CROSS JOIN notified;

-- name: LatestVersion :one
-- The latest registered version of workflow_type, 0 when none is.
SELECT coalesce(max(def.version), 0)::int AS version
FROM workflow_definitions def
WHERE def.workflow_type = @workflow_type::text;

-- name: EnqueueRun :one
-- Starts a run of version definition_version of workflow_type on behalf
-- of run parent_id (same tenant, user, correlation and trace context), or nothing when a
-- run with the same (type, key) exists. The run is due next_delay_us after
-- now, or never (NULL) when that is NULL: the schedule of the initial state,
-- as InsertRun. With parent_event, the new run is a child: parent_event is
-- fired on the parent when it finishes.
WITH d AS (
    SELECT def.workflow_type, def.version, def.initial_state
    FROM workflow_definitions def
    WHERE def.workflow_type = @workflow_type::text AND def.version = @definition_version::int
), p AS (
    SELECT r.id, r.tenant_id, r.user_id, r.correlation_id, r.trace_parent FROM workflow_runs r WHERE r.id = @parent_id
), ins AS (
    INSERT INTO workflow_runs (
        workflow_type, current_state, tenant_id, user_id, correlation_id, idempotency_key,
        attempt_no, policy_snapshot, created_at, updated_at, definition_version, input,
        attempt_started_at, next_run_at, parent_run_id, parent_event, trace_parent)
    SELECT d.workflow_type, d.initial_state, p.tenant_id, p.user_id, p.correlation_id, @idempotency_key::text,
        1, sqlc.narg('policy_snapshot')::jsonb,
        coalesce(sqlc.narg('now')::timestamptz, now()), coalesce(sqlc.narg('now')::timestamptz, now()),
        d.version, sqlc.narg('input')::jsonb,
        coalesce(sqlc.narg('now')::timestamptz, now()),
        CASE WHEN sqlc.narg('next_delay_us')::bigint IS NULL THEN NULL
            ELSE coalesce(sqlc.narg('now')::timestamptz, now()) + sqlc.narg('next_delay_us')::bigint * interval '1 microsecond' END,
        CASE WHEN sqlc.narg('parent_event')::text IS NULL THEN NULL ELSE p.id END, sqlc.narg('parent_event')::text,
        p.trace_parent
    FROM d, p
    ON CONFLICT (workflow_type, idempotency_key) DO NOTHING
    RETURNING *
), logged AS (
    INSERT INTO workflow_step_logs (
        workflow_run_id, workflow_type, attempt_no, step_name, state_before, state_after,
        payload, occurred_at, kind, event, row_version, definition_version)
    SELECT ins.id, ins.workflow_type, ins.attempt_no, 'start', NULL, ins.current_state,
        NULL, ins.created_at, 'created', NULL, ins.row_version, ins.definition_version
    FROM ins
), notified AS (
    SELECT pg_notify('fsmgen_runs', ins.workflow_type) AS n FROM ins
)
SELECT EXISTS (SELECT 1 FROM d)::bool AS known_type,
    (SELECT count(*) FROM notified)::bigint AS created,
    coalesce((SELECT ins.id FROM ins),
        (SELECT r.id FROM workflow_runs r WHERE r.workflow_type = @workflow_type::text AND r.idempotency_key = @idempotency_key::text))::uuid AS run_id;

-- name: FinishedChildren :many
-- The children of a run that finished and whose event was not fired yet.
SELECT c.id, c.workflow_type, c.current_state, c.status, c.result, c.parent_event
FROM workflow_runs c
WHERE c.parent_run_id = @id AND c.status <> 'running' AND c.parent_delivered_at IS NULL
ORDER BY c.finished_at, c.id;

-- name: MarkChildDelivered :execrows
UPDATE workflow_runs SET parent_delivered_at = coalesce(sqlc.narg('now')::timestamptz, now())
WHERE id = @id AND parent_delivered_at IS NULL;

-- name: AttemptEvents :many
-- The events recorded in one attempt of a run, oldest first.
SELECT l.event, l.payload
FROM workflow_step_logs l
WHERE l.workflow_run_id = @id AND l.attempt_no = @attempt_no AND l.kind = 'transition'
ORDER BY l.id;

-- name: Notify :exec
SELECT pg_notify(@channel::text, @payload::text);

-- name: DBNow :one
SELECT coalesce(sqlc.narg('now')::timestamptz, now())::timestamptz AS now;

-- name: ReadRunForEvent :one
-- A run about to be sent an event from outside (a caller's signal, a
-- cancellation), with what deciding on it takes, in one statement: whether
-- a child of the run, finished or not, names child_event as the one fired
-- on the run when it finishes (false when child_event is NULL); and, when
-- the run's (type, version, state) is one of the guarded ones (item n:
-- guarded_types[n], guarded_versions[n], guarded_states[n]; the states
-- whose rows on the event have guards, which may read them; for a run in a
-- configuration of a parallel state, one of its leaves), the events
-- recorded in its current attempt, names and payloads, oldest first, with
-- events_read set.
WITH k AS (
    SELECT unnest(@guarded_types::text[]) AS workflow_type,
        unnest(@guarded_versions::int[]) AS version,
        unnest(@guarded_states::text[]) AS state
)
SELECT sqlc.embed(r),
    (sqlc.narg('child_event')::text IS NOT NULL AND EXISTS (
        SELECT 1 FROM workflow_runs c WHERE c.parent_run_id = r.id AND c.parent_event = sqlc.narg('child_event')::text
    ))::bool AS child_event_named,
    coalesce(g.guarded, false)::bool AS events_read,
    coalesce(ev.names, '{}')::text[] AS event_names,
    coalesce(ev.payloads, '{}')::jsonb[] AS event_payloads
FROM workflow_runs r
LEFT JOIN LATERAL (
    SELECT true AS guarded FROM k
    WHERE k.workflow_type = r.workflow_type AND k.version = r.definition_version
      AND k.state = ANY (string_to_array(r.current_state, '|'))
    LIMIT 1
) g ON true
LEFT JOIN LATERAL (
    SELECT array_agg(l.event ORDER BY l.id) AS names, array_agg(l.payload ORDER BY l.id) AS payloads
    FROM workflow_step_logs l
    WHERE g.guarded AND l.workflow_run_id = r.id AND l.attempt_no = r.attempt_no AND l.kind = 'transition'
) ev ON true
WHERE r.id = @id;

-- name: AdvanceRuns :many
-- Transitions of many runs (each at most once) in one statement: item n
-- moves run ids[n] from from_states[n] at row_versions[n] to to_states[n],
-- logging the move, when fenced[n] only under the live lease (owners[n],
-- epochs[n]), as AdvanceRun does for one. next_delays_us[n] < 0 leaves the
-- run unscheduled; with finishes[n] the result record is stored, from
-- result_statuses[n], outcomes[n], outputs[n], costs_usd[n], durations_ms[n]
-- (0: from the database's clock), error_codes[n] and error_details[n] (an
-- empty text is NULL). A row comes back for each run that moved, and a busy
-- one for each run another transaction holds locked, which is skipped
-- rather than waited for; a run that has no row is not where its caller
-- thought, or the lease is lost. The statement is fsmgen_advance_runs
-- (0026_trusted_transitions.sql), which checks the moved runs once.
SELECT a.id::uuid AS id, a.row_version::bigint AS row_version, a.occurred_at::timestamptz AS occurred_at,
    a.next_run_at::timestamptz AS next_run_at, a.busy::bool AS busy
FROM fsmgen_advance_runs(@ids::uuid[], @from_states::text[], @to_states::text[], @to_statuses::text[],
    @row_versions::bigint[], @workflow_types::text[], @definition_versions::int[], @events::text[],
    @payloads::jsonb[], @next_delays_us::bigint[], @fenced::bool[], @release_leases::bool[], @owners::text[],
    @epochs::bigint[], @finishes::bool[], @result_statuses::text[], @outcomes::text[], @outputs::jsonb[],
    @costs_usd::float8[], @durations_ms::bigint[], @error_codes::text[], @error_details::text[],
    sqlc.narg('now')::timestamptz) AS a;

-- name: InsertStepBefore :execrows
-- Logs a step of a run at the state that a transition, written next in the
-- same transaction by AdvanceRun with the same run, state, row version,
-- kind and fence, leaves: only when that transition will move the run (it
-- is in from_state at row_version, of the kind, and when fenced under the
-- live lease), and locking the run, so that the check holds until the
-- commit. 0 rows when the transition would move nothing, which then logs
-- nothing either; so the step and the transition can be sent together in
-- one round trip, a pipeline of statements that commit together.
INSERT INTO workflow_step_logs (
    workflow_run_id, workflow_type, attempt_no, step_name, state_before, state_after,
    payload, occurred_at, kind, event, row_version, definition_version)
SELECT r.id, r.workflow_type, r.attempt_no, @step_name::text, r.current_state, r.current_state,
    sqlc.narg('payload'), coalesce(sqlc.narg('now')::timestamptz, now()), 'step', NULL, r.row_version, r.definition_version
FROM (
    SELECT w.id, w.workflow_type, w.attempt_no, w.current_state, w.row_version, w.definition_version
    FROM workflow_runs w
    WHERE w.id = @id AND w.current_state = @from_state::text AND w.row_version = @row_version
        AND w.workflow_type = @workflow_type AND w.definition_version = @definition_version
        AND (NOT @fenced::bool OR (w.lease_owner = @owner::text AND w.lease_epoch = @epoch
             AND w.lease_expires_at > coalesce(sqlc.narg('now')::timestamptz, now())))
    FOR UPDATE OF w
) r;
