// Package dbconn opens the PostgreSQL database a command is given, as
// fsmctl and the demo do: Check and ParseConfig report what is wrong with a
// connection string (a postgres:// URL or key=value pairs) naming the part
// at fault and never echoing a password, Describe names the server and
// database for messages, and Connect opens a pool and checks that the
// server answers within ConnectTimeout.
package dbconn
