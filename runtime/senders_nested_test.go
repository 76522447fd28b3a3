package runtime_test

import "testing"

// TestCallerRefusalCompositeTimer: a composite's timer event is the
// runtime's in the composite's leaves, as a leaf's timer event is.
func TestCallerRefusalCompositeTimer(t *testing.T) {
	t.Parallel()
	d := playerDef()
	want := "fired by the timer of ACTIVE; declare it external to let callers send it"
	if got := d.CallerRefusal("PLAYING", "IdleTimeout"); got != want {
		t.Errorf("CallerRefusal(PLAYING, IdleTimeout) = %q, want %q", got, want)
	}
}
