package benchdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/db"
	"github.com/fsmgen/fsmgen/runtime/pgcluster"
)

// EnvURL names the environment variable that points the benchmarks at an
// existing server instead of a throwaway durable cluster.
const EnvURL = "FSMGEN_BENCH_DATABASE_URL"

// EnvAllowNonDurable names the environment variable that, set to 1, lets
// benchmarks run on a server that is not durable. Figures from such a run
// are not to be published.
const EnvAllowNonDurable = "FSMGEN_BENCH_ALLOW_NONDURABLE"

// Mark is a comment to begin a benchmark's own bookkeeping queries with (a
// count of finished runs, say): statements that begin with it are left out
// of [Counters]' Statements.
const Mark = "/* benchdb */ "

// Info describes the server the benchmarks run on.
type Info struct {
	// Durability is what the server reported for the three settings that
	// make a commit survive a crash.
	Durability Durability
	// Version is the server's version, as SHOW server_version gives it.
	Version string
	// Source says where the server came from: "throwaway durable cluster"
	// or "FSMGEN_BENCH_DATABASE_URL".
	Source string
	// Statements is true when pg_stat_statements is loaded, so that
	// [Counters] can count statements.
	Statements bool
}

// Durability holds the server's fsync, synchronous_commit and
// full_page_writes settings, and whether the throwaway cluster's data
// directory is on a tmpfs, where fsync costs nothing.
type Durability struct {
	Fsync, SynchronousCommit, FullPageWrites string
	// TmpFS is true when the throwaway cluster's data directory is in
	// memory; always false for a server named by FSMGEN_BENCH_DATABASE_URL,
	// whose disks benchdb cannot see.
	TmpFS bool
}

// Durable reports whether a commit on the server survives a crash: fsync
// and full_page_writes on, synchronous_commit on (or remote_apply,
// remote_write, local: all of them wait for the local flush), and the data
// not on a tmpfs.
func (d Durability) Durable() bool {
	switch d.SynchronousCommit {
	case "on", "local", "remote_write", "remote_apply":
	default:
		return false
	}
	return d.Fsync == "on" && d.FullPageWrites == "on" && !d.TmpFS
}

// String gives the three settings as name=value pairs, and "data on tmpfs"
// when it is.
func (d Durability) String() string {
	s := fmt.Sprintf("fsync=%s synchronous_commit=%s full_page_writes=%s", d.Fsync, d.SynchronousCommit, d.FullPageWrites)
	if d.TmpFS {
		s += " data-on-tmpfs"
	}
	return s
}

var (
	mainRunning atomic.Bool

	setupOnce sync.Once
	srv       *server
	srvErr    error
)

type server struct {
	base    string
	admin   *pgxpool.Pool
	cluster *pgcluster.Cluster
	info    Info

	mu        sync.Mutex
	templates map[string]string // set-up name ("" for the plain one) -> template database
}

// Main runs the package's tests and benchmarks and stops the throwaway
// cluster, if one was started, when they end. When benchmarks are asked for
// it first sets the server up, prints its durability and version as
// configuration lines (durability: ..., pgserver: ...), and exits with an
// error if the server is not durable, unless FSMGEN_BENCH_ALLOW_NONDURABLE
// is 1. Call it from TestMain:
//
//	func TestMain(m *testing.M) { benchdb.Main(m) }
func Main(m *testing.M) {
	flag.Parse()
	mainRunning.Store(true)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sig
		teardown()
		fmt.Fprintf(os.Stderr, "benchdb: %v: benchmark database server stopped\n", s)
		os.Exit(1)
	}()
	if f := flag.Lookup("test.bench"); f != nil && f.Value.String() != "" {
		s, err := setup()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			teardown()
			os.Exit(1)
		}
		d := s.info.Durability
		if !d.Durable() {
			if os.Getenv(EnvAllowNonDurable) != "1" {
				fmt.Fprintf(os.Stderr, "benchdb: refusing to benchmark on %s: the server is not durable (%s); "+
					"benchmarks measure what a commit that survives a crash costs. "+
					"Point %s at a durable server, or unset it to get a throwaway durable cluster "+
					"(or set %s=1 for a look whose figures are not to be published)\n",
					s.info.Source, d, EnvURL, EnvAllowNonDurable)
				teardown()
				os.Exit(1)
			}
			fmt.Fprintf(os.Stderr, "benchdb: WARNING: the server is NOT durable (%s); these figures are not to be published\n", d)
		}
		fmt.Printf("durability: %s\npgserver: PostgreSQL %s, %s\n", d, s.info.Version, s.info.Source)
		if !s.info.Statements {
			fmt.Fprintf(os.Stderr, "benchdb: pg_stat_statements is not loaded on the server: statements per operation are not reported\n")
		}
	}
	code := m.Run()
	signal.Stop(sig)
	teardown()
	os.Exit(code)
}

