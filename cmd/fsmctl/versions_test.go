package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/db"
	"github.com/fsmgen/fsmgen/machines/shipping"
	"github.com/fsmgen/fsmgen/machines/shipping/shipment"
	"github.com/fsmgen/fsmgen/machines/shipping/shipmentv1"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
	"github.com/fsmgen/fsmgen/runtime/enginetest"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

const shipOwner = "00000000-0000-4000-8000-00000000a11c"

// shipEnv is a database with shipment runs on version 1, made by an engine
// of the release before the change.
type shipEnv struct {
	url  string
	pool *pgxpool.Pool
	st   *store.Store
	eng  *engine.Engine
}

func newShipEnv(t *testing.T) *shipEnv {
	t.Helper()
	url := pgtest.NewDatabase(t)
	pool := openPool(t, url)
	st := store.New(pool)
	eng, err := engine.New(st, engine.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Register(context.Background(), shipping.DriverV1()); err != nil {
		t.Fatal(err)
	}
	// fsmctl runs as an operator role; the engine, the test's own pool.
	return &shipEnv{url: pgtest.RoleDSN(t, url, db.RoleOperator), pool: pool, st: st, eng: eng}
}

// run starts a version 1 run and moves it with evs, through the store as
// its handlers would (callers may not send a driven state's events).
func (e *shipEnv) run(t *testing.T, key string, evs ...runtime.Event) runtime.Run {
	t.Helper()
	ctx := context.Background()
	res, err := e.eng.Start(ctx, runtime.StartRequest{Type: shipment.Type, IdempotencyKey: key, Owner: runtime.Owner{TenantID: "t", UserID: shipOwner}, Input: shipping.Order{Parcels: 1}})
	if err != nil {
		t.Fatal(err)
	}
	d := shipping.DriverV1()
	for _, ev := range evs {
		run, rec, err := e.st.Load(ctx, res.Run.ID, d.Definition())
		if err != nil {
			t.Fatal(err)
		}
		rt := run
		if err := d.Fire(ctx, &rt, run.State, ev, rec); err != nil {
			t.Fatal(err)
		}
	}
	run, err := e.st.Get(ctx, res.Run.ID)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// upgrade registers version 2 as the new release does, with its upgrade.
func (e *shipEnv) upgrade(t *testing.T) {
	t.Helper()
	if err := e.eng.Register(context.Background(), shipping.DriverV2()); err != nil {
		t.Fatal(err)
	}
}

func TestVersionsPlanUpgradeStatus(t *testing.T) {
	t.Parallel()
	e := newShipEnv(t)
	ctx := context.Background()
	e.run(t, "created")
	labeling := e.run(t, "labeling", shipmentv1.Start{}, shipmentv1.Packed{Parcels: 1})
	held := e.run(t, "held", shipmentv1.Start{}, shipmentv1.Packed{Parcels: 1}, shipmentv1.Held{})
	e.run(t, "awaiting", shipmentv1.Start{}, shipmentv1.Packed{Parcels: 1}, shipmentv1.Labeled{Carrier: "ups"})
	leased := e.run(t, "leased", shipmentv1.Start{})
	leased, err := enginetest.AbandonClaim(ctx, e.st, "dead-worker", leased.ID, time.Hour)
	if err != nil {
		t.Fatal(err)
	}

	// Before the new release: no upgrade to plan.
	got := withDB(t, e.url, "versions", "plan", "shipment", "1", "2")
	want := result{Code: exitFailure, Stderr: "fsmctl: store: read upgrade of shipment from v1 to v2: no upgrade registered: v2 is not registered either; deploy it first; without one, the runs of v1 drain on v1\n"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("plan before v2 (-want +got):\n%s", diff)
	}

	e.upgrade(t)
	got = withDB(t, e.url, "versions", "plan", "shipment", "1", "2")
	lease := leased.Lease.ExpiresAt.UTC().Format("2006-01-02T15:04:05.000Z")
	stuck := []string{
		fmt.Sprintf("%s  HELD     \"HELD drain\": it finishes on v1", held.ID),
		fmt.Sprintf("%s  PACKING  leased by dead-worker until %s: it moves once the lease is given up", leased.ID, lease),
	}
	if held.ID > leased.ID {
		stuck[0], stuck[1] = stuck[1], stuck[0]
	}
	want = result{Code: exitOK, Stdout: `shipment v1 -> v2: 5 live runs, 3 to move now

RULE                                RUNS  LEASED
CREATED -> CREATED                  1     0
PACKING -> PACKING                  1     1
LABELING -> LABELING when Returned  0     0
LABELING -> WEIGHING                1     0
HELD drain                          1     0
AWAITING -> AWAITING timers keep    1     0

2 runs cannot move now:
ID                                    STATE    REASON
` + stuck[0] + "\n" + stuck[1] + "\n"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("plan (-want +got):\n%s", diff)
	}

	// The leased run is not given up within -wait: the command says so.
	got = withDB(t, e.url, "versions", "upgrade", "-wait", "0s", "shipment", "1", "2")
	want = result{Code: exitFailure,
		Stdout: "pass 1: moved 3, leased 1, left to drain 1, admitted by no rule 0\n",
		Stderr: "fsmctl: shipment v1 -> v2: 3 runs moved; 1 runs are still leased by workers after 0s: run the command again later\n"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("upgrade with a leased run (-want +got):\n%s", diff)
	}
	// The dead worker's lease ends; the next run of the command moves it.
	if _, err := e.pool.Exec(ctx, `UPDATE workflow_runs SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, leased.ID); err != nil {
		t.Fatal(err)
	}
	got = withDB(t, e.url, "versions", "upgrade", "shipment", "1", "2")
	want = result{Code: exitOK, Stdout: "pass 1: moved 1, leased 0, left to drain 1, admitted by no rule 0\n" +
		"shipment v1 -> v2: 1 runs moved; 1 left on v1 to drain, 0 admitted by no rule\n"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("upgrade again (-want +got):\n%s", diff)
	}
	got = withDB(t, e.url, "versions", "status", "shipment")
	want = result{Code: exitOK, Stdout: `VERSION  LIVE  PARKED  LEASED  FINISHED  UPGRADES TO  DRAINS BESIDE
1        1     0       0       0         v2           -
2        4     0       0       0         -            -

shipment v1 live runs by state: HELD 1

shipment v2 live runs by state: AWAITING 1, CREATED 1, PACKING 1, WEIGHING 1
`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	if run, err := e.st.Get(ctx, labeling.ID); err != nil || run.State != "WEIGHING" || run.Version != 2 {
		t.Errorf("labeling run: %+v, %v; want WEIGHING at v2", run, err)
	}
	if err := pgtest.CheckInvariants(ctx, e.pool); err != nil {
		t.Fatal(err)
	}
}

func TestVersionsUsageErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args   []string
		stderr string
	}{
		{[]string{"versions"}, "fsmctl: versions needs a subcommand: status, plan or upgrade"},
		{[]string{"versions", "drop"}, `fsmctl: unknown command "versions drop": versions has status, plan and upgrade`},
		{[]string{"versions", "status"}, "fsmctl versions status: want one TYPE, got 0 arguments"},
		{[]string{"versions", "plan", "shipment", "1"}, "fsmctl versions plan: want TYPE FROM TO, got 2 arguments"},
		{[]string{"versions", "plan", "shipment", "one", "2"}, `fsmctl versions plan: version "one": want a whole number >= 1`},
		{[]string{"versions", "upgrade", "shipment", "2", "1"}, "fsmctl versions upgrade: runs are upgraded from an older version to a newer one, not from 2 to 1"},
		{[]string{"versions", "upgrade", "-batch", "0", "shipment", "1", "2"}, "fsmctl versions upgrade: -batch 0 is not in 1..10000"},
	}
	for _, tt := range tests {
		got := fsmctl(t, nil, tt.args...)
		first, _, _ := strings.Cut(got.Stderr, "\n")
		if diff := cmp.Diff(result{Code: exitUsage, Stderr: tt.stderr}, result{Code: got.Code, Stdout: got.Stdout, Stderr: first}); diff != "" {
			t.Errorf("fsmctl %s (-want +got):\n%s", strings.Join(tt.args, " "), diff)
		}
	}
}

// TestVersionsUpgradeCrashThenResume kills a real fsmctl process in the
// middle of an upgrade, inside the transaction of one run, and upgrades
// again: every run moves exactly once, none is lost.
func TestVersionsUpgradeCrashThenResume(t *testing.T) {
	t.Parallel()
	e := newShipEnv(t)
	ctx := context.Background()
	const n = 8
	var ids []string
	for i := range n {
		ids = append(ids, e.run(t, fmt.Sprintf("run-%d", i), shipmentv1.Start{}, shipmentv1.Packed{Parcels: 1}).ID)
	}
	e.upgrade(t)
	// The upgrade goes in id order; the test holds the fourth run's row,
	// so that the process blocks inside that run's transaction.
	var sorted []string
	rows, err := e.pool.Query(ctx, `SELECT id::text FROM workflow_runs ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		sorted = append(sorted, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	blocker, err := e.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Rollback(ctx)
	if _, err := blocker.Exec(ctx, `SELECT 1 FROM workflow_runs WHERE id = $1 FOR UPDATE`, sorted[3]); err != nil {
		t.Fatal(err)
	}

	bin := filepath.Join(t.TempDir(), "fsmctl")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build fsmctl: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "versions", "upgrade", "-batch", "1", "shipment", "1", "2")
	cmd.Env = append(os.Environ(), EnvDatabaseURL+"="+withAppName(e.url, "fsmctl-crash"))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Three runs are moved, one batch each; then the process waits for
	// the fourth run's lock.
	lines := bufio.NewScanner(out)
	for want := 1; want <= 3; want++ {
		if !lines.Scan() {
			t.Fatalf("fsmctl ended before moving %d runs: %v", want, lines.Err())
		}
		if line := lines.Text(); line != fmt.Sprintf("pass 1: moved %d, leased 0, left to drain 0, admitted by no rule 0", want) {
			t.Fatalf("fsmctl said %q", line)
		}
	}
	waitForLockWait(t, e.pool, "fsmctl-crash")
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if err := blocker.Rollback(ctx); err != nil {
		t.Fatal(err)
	}

	var moved int
	if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM workflow_runs WHERE definition_version = 2`).Scan(&moved); err != nil {
		t.Fatal(err)
	}
	if moved != 3 {
		t.Fatalf("%d runs at v2 after the crash, want 3", moved)
	}
	got := withDB(t, e.url, "versions", "upgrade", "-batch", "3", "shipment", "1", "2")
	want := result{Code: exitOK, Stdout: "pass 1: moved 3, leased 0, left to drain 0, admitted by no rule 0\n" +
		"pass 1: moved 5, leased 0, left to drain 0, admitted by no rule 0\n" +
		"shipment v1 -> v2: 5 runs moved; 0 left on v1 to drain, 0 admitted by no rule\n"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("resumed upgrade (-want +got):\n%s", diff)
	}
	for _, id := range ids {
		var version, upgrades int
		var state string
		err := e.pool.QueryRow(ctx, `SELECT r.definition_version, r.current_state,
			(SELECT count(*) FROM workflow_step_logs l WHERE l.workflow_run_id = r.id AND l.kind = 'migrated')
			FROM workflow_runs r WHERE r.id = $1`, id).Scan(&version, &state, &upgrades)
		if err != nil {
			t.Fatal(err)
		}
		if version != 2 || state != "WEIGHING" || upgrades != 1 {
			t.Errorf("run %s: v%d in %s, %d upgraded rows; want v2 in WEIGHING, 1 row", id, version, state, upgrades)
		}
	}
	if err := pgtest.CheckInvariants(ctx, e.pool); err != nil {
		t.Fatal(err)
	}
}

// withAppName adds application_name to a postgres:// URL.
func withAppName(url, name string) string {
	if !strings.Contains(url, "://") {
		// A key=value connection string, as the throwaway cluster's.
		return url + " application_name=" + name
	}
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return url + sep + "application_name=" + name
}

// waitForLockWait waits until a backend of application app waits for a
// lock.
func waitForLockWait(t *testing.T, pool *pgxpool.Pool, app string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		var waiting bool
		err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock')`, app).Scan(&waiting)
		if err != nil {
			t.Fatalf("waiting for fsmctl to wait for the lock: %v", err)
		}
		if waiting {
			return
		}
		if _, err := pool.Exec(ctx, `SELECT pg_sleep(0.01)`); err != nil {
			t.Fatal(err)
		}
	}
}
