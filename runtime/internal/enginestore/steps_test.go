package enginestore_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/internal/enginestore"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// TestStepsWithTheTransition: steps sent with their transition in one
// round trip are logged before it, at the state it leaves, when it moves
// the run, and not at all when it is refused: a stale row version, a lease
// lost to another claim.
func TestStepsWithTheTransition(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.claimed(t, 1)[0]
	steps := &enginestore.Effects{Steps: []enginestore.StepEffect{{Name: "one", Payload: map[string]int{"n": 1}}, {Name: "two"}}}
	advance := func(l enginestore.Lease, rowVersion int64) error {
		it := next(c)
		it.Params.Lease, it.Params.RowVersion, it.Params.Effects = &l, rowVersion, steps
		_, err := e.es.Advance(e.ctx, c.Run.ID, it.Params)
		return err
	}
	logged := func() []string {
		t.Helper()
		h, err := e.st.History(e.ctx, c.Run.ID)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, s := range h {
			if s.Kind == store.KindStep || s.Kind == store.KindTransition {
				out = append(out, s.Name+" at "+s.From)
			}
		}
		return out
	}

	stolen := c.Lease
	stolen.Owner = "w2"
	for _, refused := range []struct {
		name       string
		lease      enginestore.Lease
		rowVersion int64
		want       error
	}{
		{"stale row version", c.Lease, c.Run.RowVersion - 1, runtime.ErrConflict},
		{"another owner", stolen, c.Run.RowVersion, runtime.ErrLeaseLost},
		{"another epoch", enginestore.Lease{RunID: c.Run.ID, Owner: "w1", Epoch: c.Lease.Epoch + 1}, c.Run.RowVersion, runtime.ErrLeaseLost},
	} {
		if err := advance(refused.lease, refused.rowVersion); !errors.Is(err, refused.want) {
			t.Errorf("%s: %v, want %v", refused.name, err, refused.want)
		}
	}
	if got := logged(); len(got) != 0 {
		t.Fatalf("refused transitions logged %v", got)
	}
	if err := advance(c.Lease, c.Run.RowVersion); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"one at A", "two at A", "Next at A"}, logged()); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}

}