var teardownOnce sync.Once

func teardown() {
	teardownOnce.Do(func() {
		if srv == nil {
			return
		}
		if srv.cluster == nil && srv.admin != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			for _, t := range srv.templates {
				_, _ = srv.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{t}.Sanitize()+" WITH (FORCE)")
			}
			cancel()
		}
		if srv.admin != nil {
			srv.admin.Close()
		}
		if srv.cluster != nil {
			if err := srv.cluster.Stop(); err != nil {
				fmt.Fprintf(os.Stderr, "benchdb: %v\n", err)
			}
		}
	})
}

func setup() (*server, error) {
	setupOnce.Do(func() { srv, srvErr = newServer() })
	return srv, srvErr
}

func newServer() (s *server, err error) {
	s = &server{templates: map[string]string{}}
	defer func() {
		if err != nil {
			if s.admin != nil {
				s.admin.Close()
			}
			if s.cluster != nil {
				_ = s.cluster.Stop()
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if u := os.Getenv(EnvURL); u != "" {
		s.base = u
		s.info.Source = EnvURL
	} else {
		c, err := pgcluster.Start(ctx, pgcluster.Durable(),
			pgcluster.Setting("shared_preload_libraries", "pg_stat_statements"),
			pgcluster.Setting("pg_stat_statements.track_planning", "on"),
			pgcluster.Setting("max_connections", "400"))
		if errors.Is(err, pgcluster.ErrNoServerBinaries) {
			return nil, fmt.Errorf("benchdb: no PostgreSQL server to benchmark on: %s is not set, and %w; "+
				"install the PostgreSQL server binaries (Debian/Ubuntu: apt-get install -y postgresql) or point %s at a durable server", EnvURL, err, EnvURL)
		}
		if err != nil {
			return nil, fmt.Errorf("benchdb: %w", err)
		}
		s.cluster = c
		s.base = c.DSN("postgres")
		s.info.Source = "throwaway durable cluster"
		s.info.Durability.TmpFS = onTmpFS(c.Dir())
	}
	if s.admin, err = pgxpool.New(ctx, s.base); err != nil {
		return nil, fmt.Errorf("benchdb: connect to %s: %w", redact(s.base), err)
	}
	d := &s.info.Durability
	err = s.admin.QueryRow(ctx, `SELECT current_setting('fsync'), current_setting('synchronous_commit'),
		current_setting('full_page_writes'), current_setting('server_version'),
		EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'pg_stat_statements')
		AND 'pg_stat_statements' = ANY (string_to_array(replace(current_setting('shared_preload_libraries'), ' ', ''), ','))`).
		Scan(&d.Fsync, &d.SynchronousCommit, &d.FullPageWrites, &s.info.Version, &s.info.Statements)
	if err != nil {
		return nil, fmt.Errorf("benchdb: read the settings of %s: %w", redact(s.base), err)
	}
	return s, nil
}

// template returns the template database for the set-up name, creating and
// migrating it on first use.
func (s *server) template(ctx context.Context, su *setupFn) (string, error) {
	key := ""
	if su != nil {
		key = su.name
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.templates[key]; ok {
		return t, nil
	}
	name := "fsmgen_benchtpl_" + randomHex(6)
	if _, err := s.admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("benchdb: create template database: %w", err)
	}
	s.templates[key] = name
	conn, err := pgx.Connect(ctx, s.dsn(name))
	if err != nil {
		return "", fmt.Errorf("benchdb: connect to template database: %w", err)
	}
	defer conn.Close(ctx)
	if err := db.Migrate(ctx, conn); err != nil {
		return "", fmt.Errorf("benchdb: migrate template database: %w", err)
	}
	if s.info.Statements {
		if _, err := conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"); err != nil {
			return "", fmt.Errorf("benchdb: create extension pg_stat_statements: %w", err)
		}
	}
	if su != nil {
		if err := su.fn(ctx, conn); err != nil {
			return "", fmt.Errorf("benchdb: set-up %s: %w", su.name, err)
		}
	}
	return name, nil
}

func (s *server) dsn(name string) string {
	if s.cluster != nil {
		return s.cluster.DSN(name)
	}
	return withDatabase(s.base, name)
}

func withDatabase(conn, name string) string {
	if strings.HasPrefix(conn, "postgres://") || strings.HasPrefix(conn, "postgresql://") {
		if u, err := url.Parse(conn); err == nil {
			u.Path = "/" + name
			u.RawPath = ""
			return u.String()
		}
	}
	return conn + " dbname=" + name
}

func redact(conn string) string {
	if u, err := url.Parse(conn); err == nil && u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
			return u.String()
		}
	}
	return conn
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Server sets the server up if it is not yet, and describes it.
func Server(tb testing.TB) Info {
	tb.Helper()
	s := server1(tb)
	return s.info
}

func server1(tb testing.TB) *server {
	tb.Helper()
	if !mainRunning.Load() {
		tb.Fatal("benchdb: the package must run through benchdb.Main: add func TestMain(m *testing.M) { benchdb.Main(m) }")
	}
	s, err := setup()
	if err != nil {
		tb.Fatal(err)
	}
	if _, ok := tb.(*testing.B); ok && !s.info.Durability.Durable() && os.Getenv(EnvAllowNonDurable) != "1" {
		tb.Fatalf("benchdb: the server is not durable (%s)", s.info.Durability)
	}
	return s
}

// Option changes what NewPool and NewDatabase make.
type Option func(*options)

type options struct {
	maxConns int32
	setup    *setupFn
	params   map[string]string
}

type setupFn struct {
	name string
	fn   func(ctx context.Context, conn *pgx.Conn) error
}

// MaxConns sets the pool's maximum number of connections (default 8).
func MaxConns(n int32) Option { return func(o *options) { o.maxConns = n } }

// Setup runs fn once, on a template database of its own named by name,
// after the migrations; every database made with the same name is a copy
// of that template. One set-up per database.
func Setup(name string, fn func(ctx context.Context, conn *pgx.Conn) error) Option {
	return func(o *options) { o.setup = &setupFn{name: name, fn: fn} }
}

// Param sets a run-time parameter on every connection of the pool
// (synchronous_commit=off for a bulk load whose speed is not measured, for
// example).
func Param(name, value string) Option {
	return func(o *options) {
		if o.params == nil {
			o.params = map[string]string{}
		}
		o.params[name] = value
	}
}

// NewDatabase creates a database for the calling benchmark or test, a copy
// of the migrated template, and returns its connection string. The database
// is dropped when the benchmark ends.
func NewDatabase(tb testing.TB, opts ...Option) string {
	tb.Helper()
	o := options{maxConns: 8}
	for _, opt := range opts {
		opt(&o)
	}
	return newDatabase(tb, o)
}

func newDatabase(tb testing.TB, o options) string {
	tb.Helper()
	s := server1(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tpl, err := s.template(ctx, o.setup)
	if err != nil {
		tb.Fatal(err)
	}
	name := "fsmgen_bench_" + randomHex(8)
	if _, err := s.admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+" TEMPLATE "+pgx.Identifier{tpl}.Sanitize()); err != nil {
		tb.Fatalf("benchdb: create database %s: %v", name, err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := s.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			tb.Errorf("benchdb: drop database %s: %v", name, err)
		}
	})
	return s.dsn(name)
}

