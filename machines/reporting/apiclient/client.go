package apiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/fsmgen/fsmgen/runtime/stepengine"
)

// RetryPolicy is when and how long a request is retried. Every field is
// taken as written: MaxRetries 0 is no retry, and a zero MaxBackoff means
// retries do not wait. Use DefaultRetryPolicy for the contract's numbers.
type RetryPolicy struct {
	// MaxRetries is the number of retries after the initial attempt; 0
	// sends the request once.
	MaxRetries int
	// InitialBackoff is the delay before the first retry; each retry
	// doubles it, up to MaxBackoff.
	InitialBackoff time.Duration
	// MaxBackoff bounds every wait, a Retry-After included; it is at least
	// InitialBackoff.
	MaxBackoff time.Duration
	// JitterRatio, in [0, 1], spreads each delay at random over
	// [d*(1-r), d*(1+r)].
	JitterRatio float64
}

// ErrInvalidRetryPolicy is the error of a request sent with a policy that
// has a negative field, a MaxBackoff below InitialBackoff or a JitterRatio
// outside [0, 1].
var ErrInvalidRetryPolicy = errors.New("invalid retry policy")

// Validate reports whether the policy can be used, as an
// ErrInvalidRetryPolicy saying why not.
func (p RetryPolicy) Validate() error {
	switch {
	case p.MaxRetries < 0 || p.InitialBackoff < 0 || p.MaxBackoff < 0:
		return fmt.Errorf("%w: negative MaxRetries or backoff in %+v", ErrInvalidRetryPolicy, p)
	case p.MaxBackoff < p.InitialBackoff:
		return fmt.Errorf("%w: MaxBackoff %v is below InitialBackoff %v", ErrInvalidRetryPolicy, p.MaxBackoff, p.InitialBackoff)
	case !(p.JitterRatio >= 0 && p.JitterRatio <= 1):
		return fmt.Errorf("%w: JitterRatio %v is not in [0, 1]", ErrInvalidRetryPolicy, p.JitterRatio)
	}
	return nil
}

// DefaultRetryPolicy returns the contract's policy: max_retries=5,
// initial_backoff_s=0.5, max_backoff_s=8.0, jitter_ratio=0.2.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{MaxRetries: 5, InitialBackoff: 500 * time.Millisecond, MaxBackoff: 8 * time.Second, JitterRatio: 0.2}
}

// Backoff returns the delay before retry n (from 1) for the random number
// u in [0, 1): InitialBackoff * 2^(n-1), capped at MaxBackoff, times
// 1 + JitterRatio*(2u-1), capped at MaxBackoff again.
func (p RetryPolicy) Backoff(n int, u float64) time.Duration {
	base := min(float64(p.InitialBackoff)*math.Pow(2, float64(n-1)), float64(p.MaxBackoff))
	return p.capped(time.Duration(base * (1 + p.JitterRatio*(2*u-1))))
}

// capped bounds a wait to [0, MaxBackoff].
func (p RetryPolicy) capped(d time.Duration) time.Duration {
	return max(0, min(d, p.MaxBackoff))
}

// Client sends API requests with retries. The zero value uses
// http.DefaultClient, DefaultRetryPolicy, a real sleep and math/rand/v2.
type Client struct {
	// HTTP sends each attempt; nil means http.DefaultClient.
	HTTP *http.Client
	// Retry is the policy, used as written; nil means DefaultRetryPolicy.
	Retry *RetryPolicy
	// Sleep waits d or until ctx is done; nil means a timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// Rand returns a number in [0, 1) for the jitter; nil means rand.Float64.
	Rand func() float64
	// Now is the clock a Retry-After date is counted from; nil means
	// time.Now.
	Now func() time.Time
}

// APIRetryExhausted is the error of a request whose retries ran out.
type APIRetryExhausted struct {
	// Operation is the API operation, as the caller named it
	// (sheets.spreadsheets.values.get).
	Operation string
	// Attempts is the initial attempt plus the retries.
	Attempts int
	// StatusCode is the last response's status.
	StatusCode int
	// Reason is the rate-limit reason of a 403, empty otherwise.
	Reason string
	// Message describes the last error: the API's message, or the status.
	Message string
}

func (e *APIRetryExhausted) Error() string {
	reason := ""
	if e.Reason != "" {
		reason = " " + e.Reason
	}
	return fmt.Sprintf("%s: retries exhausted after %d attempts: HTTP %d%s: %s", e.Operation, e.Attempts, e.StatusCode, reason, e.Message)
}

// ErrorType returns "APIRetryExhausted" (stepengine.ErrorTypeAPIRetryExhausted),
// the error's type in the step engine's error artifacts.
func (e *APIRetryExhausted) ErrorType() string { return stepengine.ErrorTypeAPIRetryExhausted }

// APIDetails returns the request's details that the step engine writes
// into a failed step's error artifact and logs.
func (e *APIRetryExhausted) APIDetails() stepengine.APIDetails {
	return stepengine.APIDetails{Operation: e.Operation, StatusCode: e.StatusCode, Attempts: e.Attempts, Reason: e.Reason}
}

// APIError is a response with a status that is not retried (a 4xx other
// than 429 and rate-limit 403s), as GetJSON returns it.
type APIError struct {
	Operation  string
	StatusCode int
	Reason     string
	Message    string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%s: HTTP %d: %s", e.Operation, e.StatusCode, e.Message)
}

