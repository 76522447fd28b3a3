package benchdb

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// The floor is what the server can commit at all: one single-row INSERT per
// transaction, one round trip each, into a table with a bigserial key and
// nothing else. FloorTable is created by [Floor] and [Pgbench] in the
// benchmark's database, and FloorInsert is the statement both run.
const (
	FloorTable  = "bench_floor"
	FloorInsert = "INSERT INTO bench_floor (v) VALUES ($1)"
)

const floorCreate = Mark + "CREATE TABLE IF NOT EXISTS bench_floor (id BIGSERIAL PRIMARY KEY, v BIGINT NOT NULL)"

// Result is what [Run] measured.
type Result struct {
	// Ops is the number of operations, Elapsed the wall time they took.
	Ops     int
	Elapsed time.Duration
	// Latencies holds the time of each operation, sorted.
	Latencies []time.Duration
	// Cost is the server's work over the measured stretch.
	Cost Cost
}

// PerSecond returns the operations per second.
func (r Result) PerSecond() float64 { return float64(r.Ops) / r.Elapsed.Seconds() }

// Percentile returns the latency below which the fraction p of the
// operations fell, in microseconds.
func (r Result) Percentile(p float64) float64 {
	if len(r.Latencies) == 0 {
		return 0
	}
	return float64(r.Latencies[int(p*float64(len(r.Latencies)-1))].Nanoseconds()) / 1e3
}

// Report reports ops/s, p50-µs and p99-µs (when the latencies were
// measured) and the server's work per operation (see [Cost.Report]).
func (r Result) Report(b *testing.B) {
	b.ReportMetric(r.PerSecond(), "ops/s")
	if len(r.Latencies) > 0 {
		b.ReportMetric(r.Percentile(0.50), "p50-µs")
		b.ReportMetric(r.Percentile(0.99), "p99-µs")
	}
	r.Cost.Report(b, float64(r.Ops), "op")
}

