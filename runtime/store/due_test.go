package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/fsmgen/fsmgen/runtime"
)

// shopDef is an order that waits 20s for its payment, is packed, waits
// three days in transit, may be put on hold (waiting with no timer), and
// is refunded when lost.
func shopDef() runtime.Definition {
	return runtime.Definition{
		Machine: "Shop", Type: "shop", Version: 1, Initial: "PENDING_PAYMENT", Cancel: "Cancel",
		States: []runtime.StateSpec{
			{Name: "PENDING_PAYMENT", Initial: true, Status: runtime.StatusRunning, Wait: true,
				Timers: []runtime.Timer{{After: 20 * time.Second, Event: "PaymentExpired"}}},
			{Name: "PACKING", Status: runtime.StatusRunning},
			{Name: "IN_TRANSIT", Status: runtime.StatusRunning, Wait: true,
				Timers: []runtime.Timer{{After: 72 * time.Hour, Event: "Lost"}, {After: 48 * time.Hour, Event: "Late"}}},
			{Name: "ON_HOLD", Status: runtime.StatusRunning, Wait: true},
			{Name: "REFUNDING", Status: runtime.StatusRunning},
			{Name: "DELIVERED", Status: runtime.StatusSucceeded},
			{Name: "CANCELLED", Status: runtime.StatusCancelled},
			{Name: "REFUNDED", Status: runtime.StatusCancelled, Outcome: "refunded"},
		},
		Events: []runtime.EventSpec{{Name: "Pay"}, {Name: "PaymentExpired"}, {Name: "Shipped"}, {Name: "Hold"},
			{Name: "Late"}, {Name: "Lost"}, {Name: "Delivered"}, {Name: "Refunded"}, {Name: "Cancel"}},
		Transitions: []runtime.TransitionSpec{
			{From: "PENDING_PAYMENT", To: "PACKING", Event: "Pay"},
			{From: "PENDING_PAYMENT", To: "CANCELLED", Event: "PaymentExpired"},
			{From: "PACKING", To: "IN_TRANSIT", Event: "Shipped"},
			{From: "PACKING", To: "ON_HOLD", Event: "Hold"},
			{From: "ON_HOLD", To: "PACKING", Event: "Pay"},
			{From: "IN_TRANSIT", To: "IN_TRANSIT", Event: "Late"},
			{From: "IN_TRANSIT", To: "REFUNDING", Event: "Lost"},
			{From: "IN_TRANSIT", To: "DELIVERED", Event: "Delivered"},
			{From: "REFUNDING", To: "REFUNDED", Event: "Refunded"},
			{From: "PACKING", To: "CANCELLED", Event: "Cancel"},
		},
	}
}

func shopTr(from, event, to string) runtime.Transition {
	def := shopDef()
	st, _ := def.State(to)
	return runtime.Transition{Machine: def.Type, Version: def.Version, From: from, To: to, Event: event, Status: st.Status}
}

// schedule reads, with the database's own arithmetic, when the run is due
// next relative to its entry into its state: "STATE due +D", "STATE not
// due".
//
// A run that was due before the transition and entered a state due at once
// keeps its due time: that is "STATE still due" when the due time is
// before, not what the run had before the transition (before.NextRunAt).
func schedule(t *testing.T, e env, id string, before runtime.Run) string {
	t.Helper()
	var state string
	var delayUS *int64
	var due pgtype.Timestamptz
	err := e.pool.QueryRow(e.ctx, `
		SELECT current_state, (extract(epoch FROM next_run_at - updated_at) * 1000000)::bigint, next_run_at
		FROM workflow_runs WHERE id = $1`, id).Scan(&state, &delayUS, &due)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case delayUS == nil:
		return state + " not due"
	case *delayUS < 0 && due.Time.Equal(before.NextRunAt):
		return state + " still due"
	}
	return fmt.Sprintf("%s due +%v", state, time.Duration(*delayUS)*time.Microsecond)
}

