package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/machines/shop/order"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

func TestRetentionAndCleanup(t *testing.T) {
	t.Parallel()
	f := newOpsFixture(t)
	ctx := context.Background()
	ago := time.Now().Add(-40 * 24 * time.Hour)
	old := store.New(openPool(t, f.url), store.WithClock(func() time.Time { return ago }))
	// cancelled starts a run and cancels it, with a message on each topic
	// emitted before.
	cancelled := func(st *store.Store, key string, topics ...string) runtime.Run {
		res, err := st.Start(ctx, runtime.StartRequest{Type: order.Type, Version: 1, IdempotencyKey: key, Owner: runtime.Owner{TenantID: "acme"}})
		if err != nil {
			t.Fatal(err)
		}
		for _, topic := range topics {
			if _, err := st.Emit(ctx, res.Run.ID, topic, map[string]string{"id": "x"}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := st.Record(ctx, res.Run.ID, res.Run.RowVersion, runtime.Transition{
			Machine: order.Type, Version: 1, From: "PENDING_PAYMENT", To: "CANCELLED", Event: "PaymentExpired", Payload: order.PaymentExpired{}, Status: runtime.StatusCancelled,
		}); err != nil {
			t.Fatal(err)
		}
		return res.Run
	}
	gone1 := cancelled(old, "old-1")
	cancelled(old, "old-2")
	cancelled(old, "old-held", "order.cancelled")
	if _, err := old.Start(ctx, runtime.StartRequest{Type: order.Type, Version: 1, IdempotencyKey: "old-running", Owner: runtime.Owner{TenantID: "acme"}}); err != nil {
		t.Fatal(err)
	}
	cancelled(f.st, "today")

	got := withDB(t, f.url, "retention", "list")
	if diff := cmp.Diff(result{Code: exitOK, Stdout: "no retention policies: every finished run is kept\n"}, got); diff != "" {
		t.Errorf("retention list (-want +got):\n%s", diff)
	}
	got = withDB(t, f.url, "cleanup")
	if diff := cmp.Diff(result{Code: exitOK, Stdout: "nothing to remove: no finished run is older than its type's retention\n"}, got); diff != "" {
		t.Errorf("cleanup without policies (-want +got):\n%s", diff)
	}
	got = withDB(t, f.url, "retention", "set", "shop_order", "30")
	if diff := cmp.Diff(result{Code: exitOK, Stdout: "shop_order: finished runs are kept 30 days\n"}, got); diff != "" {
		t.Errorf("retention set (-want +got):\n%s", diff)
	}
	got = withDB(t, f.url, "retention", "set", "nothing", "30")
	if diff := cmp.Diff(result{Code: exitFailure, Stderr: "fsmctl: retention of nothing: unknown definition: no version of nothing is registered\n"}, got); diff != "" {
		t.Errorf("retention set of an unknown type (-want +got):\n%s", diff)
	}
	got = withDB(t, f.url, "retention", "list", "-o", "json")
	if got.Code != exitOK || !strings.Contains(got.Stdout, `"type": "shop_order",`+"\n"+`    "keep_days": 30,`) {
		t.Errorf("retention list -o json: %+v", got)
	}

	// Two runs go with their 2 log rows each (created, PaymentExpired); the
	// run with an unpublished message is held.
	table := `TYPE        RUNS  LOG ROWS  EVIDENCE  OUTBOX  HELD
shop_order  2     4         0         0       1
total       2     4         0         0       1
`
	got = withDB(t, f.url, "cleanup", "-dry-run")
	want := result{Code: exitOK, Stdout: table + "would remove 2 finished runs; 1 held (unpublished messages, undelivered or running children)\n"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cleanup -dry-run (-want +got):\n%s", diff)
	}
	if _, err := f.st.Get(ctx, gone1.ID); err != nil {
		t.Errorf("the dry run removed a run: %v", err)
	}
	got = withDB(t, f.url, "cleanup")
	want.Stdout = table + "removed 2 finished runs; 1 held (unpublished messages, undelivered or running children)\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cleanup (-want +got):\n%s", diff)
	}
	got = withDB(t, f.url, "runs", "show", gone1.ID)
	if diff := cmp.Diff(result{Code: exitFailure, Stderr: "fsmctl: run " + gone1.ID + ": not found\n"}, got); diff != "" {
		t.Errorf("runs show of a removed run (-want +got):\n%s", diff)
	}
	got = withDB(t, f.url, "runs", "list", "-o", "json")
	for _, key := range []string{"old-held", "old-running", "today"} {
		if !strings.Contains(got.Stdout, `"idempotency_key": "`+key+`"`) {
			t.Errorf("run %s is gone:\n%s", key, got.Stdout)
		}
	}
	if err := pgtest.CheckInvariants(ctx, f.st.Pool()); err != nil {
		t.Error(err)
	}
	got = withDB(t, f.url, "retention", "clear", "shop_order")
	if diff := cmp.Diff(result{Code: exitOK, Stdout: "shop_order: finished runs are kept for ever\n"}, got); diff != "" {
		t.Errorf("retention clear (-want +got):\n%s", diff)
	}
}
