// Package activity is the runtime's activity layer: typed activities
// with a name, a retry policy, a timeout and an idempotency key, whose
// results are cached in PostgreSQL by that key.
//
// # Defining an activity
//
//	var charge = activity.Activity[ChargeIn, ChargeOut]{
//		Name:    "process-payment",
//		Retry:   activity.Payment,
//		Timeout: 30 * time.Second,
//		IdempotencyKey: func(in ChargeIn) string {
//			return fmt.Sprintf("payment:%s:%d", in.UserID, in.AmountCents)
//		},
//		Execute: func(ctx context.Context, in ChargeIn) (ChargeOut, error) { ... },
//	}
//
// # Retry policies
//
// The named policies are Validation (never retried), Database
// (5 attempts, 500 ms initial), ExternalService (10 attempts, 1 s
// initial), Payment (3 attempts) and Background (20 attempts over a long
// period); they share their numbers with the runtime's presets
// (runtime.RetryDatabase, ...), which .fsm states name. CreateRetryPolicy
// makes a custom one from InitialInterval, BackoffCoefficient,
// MaximumInterval, MaximumAttempts and NonRetryableErrors (matched by an
// error's code, runtime.WithCode, or by its Go type's name).
//
// After failed try n, the next waits CalculateRetryDelay(p, n) =
// InitialInterval * BackoffCoefficient^(n-1), capped at MaximumInterval:
// 500 ms, 1 s, 2 s, 4 s for Database. The wait is then spread by jitter:
// multiplied by 1 + Jitter*(2u-1) for u uniform in [0, 1), so that a
// Jitter of 0.2 (the presets') gives a wait within ±20 % of the computed
// one, and clients that failed together do not retry together.
//
// # Retries of an activity inside a state
//
// An activity run by a state's handler has two policies over it: its own
// and the state's (the .fsm's retry). They compose, not multiply: the
// activity's policy governs the activity, and the state does not try it
// again. When the activity's policy gives up (its last allowed try failed,
// or an error it does not retry), Execute's error matches runtime.ErrNoRetry
// besides ErrExhausted or ErrNonRetryable, keeping the activity's error and
// code; a handler that returns it has its state exhausted at once by the
// engine (the state's else event, or a parked run), the code and message
// in the run's result. The state's policy still retries the handler's other
// failures (an error outside activities, an unreadable cache). A machine
// that wants the activity tried again after its policy gave up says so in
// its table, with an else event that leads back to the state later.
//
// # The result cache
//
// Execute checks activity_executions for the activity's key before doing
// anything: a completed result that has not expired (Activity.TTL) is
// returned with Result.Cached set, and the activity is not executed.
// Otherwise it is tried by its policy, and each try updates the key's row:
// status running, failed or completed, attempt (every try of the key),
// error, output. The output of a success is committed before Execute
// returns, so that a process that dies after the activity ran and before
// the workflow recorded its next step finds the result and does not
// execute the activity again.
//
// # Concurrent calls with one key: exactly one executes
//
// A call that executes the activity first claims its key: a PostgreSQL
// advisory lock on the key (session-level, pg_try_advisory_lock of a 64-bit
// hash of it), held by one connection of the pool through the tries and
// released when Execute returns. While another call holds the key, in this
// process or any other, Execute waits for it: it looks again after 10 ms,
// then after doubling waits of up to 200 ms (WithSleep's waits), holding no
// connection in between, until the holder stored its result, which it then
// returns with Cached set, or gave the key up, which it then claims; it
// returns ctx's error if ctx is done first. So of concurrent calls with one
// key, one executes the activity and the others return its output. When the
// holder failed (its tries used up), the next call tries the activity
// itself, with a series of tries of its own, as a later call would.
//
// A holder's claim ends with its session: a process that dies while it
// holds a key (killed, crashed, its connection cut) releases it as soon as
// PostgreSQL sees its connection closed, and a waiting call takes the key
// over and executes the activity again (the idempotency key given to the
// callee makes that safe, as for any retry). A holder that is alive but
// stuck holds the key as long as its try does, which Activity.Timeout
// bounds. Two keys whose hashes collide share a lock: one waits for the
// other, and still executes its own activity.
//
// Inside a state handler of the engine, ExecuteInRun does the same and
// marks the row consumed (consumed_run_id, consumed_row_version,
// consumed_at) in the transaction of the transition the handler returns
// (engine.InTx): the consumption commits with the step that used the
// result, or not at all. Callees that honour the idempotency key make even
// a retry that races a crash safe: the same key asks them for the same
// effect.
//
// PostgreSQL is the cache and its truth; there is no cache in front of it.
package activity