// Warm opens n connections of pool at once and runs each statement of
// stmts on every one of them (with no arguments, so none may take any),
// then releases them: the connections' start-up, their server processes'
// first catalog reads and pgx's statement preparation then happen before
// the clock starts rather than inside the measured stretch, where they
// would make a short run at many connections look slow.
func Warm(tb testing.TB, pool *pgxpool.Pool, n int, stmts ...string) {
	tb.Helper()
	ctx := context.Background()
	conns := make([]*pgxpool.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	var mu sync.Mutex
	var wg sync.WaitGroup
	var firstErr error
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := pool.Acquire(ctx)
			if err == nil {
				for _, s := range append([]string{Mark + "SELECT 1"}, stmts...) {
					if _, err = c.Exec(ctx, s); err != nil {
						err = fmt.Errorf("%s: %w", s, err)
						break
					}
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if c != nil {
				conns = append(conns, c)
			}
			if err != nil && firstErr == nil {
				firstErr = err
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		tb.Fatalf("benchdb: warm %d connections: %v", n, firstErr)
	}
}

// Run runs ops operations from c goroutines, op(worker, n) with n from 1 to
// ops, with a benchmark's clock running only around them, and returns what
// it measured: the wall time, each operation's latency and the server's
// work in the database of q (see [Take]). It stops the benchmark or test at
// the first error.
func Run(tb testing.TB, q Querier, c, ops int, op func(worker, n int) error) Result {
	tb.Helper()
	ctx := context.Background()
	before, err := Take(ctx, q)
	if err != nil {
		tb.Fatal(err)
	}
	var next atomic.Int64
	lat := make([][]time.Duration, c)
	errs := make([]error, c)
	var wg sync.WaitGroup
	resetTimer(tb)
	began := time.Now()
	for w := range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				n := next.Add(1)
				if n > int64(ops) {
					return
				}
				t0 := time.Now()
				if err := op(w, int(n)); err != nil {
					errs[w] = err
					return
				}
				lat[w] = append(lat[w], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(began)
	stopTimer(tb)
	after, err := Take(ctx, q)
	if err != nil {
		tb.Fatal(err)
	}
	if err := errors.Join(errs...); err != nil {
		tb.Fatal(err)
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	return Result{Ops: ops, Elapsed: elapsed, Latencies: all, Cost: after.Since(before)}
}

// Floor runs ops floor INSERTs ([FloorInsert]) from c goroutines on pool,
// c of its connections warmed first, and returns what [Run] measured.
func Floor(tb testing.TB, pool *pgxpool.Pool, c, ops int) Result {
	tb.Helper()
	ctx := context.Background()
	if _, err := pool.Exec(ctx, floorCreate); err != nil {
		tb.Fatalf("benchdb: create %s: %v", FloorTable, err)
	}
	Warm(tb, pool, c, Mark+"INSERT INTO bench_floor (v) VALUES (0)")
	return Run(tb, pool, c, ops, func(_, n int) error {
		_, err := pool.Exec(ctx, FloorInsert, n)
		return err
	})
}

// pgbenchScript is the floor's INSERT as a pgbench script: with -M
// prepared it is prepared once per connection and then bound and executed
// in one round trip, as pgx runs FloorInsert.
const pgbenchScript = `\set v random(1, 1000000000)
INSERT INTO bench_floor (v) VALUES (:v);
`

var (
	tpsLine = regexp.MustCompile(`(?m)^tps = ([0-9.]+) \(without initial connection time\)`)
	txLine  = regexp.MustCompile(`(?m)^number of transactions actually processed: ([0-9]+)`)
)

// PgbenchPath returns the pgbench binary: the one on PATH, else the one in
// `pg_config --bindir`, else in the newest /usr/lib/postgresql/*/bin (where
// pgcluster finds the server's binaries too; benchdb looks on its own so
// that the harness builds against older revisions of the runtime). It
// returns an error saying where it looked when there is none.
func PgbenchPath() (string, error) {
	if p, err := exec.LookPath("pgbench"); err == nil {
		return p, nil
	}
	var dirs []string
	if p, err := exec.LookPath("pg_config"); err == nil {
		if out, err := exec.Command(p, "--bindir").Output(); err == nil {
			dirs = append(dirs, strings.TrimSpace(string(out)))
		}
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(found, func(a, b string) int { return cmp.Compare(pgMajor(b), pgMajor(a)) })
	for _, d := range append(dirs, found...) {
		p := filepath.Join(d, "pgbench")
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	return "", errors.New("pgbench is not on PATH, in `pg_config --bindir` or in /usr/lib/postgresql/*/bin")
}

func pgMajor(bindir string) float64 {
	v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(bindir)), 64)
	return v
}

// PgbenchTime is how long [Pgbench] runs pgbench for (its -T).
var PgbenchTime = flag.Duration("pgbench-time", 3*time.Second, "how long the pgbench cross-check of the floor runs, rounded to whole seconds")

// Pgbench runs the floor INSERT with pgbench, PostgreSQL's own client, as
// a cross-check of [Floor] that owes nothing to Go or pgx: pgbench -n -M
// prepared -c c -j c -T PgbenchTime on the database of pool, and returns
// the transactions per second pgbench reports without its connections'
// start-up, with the server's work per transaction. The run is timed, so
// b.N does not set its length; when b.N is 1 (go test's first call of a
// benchmark, before the measured one) each client runs one transaction
// instead (-t 1). It skips the benchmark, saying why, when there is no
// pgbench binary (see [PgbenchPath]).
func Pgbench(tb testing.TB, pool *pgxpool.Pool, c int) Result {
	tb.Helper()
	bin, err := PgbenchPath()
	if err != nil {
		tb.Skipf("benchdb: the pgbench cross-check of the floor is skipped: %v (Debian/Ubuntu: it comes with the server, apt-get install -y postgresql)", err)
	}
	ctx := context.Background()
	if _, err := pool.Exec(ctx, floorCreate); err != nil {
		tb.Fatalf("benchdb: create %s: %v", FloorTable, err)
	}
	script := filepath.Join(tb.TempDir(), "floor.sql")
	if err := os.WriteFile(script, []byte(pgbenchScript), 0o644); err != nil {
		tb.Fatal(err)
	}
	length := []string{"-T", strconv.Itoa(max(1, int(PgbenchTime.Round(time.Second).Seconds())))}
	if b, ok := tb.(*testing.B); ok && b.N == 1 {
		length = []string{"-t", "1"}
	}
	before, err := Take(ctx, pool)
	if err != nil {
		tb.Fatal(err)
	}
	args := append([]string{"-n", "-M", "prepared", "-f", script, "-c", strconv.Itoa(c), "-j", strconv.Itoa(c)}, length...)
	cmd := exec.CommandContext(ctx, bin, append(args, pool.Config().ConnString())...)
	resetTimer(tb)
	out, err := cmd.CombinedOutput()
	stopTimer(tb)
	if err != nil {
		tb.Fatalf("benchdb: %s: %v\n%s", strings.Join(cmd.Args[:len(cmd.Args)-1], " "), err, out)
	}
	after, err := Take(ctx, pool)
	if err != nil {
		tb.Fatal(err)
	}
	m := tpsLine.FindSubmatch(out)
	if m == nil {
		tb.Fatalf("benchdb: no %q line in pgbench's output:\n%s", "tps = ... (without initial connection time)", out)
	}
	tps, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil || tps <= 0 {
		tb.Fatalf("benchdb: pgbench's tps %q: %v", m[1], err)
	}
	processed := txLine.FindSubmatch(out)
	if processed == nil {
		tb.Fatalf("benchdb: no %q line in pgbench's output:\n%s", "number of transactions actually processed: ...", out)
	}
	n, err := strconv.Atoi(string(processed[1]))
	if err != nil || n <= 0 {
		tb.Fatalf("benchdb: pgbench's transactions %q: %v", processed[1], err)
	}
	return Result{Ops: n, Elapsed: time.Duration(float64(n) / tps * float64(time.Second)), Cost: after.Since(before)}
}

func resetTimer(tb testing.TB) {
	if b, ok := tb.(*testing.B); ok {
		b.ResetTimer()
	}
}

func stopTimer(tb testing.TB) {
	if b, ok := tb.(*testing.B); ok {
		b.StopTimer()
	}
}