// NewPool creates a database for the calling benchmark or test (see
// [NewDatabase]) and returns a pool on it, closed when the benchmark ends.
func NewPool(tb testing.TB, opts ...Option) *pgxpool.Pool {
	tb.Helper()
	o := options{maxConns: 8}
	for _, opt := range opts {
		opt(&o)
	}
	dsn := newDatabase(tb, o)
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		tb.Fatalf("benchdb: %v", err)
	}
	cfg.MaxConns = o.maxConns
	for k, v := range o.params {
		cfg.ConnConfig.RuntimeParams[k] = v
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		tb.Fatalf("benchdb: %v", err)
	}
	tb.Cleanup(pool.Close)
	return pool
}

// Querier is what Take and Storage need: *pgx.Conn, *pgxpool.Pool and
// pgx.Tx all satisfy it.
type Querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Counters is a reading of the server's counters; two readings give the
// cost of what ran between them.
type Counters struct {
	// Statements counts the statements executed in the database so far
	// (pg_stat_statements' calls, top-level statements only, those that
	// begin with [Mark] left out); meaningful only when HasStatements.
	Statements    int64
	HasStatements bool
	// ServerTime is the time the server spent executing those statements,
	// and planning them when pg_stat_statements.track_planning is on (it is
	// on the throwaway cluster), in milliseconds; meaningful only when
	// HasStatements. Unlike a benchmark's ns/op it leaves out the client and
	// the scheduling of both processes, so that it stays close to the truth
	// on a busy machine.
	ServerTime float64
	// NextXID is the next transaction id the server will assign: it grows
	// by one with every transaction that writes, in any database.
	NextXID int64
	// WAL is the server's current write-ahead log position, in bytes.
	WAL uint64
	// CPU is the processor time the server's processes have used so far
	// (user and system, the postmaster's children alive and ended), in
	// milliseconds; meaningful only when HasCPU, that is when the server
	// runs on this machine and its processes can be read in /proc. Unlike
	// ServerTime it leaves out the time a statement waits for a processor,
	// which 16 backends on 2 cores spend mostly doing.
	CPU    float64
	HasCPU bool
}

