package runtime

import (
	"encoding/json"
	"math"
	"time"
)

// RetryPolicy says how often and how fast a failing step is tried again.
//
// The wait before attempt n+1, after attempt n failed, is
// InitialInterval * Coefficient^(n-1), capped at MaxInterval, then spread by
// up to ±Jitter of itself, never past MaxInterval. A step is tried at most
// MaxAttempts times in all; an error whose code is in NonRetryable is not
// retried at all.
type RetryPolicy struct {
	// Name is the preset's name, empty for a policy written out in full.
	Name            string
	MaxAttempts     int
	InitialInterval time.Duration
	Coefficient     float64
	MaxInterval     time.Duration
	// Jitter is a fraction in [0, 1].
	Jitter       float64
	NonRetryable []string
	// FromPolicy makes MaxAttempts a bound (retry up to N in the .fsm):
	// each run is tried as often as its policy snapshot says, within it
	// (see ForRun).
	FromPolicy bool `json:",omitempty"`
}

// PolicyRetryField is the field of a run's policy snapshot, a JSON object,
// that sets the run's retries after a first failed try in a state whose
// policy is FromPolicy: the execution policy's retry_max.
const PolicyRetryField = "retry_max"

// ForRun returns the policy that governs a run whose policy snapshot is
// snapshot: p itself, unless p is FromPolicy and the snapshot has a
// PolicyRetryField number n, when MaxAttempts is n + 1 within [1,
// p.MaxAttempts]. A snapshot without the field leaves the bound.
func (p RetryPolicy) ForRun(snapshot json.RawMessage) RetryPolicy {
	if !p.FromPolicy || len(snapshot) == 0 {
		return p
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(snapshot, &fields) != nil {
		return p
	}
	var retries float64
	if raw, ok := fields[PolicyRetryField]; !ok || json.Unmarshal(raw, &retries) != nil || math.IsNaN(retries) {
		return p
	}
	if attempts := retries + 1; attempts < float64(p.MaxAttempts) {
		p.MaxAttempts = max(1, int(attempts))
	}
	return p
}

// The named retry policies. Their numbers follow the platform's published
// defaults: the database policy waits 500 ms, 1 s, 2 s, 4 s and gives up
// after 5 attempts.
var (
	// RetryValidation never retries: validation is deterministic.
	RetryValidation = RetryPolicy{Name: "validation", MaxAttempts: 1, InitialInterval: time.Second, Coefficient: 2, MaxInterval: time.Second}
	// RetryDatabase: 5 attempts, 500 ms doubling.
	RetryDatabase = RetryPolicy{Name: "database", MaxAttempts: 5, InitialInterval: 500 * time.Millisecond, Coefficient: 2, MaxInterval: 30 * time.Second, Jitter: 0.2}
	// RetryExternalService: 10 attempts, 1 s doubling, capped at a minute.
	RetryExternalService = RetryPolicy{Name: "externalService", MaxAttempts: 10, InitialInterval: time.Second, Coefficient: 2, MaxInterval: time.Minute, Jitter: 0.2}
	// RetryPayment: 3 attempts, careful with money.
	RetryPayment = RetryPolicy{Name: "payment", MaxAttempts: 3, InitialInterval: time.Second, Coefficient: 2, MaxInterval: 10 * time.Second, Jitter: 0.2}
	// RetryBackground: 20 attempts over hours.
	RetryBackground = RetryPolicy{Name: "background", MaxAttempts: 20, InitialInterval: time.Second, Coefficient: 2, MaxInterval: time.Hour, Jitter: 0.2}
)

// Delay returns the wait before the attempt that follows failed attempt n
// (n >= 1), without jitter.
func (p RetryPolicy) Delay(n int) time.Duration {
	if n < 1 {
		n = 1
	}
	coef := p.Coefficient
	if coef < 1 {
		coef = 1
	}
	d := float64(p.InitialInterval) * math.Pow(coef, float64(n-1))
	if p.MaxInterval > 0 && d > float64(p.MaxInterval) {
		return p.MaxInterval
	}
	if d > math.MaxInt64 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(d)
}

// Jittered spreads d by up to ±p.Jitter of itself, at most MaxInterval
// when it is set; u must be uniform in [0, 1) (for example
// rand.Float64()).
func (p RetryPolicy) Jittered(d time.Duration, u float64) time.Duration {
	if p.Jitter <= 0 {
		return d
	}
	d = time.Duration(float64(d) * (1 + p.Jitter*(2*u-1)))
	if p.MaxInterval > 0 {
		d = min(d, p.MaxInterval)
	}
	return d
}

// Retryable reports whether an error with the given code may be retried
// after attempt n failed.
func (p RetryPolicy) Retryable(code string, n int) bool {
	if n >= p.MaxAttempts {
		return false
	}
	for _, c := range p.NonRetryable {
		if c == code {
			return false
		}
	}
	return true
}
