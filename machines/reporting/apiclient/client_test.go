package apiclient_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/machines/reporting/apiclient"
	"github.com/fsmgen/fsmgen/runtime"
)

// reply is one scripted response.
type reply struct {
	status     int
	body       string
	retryAfter string
}

// server answers with the replies in order, the last one for every
// request after them, and counts the requests and their bodies.
type server struct {
	*httptest.Server
	mu      sync.Mutex
	replies []reply
	n       int
	bodies  []string
}

func newServer(t *testing.T, replies ...reply) *server {
	t.Helper()
	s := &server{replies: replies}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		rep := s.replies[min(s.n, len(s.replies)-1)]
		s.n++
		s.bodies = append(s.bodies, string(b))
		s.mu.Unlock()
		if rep.retryAfter != "" {
			w.Header().Set("Retry-After", rep.retryAfter)
		}
		w.WriteHeader(rep.status)
		fmt.Fprint(w, rep.body)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *server) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// sleeps records the delays a client asks for, without waiting.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) Sleep(_ context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.d = append(s.d, d)
	return nil
}

const rateLimited = `{"error":{"code":403,"message":"Quota exceeded","errors":[{"reason":"rateLimitExceeded"}]}}`

func TestRetriesUntilSuccess(t *testing.T) {
	t.Parallel()
	for _, status := range []int{429, 500, 502, 503, 504} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, reply{status: status}, reply{status: status}, reply{status: 200, body: `{"ok":true}`})
			sl := &sleeps{}
			c := &apiclient.Client{HTTP: srv.Client(), Sleep: sl.Sleep, Rand: func() float64 { return 0.5 }}
			var v struct{ OK bool }
			if err := c.GetJSON(context.Background(), "op", srv.URL, &v); err != nil || !v.OK {
				t.Fatalf("GetJSON: %v, %+v", err, v)
			}
			if got := srv.requests(); got != 3 {
				t.Errorf("%d requests, want 3", got)
			}
			// Rand 0.5 is no jitter: 0.5s, then 1s.
			if diff := cmp.Diff([]time.Duration{500 * time.Millisecond, time.Second}, sl.d); diff != "" {
				t.Errorf("delays (-want +got):\n%s", diff)
			}
		})
	}
}

func TestExhaustionWithDefaultsAndJitterBounds(t *testing.T) {
	t.Parallel()
	for _, u := range []float64{0, 0.5, 0.999999} {
		srv := newServer(t, reply{status: 503, body: `{"error":{"code":503,"message":"Backend Error"}}`})
		sl := &sleeps{}
		c := &apiclient.Client{HTTP: srv.Client(), Sleep: sl.Sleep, Rand: func() float64 { return u }}
		var v any
		err := c.GetJSON(context.Background(), "sheets.spreadsheets.values.get", srv.URL, &v)
		var x *apiclient.APIRetryExhausted
		if !errors.As(err, &x) {
			t.Fatalf("err = %v, want *APIRetryExhausted", err)
		}
		want := apiclient.APIRetryExhausted{Operation: "sheets.spreadsheets.values.get", Attempts: 6, StatusCode: 503, Message: "Backend Error"}
		if diff := cmp.Diff(want, *x); diff != "" {
			t.Errorf("error (-want +got):\n%s", diff)
		}
		if got := x.Error(); got != "sheets.spreadsheets.values.get: retries exhausted after 6 attempts: HTTP 503: Backend Error" {
			t.Errorf("Error() = %q", got)
		}
		if got := srv.requests(); got != 6 {
			t.Errorf("%d requests, want 6: the initial one and max_retries=5", got)
		}
		// 0.5, 1, 2, 4, 8 seconds, each within 20% jitter, none over 8s.
		bases := []float64{0.5, 1, 2, 4, 8}
		if len(sl.d) != len(bases) {
			t.Fatalf("%d delays, want %d: %v", len(sl.d), len(bases), sl.d)
		}
		for i, b := range bases {
			lo := time.Duration(b * 0.8 * float64(time.Second))
			hi := min(time.Duration(b*1.2*float64(time.Second)), 8*time.Second)
			if d := sl.d[i]; d < lo || d > hi {
				t.Errorf("u=%v: delay %d = %v, want within [%v, %v]", u, i+1, d, lo, hi)
			}
		}
	}
}

