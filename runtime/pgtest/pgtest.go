package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/signal"
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

// EnvURL names the environment variable that points the tests at an existing
// server instead of a throwaway cluster.
const EnvURL = "FSMGEN_TEST_DATABASE_URL"

const installHint = `pgtest: no PostgreSQL server to test against.
%s
Either install the PostgreSQL server binaries (Debian/Ubuntu: apt-get install -y postgresql; Fedora: dnf install postgresql-server; macOS: brew install postgresql),
or set ` + EnvURL + ` to a server whose user may create databases, for example
	` + EnvURL + `='postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable'`

var (
	mainRunning atomic.Bool

	setupOnce sync.Once
	srv       *server
	srvErr    error
)

// server is where test databases are created.
type server struct {
	// base is the connection string of the maintenance database; dsn
	// derives the string of any other database from it.
	base     string
	admin    *pgxpool.Pool
	template string
	cluster  *pgcluster.Cluster // nil when the server came from EnvURL
}

// Main runs the tests of a package and stops the throwaway cluster, if one
// was started, when they end, also when they fail or the process is
// interrupted. Call it from TestMain:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
func Main(m *testing.M) { os.Exit(Run(m)) }

// Run is Main for a TestMain that has more to do after the tests (stop a
// server of its own): it runs them, stops the throwaway cluster and
// returns m.Run's exit code.
func Run(m *testing.M) int {
	mainRunning.Store(true)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sig
		teardown()
		fmt.Fprintf(os.Stderr, "pgtest: %v: test database server stopped\n", s)
		os.Exit(1)
	}()
	code := m.Run()
	signal.Stop(sig)
	teardown()
	return code
}

var teardownOnce sync.Once

func teardown() {
	teardownOnce.Do(func() {
		if srv == nil {
			return
		}
		closeOpened()
		if srv.cluster == nil && srv.admin != nil && srv.template != "" {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			_, _ = srv.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{srv.template}.Sanitize()+" WITH (FORCE)")
			cancel()
		}
		if srv.admin != nil {
			srv.admin.Close()
		}
		if srv.cluster != nil {
			if err := srv.cluster.Stop(); err != nil {
				fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
			}
		}
	})
}

func setup() (*server, error) {
	setupOnce.Do(func() { srv, srvErr = newServer() })
	return srv, srvErr
}

func newServer() (*server, error) {
	s := &server{}
	if u := os.Getenv(EnvURL); u != "" {
		s.base = u
	} else {
		c, err := pgcluster.Start(context.Background())
		if errors.Is(err, pgcluster.ErrNoServerBinaries) {
			return nil, fmt.Errorf(installHint, EnvURL+" is not set, and "+err.Error()+".")
		}
		if err != nil {
			return nil, fmt.Errorf("pgtest: %w", err)
		}
		s.cluster = c
		s.base = c.DSN("postgres")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var err error
	if s.admin, err = pgxpool.New(ctx, s.base); err != nil {
		s.fail()
		return nil, fmt.Errorf("pgtest: connect to %s: %w", redact(s.base), err)
	}
	if err := s.admin.Ping(ctx); err != nil {
		s.fail()
		return nil, fmt.Errorf("pgtest: connect to %s: %w", redact(s.base), err)
	}
	s.template = "fsmgen_tpl_" + randomHex(6)
	if _, err := s.admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{s.template}.Sanitize()); err != nil {
		s.fail()
		return nil, fmt.Errorf("pgtest: create template database: %w", err)
	}
	conn, err := pgx.Connect(ctx, s.dsn(s.template))
	if err != nil {
		s.fail()
		return nil, fmt.Errorf("pgtest: connect to template database: %w", err)
	}
	err = db.Migrate(ctx, conn)
	conn.Close(ctx)
	if err != nil {
		s.fail()
		return nil, fmt.Errorf("pgtest: migrate template database: %w", err)
	}
	return s, nil
}

// fail releases what a half-built server holds.
func (s *server) fail() {
	if s.admin != nil {
		if s.template != "" && s.cluster == nil {
			_, _ = s.admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+pgx.Identifier{s.template}.Sanitize())
		}
		s.admin.Close()
	}
	if s.cluster != nil {
		_ = s.cluster.Stop()
	}
}

// dsn returns the connection string of database name on the server.
func (s *server) dsn(name string) string {
	if s.cluster != nil {
		return s.cluster.DSN(name)
	}
	return withDatabase(s.base, name)
}

