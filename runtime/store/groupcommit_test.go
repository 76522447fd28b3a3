package store_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime"
)

// TestRecordGroupCommit: runs recorded at once through one store share
// commits; each caller gets its own answer: a stale one ErrConflict, the
// others their new row version, and every run's log matches its state.
func TestRecordGroupCommit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const n = 24
	runs := make([]runtime.Run, n)
	for i := range runs {
		runs[i] = e.start(t, fmt.Sprint(i)).Run
	}
	errs := make(chan error, 3*n)
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for _, run := range runs {
		wg.Go(func() {
			<-gate
			rec, err := e.st.Record(e.ctx, run.ID, 1, tr("INITIATED", "Begin", "WORKING", map[string]string{"run": run.ID}))
			if err != nil || rec.RowVersion != 2 || rec.AlreadyApplied {
				errs <- fmt.Errorf("begin %s: %+v %v", run.ID, rec, err)
				return
			}
			var inner sync.WaitGroup
			inner.Go(func() {
				if _, err := e.st.Record(e.ctx, run.ID, 1, tr("INITIATED", "Fail", "FAILED", nil)); !errors.Is(err, runtime.ErrConflict) {
					errs <- fmt.Errorf("stale fail %s: %v, want ErrConflict", run.ID, err)
				}
			})
			inner.Go(func() {
				if rec, err := e.st.Finish(e.ctx, run.ID, 2, tr("WORKING", "Finish", "SUCCEEDED", nil), runtime.Result{CostUSD: 1}); err != nil || rec.RowVersion != 3 {
					errs <- fmt.Errorf("finish %s: %+v %v", run.ID, rec, err)
				}
			})
			inner.Wait()
		})
	}
	close(gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, run := range runs {
		got := e.get(t, run.ID)
		if got.State != "SUCCEEDED" || got.RowVersion != 3 || got.Result == nil || got.Result.CostUSD != 1 {
			t.Errorf("run %s: %s at %d, result %+v", run.ID, got.State, got.RowVersion, got.Result)
		}
		want := []string{"created ->INITIATED/@1 a1", "transition INITIATED->WORKING/Begin@2 a1", "transition WORKING->SUCCEEDED/Finish@3 a1"}
		if diff := cmp.Diff(want, moves(e.history(t, run.ID))); diff != "" {
			t.Errorf("run %s's log (-want +got):\n%s", run.ID, diff)
		}
	}
	var most int
	if err := e.pool.QueryRow(e.ctx, `SELECT max(n) FROM (
		SELECT count(*) AS n FROM workflow_step_logs WHERE kind = 'transition' GROUP BY xmin::text) c`).Scan(&most); err != nil {
		t.Fatal(err)
	}
	if most < 2 {
		t.Errorf("at most %d transition per transaction: no commit was shared", most)
	}
}

// TestRecordGroupCommitLockedRun: a run that another transaction holds
// locked holds up its own caller only; the others' transitions commit
// meanwhile.
func TestRecordGroupCommitLockedRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	locked := e.start(t, "locked").Run
	others := make([]runtime.Run, 8)
	for i := range others {
		others[i] = e.start(t, fmt.Sprint(i)).Run
	}
	locker, err := e.pool.Begin(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Rollback(e.ctx)
	if _, err := locker.Exec(e.ctx, "SELECT 1 FROM workflow_runs WHERE id = $1 FOR UPDATE", locked.ID); err != nil {
		t.Fatal(err)
	}
	blocked := make(chan error, 1)
	go func() {
		_, err := e.st.Record(e.ctx, locked.ID, 1, tr("INITIATED", "Begin", "WORKING", nil))
		blocked <- err
	}()
	// Rounds of concurrent transitions of the other runs, while the first
	// waits for its lock.
	for _, step := range [][3]string{{"INITIATED", "Begin", "WORKING"}, {"WORKING", "Finish", "SUCCEEDED"}} {
		var wg sync.WaitGroup
		for _, run := range others {
			wg.Go(func() {
				v := int64(1)
				if step[0] == "WORKING" {
					v = 2
				}
				if _, err := e.st.Record(e.ctx, run.ID, v, tr(step[0], step[1], step[2], nil)); err != nil {
					t.Errorf("%s %s: %v", run.ID, step[1], err)
				}
			})
		}
		wg.Wait()
	}
	select {
	case err := <-blocked:
		t.Fatalf("the locked run's transition returned while its row was locked: %v", err)
	default:
	}
	if err := locker.Rollback(e.ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-blocked; err != nil {
		t.Errorf("the locked run's transition: %v", err)
	}
	if got := e.get(t, locked.ID); got.State != "WORKING" {
		t.Errorf("locked run in %s", got.State)
	}
}
