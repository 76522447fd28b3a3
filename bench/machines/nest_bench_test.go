package machines_test

// Nest: the nested machine of nest.fsm, generated, against the same
// machine flattened and written by hand as a switch. One lap is six
// transitions: IDLE -Go-> A (entry Enter) -Next-> B -Next-> C -Next-> D
// -Next-> A (INNER's row) -Stop-> IDLE (ACTIVE's row, exit Leave). Both
// run the actions through the same Actions value, whose methods do
// nothing; neither has a recorder.

import (
	"context"
	"testing"

	"github.com/fsmgen/fsmgen/bench/machines/nest"
)

var nestEvents = []nest.Event{nest.Go{}, nest.Next{}, nest.Next{}, nest.Next{}, nest.Next{}, nest.Stop{}}

// nopActions are the Nest actions, doing nothing.
type nopActions struct{}

func (nopActions) Enter(context.Context) error { return nil }
func (nopActions) Leave(context.Context) error { return nil }

func BenchmarkNest(b *testing.B) {
	b.Run("generated-fire", benchNestFire)
	b.Run("switch", benchNestSwitch)
}

func benchNestFire(b *testing.B) {
	ctx := context.Background()
	m := nest.New(nopActions{})
	defer countAllocs(b)()
	for i := 0; i < b.N; i++ {
		if err := m.Fire(ctx, nestEvents[i%len(nestEvents)]); err != nil {
			b.Fatal(err)
		}
	}
	if m.State().Terminal() {
		b.Fatal("left the ring")
	}
}

// nestSwitch is Nest flattened and written by hand: a leaf number, a
// switch on the event's type then on the leaf, the actions of each move
// called in order before the leaf is stored.
type nestSwitch struct {
	state   uint8
	actions nest.Actions
}

const (
	nsIdle uint8 = iota
	nsA
	nsB
	nsC
	nsD
	nsDone
)

func (m *nestSwitch) Fire(ctx context.Context, e nest.Event) error {
	switch e.(type) {
	case nest.Go:
		if m.state == nsIdle {
			if err := m.actions.Enter(ctx); err != nil {
				return err
			}
			m.state = nsA
			return nil
		}
	case nest.Next:
		switch m.state {
		case nsA:
			m.state = nsB
			return nil
		case nsB:
			m.state = nsC
			return nil
		case nsC:
			m.state = nsD
			return nil
		case nsD:
			m.state = nsA
			return nil
		}
	case nest.Stop:
		switch m.state {
		case nsA, nsB, nsC, nsD:
			if err := m.actions.Leave(ctx); err != nil {
				return err
			}
			m.state = nsIdle
			return nil
		}
	case nest.Finish:
		switch m.state {
		case nsIdle:
			m.state = nsDone
			return nil
		case nsA, nsB, nsC, nsD:
			if err := m.actions.Leave(ctx); err != nil {
				return err
			}
			m.state = nsDone
			return nil
		}
	}
	return errIllegal
}

func benchNestSwitch(b *testing.B) {
	ctx := context.Background()
	m := &nestSwitch{actions: nopActions{}}
	defer countAllocs(b)()
	for i := 0; i < b.N; i++ {
		if err := m.Fire(ctx, nestEvents[i%len(nestEvents)]); err != nil {
			b.Fatal(err)
		}
	}
	if m.state == nsDone {
		b.Fatal("left the ring")
	}
}

// TestNestSwitchAgrees walks both machines through two laps and a Finish
// and compares their states after every event: the switch is the same
// machine.
func TestNestSwitchAgrees(t *testing.T) {
	ctx := context.Background()
	m := nest.New(nopActions{})
	sw := &nestSwitch{actions: nopActions{}}
	names := []string{"IDLE", "A", "B", "C", "D", "DONE"}
	for _, e := range append(append(append([]nest.Event{}, nestEvents...), nestEvents...), nest.Go{}, nest.Next{}, nest.Finish{}) {
		errG, errS := m.Fire(ctx, e), sw.Fire(ctx, e)
		if (errG == nil) != (errS == nil) || m.State().String() != names[sw.state] {
			t.Fatalf("after %s: generated %s (%v), switch %s (%v)", e.EventName(), m.State(), errG, names[sw.state], errS)
		}
	}
}
