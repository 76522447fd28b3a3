package benchdb

import (
	"context"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMain(m *testing.M) { Main(m) }

func TestDurable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		d    Durability
		want bool
	}{
		{Durability{Fsync: "on", SynchronousCommit: "on", FullPageWrites: "on"}, true},
		{Durability{Fsync: "on", SynchronousCommit: "remote_apply", FullPageWrites: "on"}, true},
		{Durability{Fsync: "off", SynchronousCommit: "on", FullPageWrites: "on"}, false},
		{Durability{Fsync: "on", SynchronousCommit: "off", FullPageWrites: "on"}, false},
		{Durability{Fsync: "on", SynchronousCommit: "on", FullPageWrites: "off"}, false},
		{Durability{Fsync: "on", SynchronousCommit: "on", FullPageWrites: "on", TmpFS: true}, false},
	} {
		if got := tc.d.Durable(); got != tc.want {
			t.Errorf("%s: Durable() = %v, want %v", tc.d, got, tc.want)
		}
	}
}

// TestServerIsDurable checks that the server the benchmarks get, the
// throwaway cluster unless FSMGEN_BENCH_DATABASE_URL names one, is durable.
func TestServerIsDurable(t *testing.T) {
	t.Parallel()
	info := Server(t)
	if !info.Durability.Durable() {
		t.Errorf("%s: not durable: %s", info.Source, info.Durability)
	}
	if info.Source != EnvURL && !info.Statements {
		t.Errorf("the throwaway cluster does not load pg_stat_statements")
	}
}

// TestCountersCountWhatRanBetween writes three rows in three transactions
// The server's processor time counts the work of its backends: a
// statement that computes for a while shows it, however busy the machine.
func TestCountersCountTheServersProcessorTime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := NewPool(t)
	before, err := Take(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if !before.HasCPU {
		if runtime.GOOS == "linux" && Server(t).Source != EnvURL {
			t.Fatal("HasCPU is false for the throwaway cluster on Linux, whose processes /proc shows")
		}
		t.Skipf("the server's processes are not readable here (%s, %s)", runtime.GOOS, Server(t).Source)
	}
	if _, err := pool.Exec(ctx, Mark+"SELECT count(*) FROM generate_series(1, 5000000)"); err != nil {
		t.Fatal(err)
	}
	after, err := Take(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	// 5M rows take some 300 ms of a backend's time; a tenth of it is
	// well above the 10 ms resolution of /proc.
	if cost := after.Since(before); cost.CPU < 30 {
		t.Errorf("CPU = %.0f ms for a 5M-row count, want at least 30", cost.CPU)
	}
}

// between two readings.
func TestCountersCountWhatRanBetween(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := NewPool(t)
	if _, err := pool.Exec(ctx, "CREATE TABLE t (id BIGSERIAL PRIMARY KEY, v TEXT NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	empty, err := Storage(ctx, pool, "t")
	if err != nil {
		t.Fatal(err)
	}
	before, err := Take(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := pool.Exec(ctx, "INSERT INTO t (v) VALUES ($1)", "a row of some length"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, Mark+"SELECT count(*) FROM t"); err != nil {
		t.Fatal(err)
	}
	after, err := Take(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	cost := after.Since(before)
	if Server(t).Statements {
		if diff := cmp.Diff(int64(3), cost.Statements); diff != "" {
			t.Errorf("statements between the readings (-want +got):\n%s", diff)
		}
	} else if cost.Statements != -1 {
		t.Errorf("Statements = %d without pg_stat_statements, want -1", cost.Statements)
	}
	// Server-wide: other databases' writers may add to them.
	if cost.WriteXacts < 3 {
		t.Errorf("WriteXacts = %d, want at least 3", cost.WriteXacts)
	}
	if cost.WALBytes < 3*int64(len("a row of some length")) {
		t.Errorf("WALBytes = %d, want at least the rows' bytes", cost.WALBytes)
	}
	full, err := Storage(ctx, pool, "t")
	if err != nil {
		t.Fatal(err)
	}
	if full <= empty {
		t.Errorf("Storage of t: %d bytes empty, %d with three rows; want it to grow", empty, full)
	}
	all, err := Storage(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if all <= full {
		t.Errorf("Storage of every table: %d bytes, not more than t's %d with the runtime's tables beside it", all, full)
	}
}

func TestParseLSN(t *testing.T) {
	t.Parallel()
	got, err := parseLSN("1/2A")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(uint64(1<<32|0x2a), got); diff != "" {
		t.Errorf("parseLSN(1/2A) (-want +got):\n%s", diff)
	}
	if _, err := parseLSN("12"); err == nil {
		t.Error("parseLSN(12) gave no error")
	}
}
