package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
	"github.com/fsmgen/fsmgen/runtime/fsmtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// startingDriver is the player machine started inside ACTIVE, in PLAYING,
// whose entry actions (ACTIVE's StartClock, then PLAYING's Light) its
// Enter runs as a generated driver does: in the start's transaction.
type startingDriver struct {
	*nestedDriver
	fail string // the idempotency key whose start Enter refuses
}

func startingDef() runtime.Definition {
	d := playerDef()
	d.Initial = "PLAYING"
	d.Actions = append(d.Actions, "Light")
	for i := range d.States {
		switch d.States[i].Name {
		case "STOPPED":
			d.States[i].Initial = false
		case "PLAYING":
			d.States[i].Initial = true
			d.States[i].Entry = []string{"Light"}
		}
	}
	return d
}

func (d startingDriver) Enter(ctx context.Context, run *runtime.Run) error {
	tx, ok := engine.Tx(ctx)
	if !ok {
		return errors.New("no transaction in Enter's context")
	}
	if run.ID == "" || run.State != "PLAYING" {
		return errors.New("Enter without the run as written")
	}
	for _, a := range d.def.StartActions() {
		if _, err := tx.Exec(ctx, `INSERT INTO clock_log (what) VALUES ($1)`, run.IdempotencyKey+" "+a); err != nil {
			return err
		}
	}
	if run.IdempotencyKey == d.fail {
		return errors.New("no light")
	}
	return nil
}

// TestStartRunsEntryActions: a run that starts in states with entry
// actions runs them in the transaction that creates it, outermost first,
// once per attempt: not for a start that finds the run under way, again
// for the start that restarts a failed run; an error of theirs refuses the
// start and nothing of it is kept. A driver that cannot run them is
// refused at Register.
func TestStartRunsEntryActions(t *testing.T) {
	t.Parallel()
	def := startingDef()
	if diff := cmp.Diff([]string{"StartClock", "Light"}, def.StartActions()); diff != "" {
		t.Fatalf("StartActions (-want +got):\n%s", diff)
	}
	plain := &nestedDriver{driver: driver{def: def}}
	d := startingDriver{nestedDriver: plain, fail: "bad"}
	clk := fsmtest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	v := newEnv(t, store.WithClock(clk.Now))
	v.asOwner(t, `CREATE TABLE clock_log (id serial PRIMARY KEY, what text NOT NULL); GRANT INSERT, SELECT ON clock_log TO `+v.role+`; GRANT USAGE ON SEQUENCE clock_log_id_seq TO `+v.role)
	ctx := context.Background()

	e, err := engine.New(v.st, engine.Config{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	err = e.Register(ctx, plain)
	if want := "invalid input: machine player v1: a run starts with entry actions (StartClock, Light), and its driver does not run them: it is not a runtime.Starter"; err == nil || err.Error() != want || !errors.Is(err, runtime.ErrInvalidInput) {
		t.Fatalf("Register of a driver without Enter: %v, want %q", err, want)
	}
	if err := e.Register(ctx, d); err != nil {
		t.Fatal(err)
	}
	logged := func() []string {
		t.Helper()
		var out []string
		rows, err := v.owner.Query(ctx, `SELECT what FROM clock_log ORDER BY id`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		return out
	}
	start := func(key string) (runtime.Started, error) {
		return e.Start(ctx, runtime.StartRequest{Type: "player", IdempotencyKey: key, Owner: runtime.Owner{TenantID: "t1", UserID: alice}})
	}

	res, err := start("k")
	if err != nil || res.Outcome != runtime.StartCreated {
		t.Fatalf("Start: %v, %v", res.Outcome, err)
	}
	if res, err := start("k"); err != nil || res.Outcome != runtime.StartRunning {
		t.Fatalf("Start again: %v, %v", res.Outcome, err)
	}
	if diff := cmp.Diff([]string{"k StartClock", "k Light"}, logged()); diff != "" {
		t.Errorf("entry actions after two starts (-want +got):\n%s", diff)
	}

	if _, err := start("bad"); err == nil || !strings.HasSuffix(err.Error(), ": no light") {
		t.Fatalf("Start with failing entry actions: %v, want the actions' error", err)
	}
	var n int
	if err := v.owner.QueryRow(ctx, `SELECT count(*) FROM workflow_runs WHERE idempotency_key = 'bad'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("runs of the refused start: %d (%v), want none", n, err)
	}
	if diff := cmp.Diff([]string{"k StartClock", "k Light"}, logged()); diff != "" {
		t.Errorf("entry actions after the refused start (-want +got):\n%s", diff)
	}

	// ACTIVE's 30 s timer fails the run; starting it again restarts it
	// in PLAYING, and the actions run again.
	clk.Advance(30 * time.Second)
	runDue(t, e, 1)
	if got := v.get(t, res.Run.ID); got.State != "IDLE" {
		t.Fatalf("run in %s, want IDLE", got.State)
	}
	if res, err := start("k"); err != nil || res.Outcome != runtime.StartRestarted {
		t.Fatalf("Start of the failed run: %v, %v", res.Outcome, err)
	}
	if diff := cmp.Diff([]string{"k StartClock", "k Light", "k StartClock", "k Light"}, logged()); diff != "" {
		t.Errorf("entry actions after the restart (-want +got):\n%s", diff)
	}
}
