package store_test

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/fsmgen/fsmgen/bench/internal/benchdb"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/store"
)

var storageRuns = flag.Int("storage-runs", 1000, "BenchmarkStorage: how many five-transition runs to build")

// chainStates are the states of the five-transition chain BenchmarkStorage
// builds: S1 -> S2 -> S3 -> S4 -> S5 -> END.
var chainStates = []string{"S1", "S2", "S3", "S4", "S5", "END"}

var chain = func() runtime.Definition {
	d := runtime.Definition{Machine: "Chain", Type: "bench_storage_chain", Version: 1, Initial: "S1",
		Events: []runtime.EventSpec{{Name: "Next"}}}
	for i, s := range chainStates {
		st := runtime.StateSpec{Name: s, Initial: i == 0, Status: runtime.StatusRunning}
		if s == "END" {
			st.Status = runtime.StatusSucceeded
		} else {
			d.Transitions = append(d.Transitions, runtime.TransitionSpec{From: s, To: chainStates[i+1], Event: "Next"})
		}
		d.States = append(d.States, st)
	}
	return d
}()

// BenchmarkStorage measures the bytes a run and a transition take on disk,
// indexes and TOAST included: it builds -storage-runs runs (default 1,000)
// through the store's own statements (Start, then five Records to END, as
// the engine records them), VACUUMs, and divides the growth of every table
// of the schema (pg_total_relation_size) by the runs and by their
// transitions. The build runs on 16 connections with synchronous_commit
// off, which changes how fast the rows are written, not what they are; its
// time is not a figure. Run it once:
//
//	go test -run '^$' -bench Storage -benchtime 1x -storage-runs 100000 ./store/
//
// Reported: B/transition (the growth over the five transitions of every
// run, so the run's own row and its creation log row are shared out over
// them) and B/run.
func BenchmarkStorage(b *testing.B) {
	ctx := context.Background()
	pool := benchdb.NewPool(b, benchdb.MaxConns(16), benchdb.Param("synchronous_commit", "off"))
	st := store.New(pool)
	if err := st.Register(ctx, chain); err != nil {
		b.Fatal(err)
	}
	n := *storageRuns
	for iter := range b.N {
		if _, err := pool.Exec(ctx, "VACUUM ANALYZE"); err != nil {
			b.Fatal(err)
		}
		empty, err := benchdb.Storage(ctx, pool)
		if err != nil {
			b.Fatal(err)
		}
		emptyRel, err := benchdb.Relations(ctx, pool)
		if err != nil {
			b.Fatal(err)
		}
		var next atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := next.Add(1)
					if i > int64(n) {
						return
					}
					if err := buildRun(ctx, st, fmt.Sprintf("%d-%d", iter, i)); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
		if _, err := pool.Exec(ctx, "VACUUM ANALYZE"); err != nil {
			b.Fatal(err)
		}
		full, err := benchdb.Storage(ctx, pool)
		if err != nil {
			b.Fatal(err)
		}
		var runs int64
		if err := pool.QueryRow(ctx, benchdb.Mark+"SELECT count(*) FROM workflow_runs WHERE status = 'succeeded'").Scan(&runs); err != nil {
			b.Fatal(err)
		}
		if runs != int64((iter+1)*n) {
			b.Fatalf("%d runs reached END, want %d", runs, (iter+1)*n)
		}
		grown := float64(full - empty)
		fullRel, err := benchdb.Relations(ctx, pool)
		if err != nil {
			b.Fatal(err)
		}
		logGrowth(b, emptyRel, fullRel, 5*n)
		var upd, hot int64
		if err := pool.QueryRow(ctx, benchdb.Mark+`SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables
			WHERE relid = 'workflow_runs'::regclass`).Scan(&upd, &hot); err != nil {
			b.Fatal(err)
		}
		if upd > 0 {
			b.ReportMetric(float64(hot)/float64(upd), "HOT-updates/update")
		}
		b.ReportMetric(grown/float64(5*n), "B/transition")
		b.ReportMetric(grown/float64(n), "B/run")
		b.ReportMetric(float64(n), "runs")
	}
}

// logGrowth logs, largest first, how many bytes per transition each
// relation grew by between before and after.
func logGrowth(b *testing.B, before, after map[string]int64, transitions int) {
	type rel struct {
		name string
		n    int64
	}
	var rels []rel
	for name, n := range after {
		if d := n - before[name]; d != 0 {
			rels = append(rels, rel{name, d})
		}
	}
	slices.SortFunc(rels, func(a, b rel) int { return cmp.Or(cmp.Compare(b.n, a.n), strings.Compare(a.name, b.name)) })
	var sb strings.Builder
	for _, r := range rels {
		fmt.Fprintf(&sb, "\n\t%-40s %8.1f B/transition", r.name, float64(r.n)/float64(transitions))
	}
	b.Logf("growth by relation:%s", sb.String())
}

// buildRun starts a run of the chain and records its five transitions.
func buildRun(ctx context.Context, st *store.Store, key string) error {
	res, err := st.Start(ctx, runtime.StartRequest{Type: chain.Type, Version: 1, IdempotencyKey: key, Owner: runtime.Owner{TenantID: "bench"}})
	if err != nil {
		return err
	}
	rec := st.Recorder(res.Run)
	for k, from := range chainStates[:len(chainStates)-1] {
		to := chainStates[k+1]
		status := runtime.StatusRunning
		if to == "END" {
			status = runtime.StatusSucceeded
		}
		if err := rec.Record(ctx, runtime.Transition{Machine: chain.Type, Version: 1, From: from, To: to, Event: "Next", Status: status}); err != nil {
			return fmt.Errorf("run %s: %w", key, err)
		}
	}
	return nil
}
