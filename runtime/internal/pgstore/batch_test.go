package pgstore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/internal/dbsqlc"
	"github.com/fsmgen/fsmgen/runtime/internal/pgstore"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// A group commit of one transition is written with the statement of one
// run, which costs less than the shared one for a single row
// (bench/store/group_statement.sh); from two on, with the shared one.
func TestAdvanceBatchOfOneWritesAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, count := pgtest.CountedPool(t, pgtest.NewDatabase(t))
	def := runtime.Definition{Machine: "PingPong", Type: "ping_pong", Version: 1, Initial: "PING",
		States:      []runtime.StateSpec{{Name: "PING", Initial: true, Wait: true}, {Name: "PONG", Wait: true}},
		Events:      []runtime.EventSpec{{Name: "Hit"}},
		Transitions: []runtime.TransitionSpec{{From: "PING", To: "PONG", Event: "Hit"}, {From: "PONG", To: "PING", Event: "Hit"}},
	}
	st := store.New(pool)
	if err := st.Register(ctx, def); err != nil {
		t.Fatal(err)
	}
	db := (*pgstore.DB)(st)
	hit := func(key int) dbsqlc.AdvanceRunParams {
		started, err := st.Start(ctx, runtime.StartRequest{Type: def.Type, Version: 1, IdempotencyKey: fmt.Sprint(key), Owner: runtime.Owner{TenantID: "t"}})
		if err != nil {
			t.Fatal(err)
		}
		id, err := pgstore.ParseRunID("hit", started.Run.ID)
		if err != nil {
			t.Fatal(err)
		}
		p, _, err := db.TransitionParams(ctx, id, started.Run.RowVersion,
			runtime.Transition{Machine: def.Type, Version: 1, From: "PING", To: "PONG", Event: "Hit", Status: runtime.StatusRunning}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tt := range []struct {
		items []dbsqlc.AdvanceRunParams
		want  []string
	}{
		{[]dbsqlc.AdvanceRunParams{hit(1)}, []string{"AdvanceRun"}},
		{[]dbsqlc.AdvanceRunParams{hit(2), hit(3)}, []string{"AdvanceRuns"}},
	} {
		count.Take()
		for n, r := range pgstore.AdvanceBatch(db, ctx, tt.items) {
			if r.Err != nil || r.Busy || r.Row.RowVersion != 2 {
				t.Fatalf("item %d: row version %d, busy %t, %v; want moved to row version 2", n, r.Row.RowVersion, r.Busy, r.Err)
			}
		}
		if diff := cmp.Diff(tt.want, count.Take()); diff != "" {
			t.Errorf("statements of a batch of %d (-want +got):\n%s", len(tt.items), diff)
		}
	}
}
