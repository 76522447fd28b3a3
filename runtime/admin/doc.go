// Package admin operates the runs of any registered machine from its
// registered definition alone, without the machine's Go code: what an
// operator's tool (cmd/fsmctl) needs beside the store's reads.
//
//	a := admin.New(store.New(pool))
//	run, err := a.Signal(ctx, runID, "Pay", json.RawMessage(`{"paymentRef":"p-1"}`), admin.SignalOptions{})
//	run, err = a.Cancel(ctx, runID, admin.SignalOptions{Reason: "duplicate order"})
//	run, err = a.Retry(ctx, failedRunID)   // same row, attempt_no + 1, initial state
//	run, err = a.Resume(ctx, parkedRunID)  // due again, fresh attempt counter
//
// # Signal and Cancel without the machine's code
//
// Signal checks the event's JSON payload against the fields the registered
// definition declares for the event (CheckPayload: field names as
// declared, values of the fields' Go types, nothing else), then records
// the transition through the store's own path (RecordTx, or FinishTx to a
// terminal state), so that everything the database checks for any
// transition still applies: the registered table, the row version, the log
// row written with the move. The run's row version fences the write: a
// worker in flight for the run finds its own transition refused.
//
// Guards are Go code, which only the machine's process can evaluate. When
// the run's state has one unguarded row on the event, Signal fires it;
// when its rows are guarded, Signal refuses with ErrGuarded and lists
// them, and SignalOptions.To names the target state whose row is then
// fired without its guard. An operator is a caller: the events callers
// may not send (the event a driven state's handler returns, a timer's or
// an exhausted state's event not declared external, a child run's
// completion event) are refused as the engine's Signal refuses them, with
// runtime.ErrNotCallerEvent.
//
// Cancel fires the machine's cancel event with an empty payload. The
// operator acts for the system, not for a user, so the owner's guard the
// engine's Cancel evaluates is not; a state whose cancel rows lead to
// several states needs SignalOptions.To. A cancelled run's result has
// error code CANCELLED and detail "cancelled by an operator" with the
// reason given.
//
// Every Signal and Cancel also logs a step (operator_signal or
// operator_cancel: the event, the state entered, the guards not evaluated,
// the reason) in the transaction of the transition, so that the run's
// history tells a person's move from the machine's.
//
// # Retry and Resume
//
// Retry restarts a failed run as a start with its key would: the same row, attempt_no
// + 1, the state reset to the initial state of its definition version,
// logged as a restarted row. Resume makes a parked run (its retries gave
// up) due again. Both announce the run to idle workers.
//
// # Retention and cleanup
//
// Finished runs, their logs and outbox rows are kept until their type's
// retention policy says otherwise:
//
//	a.SetRetention(ctx, "shop_order", 30)                     // days after finished_at
//	rep, err := a.Cleanup(ctx, admin.CleanupOptions{DryRun: true}) // counts only
//	rep, err = a.Cleanup(ctx, admin.CleanupOptions{})              // removes
//
// Cleanup removes the finished runs (succeeded, failed or cancelled) older
// than their type's policy, with their log rows, evidence records and
// published outbox rows, in batches of CleanupOptions.BatchSize runs, each
// a transaction of the database function fsmgen_purge_finished_runs: the
// only way rows leave the append-only log and evidence, whose triggers
// refuse every other DELETE (and every UPDATE and TRUNCATE). It never
// removes a run that is not finished, nor an outbox row that is not
// published: a finished run with an unpublished message is held, and
// counted in Removed.Held, as is a finished child whose running parent has
// not had its completion event, and a parent whose child stays. A dry run
// counts in one read what the real one removes. A type without a policy
// keeps its runs for ever; ClearRetention returns a type to that.
//
// # Definitions
//
// Definitions lists the registered definitions and Definition returns one
// (the latest version when asked for version 0), as registered by whichever
// process runs the machine.
package admin