func withDatabase(conn, name string) string {
	if strings.HasPrefix(conn, "postgres://") || strings.HasPrefix(conn, "postgresql://") {
		u, err := url.Parse(conn)
		if err == nil {
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

// Option changes what NewPool and NewDatabase make.
type Option func(*options)

type options struct {
	maxConns   int32
	empty      bool
	invariants bool
}

// MaxConns sets the pool's maximum number of connections (default 8).
func MaxConns(n int32) Option { return func(o *options) { o.maxConns = n } }

// Empty makes the database empty instead of migrated, for tests of the
// migrations themselves. The invariant check is skipped for it.
func Empty() Option { return func(o *options) { o.empty = true; o.invariants = false } }

// SkipInvariants turns off the invariant check after the test, for a test
// that leaves a run disagreeing with its log on purpose.
func SkipInvariants() Option { return func(o *options) { o.invariants = false } }

// NewDatabase creates a database for the calling test, migrated unless
// [Empty] is given, and returns its connection string. The database is
// dropped when the test ends, after the invariant check.
func NewDatabase(tb testing.TB, opts ...Option) string {
	tb.Helper()
	o := options{maxConns: 8, invariants: true}
	for _, opt := range opts {
		opt(&o)
	}
	return newDatabase(tb, o)
}

func newDatabase(tb testing.TB, o options) string {
	tb.Helper()
	if !mainRunning.Load() {
		tb.Fatal("pgtest: the package's tests must run through pgtest.Main: add func TestMain(m *testing.M) { pgtest.Main(m) }")
	}
	s, err := setup()
	if err != nil {
		tb.Fatal(err)
	}
	name := "fsmgen_test_" + randomHex(8)
	source := s.template
	if o.empty {
		source = "template0"
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := s.admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+" TEMPLATE "+pgx.Identifier{source}.Sanitize()); err != nil {
		tb.Fatalf("pgtest: create database %s: %v", name, err)
	}
	dsn := s.dsn(name)
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if o.invariants && !tb.Skipped() {
			if err := checkDatabase(ctx, dsn); err != nil {
				tb.Errorf("pgtest: after %s: %v", tb.Name(), err)
			}
		}
		if _, err := s.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			tb.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	return dsn
}

func checkDatabase(ctx context.Context, dsn string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("invariant check: %w", err)
	}
	defer conn.Close(ctx)
	return CheckInvariants(ctx, conn)
}

// NewPool creates a database for the calling test (see [NewDatabase]) and
// returns a pool on it, closed when the test ends.
func NewPool(tb testing.TB, opts ...Option) *pgxpool.Pool {
	tb.Helper()
	o := options{maxConns: 8, invariants: true}
	for _, opt := range opts {
		opt(&o)
	}
	dsn := newDatabase(tb, o)
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	cfg.MaxConns = o.maxConns
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	// Registered after the database's cleanup, so it runs before it.
	tb.Cleanup(pool.Close)
	return pool
}

// opened are the databases OpenPool made, with their pools, for teardown.
var (
	openedMu sync.Mutex
	opened   []openedDB
)

type openedDB struct {
	name string
	pool *pgxpool.Pool
}

// OpenPool creates a migrated database like NewPool, for code that has no
// testing.TB: an Example of a package whose TestMain calls Main. Its pool
// is closed and the database dropped when Main ends, after the package's
// tests and examples; no invariant check runs on it.
func OpenPool(ctx context.Context) (*pgxpool.Pool, error) {
	if !mainRunning.Load() {
		return nil, errors.New("pgtest: the package's tests must run through pgtest.Main: add func TestMain(m *testing.M) { pgtest.Main(m) }")
	}
	s, err := setup()
	if err != nil {
		return nil, err
	}
	name := "fsmgen_test_" + randomHex(8)
	if _, err := s.admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+" TEMPLATE "+pgx.Identifier{s.template}.Sanitize()); err != nil {
		return nil, fmt.Errorf("pgtest: create database %s: %w", name, err)
	}
	pool, err := pgxpool.New(ctx, s.dsn(name))
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	openedMu.Lock()
	defer openedMu.Unlock()
	opened = append(opened, openedDB{name: name, pool: pool})
	return pool, nil
}

// closeOpened closes the pools of OpenPool and drops their databases.
func closeOpened() {
	openedMu.Lock()
	defer openedMu.Unlock()
	for _, o := range opened {
		o.pool.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, _ = srv.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{o.name}.Sanitize()+" WITH (FORCE)")
		cancel()
	}
	opened = nil
}

// Querier is what CheckInvariants needs: *pgx.Conn, *pgxpool.Pool and pgx.Tx
// all satisfy it.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// ErrInvariant is matched by errors.Is on the error CheckInvariants returns
// when a run and its log disagree.
var ErrInvariant = errors.New("runs and their logs disagree")

// CheckInvariants checks, for every run in the database, that current_state
// and row_version are those of the run's last logged state change, that the
// logged state changes chain from the creation of the run, and that each
// logged transition is a row of the registered table of the run's type and
// version (to or from a configuration of a parallel state: moves along its
// rows, as fsmgen_parallel_refusal checks). It returns nil when they all hold, or an error listing the first
// violations found.
func CheckInvariants(ctx context.Context, q Querier) error {
	rows, err := q.Query(ctx, invariantSQL)
	if err != nil {
		return fmt.Errorf("invariant check: %w", err)
	}
	problems, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("invariant check: %w", err)
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%w:\n\t%s", ErrInvariant, strings.Join(problems, "\n\t"))
}

