// Package pgtest gives tests a real, freshly migrated PostgreSQL database,
// never a mock of one.
//
// Use it from any package's tests:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
//	func TestSomething(t *testing.T) {
//		t.Parallel()
//		pool := pgtest.NewPool(t) // a new database, migrated, for this test only
//		...
//	}
//
// # Where the server comes from
//
// When FSMGEN_TEST_DATABASE_URL is set (for example
// postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable), the tests
// use that server; its user must be allowed to create databases, and to be
// a superuser for the few tests that switch triggers off. Otherwise the first
// test that asks for a database starts a throwaway cluster from the
// PostgreSQL server binaries it finds: initdb on PATH, then the directory
// `pg_config --bindir` names, then the newest /usr/lib/postgresql/*/bin. The
// cluster lives in a temporary directory, listens on a unix socket there
// only, runs without fsync, and is stopped and removed when the test binary
// ends, whether its tests passed or failed; if the binary dies instead (a
// panic), the server follows it, and a later run removes the directory. When
// the tests run as root the cluster runs as the postgres system user, since
// initdb refuses root. When neither is available, NewPool fails the test
// with a message saying what to install or set.
//
// The cluster comes from runtime/pgcluster, which programs use directly
// (the demo, machines/cmd/demo, does) so that they need not link the testing package.
//
// # One database per test
//
// The first call migrates a template database once per test binary
// ([db.Migrate]); every NewPool clones it with CREATE DATABASE ... TEMPLATE,
// which takes milliseconds, so tests can run in parallel without seeing each
// other's rows. The database is dropped when the test ends.
//
// An Example has no testing.TB: OpenPool gives it a database of its own
// the same way, dropped when Main ends.
//
// # Least-privileged roles
//
// A database's schema belongs to the server's user the tests connect as. For
// a test that must run as the roles of the role model (docs/security.md),
// RoleDSN creates a login role of a kind (db.RoleRuntime, db.RoleOperator,
// db.RoleReader), grants it with db.Grant and returns the database's
// connection string as that role; RolePool opens a pool on it; LoginRole
// creates a role without privileges, for a test that grants its own. The
// roles are dropped when the test ends. The engine's tests run as the
// runtime role, fsmctl's as the operator, the read-only console's as the
// reader, and runtime/store's security tests attack the database as the
// runtime role.
//
// # Counting statements
//
// CountStatements installs a [StatementCounter] on a connection config: a
// pgx tracer that counts, and names, the statements the connections send
// to the server (each query, each query of a batch, each COPY). A test
// holds an operation to its round trips with it; runtime/engine's
// TestStatementCounts does so for a start, a signal, a cancellation, a
// claim and a driven transition. [CountedPool] makes a pool with one.
//
// # The invariant check
//
// After every test that used NewPool, [CheckInvariants] runs on its database
// and fails the test if any run disagrees with its log: current_state and
// row_version must be those of the run's last logged state change, the log's
// state changes must chain (each starts where the previous ended), and every
// logged transition must be in the registered table of the run's type and
// version. A test that corrupts a run on purpose must repair it before it
// ends, or use [SkipInvariants].
package pgtest