func TestRealJitterStaysInBounds(t *testing.T) {
	t.Parallel()
	srv := newServer(t, reply{status: 429})
	sl := &sleeps{}
	p := runtime.RetryPolicy{MaxAttempts: 41, InitialInterval: 100 * time.Millisecond, Coefficient: 2, MaxInterval: 400 * time.Millisecond, Jitter: 0.5}
	c := &apiclient.Client{HTTP: srv.Client(), Retry: &p, Sleep: sl.Sleep}
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	_, err := c.Do("op", req)
	var x *apiclient.APIRetryExhausted
	if !errors.As(err, &x) || x.Attempts != 41 {
		t.Fatalf("err = %v, want APIRetryExhausted after 41 attempts", err)
	}
	distinct := map[time.Duration]bool{}
	base := 100 * time.Millisecond
	for i, d := range sl.d {
		if i > 0 {
			base = min(2*base, 400*time.Millisecond)
		}
		lo, hi := base/2, min(base*3/2, 400*time.Millisecond)
		if d < lo || d > hi {
			t.Errorf("delay %d = %v, want within [%v, %v]", i+1, d, lo, hi)
		}
		distinct[d] = true
	}
	if len(distinct) < 10 {
		t.Errorf("only %d distinct delays in 40: the jitter is not random", len(distinct))
	}
}

func TestForbiddenRetriedOnlyForRateLimits(t *testing.T) {
	t.Parallel()
	for _, reason := range []string{"rateLimitExceeded", "userRateLimitExceeded"} {
		body := strings.Replace(rateLimited, "rateLimitExceeded", reason, 1)
		srv := newServer(t, reply{status: 403, body: body})
		c := &apiclient.Client{HTTP: srv.Client(), Sleep: (&sleeps{}).Sleep, Retry: &runtime.RetryPolicy{MaxAttempts: 3, InitialInterval: time.Millisecond, MaxInterval: time.Millisecond}}
		var v any
		err := c.GetJSON(context.Background(), "op", srv.URL, &v)
		var x *apiclient.APIRetryExhausted
		if !errors.As(err, &x) || x.Attempts != 3 || x.StatusCode != 403 || x.Reason != reason || x.Message != "Quota exceeded" {
			t.Errorf("%s: err = %#v", reason, err)
		}
	}
	body := `{"error":{"code":403,"message":"The caller does not have permission","errors":[{"reason":"forbidden"}]}}`
	srv := newServer(t, reply{status: 403, body: body})
	c := &apiclient.Client{HTTP: srv.Client(), Sleep: (&sleeps{}).Sleep}
	var v any
	err := c.GetJSON(context.Background(), "op", srv.URL, &v)
	var ae *apiclient.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 403 || ae.Reason != "forbidden" || srv.requests() != 1 {
		t.Errorf("a 403 without a rate-limit reason: err = %v after %d requests, want an APIError after 1", err, srv.requests())
	}
	// The caller of Do reads the whole body of a 403 that is not retried.
	srv2 := newServer(t, reply{status: 403, body: body})
	req, _ := http.NewRequest(http.MethodGet, srv2.URL, nil)
	resp, err := c.Do("op", req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != body {
		t.Errorf("body %q, want %q", b, body)
	}
}

func TestNotRetried(t *testing.T) {
	t.Parallel()
	for _, status := range []int{400, 401, 404, 409, 501} {
		srv := newServer(t, reply{status: status})
		c := &apiclient.Client{HTTP: srv.Client(), Sleep: (&sleeps{}).Sleep}
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		resp, err := c.Do("op", req)
		if err != nil || resp.StatusCode != status || srv.requests() != 1 {
			t.Errorf("status %d: %v after %d requests, want the response after 1", status, err, srv.requests())
		}
		if resp != nil {
			resp.Body.Close()
		}
	}
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 2, 19, 10, 30, 0, 0, time.UTC)
	srv := newServer(t,
		reply{status: 429, retryAfter: "3"},
		reply{status: 503, retryAfter: now.Add(7 * time.Second).Format(http.TimeFormat)},
		reply{status: 503, retryAfter: "soon"},
		reply{status: 200, body: `{}`},
	)
	sl := &sleeps{}
	c := &apiclient.Client{HTTP: srv.Client(), Sleep: sl.Sleep, Rand: func() float64 { return 0.5 }, Now: func() time.Time { return now }}
	var v any
	if err := c.GetJSON(context.Background(), "op", srv.URL, &v); err != nil {
		t.Fatal(err)
	}
	// Retry-After 3 (seconds), then a date 7s ahead, then an unreadable
	// value: the backoff of the third retry, 2s.
	if diff := cmp.Diff([]time.Duration{3 * time.Second, 7 * time.Second, 2 * time.Second}, sl.d); diff != "" {
		t.Errorf("delays (-want +got):\n%s", diff)
	}
}

