package engine_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// versioned returns version v of a job machine: version 2 adds a REVIEW
// state between WORKING and DONE.
func versioned(v int) *driver {
	d := jobDef("versioned", nil, "")
	d.Version = v
	handlers := map[string]handler{"QUEUED": constant(event("Begin")), "WORKING": constant(event("Finish"))}
	if v == 2 {
		d.States = append(d.States, running("REVIEW"))
		d.Events = append(d.Events, runtime.EventSpec{Name: "Approve"})
		for i, t := range d.Transitions {
			if t.From == "WORKING" && t.Event == "Finish" {
				d.Transitions[i].To = "REVIEW"
			}
		}
		d.Transitions = append(d.Transitions, runtime.TransitionSpec{From: "REVIEW", Event: "Approve", To: "DONE"})
		handlers["REVIEW"] = constant(event("Approve"))
	}
	return &driver{def: d, guards: ownerGuard(), handlers: handlers}
}

// A process that registers a new version keeps driving the runs of the old
// one: they finish on the version they started with.
func TestOldVersionDrainsBesideNew(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	e := v.engine(t, engine.Config{}, versioned(1))
	old := v.start(t, e, "versioned", "before")
	if err := e.Register(ctx, versioned(2)); err != nil {
		t.Fatal(err)
	}
	young := v.start(t, e, "versioned", "after")
	if old.Version != 1 || young.Version != 2 {
		t.Fatalf("started v%d and v%d, want v1 then v2", old.Version, young.Version)
	}
	for {
		n, err := e.RunDue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
	}
	for _, tc := range []struct {
		run  runtime.Run
		want []string
	}{
		{old, []string{"created start ->QUEUED", "transition Begin QUEUED->WORKING", "transition Finish WORKING->DONE"}},
		{young, []string{"created start ->QUEUED", "transition Begin QUEUED->WORKING", "transition Finish WORKING->REVIEW", "transition Approve REVIEW->DONE"}},
	} {
		got := v.get(t, tc.run.ID)
		if got.State != "DONE" || got.Version != tc.run.Version {
			t.Errorf("run v%d: in %s at v%d, want DONE at v%d", tc.run.Version, got.State, got.Version, tc.run.Version)
		}
		if diff := cmp.Diff(tc.want, v.moves(t, tc.run.ID)); diff != "" {
			t.Errorf("log of the v%d run (-want +got):\n%s", tc.run.Version, diff)
		}
	}
}

// Two processes that register different definitions under one (type,
// version): the second is refused, with what differs.
func TestSecondEngineWithChangedDefinitionIsRefused(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	v.engine(t, engine.Config{}, versioned(1))
	changed := versioned(1)
	changed.def.States[1].Wait = true
	other, err := engine.New(store.New(v.pool), engine.Config{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	err = other.Register(context.Background(), changed)
	if !errors.Is(err, runtime.ErrDefinitionConflict) {
		t.Fatalf("register a changed v1 in a second engine: %v, want ErrDefinitionConflict", err)
	}
	const want = "state WORKING: wait false in the database, true here; bump the version (version 2 in the .fsm file) and keep version 1's machine beside it, registered while its runs live; then upgrade or drain them (see docs/changing-a-machine.md)"
	if msg := err.Error(); len(msg) < len(want) || msg[len(msg)-len(want):] != want {
		t.Errorf("error %q, want it to end in %q", msg, want)
	}
}
