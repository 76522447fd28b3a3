package linearchain_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/runtime/linearchain"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
)

// The crash test's workload: crashInstances instances of a crashSteps-step
// chain. A hash of (instance, step, attempt) injects a Retry into about
// one run in ten, on the first two attempts only; instances whose id is a
// multiple of doomEvery always retry step 2, so they end FAILED with
// max_attempts spent, whether their last try returns Retry or its worker
// is killed during it (lease recovery then exhausts the step). Every other
// instance ends COMPLETED, whatever the crashes: a lease recovery adds an
// attempt, and the few kills never spend all of a step's attempts.
const (
	crashInstances   = 1000
	crashSteps       = 5
	crashWorkers     = 4 // processes
	crashMaxAttempts = 6
	doomEvery        = 25
	crashEnv         = "LINEARCHAIN_CRASH_WORKER_DSN"
)

var crashStepTypes = []string{"S0", "S1", "S2", "S3", "S4"}

func injected(instance int64, seq, attempt int) bool {
	h := fnv.New32a()
	fmt.Fprintf(h, "%d/%d/%d", instance, seq, attempt)
	return attempt < 2 && h.Sum32()%10 == 0
}

func doomed(instance int64) bool { return instance%doomEvery == 0 }

// crashDefinition's handlers record their side effect, outside the step's
// transaction, before they return.
func crashDefinition(pool *pgxpool.Pool) linearchain.Definition {
	d := linearchain.Definition{Type: "crash", Version: 1}
	for _, typ := range crashStepTypes {
		d.Steps = append(d.Steps, linearchain.Step{Type: typ, MaxAttempts: crashMaxAttempts, Handler: func(ctx context.Context, t linearchain.Task) linearchain.Result {
			if _, err := pool.Exec(ctx, `INSERT INTO crash_side_effect (instance_id, step_seq, attempt, worker) VALUES ($1, $2, $3, $4)`,
				t.InstanceID, t.StepSeq, t.Attempts, t.WorkerID); err != nil {
				return linearchain.Retry(0, "side effect: "+err.Error())
			}
			switch {
			case doomed(t.InstanceID) && t.StepSeq == 2:
				return linearchain.Retry(0, "doomed")
			case injected(t.InstanceID, t.StepSeq, t.Attempts):
				return linearchain.Retry(0, "injected")
			}
			return linearchain.Completed()
		}})
	}
	return d
}

