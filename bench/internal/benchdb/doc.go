// Package benchdb gives the benchmarks of the bench module a fresh,
// migrated database on a durable PostgreSQL server, and the server-side
// counters (statements, write transactions, WAL bytes, storage) that turn a
// benchmark's throughput into a cost per operation.
//
// Use it from a benchmark package's TestMain:
//
//	func TestMain(m *testing.M) { benchdb.Main(m) }
//
//	func BenchmarkSomething(b *testing.B) {
//		pool := benchdb.NewPool(b, benchdb.MaxConns(48))
//		...
//	}
//
// # Where the server comes from
//
// When FSMGEN_BENCH_DATABASE_URL is set (for example
// postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable), the
// benchmarks use that server; its user must be allowed to create databases.
// Otherwise the first database asked for starts a throwaway cluster
// ([pgcluster.Start] with [pgcluster.Durable]) with pg_stat_statements
// preloaded, in a temporary directory on the machine's disk, and stops it
// when the test binary ends. The tests' server (FSMGEN_TEST_DATABASE_URL,
// runtime/pgtest) is never used: it may run without fsync.
//
// # Durability
//
// A benchmark measures what a committed transaction costs, so the server
// must be durable: fsync, synchronous_commit and full_page_writes on. When
// benchmarks are asked for (-test.bench), Main reads the three settings
// before any benchmark runs, refuses to go on if one of them is off, and
// prints them as a configuration line that benchstat carries into its
// tables:
//
//	durability: fsync=on synchronous_commit=on full_page_writes=on
//	pgserver: PostgreSQL 15.20, throwaway durable cluster
//
// Setting FSMGEN_BENCH_ALLOW_NONDURABLE=1 lets a non-durable server through
// for a quick local look; the durability line then says what was off, and
// figures from such a run must not be published. Tests (not benchmarks) in
// the bench module get a database the same way, without the check.
//
// # One database per benchmark
//
// The first call migrates a template database ([db.Migrate], and the
// pg_stat_statements extension when the server has it loaded); every NewPool
// clones it. [Setup] names further set-up (another system's schema, for
// example) that is run once into a template of its own. Databases are
// dropped when the benchmark ends.
//
// # Costs
//
// [Take] reads the server's counters; [Counters.Since] gives the statements
// executed in one database (pg_stat_statements; zero with Statements false
// when the server does not load it), the transaction ids assigned (write
// transactions), the WAL written and, when the server runs on this machine,
// the processor time its processes used, all three server-wide, between
// two reads.
// [Storage] sums pg_total_relation_size over the tables of a database.
//
// # The floor, in the same run
//
// [Floor] runs the floor, one single-row INSERT per commit through the
// benchmark's own pgx pool, and [Pgbench] runs the same INSERT with
// pgbench (-M prepared, -c and -j the concurrency, -T -pgbench-time), a
// cross-check that owes nothing to Go; a benchmark runs them beside what it
// measures, at each concurrency, so that ratios to the floor come from the
// same run. Pgbench skips, saying why, when there is no pgbench binary.
// [Warm] opens a pool's connections before the clock starts, and [Run]
// spreads operations over goroutines and measures them.
package benchdb
