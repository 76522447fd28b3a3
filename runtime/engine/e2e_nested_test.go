package engine_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
	"github.com/fsmgen/fsmgen/runtime/engine/internal/e2eplayer/player"
	"github.com/fsmgen/fsmgen/runtime/fsmtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// clockActions are the player's entry and exit actions: each writes a row
// in the transaction of its transition, through engine.Tx.
type clockActions struct {
	mu    sync.Mutex
	calls []string
}

func (a *clockActions) write(ctx context.Context, what string) error {
	tx, ok := engine.Tx(ctx)
	if !ok {
		return errors.New(what + ": no transaction")
	}
	if _, err := tx.Exec(ctx, `INSERT INTO clock_log VALUES ($1)`, what); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls = append(a.calls, what)
	return nil
}

func (a *clockActions) StartClock(ctx context.Context) error { return a.write(ctx, "start") }
func (a *clockActions) StopClock(ctx context.Context) error  { return a.write(ctx, "stop") }

// TestGeneratedNestedMachine drives a machine generated from a nested .fsm
// (internal/e2eplayer/player.fsm) on the engine: its composite's timer
// runs across child moves and an internal row, its history comes back
// from the database to an engine that never saw it recorded, its entry
// and exit actions write in the transitions' transactions, and its
// eventless row is taken in the Fire of the event that enables it.
func TestGeneratedNestedMachine(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clk := fsmtest.NewClock(t0)
	v := newEnv(t, store.WithClock(clk.Now))
	v.asOwner(t, `CREATE TABLE clock_log (what text NOT NULL); GRANT INSERT, SELECT ON clock_log TO `+v.role)
	acts := &clockActions{}
	driver := func() runtime.Driver { return player.NewDriver(func(*runtime.Run) player.Actions { return acts }) }
	n := nestedEnv{env: v, clk: clk, e: v.engine(t, engine.Config{}, driver()), t0: t0}

	run := n.start(t, n.e, player.Type, "k")
	n.signal(t, run.ID, 5*time.Second, player.Play{})
	n.due(t, run.ID, "PLAYING", 35*time.Second)
	n.signal(t, run.ID, 10*time.Second, player.Pause{})
	n.signal(t, run.ID, 15*time.Second, player.Stop{})
	if got := n.get(t, run.ID); got.State != "STOPPED" || !cmp.Equal(got.History, map[string]string{"RESUME": "PAUSED"}) {
		t.Fatalf("stopped run in %s with history %v", got.State, got.History)
	}

	// Another engine, as after a restart: the history comes from the run.
	n.e = v.engine(t, engine.Config{}, driver())
	n.signal(t, run.ID, 20*time.Second, player.Resume{})
	n.due(t, run.ID, "PAUSED", 50*time.Second)
	n.signal(t, run.ID, 25*time.Second, player.Play{})
	n.signal(t, run.ID, 30*time.Second, player.Tick{})
	n.due(t, run.ID, "PLAYING", 50*time.Second)
	n.runAt(t, 49*time.Second, 0)
	n.runAt(t, 50*time.Second, 1)
	if got := n.get(t, run.ID); got.State != "IDLE" {
		t.Fatalf("after ACTIVE's timer the run is in %s, want IDLE", got.State)
	}
	want := []string{
		"Play STOPPED->PLAYING exited [STOPPED] entered [ACTIVE PLAYING]",
		"Pause PLAYING->PAUSED exited [PLAYING] entered [PAUSED]",
		"Stop PAUSED->STOPPED exited [PAUSED ACTIVE] entered [STOPPED]",
		"Resume STOPPED->PAUSED exited [STOPPED] entered [ACTIVE PAUSED]",
		"Play PAUSED->PLAYING exited [PAUSED] entered [PLAYING]",
		"Tick PLAYING->PLAYING exited [] entered []",
		"IdleTimeout PLAYING->IDLE exited [PLAYING ACTIVE] entered [IDLE]",
	}
	if diff := cmp.Diff(want, n.transitions(t, run.ID)); diff != "" {
		t.Errorf("transitions (-want +got):\n%s", diff)
	}

	// The eventless row after Eject, in the same Signal.
	ejected := n.start(t, n.e, player.Type, "eject")
	n.signal(t, ejected.ID, 55*time.Second, player.Play{})
	if got := n.signal(t, ejected.ID, 56*time.Second, player.Eject{}); got.State != "OFF" {
		t.Errorf("after Eject the run is in %s, want OFF", got.State)
	}
	want = []string{
		"Play STOPPED->PLAYING exited [STOPPED] entered [ACTIVE PLAYING]",
		"Eject PLAYING->EJECTING exited [PLAYING] entered [EJECTING]",
		" EJECTING->OFF exited [EJECTING ACTIVE] entered [OFF]",
	}
	if diff := cmp.Diff(want, n.transitions(t, ejected.ID)); diff != "" {
		t.Errorf("transitions (-want +got):\n%s", diff)
	}

	var logged []string
	rows, err := v.owner.Query(context.Background(), `SELECT what FROM clock_log`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		logged = append(logged, s)
	}
	wantActions := []string{"start", "stop", "start", "stop", "start", "stop"}
	if diff := cmp.Diff(wantActions, acts.calls); diff != "" {
		t.Errorf("actions called (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(slices.Sorted(slices.Values(wantActions)), slices.Sorted(slices.Values(logged))); diff != "" {
		t.Errorf("actions' rows (-want +got):\n%s", diff)
	}
}
