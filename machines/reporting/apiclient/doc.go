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
// The policy is a runtime.RetryPolicy, the one the engines retry their
// states with: before retry n (n = 1, 2, ...) it waits InitialInterval *
// Coefficient^(n-1), at most MaxInterval, spread at random by up to
// ±Jitter of itself and still at most MaxInterval (RetryPolicy.Delay and
// Jittered). A Retry-After header (seconds, or an HTTP date) replaces that
// delay, bounded by MaxInterval too: a server asking for an hour gets
// MaxInterval. A response whose rate-limit reason, or else whose status
// code ("503"), is in NonRetryable is not retried.
//
// The defaults are the contract's: max_retries=5 (MaxAttempts 6, the
// initial attempt included), initial_backoff_s=0.5 doubling,
// max_backoff_s=8.0, jitter_ratio=0.2 (DefaultRetryPolicy), used when
// Client.Retry is nil. A policy set in Client.Retry is used as written,
// zero fields included: &runtime.RetryPolicy{} sends each request once.
// A policy with a negative MaxAttempts, interval or Coefficient, a
// MaxInterval below its InitialInterval or a Jitter outside [0, 1] is
// refused with ErrInvalidRetryPolicy before anything is sent. Client.Sleep,
// Client.Rand and Client.Now can be replaced, which is how the tests count
// the delays without waiting for them.
//
// # When retries run out
//
// After MaxAttempts attempts (the initial one and the retries), Do returns
// an *APIRetryExhausted with the operation's name, the attempts made
// (initial + retries), the last status code, the rate-limit reason (403 only) and
// the error's message. The step engine writes those fields into the
// failed step's error artifact.
package apiclient
