package store_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// TestStartNotifies: a start that creates or restarts a run announces it on
// NotifyChannel in its own statement; one that finds the run running
// announces nothing.
func TestStartNotifies(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	def := orderDef(1)
	def.Type = "order_" + hex.EncodeToString(b) // other tests may share the database's channel
	if err := e.st.Register(e.ctx, def); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(e.ctx, 30*time.Second)
	defer cancel()
	conn, err := e.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{store.NotifyChannel}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	marker := def.Type + "/marker"
	// next returns the next notification about the test's type or its
	// marker.
	next := func() string {
		t.Helper()
		for {
			n, err := conn.Conn().WaitForNotification(ctx)
			if err != nil {
				t.Fatalf("no notification: %v", err)
			}
			if n.Payload == def.Type || n.Payload == marker {
				return n.Payload
			}
		}
	}
	start := func(want runtime.StartOutcome) runtime.Run {
		t.Helper()
		res, err := e.st.Start(e.ctx, runtime.StartRequest{Type: def.Type, Version: 1, IdempotencyKey: "k", Owner: runtime.Owner{TenantID: "t1"}})
		if err != nil || res.Outcome != want {
			t.Fatalf("Start: %v, %v; want %v", res.Outcome, err, want)
		}
		return res.Run
	}

	run := start(runtime.StartCreated)
	if got := next(); got != def.Type {
		t.Errorf("after a created run: notification %q, want %q", got, def.Type)
	}
	start(runtime.StartRunning)
	if _, err := e.pool.Exec(e.ctx, "SELECT pg_notify($1, $2)", store.NotifyChannel, marker); err != nil {
		t.Fatal(err)
	}
	if got := next(); got != marker {
		t.Errorf("after a start that found the run running: notification %q, want none before the marker", got)
	}
	fail := tr("INITIATED", "Fail", "FAILED", nil)
	fail.Machine = def.Type
	if _, err := e.st.Record(e.ctx, run.ID, run.RowVersion, fail); err != nil {
		t.Fatal(err)
	}
	start(runtime.StartRestarted)
	if got := next(); got != def.Type {
		t.Errorf("after a restarted run: notification %q, want %q", got, def.Type)
	}
}
