package engine_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
)

// parkedRun returns an engine and a run of the job machine parked in
// WORKING, whose handler failed once and succeeds from then on.
func parkedRun(t *testing.T, v env, cfg engine.Config) (*engine.Engine, runtime.Run) {
	t.Helper()
	var calls atomic.Int32
	d := &driver{def: jobDef("job", nil, ""), guards: ownerGuard(), handlers: map[string]handler{
		"QUEUED": constant(event("Begin")),
		"WORKING": func(context.Context, *runtime.Run) (runtime.Event, error) {
			if calls.Add(1) == 1 {
				return nil, runtime.WithCode("BOOM", errors.New("down"))
			}
			return event("Finish"), nil
		},
	}}
	e := v.engine(t, cfg, d)
	run := v.start(t, e, "job", "k")
	run, err := e.Drive(context.Background(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if run.State != "WORKING" || run.ParkedAt.IsZero() {
		t.Fatalf("run in %s, parked at %v", run.State, run.ParkedAt)
	}
	return e, run
}

var resumedLog = []string{"created start ->QUEUED", "transition Begin QUEUED->WORKING",
	"step parked WORKING->WORKING", "step resumed WORKING->WORKING", "transition Finish WORKING->DONE"}

func TestResume(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	e, run := parkedRun(t, v, engine.Config{})
	ctx := context.Background()
	runDue(t, e, 0) // a parked run is not claimed
	if err := e.Resume(ctx, run.ID); err != nil {
		t.Fatal(err)
	}
	got := v.get(t, run.ID)
	if !got.ParkedAt.IsZero() || got.NextRunAt.IsZero() || got.StepAttempt != 1 || got.State != "WORKING" {
		t.Errorf("resumed run: %s parked %v due %v step attempt %d", got.State, got.ParkedAt, got.NextRunAt, got.StepAttempt)
	}
	if err := e.Resume(ctx, run.ID); !errors.Is(err, runtime.ErrConflict) {
		t.Errorf("Resume of a run that is not parked: %v, want ErrConflict", err)
	}
	runDue(t, e, 1)
	if got := v.get(t, run.ID); got.State != "DONE" {
		t.Errorf("run in %s", got.State)
	}
	if diff := cmp.Diff(resumedLog, v.moves(t, run.ID)); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
}

// TestResumeWakesWorker: with an hour between polls, the notification of
// Resume wakes the idle worker.
func TestResumeWakesWorker(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	e, run := parkedRun(t, v, engine.Config{PollInterval: time.Hour})
	work(t, e)
	<-e.Listening()
	if err := e.Resume(context.Background(), run.ID); err != nil {
		t.Fatal(err)
	}
	if got := wait(t, e, run.ID, 30*time.Second); got.State != "DONE" {
		t.Errorf("run in %s", got.State)
	}
	if diff := cmp.Diff(resumedLog, v.moves(t, run.ID)); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
}
