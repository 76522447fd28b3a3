// Package dbconn opens the PostgreSQL database a command is given, as
// fsmctl and the demo do: Check and ParseConfig report what is wrong with a
// connection string (a postgres:// URL or key=value pairs) naming the part
// at fault and never echoing a password, Describe names the server and
// database for messages, and Connect opens a pool and checks that the
// server answers within ConnectTimeout.
//
// A command takes its database from, in this order: its -database flag,
// the DATABASE_URL environment variable, or the libpq environment (PGHOST,
// PGPORT, PGUSER, PGDATABASE, PGPASSWORD, PGSSLMODE...), which FromPGEnv
// turns into a key=value connection string that names its variables as
// the source of any error.
package dbconn
