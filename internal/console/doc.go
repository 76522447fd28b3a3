// Package console is the web console of fsmctl serve: a small server-side
// rendered web UI over the runtime's tables, for operators.
//
// # Pages
//
//	/runs                        the runs, newest first, with how many match,
//	                             their last error and how long they ran;
//	                             found by run id (or its first characters)
//	                             or idempotency key (q), filtered by type,
//	                             state (a comma-separated list, in any case),
//	                             status, tenant and age (older, newer: 90s,
//	                             2h, 3d), a page at a time both ways (after:
//	                             the last id shown, for older runs; before:
//	                             the first, for newer), read from an index
//	                             range, never by skipping rows
//	/runs/{id}                   a run: its last error first, its facts,
//	                             result and lease; its machine's diagram
//	                             with the run's path drawn on it (the states
//	                             it has been in, the rows it took, its
//	                             current state filled); its history,
//	                             numbered 1…n as fsmctl runs show numbers
//	                             it, with payloads and attempts; input and policy; its
//	                             activities' executions (attempts, errors);
//	                             its children; its outbox; its evidence
//	                             records and whether their chain verifies
//	/machines                    the registered definitions with their runs
//	/machines/{type}/{version}   a live heatmap: the diagram coloured by the
//	                             runs in each state now, with the median time
//	                             runs spent in each state before leaving it
//	                             (from workflow_step_logs: the last stays
//	                             that ended in each state, 1,500 shared by
//	                             the states, 50 to 1,000 each, by an index, so
//	                             that a refresh costs the same on a log of
//	                             any size), and the runs that
//	                             are stuck (lease expired, or due for longer
//	                             than Config.StuckAfter with no worker) or
//	                             parked; it refreshes itself from
//	                             /machines/{type}/{version}/heat.json; and
//	                             the machine's events and transition table
//	                             as fsmctl definitions show prints them
//
// Diagrams are drawn on the server from the registered runtime.Definition
// by package statesvg: no JavaScript draws anything.
//
// # Actions
//
// The console is read-only unless Config.Actions is set: then a run's page
// has forms to signal an event with a JSON payload, to cancel the run and
// to resume a parked run, each with a reason for the log. They POST to
// /runs/{id}/signal, /runs/{id}/cancel and /runs/{id}/resume with a CSRF
// token (an HMAC, under a key made per process, of a random cookie that is
// HttpOnly and SameSite=Strict), and a request whose Origin or
// Sec-Fetch-Site says it came from another site is refused. A read-only
// console answers every POST with 403.
//
// A failed run's page offers to retry it (/runs/{id}/retry).
//
// Bulk actions act on the runs a filter of the list selects: the list
// links to /runs/bulk/cancel (the running ones), /runs/bulk/resume (the
// parked ones) and /runs/bulk/retry (the failed ones) with its filters. A
// GET is a confirmation page that states how many runs the action would
// act on; its form POSTs the filters, the CSRF token and that count, and
// the action is done only when the filter still selects that many runs
// (else 409, nothing done), one run at a time through Actions, at most
// 1,000 at once. The page that follows lists the runs acted on and those
// that refused, with why.
//
// *admin.Admin (package runtime/admin) is the Actions of fsmctl serve
// -actions: it acts as an operator from the registered definition, without
// the machine's code, as fsmctl runs signal, cancel and resume do. A
// guarded row is fired only when the form names its target state, its
// guard unevaluated, and every action logs an operator step with the
// reason.
//
// # Safety
//
// Payloads, inputs, errors and names are user data. Pages are rendered by
// html/template, which escapes each in its context; the diagram's SVG
// escapes its text itself; the one script (static/console.js) writes text
// with textContent only. Every response carries ContentSecurityPolicy (no
// inline script or style, nothing from elsewhere, no framing) and nosniff.
// With Config.Hosts set (fsmctl serve sets it on the loopback), requests
// for another host name get 421, which defeats DNS rebinding.
//
// Serving it:
//
//	st := store.New(pool)
//	srv, err := console.New(console.Config{Store: st, Actions: admin.New(st)})
//	if err != nil { ... }
//	http.ListenAndServe("127.0.0.1:8080", srv)
//
// # Login
//
// With Config.Passwords (ParsePasswords reads a file of "user:bcrypt-hash"
// lines, as htpasswd -nB prints them) every request must carry the HTTP
// Basic credentials of one of its users, or gets 401. bcrypt runs once per
// user and password: a password that checked out is remembered by its
// SHA-256 for the process's life. fsmctl serve refuses -actions on an
// address beyond the loopback without both Hosts and Passwords.
//
// # Pages of a run
//
// A run's history is read Config.HistoryPageSize rows at a time (after: the
// id of the last row of the previous page), and its evidence records shown
// as many at a time (evidence: the offset); the whole chain is verified on
// every page, and a broken one is shown where it breaks. The banner that
// says what an action did comes from the console's redirect only: it is
// signed with the process's key, and shown only when the signature matches
// the run and the text.
package console