func TestBodyResentOnRetry(t *testing.T) {
	t.Parallel()
	srv := newServer(t, reply{status: 500}, reply{status: 200})
	c := &apiclient.Client{HTTP: srv.Client(), Sleep: (&sleeps{}).Sleep}
	req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{"values":[[1]]}`))
	resp, err := c.Do("sheets.values.update", req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if diff := cmp.Diff([]string{`{"values":[[1]]}`, `{"values":[[1]]}`}, srv.bodies); diff != "" {
		t.Errorf("bodies (-want +got):\n%s", diff)
	}
}

func TestRealSleepStopsWithTheContext(t *testing.T) {
	t.Parallel()
	srv := newServer(t, reply{status: 503})
	ctx, cancel := context.WithCancel(context.Background())
	c := &apiclient.Client{HTTP: srv.Client(), Retry: &runtime.RetryPolicy{MaxAttempts: 2, InitialInterval: time.Hour, MaxInterval: time.Hour}}
	// Cancel once the first response is in: the client then waits an hour,
	// and must stop at once.
	c.HTTP.Transport = roundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := http.DefaultTransport.RoundTrip(r)
		cancel()
		return resp, err
	})
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	_, err := c.Do("op", req)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestDefaultPolicy(t *testing.T) {
	t.Parallel()
	want := runtime.RetryPolicy{MaxAttempts: 6, InitialInterval: 500 * time.Millisecond, Coefficient: 2, MaxInterval: 8 * time.Second, Jitter: 0.2}
	if diff := cmp.Diff(want, apiclient.DefaultRetryPolicy()); diff != "" {
		t.Errorf("default policy (-want +got):\n%s", diff)
	}
}

func TestRetryAfterIsCappedAtMaxBackoff(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 2, 19, 10, 30, 0, 0, time.UTC)
	srv := newServer(t,
		reply{status: 429, retryAfter: "3600"},
		reply{status: 503, retryAfter: now.Add(2 * time.Hour).Format(http.TimeFormat)},
		reply{status: 429, retryAfter: "3600"},
		reply{status: 200, body: `{}`},
	)
	for _, tc := range []struct {
		name   string
		policy *runtime.RetryPolicy
		want   []time.Duration
	}{
		// The default policy: at most 8s, whatever the server asks.
		{"default", nil, []time.Duration{8 * time.Second, 8 * time.Second, 8 * time.Second}},
		{"set", &runtime.RetryPolicy{MaxAttempts: 4, InitialInterval: time.Second, Coefficient: 2, MaxInterval: 2 * time.Second}, []time.Duration{2 * time.Second, 2 * time.Second, 2 * time.Second}},
	} {
		srv.mu.Lock()
		srv.n = 0
		srv.mu.Unlock()
		sl := &sleeps{}
		c := &apiclient.Client{HTTP: srv.Client(), Retry: tc.policy, Sleep: sl.Sleep, Now: func() time.Time { return now }}
		var v any
		if err := c.GetJSON(context.Background(), "op", srv.URL, &v); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if diff := cmp.Diff(tc.want, sl.d); diff != "" {
			t.Errorf("%s: delays (-want +got):\n%s", tc.name, diff)
		}
	}
}

func TestZeroRetriesMeansNoRetry(t *testing.T) {
	t.Parallel()
	srv := newServer(t, reply{status: 503, body: `{"error":{"code":503,"message":"Backend Error"}}`})
	sl := &sleeps{}
	c := &apiclient.Client{HTTP: srv.Client(), Retry: &runtime.RetryPolicy{}, Sleep: sl.Sleep}
	var v any
	err := c.GetJSON(context.Background(), "sheets.spreadsheets.values.get", srv.URL, &v)
	var x *apiclient.APIRetryExhausted
	if !errors.As(err, &x) {
		t.Fatalf("err = %v, want *APIRetryExhausted", err)
	}
	if got, want := err.Error(), "sheets.spreadsheets.values.get: retries exhausted after 1 attempts: HTTP 503: Backend Error"; got != want {
		t.Errorf("err = %q, want %q", got, want)
	}
	if n := srv.requests(); n != 1 || len(sl.d) != 0 {
		t.Errorf("%d requests and waits %v, want 1 request and no wait", n, sl.d)
	}
}

func TestInvalidPolicyIsRefused(t *testing.T) {
	t.Parallel()
	srv := newServer(t, reply{status: 200, body: `{}`})
	for _, tc := range []struct {
		p    runtime.RetryPolicy
		want string
	}{
		{runtime.RetryPolicy{MaxAttempts: 4, InitialInterval: 2 * time.Second, MaxInterval: time.Second}, "op: invalid retry policy: MaxInterval 1s is below InitialInterval 2s"},
		{runtime.RetryPolicy{MaxAttempts: -1}, "op: invalid retry policy: MaxAttempts -1, InitialInterval 0s, MaxInterval 0s or Coefficient 0 is negative"},
		{runtime.RetryPolicy{MaxAttempts: 2, Jitter: 1.5}, "op: invalid retry policy: Jitter 1.5 is not in [0, 1]"},
	} {
		c := &apiclient.Client{HTTP: srv.Client(), Retry: &tc.p, Sleep: (&sleeps{}).Sleep}
		var v any
		err := c.GetJSON(context.Background(), "op", srv.URL, &v)
		if !errors.Is(err, apiclient.ErrInvalidRetryPolicy) || err.Error() != tc.want {
			t.Errorf("%+v: err = %v, want %s", tc.p, err, tc.want)
		}
	}
	if n := srv.requests(); n != 0 {
		t.Errorf("%d requests sent with an invalid policy", n)
	}
}

// TestNonRetryableCodes: a response whose rate-limit reason, or else whose
// status code, the policy names NonRetryable is not retried.
func TestNonRetryableCodes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, code string
		reply      reply
	}{
		{"status", "503", reply{status: 503, body: `{"error":{"code":503,"message":"Backend Error"}}`}},
		{"reason", "rateLimitExceeded", reply{status: 403, body: rateLimited}},
	} {
		srv := newServer(t, tc.reply)
		sl := &sleeps{}
		p := apiclient.DefaultRetryPolicy()
		p.NonRetryable = []string{tc.code}
		c := &apiclient.Client{HTTP: srv.Client(), Retry: &p, Sleep: sl.Sleep}
		var v any
		err := c.GetJSON(context.Background(), "op", srv.URL, &v)
		var x *apiclient.APIRetryExhausted
		if !errors.As(err, &x) || x.Attempts != 1 || srv.requests() != 1 || len(sl.d) != 0 {
			t.Errorf("%s %s non-retryable: %v after %d requests and waits %v, want exhausted after 1 and no wait", tc.name, tc.code, err, srv.requests(), sl.d)
		}
	}
}