// ErrorType returns "APIError".
func (e *APIError) ErrorType() string { return "APIError" }

func (c *Client) policy() RetryPolicy {
	if c.Retry == nil {
		return DefaultRetryPolicy()
	}
	return *c.Retry
}

func (c *Client) sleep(ctx context.Context, d time.Duration) error {
	if c.Sleep != nil {
		return c.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// maxErrorBody bounds how much of an error response is read for its
// reason and message.
const maxErrorBody = 64 << 10

// Do sends req, retrying as the policy says, and returns the first
// response that is not retried: its body is the caller's to close. A
// request with a body must have GetBody (http.NewRequest sets it for
// in-memory bodies) to be retried. operation names the request in errors.
func (c *Client) Do(operation string, req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	p := c.policy()
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", operation, err)
	}
	for attempt := 1; ; attempt++ {
		r := req
		if attempt > 1 && req.Body != nil && req.Body != http.NoBody {
			if req.GetBody == nil {
				return nil, fmt.Errorf("%s: cannot retry a request whose body cannot be re-read (no GetBody)", operation)
			}
			body, err := req.GetBody()
			if err != nil {
				return nil, fmt.Errorf("%s: re-read the request body: %w", operation, err)
			}
			r = req.Clone(ctx)
			r.Body = body
		}
		resp, err := hc.Do(r)
		if err != nil {
			return nil, fmt.Errorf("%s: attempt %d: %w", operation, attempt, err)
		}
		retry, reason, message := classify(resp)
		if !retry {
			return resp, nil
		}
		if attempt > p.MaxRetries {
			return nil, &APIRetryExhausted{Operation: operation, Attempts: attempt, StatusCode: resp.StatusCode, Reason: reason, Message: message}
		}
		now := time.Now
		if c.Now != nil {
			now = c.Now
		}
		d, ok := retryAfter(resp.Header.Get("Retry-After"), now())
		if ok {
			d = p.capped(d)
		} else {
			u := rand.Float64()
			if c.Rand != nil {
				u = c.Rand()
			}
			d = p.Backoff(attempt, u)
		}
		if err := c.sleep(ctx, d); err != nil {
			return nil, fmt.Errorf("%s: waiting %v before attempt %d: %w", operation, d, attempt+1, err)
		}
	}
}

// classify reads a response and says whether to retry it, with its
// rate-limit reason and message. The body of a retried response is read
// (bounded) and closed.
func classify(resp *http.Response) (retry bool, reason, message string) {
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		retry = true
	case http.StatusForbidden:
	default:
		return false, "", ""
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	reason, message = parseError(body)
	if resp.StatusCode == http.StatusForbidden {
		if reason != "rateLimitExceeded" && reason != "userRateLimitExceeded" {
			// Not a rate limit: hand the response back with its body.
			resp.Body = struct {
				io.Reader
				io.Closer
			}{io.MultiReader(bytes.NewReader(body), resp.Body), resp.Body}
			return false, "", ""
		}
	} else {
		reason = ""
	}
	resp.Body.Close()
	if message == "" {
		message = http.StatusText(resp.StatusCode)
	}
	return true, reason, message
}

// parseError reads a Google API error body: the first reason of
// error.errors, and error.message.
func parseError(body []byte) (reason, message string) {
	var e struct {
		Error struct {
			Message string `json:"message"`
			Errors  []struct {
				Reason string `json:"reason"`
			} `json:"errors"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil {
		return "", strings.TrimSpace(string(body))
	}
	for _, x := range e.Error.Errors {
		if x.Reason != "" {
			reason = x.Reason
			break
		}
	}
	return reason, e.Error.Message
}

// retryAfter parses a Retry-After value: seconds, or an HTTP date counted
// from now.
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return 0, false
		}
		return time.Duration(n) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		d := t.Sub(now)
		if d < 0 {
			d = 0
		}
		return d, true
	}
	return 0, false
}

// GetJSON sends a GET request to url, with retries, and decodes a 2xx
// response's JSON body into v. Another status is an *APIError.
func (c *Client) GetJSON(ctx context.Context, operation, url string, v any) error {
	return c.SendJSON(ctx, operation, http.MethodGet, url, nil, v)
}

// SendJSON sends a request with method to url, with in encoded as its JSON
// body (no body when in is nil), with retries, and decodes a 2xx
// response's JSON body into out (unless out is nil). Another status is an
// *APIError.
func (c *Client) SendJSON(ctx context.Context, operation, method, url string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("%s: encode the request: %w", operation, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return fmt.Errorf("%s: %w", operation, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(operation, req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s: read the response: %w", operation, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		reason, message := parseError(data)
		if message == "" {
			message = http.StatusText(resp.StatusCode)
		}
		return &APIError{Operation: operation, StatusCode: resp.StatusCode, Reason: reason, Message: message}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s: decode the response: %w", operation, err)
	}
	return nil
}

// IsRetryExhausted reports whether err is, or wraps, an *APIRetryExhausted,
// and returns it.
func IsRetryExhausted(err error) (*APIRetryExhausted, bool) {
	var e *APIRetryExhausted
	ok := errors.As(err, &e)
	return e, ok
}