// crashWorkerMain runs this test binary as a crash-test worker process when
// the environment says so: it works until it is killed.
func crashWorkerMain() bool {
	dsn := os.Getenv(crashEnv)
	if dsn == "" {
		return false
	}
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	e := linearchain.New(pool)
	if err := e.Register(crashDefinition(pool)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Println("ready")
	_ = e.Run(ctx, linearchain.RunOptions{App: "crash", Workers: 2, Batch: 8, Lease: 2 * time.Second, Poll: 20 * time.Millisecond})
	os.Exit(0)
	return true
}

// TestCrash runs the workload on crashWorkers worker processes (this test
// binary, run again) and SIGKILLs one that holds a lease at random moments,
// starting a new one in its place. Every instance must end as its
// injected faults dictate, and every side effect must come from a run
// whose step its worker had claimed, once per (instance, step, attempt).
func TestCrash(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := linearchain.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `CREATE TABLE crash_side_effect (
		instance_id bigint NOT NULL, step_seq int NOT NULL, attempt int NOT NULL, worker text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	e := linearchain.New(pool)
	if err := e.Register(crashDefinition(pool)); err != nil {
		t.Fatal(err)
	}
	for i := range crashInstances {
		if _, err := e.Start(ctx, "crash", 1, "i"+strconv.Itoa(i), nil); err != nil {
			t.Fatal(err)
		}
	}

	procs := map[int]*exec.Cmd{} // by pid
	spawn := func() {
		t.Helper()
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashEnv+"="+dsn)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, len("ready\n"))
		if _, err := out.Read(buf); err != nil || string(buf) != "ready\n" {
			t.Fatalf("worker %d: %q, %v", cmd.Process.Pid, buf, err)
		}
		procs[cmd.Process.Pid] = cmd
	}
	kill := func(pid int) {
		cmd := procs[pid]
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		delete(procs, pid)
	}
	defer func() {
		for pid := range procs {
			kill(pid)
		}
	}()
	for range crashWorkers {
		spawn()
	}

	remaining := func() int {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM workflow_instance WHERE status = 'RUNNING'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// Kill a worker holding a lease, at a random moment, while the
	// workload runs; up to maxKills times.
	const maxKills = 8
	kills := 0
	deadline := time.Now().Add(4 * time.Minute)
	for remaining() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d instances still RUNNING after 4 minutes", remaining())
		}
		time.Sleep(time.Duration(100+rand.IntN(400)) * time.Millisecond)
		if kills == maxKills {
			continue
		}
		var holder string
		err := pool.QueryRow(ctx, `SELECT coalesce(min(locked_by), '') FROM workflow_step WHERE status = 'RUNNING'`).Scan(&holder)
		if err != nil {
			t.Fatal(err)
		}
		parts := strings.Split(holder, ":")
		if len(parts) != 4 {
			continue
		}
		pid, _ := strconv.Atoi(parts[2])
		if procs[pid] == nil {
			continue // killed already; its lease has not been recovered yet
		}
		kill(pid)
		kills++
		spawn()
	}
	t.Logf("%d workers killed", kills)

	// Every instance ended as dictated.
	rows, err := pool.Query(ctx, `
SELECT i.id, i.status, string_agg(s.status, ',' ORDER BY s.step_seq), max(s.attempts) FILTER (WHERE s.step_seq = 2)
FROM workflow_instance i JOIN workflow_step s ON s.instance_id = i.id GROUP BY i.id`)
	if err != nil {
		t.Fatal(err)
	}
	n, failed := 0, 0
	for rows.Next() {
		var id int64
		var status, steps string
		var attempts2 int
		if err := rows.Scan(&id, &status, &steps, &attempts2); err != nil {
			t.Fatal(err)
		}
		n++
		want, wantSteps := "COMPLETED", "DONE,DONE,DONE,DONE,DONE"
		if doomed(id) {
			want, wantSteps = "FAILED", "DONE,DONE,DEAD,PENDING,PENDING"
			failed++
			if attempts2 != crashMaxAttempts {
				t.Errorf("instance %d: step 2 dead after %d attempts, want %d", id, attempts2, crashMaxAttempts)
			}
		}
		if status != want || steps != wantSteps {
			t.Errorf("instance %d: %s with steps %s, want %s with %s", id, status, steps, want, wantSteps)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n != crashInstances || failed != crashInstances/doomEvery {
		t.Errorf("%d instances, %d failed; want %d and %d", n, failed, crashInstances, crashInstances/doomEvery)
	}

	// No side effect twice for one (instance, step, attempt), none without
	// its worker's claim of the step, and every step's completing run has
	// its side effect at the step's final attempt (unless its worker was
	// killed during that attempt, and lease recovery made it DEAD).
	count := func(what, sql string) int {
		t.Helper()
		var n int
		if err := pool.QueryRow(ctx, sql).Scan(&n); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return n
	}
	if d := count("duplicates", `SELECT count(*) FROM (SELECT 1 FROM crash_side_effect
		GROUP BY instance_id, step_seq, attempt HAVING count(*) > 1) d`); d != 0 {
		t.Errorf("%d (instance, step, attempt) ran their side effect more than once", d)
	}
	if u := count("unclaimed", `SELECT count(*) FROM crash_side_effect e WHERE NOT EXISTS (
		SELECT 1 FROM workflow_step_status_log l
		WHERE l.row_key = jsonb_build_object('instance_id', e.instance_id, 'step_seq', e.step_seq)
		  AND l.to_state = 'RUNNING' AND l.worker = e.worker)`); u != 0 {
		t.Errorf("%d side effects ran without their worker's claim", u)
	}
	if m := count("missing", `SELECT count(*) FROM workflow_step s WHERE s.status IN ('DONE', 'DEAD') AND NOT EXISTS (
		SELECT 1 FROM crash_side_effect e WHERE e.instance_id = s.instance_id AND e.step_seq = s.step_seq
		  AND e.attempt = s.attempts - CASE WHEN s.status = 'DEAD' THEN 1 ELSE 0 END)
		AND NOT (s.status = 'DEAD' AND s.last_error = 'LEASE_EXPIRED')`); m != 0 {
		t.Errorf("%d ended steps have no side effect for their last attempt", m)
	}
	recovered := count("recovered", `SELECT count(*) FROM workflow_step_status_log WHERE event = 'RecoverLease'`)
	retries := count("retries", `SELECT count(*) FROM workflow_step_status_log WHERE event = 'Retry'`)
	effects := count("side effects", `SELECT count(*) FROM crash_side_effect`)
	t.Logf("%d side effects, %d retries, %d leases recovered", effects, retries, recovered)
	if kills > 0 && recovered == 0 {
		t.Errorf("%d workers holding leases were killed, but no lease was recovered", kills)
	}
}
