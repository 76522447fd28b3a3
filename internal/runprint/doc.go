// Package runprint prints the runs of the runtime's store and their
// history as aligned text, the way fsmctl and the demo show them: a run as
// a block of "field  value" lines (Run), runs as a table (RunTable), and a
// run's log oldest first (History). Times are UTC to the millisecond
// (Time); an empty value is printed as "-" (OrDash).
package runprint
