package apiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/stepengine"
)

// ErrInvalidRetryPolicy is the error of a request sent with a policy that
// has a negative MaxAttempts, interval or Coefficient, a MaxInterval below
// InitialInterval, or a Jitter outside [0, 1].
var ErrInvalidRetryPolicy = errors.New("invalid retry policy")

// validate reports whether p can be used, as an ErrInvalidRetryPolicy
// saying why not.
func validate(p runtime.RetryPolicy) error {
	switch {
	case p.MaxAttempts < 0 || p.InitialInterval < 0 || p.MaxInterval < 0 || p.Coefficient < 0:
		return fmt.Errorf("%w: MaxAttempts %d, InitialInterval %v, MaxInterval %v or Coefficient %v is negative",
			ErrInvalidRetryPolicy, p.MaxAttempts, p.InitialInterval, p.MaxInterval, p.Coefficient)
	case p.MaxInterval > 0 && p.MaxInterval < p.InitialInterval:
		return fmt.Errorf("%w: MaxInterval %v is below InitialInterval %v", ErrInvalidRetryPolicy, p.MaxInterval, p.InitialInterval)
	case !(p.Jitter >= 0 && p.Jitter <= 1):
		return fmt.Errorf("%w: Jitter %v is not in [0, 1]", ErrInvalidRetryPolicy, p.Jitter)
	}
	return nil
}

// DefaultRetryPolicy returns the contract's policy: max_retries=5 (six
// attempts in all), initial_backoff_s=0.5, doubling, max_backoff_s=8.0,
// jitter_ratio=0.2.
func DefaultRetryPolicy() runtime.RetryPolicy {
	return runtime.RetryPolicy{MaxAttempts: 6, InitialInterval: 500 * time.Millisecond, Coefficient: 2, MaxInterval: 8 * time.Second, Jitter: 0.2}
}

// Client sends API requests with retries. The zero value uses
// http.DefaultClient, DefaultRetryPolicy, a real sleep and math/rand/v2.
type Client struct {
	// HTTP sends each attempt; nil means http.DefaultClient.
	HTTP *http.Client
	// Retry is the policy, used as written; nil means DefaultRetryPolicy.
	Retry *runtime.RetryPolicy
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

func (c *Client) policy() runtime.RetryPolicy {
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
	if err := validate(p); err != nil {
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
		code := reason
		if code == "" {
			code = strconv.Itoa(resp.StatusCode)
		}
		if !p.Retryable(code, attempt) {
			return nil, &APIRetryExhausted{Operation: operation, Attempts: attempt, StatusCode: resp.StatusCode, Reason: reason, Message: message}
		}
		now := time.Now
		if c.Now != nil {
			now = c.Now
		}
		d, ok := retryAfter(resp.Header.Get("Retry-After"), now())
		if ok {
			if p.MaxInterval > 0 {
				d = min(d, p.MaxInterval)
			}
		} else {
			u := rand.Float64()
			if c.Rand != nil {
				u = c.Rand()
			}
			d = p.Jittered(p.Delay(attempt), u)
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
