// Package db holds the runtime's database schema and queries: plain SQL
// migrations embedded in the binary, and the sqlc configuration and queries.
// The Go code sqlc generates from them is internal to the runtime
// (runtime/internal/dbsqlc).
//
// # Migrations
//
// The files in migrations/ are named NNNN_name.sql and applied in the order
// of NNNN by [Migrate], each in its own transaction, and recorded in the
// fsmgen_migrations table with a checksum of their text. Migrate is safe to
// call at every start of every process: a migration already recorded is
// skipped, and concurrent callers (two replicas starting at once) serialise on
// a Postgres advisory lock taken only while migrations are applied. A recorded
// migration whose file has changed since is reported, not applied again.
//
//	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
//	if err != nil { ... }
//	if err := db.Migrate(ctx, pool); err != nil { ... }
//
// # Tables
//
//   - workflow_definitions, workflow_states, workflow_transitions: the
//     registered machine definitions (type, version, states with their generic
//     status, transition table); immutable once written.
//   - workflow_runs: one row per (workflow_type, idempotency_key), with the
//     current state, the definition version, a row version for optimistic
//     concurrency, the generic status, the final result and the lease
//     columns of the worker that drives it.
//   - workflow_step_logs: the append-only log of every state change and
//     observable step of every run.
//   - workflow_outbox: messages written in the transaction of the step that
//     produced them.
//   - workflow_executions (a view, 0010): a run under the field names of
//     the compliance workflow's WorkflowExecution, with its state history and evidence ids;
//     the query by workflow name, status and organization is served by the
//     index workflow_runs_query_idx (store.Executions).
//   - workflow_retention: how many days each workflow type keeps its
//     finished runs; fsmgen_purge_finished_runs(dry_run, max_runs) removes
//     those past it, with their log rows, evidence records and published
//     outbox rows, and returns the counts per type (runtime/admin's
//     Cleanup calls it). It holds back runs with an unpublished message, a
//     finished child whose running parent has not had its completion
//     event, and a parent whose child stays.
//   - fsmgen_terminate_run(run, reason, by): an operator's terminate
//     (runtime/admin's Terminate): the run and its live descendants end
//     where they are, status cancelled, result TERMINATED, each with a log
//     row of kind terminated; the only way such a write or row is accepted.
//
// # Guards
//
// Triggers keep the tables honest whoever writes to them, raw SQL included.
// They raise errors with the SQLSTATEs below, which the store translates into
// its sentinel errors:
//
//   - [SQLStateTransitionRefused]: current_state moved along a pair that the
//     registered table of the run's type and version lacks (a transition
//     from a state to itself included), or a run inserted in a state other
//     than the initial one. A write shaped like the runtime's transitions
//     (row_version + 1, previous_state the state left, status the state
//     entered's) is checked against workflow_moves by the trigger
//     workflow_runs_known_move instead, which reads without locking and refuses
//     it as the foreign key [ConstraintMove] it replaced did (23503); a move
//     to or from a configuration of a parallel state (a current_state
//     that holds "|") goes through the trigger whatever its shape, which
//     checks each region's move against the registered rows
//     (fsmgen_parallel_refusal, 0016_parallel.sql) and sets previous_state
//     NULL. A
//     change of definition_version with the same attempt_no is a migration
//     of a live run: refused with this SQLSTATE unless the first rule of
//     the registered migration (workflow_migrations and
//     workflow_migration_rules) for the run's state whose condition on its
//     current attempt's events admits it moves it to the new state; a
//     migration to or from a configuration is checked leaf by leaf
//     (fsmgen_upgrade_refusal, 0016_parallel.sql);
//   - [SQLStateLogImmutable]: UPDATE, DELETE or TRUNCATE of workflow_step_logs,
//     but for the DELETEs of fsmgen_purge_finished_runs (evidence_records
//     is guarded the same way, with SQLSTATE FS007);
//   - [SQLStateRetention]: a DELETE of workflow_runs outside
//     fsmgen_purge_finished_runs, or a purge's DELETE that would remove
//     the log, evidence or row of a run that is still running. The
//     function marks its own transaction with the write mark (the setting
//     fsmgen.write holds its transaction id) for the span of its DELETEs; statement-level
//     triggers refuse a DELETE without the mark, and check after it, once
//     per statement, that every row removed belonged to a finished run. The
//     function runs with its owner's rights (SECURITY DEFINER), and the
//     mark counts only with them: a session that sets it deletes nothing;
//   - [SQLStateOtherExecutor]: an UPDATE of a run that another runtime
//     executes (its executor column is set, 0018_executor.sql) in a
//     transaction that did not say it writes for that executor
//     (set_config('fsmgen.executor', executor, true)): the engine's
//     claims, signals, cancellations, resumes and upgrades of it. Such a
//     run is never due: its writes leave next_run_at and its lease NULL;
//   - [SQLStateRunImmutable]: a change of a run's id, type or idempotency key,
//     or of its attempt number or definition version other than the reset of
//     a failed run to its initial state with attempt_no + 1; status or
//     row_version set by hand; result or finished_at on a run in a running
//     state; a change of its tenant_id, user_id, correlation_id, input,
//     created_at, parent_run_id or parent_event (fixed when the run is
//     created), of its policy_snapshot but by a restart, of a finished run's
//     result, finished_at or schedule (next_run_at, lease and parking
//     columns, step_attempt, last error, attempt_started_at, updated_at) but
//     by a restart; parent_delivered_at set twice or on a running run;
//     lease_epoch going down, or a new lease owner without lease_epoch + 1;
//   - [SQLStateDefinitionImmutable]: UPDATE or DELETE of a registered
//     definition, state, transition or migration, or an INSERT of a state
//     or transition of a definition, or of a rule of a migration,
//     registered by an earlier transaction;
//   - [SQLStateUnlogged]: a change of state without its log row (the row of
//     the same run and row version, ending in the new state), or a log row
//     of a change of state that did not happen (a second one for the same
//     row version is refused by the unique index [ConstraintLoggedChange],
//     SQLSTATE 23505). Write both in one statement,
//     as the store does, or in one transaction after SET CONSTRAINTS
//     workflow_runs_logged, workflow_step_logs_change DEFERRED.
//
// A transition's log row must name a row of the registered table
// ([SQLStateTransitionRefused]), and when its event is the completion event
// of a child run (its parent_event), the transaction must have recorded the
// delivery of a finished child with that event first (parent_delivered_at),
// as the engine does; a step row names no event (check constraint
// workflow_step_logs_step_event_check).
//
// The triggers also keep workflow_runs.status equal to the generic status of
// current_state and add one to row_version at every change of state: a
// raw UPDATE of current_state alone gets its row_version and status right,
// and is then refused unless its log row is written with it.
//
// The runtime's group commits (the transitions of many runs in one
// statement) go through fsmgen_advance_runs, which makes the checks of
// workflow_runs_known_move, workflow_runs_logged and
// workflow_step_logs_change once for all the runs it moved, with the same
// errors, rather than in three trigger calls per run. Those triggers skip
// the rows it writes: its write mark (the setting fsmgen.write) counts only
// with the function's owner's rights, so a session that sets the mark
// itself is checked as before.
//
// # Roles and functions
//
// Every function the migrations create runs with search_path pinned to
// pg_catalog, the schema and pg_temp last, so that a session's temporary
// tables cannot stand in for the schema's tables. The evidence trigger's
// function (fsmgen_evidence_append), the functions that install evidence
// triggers (fsmgen_enable_evidence, fsmgen_enable_implied_evidence), the
// group commit's fsmgen_advance_runs, the terminate and the purge run with
// their owner's rights. The guarantees above hold for every
// role that does not own the schema: [Grant] gives an existing role the
// privileges of one of the kinds of the role model ([RoleRuntime],
// [RoleOperator], [RoleReader]), and [Migrate] with nothing to apply only
// reads, so that those roles may call it. docs/security.md lists the grants.
package db
