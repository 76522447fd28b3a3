package console_test

import (
	"context"
	"encoding/json"
	"errors"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/internal/console"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/admin"
	"github.com/fsmgen/fsmgen/runtime/engine"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// alice owns the runs the tests start.
const alice = "6f1c2a3e-58d1-4c1e-9d5e-0b6a1f0c2d3e"

// parcel is the machine most tests run: every non-terminal state waits,
// so runs move only when signalled. Cancel is guarded while the parcel
// is pending and unguarded once packed.
func parcel() runtime.Definition {
	return runtime.Definition{
		Machine: "Parcel", Type: "parcel", Version: 1, Initial: "PENDING", Cancel: "Cancel",
		States: []runtime.StateSpec{
			{Name: "PENDING", Initial: true, Status: runtime.StatusRunning, Wait: true},
			{Name: "PACKED", Status: runtime.StatusRunning, Wait: true},
			{Name: "SHIPPED", Status: runtime.StatusRunning, Wait: true},
			{Name: "DELIVERED", Status: runtime.StatusSucceeded, Outcome: "delivered"},
			{Name: "CANCELLED", Status: runtime.StatusCancelled},
		},
		Events: []runtime.EventSpec{
			{Name: "Pay", Fields: []runtime.FieldSpec{{Name: "ref", Type: "string"}}},
			{Name: "Ship", Fields: []runtime.FieldSpec{{Name: "carrier", Type: "string"}}},
			{Name: "Deliver"},
			{Name: "Cancel", Fields: []runtime.FieldSpec{{Name: "userID", Type: "string"}}},
		},
		Guards: []string{"UserOwnsRun"},
		Transitions: []runtime.TransitionSpec{
			{From: "PENDING", To: "PACKED", Event: "Pay"},
			{From: "PENDING", To: "CANCELLED", Event: "Cancel", Guard: "UserOwnsRun"},
			{From: "PACKED", To: "SHIPPED", Event: "Ship"},
			{From: "PACKED", To: "CANCELLED", Event: "Cancel"},
			{From: "SHIPPED", To: "DELIVERED", Event: "Deliver"},
		},
	}
}

// job is a machine whose WORKING state's handler always fails, once:
// its runs park there.
func job() runtime.Definition {
	return runtime.Definition{
		Machine: "Job", Type: "job", Version: 1, Initial: "QUEUED",
		States: []runtime.StateSpec{
			{Name: "QUEUED", Initial: true, Status: runtime.StatusRunning},
			{Name: "WORKING", Status: runtime.StatusRunning, Retry: &runtime.RetryPolicy{MaxAttempts: 1}},
			{Name: "DONE", Status: runtime.StatusSucceeded},
		},
		Events:      []runtime.EventSpec{{Name: "Begin"}, {Name: "Finish"}},
		Transitions: []runtime.TransitionSpec{{From: "QUEUED", To: "WORKING", Event: "Begin"}, {From: "WORKING", To: "DONE", Event: "Finish"}},
	}
}

// jobDriver drives job: QUEUED begins, WORKING fails with code BOOM.
type jobDriver struct{}

// ev is an event of the test machines: a name, no payload.
type ev string

func (e ev) EventName() string { return string(e) }

func (jobDriver) Definition() runtime.Definition { return job() }

func (jobDriver) Handle(_ context.Context, _ *runtime.Run, state string) (runtime.Event, error) {
	if state == "QUEUED" {
		return ev("Begin"), nil
	}
	return nil, runtime.WithCode("BOOM", errors.New("the <b>worker</b> fell over"))
}

func (jobDriver) Decode(name string, _ []byte) (runtime.Event, error) { return ev(name), nil }

func (jobDriver) Fire(ctx context.Context, _ *runtime.Run, state string, e runtime.Event, rec runtime.Recorder) error {
	def := job()
	for _, t := range def.Transitions {
		if t.From == state && t.Event == e.EventName() {
			to, _ := def.State(t.To)
			return rec.Record(ctx, runtime.Transition{Machine: def.Type, Version: def.Version, From: state, To: t.To,
				Event: t.Event, Payload: json.RawMessage("{}"), Status: to.Status})
		}
	}
	return &runtime.TransitionError{Machine: def.Type, State: state, Event: e.EventName(), Err: runtime.ErrIllegalTransition}
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// env is a migrated database with parcel registered, and an engine that
// drives job.
type env struct {
	pool *pgxpool.Pool
	st   *store.Store
	adm  *admin.Admin
	e    *engine.Engine
}

func newEnv(t *testing.T) *env {
	t.Helper()
	pool := pgtest.NewPool(t, pgtest.MaxConns(12))
	st := store.New(pool)
	e, err := engine.New(st, engine.Config{WorkerID: "console-test", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Register(context.Background(), parcel()); err != nil {
		t.Fatal(err)
	}
	if err := e.Register(context.Background(), jobDriver{}); err != nil {
		t.Fatal(err)
	}
	return &env{pool: pool, st: st, adm: admin.New(st), e: e}
}

// start starts a run of typ with key for tenant, owned by alice.
func (v *env) start(t *testing.T, typ, key, tenant string) runtime.Run {
	t.Helper()
	res, err := v.st.Start(context.Background(), runtime.StartRequest{Type: typ, Version: 1, IdempotencyKey: key, Owner: runtime.Owner{TenantID: tenant, UserID: alice},
		Input: map[string]string{"note": "input of " + key}})
	if err != nil {
		t.Fatal(err)
	}
	return res.Run
}

// signal fires event with payload on run id as an operator.
func (v *env) signal(t *testing.T, id, event, payload string) runtime.Run {
	t.Helper()
	run, err := v.adm.Signal(context.Background(), id, event, json.RawMessage(payload), admin.SignalOptions{})
	if err != nil {
		t.Fatalf("signal %s: %v", event, err)
	}
	return run
}

// parked starts a job run and drives it until it parks.
func (v *env) parked(t *testing.T, key string) runtime.Run {
	t.Helper()
	run := v.start(t, "job", key, "t1")
	run, err := v.e.Drive(context.Background(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if run.ParkedAt.IsZero() || run.State != "WORKING" {
		t.Fatalf("job run %s is in %s, parked at %v; want parked in WORKING", run.ID, run.State, run.ParkedAt)
	}
	return run
}

func (v *env) get(t *testing.T, id string) runtime.Run {
	t.Helper()
	run, err := v.st.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// serve serves a console of cfg (its store set to the env's) and returns
// a client that keeps cookies and does not follow redirects.
func (v *env) serve(t *testing.T, cfg console.Config) (*httptest.Server, *http.Client) {
	t.Helper()
	cfg.Store = v.st
	srv, err := console.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return ts, client
}

// response is what a request got.
type response struct {
	Status   int
	Body     string
	Header   http.Header
	Location string
}

func do(t *testing.T, c *http.Client, req *http.Request) response {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{Status: resp.StatusCode, Body: string(b), Header: resp.Header, Location: resp.Header.Get("Location")}
}

func get(t *testing.T, c *http.Client, u string) response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	return do(t, c, req)
}

func post(t *testing.T, c *http.Client, u string, form url.Values) response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return do(t, c, req)
}

var (
	runRowRE    = regexp.MustCompile(`data-run="([^"]+)"`)
	csrfRE      = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)
	errorMsgRE  = regexp.MustCompile(`(?s)<p class="error" id="error-message">(.*?)</p>`)
	historyRowE = regexp.MustCompile(`(?s)<tr class="kind-([a-z]+)">\s*<td>\d+</td><td>[^<]*</td><td>(\d+)</td><td>[a-z]+</td><td class="step">([^<]*)</td>\s*<td class="from">([^<]*)</td><td class="to">([^<]*)</td>`)
)

// runIDs returns the ids of the runs a list page shows, in order.
func runIDs(body string) []string {
	var ids []string
	for _, m := range runRowRE.FindAllStringSubmatch(body, -1) {
		ids = append(ids, m[1])
	}
	return ids
}

// errorMessage returns the message of an error page, unescaped.
func errorMessage(body string) string {
	m := errorMsgRE.FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return html.UnescapeString(m[1])
}

// csrf returns the CSRF token of a run page's forms.
func csrf(t *testing.T, body string) string {
	t.Helper()
	m := csrfRE.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("the page has no CSRF token:\n%s", body)
	}
	return m[1]
}

// heatJSON reads a machine's heat.json.
func heatJSON(t *testing.T, c *http.Client, u string) map[string]map[string]any {
	t.Helper()
	r := get(t, c, u)
	if r.Status != http.StatusOK {
		t.Fatalf("GET %s: %d\n%s", u, r.Status, r.Body)
	}
	var out struct {
		States map[string]map[string]any `json:"states"`
	}
	if err := json.Unmarshal([]byte(r.Body), &out); err != nil {
		t.Fatal(err)
	}
	return out.States
}
