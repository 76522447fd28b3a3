package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/fsmtest"
	"github.com/fsmgen/fsmgen/runtime/internal/enginestore"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// Resume makes a parked run due again with a fresh attempt counter and logs
// it; a run that is not parked, or none, is refused.
func TestResume(t *testing.T) {
	t.Parallel()
	clk := fsmtest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	e := newEnv(t, store.WithClock(clk.Now))
	run := e.record(t, e.start(t, "k").Run, "INITIATED", "Begin", "WORKING")
	if err := e.st.Resume(e.ctx, run.ID); !errors.Is(err, runtime.ErrConflict) ||
		err.Error() != "store: resume run "+run.ID+": conflict: the run moved since it was read: the run is not parked" {
		t.Errorf("resume a run that is not parked: %v, want ErrConflict", err)
	}
	// A worker's retries give up: the run is parked.
	es := enginestore.New(e.st)
	claims, err := es.Claim(e.ctx, enginestore.ClaimParams{Owner: "w1", Kinds: []enginestore.Kind{{Type: "order", Version: 1}}, TTL: time.Minute, RunID: run.ID})
	if err != nil || len(claims) != 1 {
		t.Fatalf("claim: %d claims, %v", len(claims), err)
	}
	if _, err := es.ScheduleRetry(e.ctx, claims[0].Lease, run.RowVersion, 1, 0, "BOOM", "first try"); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	if claims, err = es.Claim(e.ctx, enginestore.ClaimParams{Owner: "w1", Kinds: []enginestore.Kind{{Type: "order", Version: 1}}, TTL: time.Minute, RunID: run.ID}); err != nil || len(claims) != 1 {
		t.Fatalf("claim again: %d claims, %v", len(claims), err)
	}
	if err := es.Park(e.ctx, claims[0].Lease, run.RowVersion, "BOOM", "second try"); err != nil {
		t.Fatal(err)
	}
	parked := e.get(t, run.ID)
	if parked.ParkedAt.IsZero() || !parked.NextRunAt.IsZero() || parked.StepAttempt != 2 {
		t.Fatalf("parked run: parked at %v, next run at %v, step attempt %d", parked.ParkedAt, parked.NextRunAt, parked.StepAttempt)
	}

	clk.Advance(time.Minute)
	if err := e.st.Resume(e.ctx, run.ID); err != nil {
		t.Fatal(err)
	}
	got := e.get(t, run.ID)
	type view struct {
		State       string
		RowVersion  int64
		StepAttempt int
		Parked      bool
		NextRunAt   time.Time
		LastError   string
	}
	want := view{State: "WORKING", RowVersion: run.RowVersion, StepAttempt: 1, NextRunAt: clk.Now(), LastError: "second try"}
	if diff := cmp.Diff(want, view{got.State, got.RowVersion, got.StepAttempt, !got.ParkedAt.IsZero(), got.NextRunAt.UTC(), got.LastError}); diff != "" {
		t.Errorf("resumed run (-want +got):\n%s", diff)
	}
	h := e.history(t, run.ID)
	if last := h[len(h)-1]; last.Kind != store.KindStep || last.Name != "resumed" || last.To != "WORKING" {
		t.Errorf("last log row: %+v, want the resumed step", last)
	}
	// Resumed, it is claimable again.
	if claims, err = es.Claim(e.ctx, enginestore.ClaimParams{Owner: "w2", Kinds: []enginestore.Kind{{Type: "order", Version: 1}}, TTL: time.Minute, RunID: run.ID}); err != nil || len(claims) != 1 {
		t.Errorf("claim the resumed run: %d claims, %v", len(claims), err)
	}
	if err := e.st.Resume(e.ctx, run.ID); !errors.Is(err, runtime.ErrConflict) {
		t.Errorf("resume twice: %v, want ErrConflict", err)
	}
	const missing = "00000000-0000-4000-8000-000000000000"
	if err := e.st.Resume(e.ctx, missing); !errors.Is(err, runtime.ErrRunNotFound) {
		t.Errorf("resume a missing run: %v, want ErrRunNotFound", err)
	}
	if err := e.st.Resume(e.ctx, "nope"); !errors.Is(err, runtime.ErrInvalidID) {
		t.Errorf("resume a malformed id: %v, want ErrInvalidID", err)
	}
}

