package linearchain_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime/linearchain"
)

// attempts is the attempts of each step of an instance.
func attempts(in linearchain.Instance) []int {
	var out []int
	for _, s := range in.Steps {
		out = append(out, s.Attempts)
	}
	return out
}

// stepClaimers is the workers that claimed a step of the instance, from
// the step log.
func stepClaimers(t *testing.T, q linearchain.Querier, id int64) map[string]bool {
	t.Helper()
	h, err := linearchain.History(context.Background(), q, id)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, c := range h {
		if c.Step != nil && c.To == "RUNNING" {
			out[c.Worker] = true
		}
	}
	return out
}

// Two engines with disjoint registrations on one database: each claims
// only the steps of the workflows it registered. The instance of the
// workflow the first engine lacks is never claimed by it, keeps attempts
// 0, and completes when its own engine's worker runs.
func TestClaimOnlyRegisteredWorkflows(t *testing.T) {
	t.Parallel()
	other, pool := newEngine(t, def("other.flow", 1, abc[:1], returns(linearchain.Completed())))
	audit := linearchain.New(pool)
	if err := audit.Register(def("audit.flow", 1, abc[:2], returns(linearchain.Completed()), returns(linearchain.Completed()))); err != nil {
		t.Fatal(err)
	}
	auditID := start(t, audit, "audit.flow", "a")
	otherID := start(t, other, "other.flow", "o")

	task := claimOne(t, other, w1)
	if task.WorkflowType != "other.flow" || task.InstanceID != otherID {
		t.Fatalf("the other.flow engine claimed %+v", task)
	}
	execute(t, other, task)
	claimNone(t, other, w1)
	in := wantStatuses(t, other, auditID, "RUNNING", "READY", "PENDING")
	if diff := cmp.Diff([]int{0, 0}, attempts(in)); diff != "" {
		t.Fatalf("audit.flow attempts (-want +got):\n%s", diff)
	}

	execute(t, audit, claimOne(t, audit, w2))
	claimNone(t, other, w1)
	execute(t, audit, claimOne(t, audit, w2))
	in = wantStatuses(t, audit, auditID, "COMPLETED", "DONE", "DONE")
	if diff := cmp.Diff([]int{0, 0}, attempts(in)); diff != "" {
		t.Errorf("audit.flow attempts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]bool{w2.WorkerID: true}, stepClaimers(t, pool, auditID)); diff != "" {
		t.Errorf("workers that claimed audit.flow's steps (-want +got):\n%s", diff)
	}
	// A task with no handler here (claimed by the other engine) is not
	// executed by this one.
	id2 := start(t, audit, "audit.flow", "b")
	foreign := claimOne(t, audit, w2)
	if _, err := other.Execute(context.Background(), foreign); !errors.Is(err, linearchain.ErrUnknownWorkflow) ||
		err.Error() != fmt.Sprintf("linearchain: instance %d step 0: no handler for audit.flow v1 step A: unknown workflow", id2) {
		t.Errorf("executing another engine's task: %v, want ErrUnknownWorkflow", err)
	}
	wantStatuses(t, audit, id2, "RUNNING", "RUNNING", "PENDING")
}

// A worker that knows the workflow but not a step of it (a version of the
// definition with a step added, deployed to some workers only) claims the
// steps it knows and leaves the new one, attempts untouched, to a worker
// that has it.
func TestClaimOnlyKnownStepTypes(t *testing.T) {
	t.Parallel()
	// The new definition: A, NEW, C; the old workers' one: A, C.
	newer, pool := newEngine(t, def("flow", 1, []string{"A", "NEW", "C"},
		returns(linearchain.Completed()), returns(linearchain.Completed()), returns(linearchain.Completed())))
	older := linearchain.New(pool)
	if err := older.Register(def("flow", 1, []string{"A", "C"}, returns(linearchain.Completed()), returns(linearchain.Completed()))); err != nil {
		t.Fatal(err)
	}
	id := start(t, newer, "flow", "k")
	execute(t, older, claimOne(t, older, w1)) // A
	claimNone(t, older, w1)
	in := wantStatuses(t, older, id, "RUNNING", "DONE", "READY", "PENDING")
	if diff := cmp.Diff([]int{0, 0, 0}, attempts(in)); diff != "" {
		t.Fatalf("attempts (-want +got):\n%s", diff)
	}
	task := claimOne(t, newer, w2)
	if task.StepType != "NEW" {
		t.Fatalf("newer engine claimed %+v", task)
	}
	execute(t, newer, task)
	execute(t, older, claimOne(t, older, w1)) // C
	in = wantStatuses(t, older, id, "COMPLETED", "DONE", "DONE", "DONE")
	if diff := cmp.Diff([]int{0, 0, 0}, attempts(in)); diff != "" {
		t.Errorf("attempts (-want +got):\n%s", diff)
	}
}

// A rolling deploy: old workers (version 1) and new ones (versions 1 and
// 2) run side by side on one database with max_attempts 1, so that a
// single wasted try would fail an instance. Every instance of either
// version completes, with no attempt spent.
func TestRollingDeployNeverFailsAnInstance(t *testing.T) {
	t.Parallel()
	v1 := func() linearchain.Definition {
		return def("flow", 1, abc, returns(linearchain.Completed()), returns(linearchain.Completed()), returns(linearchain.Completed()))
	}
	v2 := def("flow", 1, []string{"A", "B2", "C"}, returns(linearchain.Completed()), returns(linearchain.Completed()), returns(linearchain.Completed()))
	v2.Version = 2
	older, pool := newEngine(t, v1())
	newer := linearchain.New(pool)
	for _, d := range []linearchain.Definition{v1(), v2} {
		if err := newer.Register(d); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const n = 20
	ended := make(chan linearchain.Applied, 2*n)
	errs := make(chan error, 1)
	done := make(chan error, 2)
	for app, e := range map[string]*linearchain.Engine{"old": older, "new": newer} {
		go func() {
			done <- e.Run(ctx, linearchain.RunOptions{App: app, Workers: 2, Batch: 4, Poll: 10 * time.Millisecond,
				OnApplied: func(a linearchain.Applied) {
					if a.Instance != "RUNNING" {
						ended <- a
					}
				},
				OnError: func(err error) {
					select {
					case errs <- err:
					default:
					}
				}})
		}()
	}
	for i := range n {
		start(t, newer, "flow", fmt.Sprintf("v1-%d", i))
		if _, err := newer.Start(ctx, "flow", 2, fmt.Sprintf("v2-%d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 * n {
		select {
		case a := <-ended:
			if a.Instance != "COMPLETED" {
				t.Fatalf("instance %d ended %s: %+v", a.Task.InstanceID, a.Instance, a)
			}
		case err := <-errs:
			t.Fatalf("worker error: %v", err)
		case <-time.After(time.Minute):
			t.Fatal("not every instance ended")
		}
	}
	cancel()
	for range 2 {
		<-done
	}
	var spent, wrong int
	if err := pool.QueryRow(context.Background(), `SELECT
		(SELECT coalesce(sum(attempts), 0) FROM workflow_step),
		(SELECT count(*) FROM workflow_step_status_log l JOIN workflow_instance i ON i.id = (l.row_key->>'instance_id')::bigint
		 WHERE l.to_state = 'RUNNING' AND i.workflow_version = 2 AND l.worker NOT LIKE 'new:%')`).Scan(&spent, &wrong); err != nil {
		t.Fatal(err)
	}
	if spent != 0 || wrong != 0 {
		t.Errorf("%d attempts spent, %d steps of version 2 claimed by an old worker; want 0 and 0", spent, wrong)
	}
}
