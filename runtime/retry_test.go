package runtime_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime"
)

// TestRetryPolicyForRun: a policy written retry up to N gives each run its
// snapshot's retry_max + 1 tries within N; any other policy, or a snapshot
// without a number there, leaves the policy as declared.
func TestRetryPolicyForRun(t *testing.T) {
	t.Parallel()
	upTo6 := runtime.RetryPolicy{MaxAttempts: 6, FromPolicy: true}
	for _, tc := range []struct {
		name     string
		p        runtime.RetryPolicy
		snapshot string
		want     int
	}{
		{"within the bound", upTo6, `{"retry_max": 3}`, 4},
		{"above the bound", upTo6, `{"retry_max": 9}`, 6},
		{"no retries", upTo6, `{"retry_max": 0}`, 1},
		{"negative", upTo6, `{"retry_max": -2}`, 1},
		{"no field", upTo6, `{"retrieval_threshold": 0.85}`, 6},
		{"not a number", upTo6, `{"retry_max": "3"}`, 6},
		{"not an object", upTo6, `[3]`, 6},
		{"no snapshot", upTo6, ``, 6},
		{"a fixed policy", runtime.RetryPolicy{MaxAttempts: 3}, `{"retry_max": 5}`, 3},
	} {
		got := tc.p.ForRun(json.RawMessage(tc.snapshot))
		if got.MaxAttempts != tc.want || got.FromPolicy != tc.p.FromPolicy {
			t.Errorf("%s: ForRun(%s) = %d attempts, want %d", tc.name, tc.snapshot, got.MaxAttempts, tc.want)
		}
	}
}

// TestJitteredNeverPassesMaxInterval: the jitter spreads a delay both ways,
// but a delay capped at MaxInterval stays within it, so that no wait of
// any engine is longer than its policy's maximum.
func TestJitteredNeverPassesMaxInterval(t *testing.T) {
	t.Parallel()
	p := runtime.RetryPolicy{MaxAttempts: 6, InitialInterval: 500 * time.Millisecond, Coefficient: 2, MaxInterval: 8 * time.Second, Jitter: 0.2}
	var got []time.Duration
	for _, n := range []int{1, 5, 6} {
		for _, u := range []float64{0, 0.5, 0.999} {
			got = append(got, p.Jittered(p.Delay(n), u).Round(time.Millisecond))
		}
	}
	want := []time.Duration{
		400 * time.Millisecond, 500 * time.Millisecond, 600 * time.Millisecond, // 0.5s ±20%
		6400 * time.Millisecond, 8 * time.Second, 8 * time.Second, // 8s: not above it
		6400 * time.Millisecond, 8 * time.Second, 8 * time.Second,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("jittered delays (-want +got):\n%s", diff)
	}
	if d := (runtime.RetryPolicy{InitialInterval: time.Second, Coefficient: 2, Jitter: 0.5}).Jittered(time.Second, 0.999); d <= time.Second {
		t.Errorf("without a MaxInterval, Jittered(1s, 0.999) = %v, want it spread above 1s", d)
	}
}