const invariantSQL = `
WITH changes AS (
    SELECT l.*,
        lag(l.state_after) OVER w AS prev_after,
        lag(l.row_version) OVER w AS prev_version,
        lag(l.definition_version) OVER w AS prev_definition_version,
        row_number() OVER w AS n,
        count(*) OVER (PARTITION BY l.workflow_run_id) AS total
    FROM workflow_step_logs l
    WHERE l.kind <> 'step'
    WINDOW w AS (PARTITION BY l.workflow_run_id ORDER BY l.id)
), problems AS (
    SELECT r.id AS run_id, 0::bigint AS log_id,
        format('current_state %s at row version %s, but the last logged state change is %s',
            r.current_state, r.row_version,
            coalesce(format('%s at row version %s (log row %s)', c.state_after, c.row_version, c.id), 'missing')) AS problem
    FROM workflow_runs r
    LEFT JOIN changes c ON c.workflow_run_id = r.id AND c.n = c.total
    WHERE c.state_after IS DISTINCT FROM r.current_state OR c.row_version IS DISTINCT FROM r.row_version
    UNION ALL
    SELECT c.workflow_run_id, c.id,
        format('log row %s (%s %s -[%s]-> %s): %s', c.id, c.kind, c.state_before, c.event, c.state_after, p.problem)
    FROM changes c
    CROSS JOIN LATERAL (SELECT CASE
        WHEN c.n = 1 AND c.kind <> 'created' THEN 'the first state change of a run is not its creation'
        WHEN c.n > 1 AND c.kind = 'created' THEN 'a second creation'
        WHEN c.kind = 'created' AND c.state_after IS DISTINCT FROM (
            SELECT d.initial_state FROM workflow_definitions d
            WHERE d.workflow_type = c.workflow_type AND d.version = c.definition_version)
            THEN 'created outside the initial state'
        WHEN c.n > 1 AND c.state_before IS DISTINCT FROM c.prev_after
            THEN format('starts from %s but the previous change left the run in %s', c.state_before, c.prev_after)
        WHEN c.n > 1 AND c.row_version IS DISTINCT FROM c.prev_version + 1
            THEN format('row version %s follows %s', c.row_version, c.prev_version)
        WHEN c.kind = 'transition' AND (strpos(c.state_before, '|') > 0 OR strpos(c.state_after, '|') > 0)
            AND fsmgen_parallel_refusal(c.workflow_type, c.definition_version, c.state_before, c.event, c.state_after) IS NOT NULL
            THEN 'not in the registered transition table: '
                || fsmgen_parallel_refusal(c.workflow_type, c.definition_version, c.state_before, c.event, c.state_after)
        WHEN c.kind = 'transition' AND strpos(c.state_before, '|') = 0 AND strpos(c.state_after, '|') = 0 AND NOT EXISTS (
            SELECT 1 FROM workflow_transitions t
            WHERE t.workflow_type = c.workflow_type AND t.version = c.definition_version
              AND t.from_state = c.state_before AND t.event = c.event AND t.to_state = c.state_after)
            THEN 'not in the registered transition table'
        WHEN c.kind = 'restarted' AND (
            c.state_after IS DISTINCT FROM (
                SELECT d.initial_state FROM workflow_definitions d
                WHERE d.workflow_type = c.workflow_type AND d.version = c.definition_version)
            OR NOT EXISTS (
                SELECT 1 FROM workflow_states s
                WHERE s.workflow_type = c.workflow_type AND s.version = c.prev_definition_version
                  AND s.state = c.state_before AND s.status = 'failed'))
            THEN 'a restart that is not from a failed state to the initial state'
        WHEN c.kind = 'migrated' AND (strpos(c.state_before, '|') > 0 OR strpos(c.state_after, '|') > 0)
            AND fsmgen_upgrade_refusal(c.workflow_run_id, c.attempt_no, c.workflow_type, c.prev_definition_version,
                c.definition_version, c.state_before, c.state_after) IS NOT NULL
            THEN 'an upgrade that the registered upgrade does not make: '
                || fsmgen_upgrade_refusal(c.workflow_run_id, c.attempt_no, c.workflow_type, c.prev_definition_version,
                    c.definition_version, c.state_before, c.state_after)
        WHEN c.kind = 'migrated' AND strpos(c.state_before, '|') = 0 AND strpos(c.state_after, '|') = 0 AND NOT EXISTS (
            SELECT 1 FROM workflow_migration_rules m
            WHERE m.workflow_type = c.workflow_type AND m.from_version = c.prev_definition_version
              AND m.to_version = c.definition_version AND m.from_state = c.state_before
              AND m.to_state = c.state_after)
            THEN 'an upgrade that no registered upgrade declares'
        END AS problem) p
    WHERE p.problem IS NOT NULL
)
SELECT format('run %s: %s', run_id, problem) FROM problems ORDER BY run_id, log_id LIMIT 20`
