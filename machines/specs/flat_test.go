package specs_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/machines/specs/internal/spectrace"
)

// TestFlatSIPRestartsTimerD shows what nesting changes in the SIP INVITE
// client transaction: in the flat machine a retransmitted final response
// re-enters COMPLETED and restarts timer D, so the transaction ends 32 s
// after the retransmission instead of 32 s after Completed was entered
// (RFC 3261 section 17.1.1.2), as the nested machine's internal row does.
func TestFlatSIPRestartsTimerD(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file string
		want []string
	}{
		{"sipinvite.fsm", []string{"SENT_1", "COMPLETED", "COMPLETED", "COMPLETED", "TERMINATED", "TERMINATED"}},
		{"sipinvite_flat.fsm", []string{"SENT_1", "COMPLETED", "COMPLETED", "COMPLETED", "COMPLETED", "TERMINATED"}},
	} {
		m := spectrace.NewModel(load(t, filepath.Join("sipinvite", tc.file)))
		var got []string
		step := func(err error) {
			if err != nil {
				t.Fatalf("%s: %v", tc.file, err)
			}
			got = append(got, m.Leaf())
		}
		fire := func(ev string) error {
			_, err := m.Fire(ev, nil)
			return err
		}
		step(m.Start())
		step(fire("Failure"))
		step(m.Advance(20*time.Second, fire))
		step(fire("Failure"))
		step(m.Advance(12*time.Second, fire))
		step(m.Advance(20*time.Second, fire))
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: leaves (-want +got):\n%s", tc.file, diff)
		}
	}
}
