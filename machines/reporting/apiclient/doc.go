// Package apiclient is the HTTP client of the step engine's workflows: a
// wrapper of net/http that retries an API request on transient errors, with
// the contract's policy, and reports an exhausted request as
// *APIRetryExhausted.
//
// # What is retried
//
// A response with status 429, 500, 502, 503 or 504, and a 403 whose error
// reason is rateLimitExceeded or userRateLimitExceeded (read from a Google
// API error body, {"error": {"errors": [{"reason": ...}], "message": ...}}).
// Any other status is returned to the caller at once; so is a transport
// error (no response at all), wrapped with the operation's name.
//
// # How long it waits
//
// Exponential backoff with jitter: before retry n (n = 1, 2, ...) it waits
// InitialBackoff * 2^(n-1), at most MaxBackoff, times a random factor in
// [1-JitterRatio, 1+JitterRatio]. A Retry-After header (seconds, or an
// HTTP date) replaces that delay. No wait is ever longer than MaxBackoff,
// a Retry-After's included: a server asking for an hour gets MaxBackoff.
//
// The defaults are the contract's: MaxRetries 5, InitialBackoff 0.5s,
// MaxBackoff 8s, JitterRatio 0.2 (DefaultRetryPolicy), used when
// Client.Retry is nil. A policy set in Client.Retry is used as written,
// zero fields included: &RetryPolicy{} sends each request once and
// never waits. A policy with a negative field, a MaxBackoff below its
// InitialBackoff or a JitterRatio outside [0, 1] is refused with
// ErrInvalidRetryPolicy before anything is sent. Client.Sleep, Client.Rand
// and Client.Now can be replaced, which is how the tests count the delays
// without waiting for them.
//
// # When retries run out
//
// After the initial attempt and MaxRetries retries, Do returns an
// *APIRetryExhausted with the operation's name, the attempts made (initial
// + retries), the last status code, the rate-limit reason (403 only) and
// the error's message. The step engine writes those fields into the
// failed step's error artifact.
package apiclient