// FinishTx records the terminal transition and its result in the caller's
// transaction: with the caller's other writes on commit, not at all on
// rollback.
func TestFinishTx(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	run := e.record(t, e.start(t, "k").Run, "INITIATED", "Begin", "WORKING")
	finish := tr("WORKING", "Finish", "SUCCEEDED", nil)
	res := runtime.Result{Output: []byte(`{"total":42}`), CostUSD: 0.5, DurationMS: 1200}

	// Rolled back: nothing of it stays.
	tx, err := e.pool.Begin(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.FinishTx(e.ctx, tx, run.ID, run.RowVersion, finish, res); err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.EmitTx(e.ctx, tx, run.ID, "order.done", map[string]int{"total": 42}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(e.ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.get(t, run.ID); got.State != "WORKING" || got.Result != nil {
		t.Fatalf("after rollback: %s with result %+v", got.State, got.Result)
	}

	// Committed: the transition, its result and the message together. The
	// refusals before it leave the transaction usable.
	var rec store.Recorded
	err = pgx.BeginFunc(e.ctx, e.pool, func(tx pgx.Tx) error {
		if _, err := e.st.FinishTx(e.ctx, tx, run.ID, 1, tr("INITIATED", "Begin", "WORKING", nil), res); !errors.Is(err, runtime.ErrInvalidInput) {
			t.Errorf("finish into a running state: %v, want ErrInvalidInput", err)
		}
		if _, err := e.st.FinishTx(e.ctx, tx, run.ID, run.RowVersion, tr("WORKING", "Begin", "WORKING", nil), res); !errors.Is(err, runtime.ErrTransitionRefused) {
			t.Errorf("finish along a move the table lacks: %v, want ErrTransitionRefused", err)
		}
		var err error
		if rec, err = e.st.FinishTx(e.ctx, tx, run.ID, run.RowVersion, finish, res); err != nil {
			return err
		}
		_, err = e.st.EmitTx(e.ctx, tx, run.ID, "order.done", map[string]int{"total": 42})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	got := e.get(t, run.ID)
	want := &runtime.Result{Status: runtime.StatusSucceeded, Outcome: "done", Output: []byte(`{"total": 42}`), RunID: run.ID, Attempt: 1, CostUSD: 0.5, DurationMS: 1200}
	if diff := cmp.Diff(want, got.Result); diff != "" || got.State != "SUCCEEDED" || rec.RowVersion != got.RowVersion {
		t.Errorf("finished run in %s at row version %d (recorded %d), result (-want +got):\n%s", got.State, got.RowVersion, rec.RowVersion, diff)
	}
	msgs, err := e.st.Outbox(e.ctx, run.ID)
	if err != nil || len(msgs) != 1 || msgs[0].Topic != "order.done" {
		t.Errorf("outbox: %+v, %v; want the one message", msgs, err)
	}
}

// Error messages say each thing once: the component, the operation and its
// subject, then what went wrong.
func TestErrorMessagesSayEachThingOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	broken := orderDef(3)
	broken.Initial = "WORKING"
	_, defErr := e.st.Definition(e.ctx, "order", 5)
	_, startErr := e.st.Start(e.ctx, runtime.StartRequest{Type: "order", Version: 5, IdempotencyKey: "k", Owner: runtime.Owner{TenantID: "t"}})
	tests := []struct {
		err  error
		want string
	}{
		{defErr, "store: read definition: unknown definition: order v5 is not registered"},
		{e.st.Register(e.ctx, broken), "store: register: invalid definition: definition order v3: want exactly one initial state named by Initial, have 1"},
		{startErr, "store: start order/k: unknown definition: order v5 is not registered"},
	}
	for _, tt := range tests {
		if tt.err == nil || tt.err.Error() != tt.want {
			t.Errorf("error %v, want %s", tt.err, tt.want)
		}
	}
}