// Take reads the counters, in the database q is connected to.
func Take(ctx context.Context, q Querier) (Counters, error) {
	var c Counters
	var lsn string
	var backend int
	err := q.QueryRow(ctx, Mark+`SELECT pg_current_wal_lsn()::text, pg_snapshot_xmax(pg_current_snapshot())::text::bigint,
		to_regclass('pg_stat_statements') IS NOT NULL, pg_backend_pid()`).Scan(&lsn, &c.NextXID, &c.HasStatements, &backend)
	if err != nil {
		return Counters{}, fmt.Errorf("benchdb: read the server's counters: %w", err)
	}
	c.CPU, c.HasCPU = serverCPU(backend)
	if c.WAL, err = parseLSN(lsn); err != nil {
		return Counters{}, err
	}
	if c.HasStatements {
		err := q.QueryRow(ctx, Mark+`SELECT coalesce(sum(calls), 0)::bigint,
				coalesce(sum(total_exec_time + total_plan_time), 0)::float8 FROM pg_stat_statements
			WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
			AND query NOT LIKE '/* benchdb */%'`).Scan(&c.Statements, &c.ServerTime)
		if err != nil {
			return Counters{}, fmt.Errorf("benchdb: read pg_stat_statements: %w", err)
		}
	}
	return c, nil
}

func parseLSN(s string) (uint64, error) {
	hi, lo, ok := strings.Cut(s, "/")
	h, err1 := strconv.ParseUint(hi, 16, 32)
	l, err2 := strconv.ParseUint(lo, 16, 32)
	if !ok || err1 != nil || err2 != nil {
		return 0, fmt.Errorf("benchdb: malformed WAL position %q", s)
	}
	return h<<32 | l, nil
}

// Cost is what ran between two readings of the counters.
type Cost struct {
	// Statements executed in the database (see Counters.Statements); -1
	// when pg_stat_statements is not loaded.
	Statements int64
	// ServerTime is the server's time on those statements, in
	// milliseconds (see Counters.ServerTime).
	ServerTime float64
	// WriteXacts is the number of transaction ids assigned, server-wide:
	// the transactions that wrote (the readings themselves assign none).
	WriteXacts int64
	// WALBytes is the WAL written, server-wide.
	WALBytes int64
	// CPU is the server's processor time, server-wide, in milliseconds;
	// -1 when it cannot be read (see Counters.CPU).
	CPU float64
}

