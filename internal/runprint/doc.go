// Package runprint prints the runs of the runtime's store and their
// history as aligned text, the way fsmctl and the demo show them: a run as
// a block of "field  value" lines (Run), runs as a table (RunTable), and a
// run's log oldest first (History). Times are UTC to the millisecond
// (Time); an empty value is printed as "-" (OrDash).
//
// Every value read from the database is printed through Escape: control
// characters, DEL, bidirectional controls and invalid UTF-8 are written as
// Go escapes (\x1b, \u202e, \n), so that a tenant or a payload cannot send
// the terminal a command or break a table's layout. Table escapes what is
// written through it as well, tabs and newlines (its layout) apart.
package runprint
