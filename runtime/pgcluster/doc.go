// Package pgcluster starts a throwaway PostgreSQL cluster from the server
// binaries installed on the machine, for tests and local tools that want a
// real server without setting one up.
//
//	c, err := pgcluster.Start(ctx)
//	if errors.Is(err, pgcluster.ErrNoServerBinaries) {
//		// install the PostgreSQL server (Debian: apt-get install -y postgresql)
//	}
//	if err != nil { ... }
//	defer c.Stop()
//	pool, err := pgxpool.New(ctx, c.URL())
//
// The cluster lives in a new temporary directory and listens only on a unix
// socket there; it runs without fsync, synchronous_commit and
// full_page_writes, which is fast and loses committed data if the machine
// crashes. Benchmarks, which must measure what a real server costs, ask for
// a durable one, and may pass settings of their own:
//
//	c, err := pgcluster.Start(ctx, pgcluster.Durable(),
//		pgcluster.Setting("shared_preload_libraries", "pg_stat_statements"))
//
// The rest is the same either way. When the process runs as root, which
// initdb refuses, the server runs as the postgres system user. Stop shuts it
// down and removes the directory; a cluster whose process died without
// stopping it is swept by a later Start once it is ten minutes old.
// runtime/pgtest builds the tests' databases on one.
package pgcluster
