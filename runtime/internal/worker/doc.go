// Package worker holds the mechanics that every engine of the runtime
// shares (runtime/engine, runtime/linearchain, runtime/stepengine), so
// that a fix to one of them lands once:
//
//   - Backoff and Backoff.Retry: an engine's own statement that the server
//     could not serve (pgerr.Unavailable: a lost or refused connection, a
//     shutdown, a lack of resources) is tried again on a new connection,
//     waiting First, then twice as long each time up to Max, while the
//     context lasts and, when a limit is given (the end of the lease the
//     statement is written under), until then. Any other error is
//     returned at once. Retry reports whether a try was lost that way: a
//     write it sent may have committed, and Recorded finds such a
//     transition in the run's history.
//   - Heartbeat: while a claimed piece of work runs, its lease is extended
//     every interval by the database's clock; the work's context is
//     cancelled, with the cause, when an extension says that the lease is
//     lost, or when no extension succeeded for a whole lease (the lease
//     may have expired meanwhile, and another worker may hold it).
//
// The engines keep their own tables and statements (the linear chain has
// tables of its own by design); what they share is how they wait, retry
// and give up. Retry delays of a failed try are runtime.RetryPolicy's, and
// the classification of a lost connection is pgerr.Unavailable's: this
// package adds neither a second policy nor a second classifier.
package worker
