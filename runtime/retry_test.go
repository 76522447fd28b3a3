package runtime_test

import (
	"encoding/json"
	"testing"

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