// Since returns the cost of what ran between before and c.
func (c Counters) Since(before Counters) Cost {
	cost := Cost{Statements: -1, WriteXacts: c.NextXID - before.NextXID, WALBytes: int64(c.WAL - before.WAL), CPU: -1}
	if c.HasCPU && before.HasCPU {
		cost.CPU = c.CPU - before.CPU
	}
	if c.HasStatements && before.HasStatements {
		cost.Statements = c.Statements - before.Statements
		cost.ServerTime = c.ServerTime - before.ServerTime
	}
	return cost
}

// Report reports the cost per operation as benchmark metrics:
// stmts/<unit> and server-µs/<unit> (when counted), server-cpu-µs/<unit>
// (when read), write-xacts/<unit> and WAL-B/<unit>.
func (c Cost) Report(b *testing.B, ops float64, unit string) {
	if c.Statements >= 0 {
		b.ReportMetric(float64(c.Statements)/ops, "stmts/"+unit)
		b.ReportMetric(c.ServerTime*1000/ops, "server-µs/"+unit)
	}
	if c.CPU >= 0 {
		b.ReportMetric(c.CPU*1000/ops, "server-cpu-µs/"+unit)
	}
	b.ReportMetric(float64(c.WriteXacts)/ops, "write-xacts/"+unit)
	b.ReportMetric(float64(c.WALBytes)/ops, "WAL-B/"+unit)
}

// Storage returns the bytes the named tables take on disk, their indexes
// and TOAST included (pg_total_relation_size); with no names, the bytes of
// every table of the current schema.
func Storage(ctx context.Context, q Querier, tables ...string) (int64, error) {
	var n int64
	var err error
	if len(tables) == 0 {
		err = q.QueryRow(ctx, Mark+`SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c
			WHERE c.relkind IN ('r', 'p', 'm') AND c.relnamespace = current_schema()::regnamespace`).Scan(&n)
		tables = []string{"every table of the current schema"}
	} else {
		err = q.QueryRow(ctx, Mark+`SELECT coalesce(sum(pg_total_relation_size(t::regclass)), 0)::bigint FROM unnest($1::text[]) t`, tables).Scan(&n)
	}
	if err != nil {
		return 0, fmt.Errorf("benchdb: size of %s: %w", strings.Join(tables, ", "), err)
	}
	return n, nil
}

// Relations returns the bytes each table, index and TOAST table of the
// current schema takes on disk, by name: a table's heap with its free space
// and visibility maps, each index on its own, and a table's TOAST table
// with its index as "TABLE (toast)". Their sum is [Storage]'s.
func Relations(ctx context.Context, pool *pgxpool.Pool) (map[string]int64, error) {
	rows, err := pool.Query(ctx, Mark+`WITH t AS (
			SELECT c.oid, c.relname, c.reltoastrelid FROM pg_class c
			WHERE c.relkind IN ('r', 'p', 'm') AND c.relnamespace = current_schema()::regnamespace)
		SELECT t.relname, pg_table_size(t.oid) - coalesce(pg_total_relation_size(nullif(t.reltoastrelid, 0)), 0) FROM t
		UNION ALL
		SELECT t.relname || ' (toast)', pg_total_relation_size(t.reltoastrelid) FROM t WHERE t.reltoastrelid <> 0
		UNION ALL
		SELECT i.indexrelid::regclass::text, pg_relation_size(i.indexrelid) FROM t JOIN pg_index i ON i.indrelid = t.oid`)
	if err != nil {
		return nil, fmt.Errorf("benchdb: sizes of the relations: %w", err)
	}
	sizes, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (struct {
		name string
		n    int64
	}, error) {
		var v struct {
			name string
			n    int64
		}
		err := r.Scan(&v.name, &v.n)
		return v, err
	})
	if err != nil {
		return nil, fmt.Errorf("benchdb: sizes of the relations: %w", err)
	}
	m := make(map[string]int64, len(sizes))
	for _, v := range sizes {
		m[v.name] = v.n
	}
	return m, nil
}
