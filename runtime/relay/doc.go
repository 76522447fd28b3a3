// Package relay publishes the outbox: the messages that runs write with
// store.Emit, store.EmitTx or a handler's Effects.Emit, in the transaction
// of the step that produced them, reach a broker after that transaction
// commits, in the order each run wrote them, and are marked published once
// the broker has acknowledged them.
//
// The package has no broker in it. A Publisher publishes one message and
// returns once the broker has stored it; contrib/nats is one for NATS
// JetStream, and any other is a few lines:
//
//	r, err := relay.New(pool, pub, relay.Config{}) // ErrInvalidConfig: a Config that cannot work
//	if err != nil { ... }
//	go func() { errc <- r.Run(ctx) }() // until ctx is done
//
// Run claims a batch, publishes it, marks it, and does so again at once
// while batches come full, every Config.PollInterval otherwise. RelayOnce
// is one batch, in the caller's goroutine: for tests, and for programs
// that publish at moments of their own.
//
// # What is guaranteed
//
// Each row is published until the broker acknowledges it, then marked
// published (published_at, by the database's clock) in the transaction
// that claimed it, right after its acknowledgement; the transaction
// commits at the end of the batch. The row locks keep every other relay
// off the rows while they are published, so any number of relays, in one
// process or many, share one outbox.
//
// The rows of one run are published in the order they were written (by
// id): a row is not published while an earlier row of its run is
// unpublished. A claim takes the first unpublished row of each run
// (FOR UPDATE SKIP LOCKED: the runs another relay holds are passed over)
// together with the rows of that run that follow it, and the rows of
// different runs go in id order, so that no run waits behind another
// run's backlog.
//
// Delivery is at least once. A relay that dies after the broker stored a
// message but before its mark commits (a crash, a killed process, a lost
// connection, a failed commit) leaves the row unpublished, and the next
// claim publishes it again, under the same Message.DedupID: the run's id
// and the row's, unique across databases (row ids start at 1 in every
// database). Have the broker deduplicate by it (JetStream: the
// Nats-Msg-Id header, which contrib/nats sets) and consumers see the
// message once. A ReceiptPublisher says when the broker took a message as
// a duplicate; the relay records it on the row (duplicate), and ReadStatus
// counts such rows, so that a status shows what the broker really stored.
//
// # Failures and retries
//
// A publish that returns an error, exceeds Config.PublishTimeout or
// panics is a failed try: the relay records it on the row (attempts,
// last_attempt_at, last_error) with its next try at now() +
// Config.Backoff.Delay(n) ±jitter (at most its MaxInterval), by the
// database's clock; it stops the batch there (a broker that is down fails
// every message, and is tried again after Config.PollInterval), marks the
// rows published before it, and returns an error matching ErrPublish. The failed row, and with it
// the rest of its run's rows, waits for its backoff; other runs go on. A
// row is tried until it is published, or moved to the dead letters.
//
// # Dead letters
//
// A publisher's error that matches ErrRejected says the broker refused the
// message itself (a topic that is no valid subject, no stream for it, a
// payload over its limit), as opposed to a broker out of reach. A row
// rejected Config.DeadLetterAfter times in a row (default 10; a failure of
// another kind starts the count again, so that a broker that is down makes
// no dead letters) is moved aside: dead_at is set, it is not tried again,
// the batch goes on with the next rows, and its run's later rows are
// published without it (Batch.Dead; Run logs it). fsmctl outbox status
// counts the dead letters and lists the latest, with their last errors;
// the oldest pending row is shown with its tries and last error. A dead
// letter stays in the table, unpublished, for an operator to deal with.
//
// The defaults: batches of 100 rows, a poll every 500ms, 10s per publish,
// a backoff of 1s doubling to at most a minute, ±20%.
//
// # Shutdown
//
// When Run's context is done, the publish under way is cancelled (its
// row is left as it was, without a failed try), the rows acknowledged
// before it are marked, and Run returns nil. While a batch is published
// its transaction is open, and each row is marked in it as soon as its
// publish is acknowledged; the database ends a transaction that stays
// idle longer than twice PublishTimeout (at least PublishTimeout + 1s;
// idle_in_transaction_session_timeout), so that a relay cut off from the
// database does not hold its rows for good. Its rows are published again
// by the next claim, under the same ids.
//
// # Operating
//
// Migration 0008 adds the relay's columns to workflow_outbox and an index
// on each run's unpublished rows, migration 0019 the dead letters and
// duplicates. ReadStatus (fsmctl outbox status, -o json) counts the
// pending, retrying, published, duplicate and dead rows and reads the
// oldest pending one and the latest dead letters. Published rows stay in the table; delete them when
// they are no longer wanted for audit.
package relay