// TestEveryRecordSetsTheScheduleOfTheStateEntered records transitions
// through each way the store offers (Record, RecordTx, Finish, a Recorder
// from Load) and checks that each leaves the run due as the state it
// entered says: at once in a state a handler drives (still due from when it
// became due, if it already was), at the first timer, counted from the
// entry, in a state that waits, never in a state that waits without a
// timer or in a terminal state.
func TestEveryRecordSetsTheScheduleOfTheStateEntered(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if err := e.st.Register(e.ctx, shopDef()); err != nil {
		t.Fatal(err)
	}
	start := func(key string) runtime.Run {
		res, err := e.st.Start(e.ctx, runtime.StartRequest{Type: "shop", Version: 1, IdempotencyKey: key, Owner: runtime.Owner{TenantID: "t1"}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Run
	}
	ways := map[string]func(run runtime.Run, tr runtime.Transition) error{
		"Record": func(run runtime.Run, tr runtime.Transition) error {
			_, err := e.st.Record(e.ctx, run.ID, run.RowVersion, tr)
			return err
		},
		"RecordTx": func(run runtime.Run, tr runtime.Transition) error {
			return pgx.BeginFunc(e.ctx, e.pool, func(tx pgx.Tx) error {
				_, err := e.st.RecordTx(e.ctx, tx, run.ID, run.RowVersion, tr)
				return err
			})
		},
		"Recorder": func(run runtime.Run, tr runtime.Transition) error {
			loaded, rec, err := e.st.Load(e.ctx, run.ID, shopDef())
			if err != nil {
				return err
			}
			if loaded.RowVersion != run.RowVersion {
				return fmt.Errorf("loaded at row version %d, read at %d", loaded.RowVersion, run.RowVersion)
			}
			return rec.Record(e.ctx, tr)
		},
	}
	for name, record := range ways {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			steps := []struct{ from, event, to, want string }{
				{"PENDING_PAYMENT", "Pay", "PACKING", "PACKING due +0s"},
				{"PACKING", "Shipped", "IN_TRANSIT", "IN_TRANSIT due +48h0m0s"},
				{"IN_TRANSIT", "Late", "IN_TRANSIT", "IN_TRANSIT due +48h0m0s"},
				{"IN_TRANSIT", "Lost", "REFUNDING", "REFUNDING due +0s"},
				{"REFUNDING", "Refunded", "REFUNDED", "REFUNDED not due"},
			}
			run := start("lost-" + name)
			for _, s := range steps {
				if err := record(run, shopTr(s.from, s.event, s.to)); err != nil {
					t.Fatalf("%s %s: %v", name, s.event, err)
				}
				if got := schedule(t, e, run.ID, run); got != s.want {
					t.Errorf("%s after %s: %s, want %s", name, s.event, got, s.want)
				}
				run = e.get(t, run.ID)
			}
			held := start("held-" + name)
			steps = []struct{ from, event, to, want string }{
				{"PENDING_PAYMENT", "Pay", "PACKING", "PACKING due +0s"},
				{"PACKING", "Hold", "ON_HOLD", "ON_HOLD not due"},
				{"ON_HOLD", "Pay", "PACKING", "PACKING due +0s"},
				{"PACKING", "Cancel", "CANCELLED", "CANCELLED not due"},
			}
			for _, s := range steps {
				if err := record(held, shopTr(s.from, s.event, s.to)); err != nil {
					t.Fatalf("%s %s: %v", name, s.event, err)
				}
				if got := schedule(t, e, held.ID, held); got != s.want {
					t.Errorf("%s after %s: %s, want %s", name, s.event, got, s.want)
				}
				held = e.get(t, held.ID)
			}
		})
	}
	t.Run("Finish", func(t *testing.T) {
		t.Parallel()
		run := start("finish")
		for _, s := range [][3]string{{"PENDING_PAYMENT", "Pay", "PACKING"}, {"PACKING", "Shipped", "IN_TRANSIT"}} {
			if _, err := e.st.Record(e.ctx, run.ID, run.RowVersion, shopTr(s[0], s[1], s[2])); err != nil {
				t.Fatal(err)
			}
			run = e.get(t, run.ID)
		}
		if _, err := e.st.Finish(context.Background(), run.ID, run.RowVersion, shopTr("IN_TRANSIT", "Delivered", "DELIVERED"), runtime.Result{}); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff("DELIVERED not due", schedule(t, e, run.ID, run)); diff != "" {
			t.Errorf("schedule (-want +got):\n%s", diff)
		}
	})
}

// TestMoveBetweenRunningStatesIsHOT checks what keeping the due time of a
// run that is already due buys: a transition between two running states
// changes no column any index of workflow_runs holds, so PostgreSQL
// updates the row in place (a heap-only tuple) and inserts into none of
// them; a transition to a terminal state changes the status and is not.
func TestMoveBetweenRunningStatesIsHOT(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if err := e.st.Register(e.ctx, shopDef()); err != nil {
		t.Fatal(err)
	}
	res, err := e.st.Start(e.ctx, runtime.StartRequest{Type: "shop", Version: 1, IdempotencyKey: "hot", Owner: runtime.Owner{TenantID: "t1"}})
	if err != nil {
		t.Fatal(err)
	}
	run := res.Run
	// The payment's timer has fallen due: the run is due when Pay moves it
	// on to PACKING, which is due at once.
	if _, err := e.pool.Exec(e.ctx, "UPDATE workflow_runs SET next_run_at = now() WHERE id = $1", run.ID); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range [][3]string{{"PENDING_PAYMENT", "Pay", "PACKING"}, {"PACKING", "Cancel", "CANCELLED"}} {
		err := pgx.BeginFunc(e.ctx, e.pool, func(tx pgx.Tx) error {
			// The backend's counts not yet reported, which include this
			// transaction's: read before and after the transition.
			counts := func() (updated, hot int64, err error) {
				err = tx.QueryRow(e.ctx, `SELECT pg_stat_get_xact_tuples_updated('workflow_runs'::regclass),
					pg_stat_get_xact_tuples_hot_updated('workflow_runs'::regclass)`).Scan(&updated, &hot)
				return updated, hot, err
			}
			u0, h0, err := counts()
			if err != nil {
				return err
			}
			rec, err := e.st.RecordTx(e.ctx, tx, run.ID, run.RowVersion, shopTr(s[0], s[1], s[2]))
			if err != nil {
				return err
			}
			run.RowVersion = rec.RowVersion
			u1, h1, err := counts()
			if err != nil {
				return err
			}
			updated, hot := u1-u0, h1-h0
			got = append(got, fmt.Sprintf("%s->%s: %d updated, %d HOT", s[0], s[2], updated, hot))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"PENDING_PAYMENT->PACKING: 1 updated, 1 HOT", "PACKING->CANCELLED: 1 updated, 0 HOT"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("updates of workflow_runs (-want +got):\n%s", diff)
	}
}
