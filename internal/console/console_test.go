package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/internal/console"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/admin"
	"github.com/fsmgen/fsmgen/runtime/fsmtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// xss is a payload an event carries: user data the console must show as
// text.
const xss = `<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>`

func TestRunsListFilters(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	a := v.start(t, "parcel", "a", "acme")
	b := v.start(t, "parcel", "b", "acme")
	c := v.start(t, "parcel", "c", "globex")
	p := v.parked(t, "p")
	v.signal(t, b.ID, "Pay", `{"ref":"r-b"}`)
	v.signal(t, c.ID, "Pay", `{"ref":"r-c"}`)
	v.signal(t, c.ID, "Cancel", `{"userID":"`+alice+`"}`)
	ts, client := v.serve(t, console.Config{})

	tests := []struct {
		query string
		want  []string
	}{
		{"", []string{p.ID, c.ID, b.ID, a.ID}},
		{"type=parcel", []string{c.ID, b.ID, a.ID}},
		{"type=job", []string{p.ID}},
		{"state=PACKED", []string{b.ID}},
		{"state=packed", []string{b.ID}},
		{"state=Pending,+cancelled", []string{c.ID, a.ID}},
		{"state=NOWHERE", nil},
		{"status=cancelled", []string{c.ID}},
		{"status=running", []string{p.ID, b.ID, a.ID}},
		{"tenant=acme", []string{b.ID, a.ID}},
		{"tenant=acme&state=PENDING", []string{a.ID}},
		{"newer=1h", []string{p.ID, c.ID, b.ID, a.ID}},
		{"newer=2d&type=job", []string{p.ID}},
		{"older=1h", nil},
		{"after=" + b.ID, []string{a.ID}},
		{"before=" + b.ID, []string{p.ID, c.ID}},
		{"q=" + b.ID, []string{b.ID}},
		{"q=" + strings.ToUpper(c.ID[:8]), []string{c.ID}},
		{"q=b", idsOrKey([]string{p.ID, c.ID, b.ID, a.ID}, "b", b.ID)},
		{"q=no-such-key", nil},
	}
	for _, tc := range tests {
		r := get(t, client, ts.URL+"/runs?"+tc.query)
		if r.Status != http.StatusOK {
			t.Errorf("GET /runs?%s: %d\n%s", tc.query, r.Status, r.Body)
			continue
		}
		if diff := cmp.Diff(tc.want, runIDs(r.Body)); diff != "" {
			t.Errorf("GET /runs?%s: runs (-want +got):\n%s", tc.query, diff)
		}
		if tc.want == nil && !strings.Contains(r.Body, `<p id="no-runs">No runs match.</p>`) {
			t.Errorf("GET /runs?%s: no 'No runs match.'", tc.query)
		}
	}

	// Pages of PageSize runs, newest first, link to the older and the
	// newer runs, and each says how many runs match over all pages.
	ts2, client2 := v.serve(t, console.Config{PageSize: 2})
	type listPage struct {
		Runs         []string
		Total        string
		Older, Newer bool
	}
	read := func(u string) (listPage, string, string) {
		t.Helper()
		r := get(t, client2, ts2.URL+strings.ReplaceAll(u, "&amp;", "&"))
		if r.Status != http.StatusOK {
			t.Fatalf("GET %s: %d\n%s", u, r.Status, r.Body)
		}
		lp := listPage{Runs: runIDs(r.Body)}
		if m := regexp.MustCompile(`<p class="count" id="total">([^<]*)</p>`).FindStringSubmatch(r.Body); m != nil {
			lp.Total = m[1]
		}
		older := regexp.MustCompile(`<a href="([^"]+)" class="older">`).FindStringSubmatch(r.Body)
		newer := regexp.MustCompile(`<a href="([^"]+)" class="newer">`).FindStringSubmatch(r.Body)
		lp.Older, lp.Newer = older != nil, newer != nil
		link := func(m []string) string {
			if m == nil {
				return ""
			}
			return m[1]
		}
		return lp, link(older), link(newer)
	}
	first, olderURL, _ := read("/runs?type=parcel")
	if diff := cmp.Diff(listPage{Runs: []string{c.ID, b.ID}, Total: "3 runs match, newest first.", Older: true}, first); diff != "" {
		t.Errorf("first page (-want +got):\n%s", diff)
	}
	second, _, newerURL := read(olderURL)
	if diff := cmp.Diff(listPage{Runs: []string{a.ID}, Total: "3 runs match, newest first.", Newer: true}, second); diff != "" {
		t.Errorf("second page (-want +got):\n%s", diff)
	}
	back, _, _ := read(newerURL)
	if diff := cmp.Diff(first, back); diff != "" {
		t.Errorf("back to the first page (-want +got):\n%s", diff)
	}
	one, _, _ := read("/runs?q=" + a.ID)
	if diff := cmp.Diff(listPage{Runs: []string{a.ID}, Total: "1 run matches, newest first."}, one); diff != "" {
		t.Errorf("search for a run (-want +got):\n%s", diff)
	}
}

// idsOrKey returns the ids of ids that start with prefix, and key's run
// when it does not: what a search for prefix finds when key's idempotency
// key is prefix.
func idsOrKey(ids []string, prefix, key string) []string {
	var out []string
	for _, id := range ids {
		if strings.HasPrefix(id, prefix) || id == key {
			out = append(out, id)
		}
	}
	return out
}

func TestRunsListRefusesBadFilters(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ts, client := v.serve(t, console.Config{})
	tests := []struct{ query, want string }{
		{"status=stuck", `status "stuck" is not one of running, succeeded, failed, cancelled`},
		{"older=yesterday", `older: "yesterday" is not an age: want a duration such as 90s, 2h or 3d`},
		{"newer=-3d", `newer: "-3d" is not an age: want a duration such as 90s, 2h or 3d`},
		{"after=42", `after: run "42": malformed id: want a UUID`},
		{"before=x", `before: run "x": malformed id: want a UUID`},
		{"after=0b7c1d2e-3f40-4a51-8b62-7c83d94ea5f6&before=0b7c1d2e-3f40-4a51-8b62-7c83d94ea5f6", `after and before: want one of them`},
	}
	for _, tc := range tests {
		r := get(t, client, ts.URL+"/runs?"+tc.query)
		if r.Status != http.StatusBadRequest {
			t.Errorf("GET /runs?%s: status %d, want 400", tc.query, r.Status)
		}
		if got := errorMessage(r.Body); got != tc.want {
			t.Errorf("GET /runs?%s: message %q, want %q", tc.query, got, tc.want)
		}
	}
}

func TestRunPage(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	run := v.start(t, "parcel", "page", "acme")
	v.signal(t, run.ID, "Pay", `{"ref":`+jsonString(xss)+`}`)
	ts, client := v.serve(t, console.Config{})
	r := get(t, client, ts.URL+"/runs/"+run.ID)
	if r.Status != http.StatusOK {
		t.Fatalf("GET run page: %d\n%s", r.Status, r.Body)
	}
	if !regexp.MustCompile(`<g class="state[^"]*\bcurrent\b[^"]*" data-state="PACKED">`).MatchString(r.Body) {
		t.Errorf("the diagram does not highlight PACKED:\n%s", r.Body)
	}
	if n := len(regexp.MustCompile(`<g class="[^"]*\bcurrent\b`).FindAllString(r.Body, -1)); n != 1 {
		t.Errorf("%d states highlighted, want 1", n)
	}
	// The run's path: the states it was in, the row it took.
	var visited, taken []string
	for _, m := range regexp.MustCompile(`<g class="state[^"]*\bvisited\b[^"]*" data-state="([^"]+)"`).FindAllStringSubmatch(r.Body, -1) {
		visited = append(visited, m[1])
	}
	for _, m := range regexp.MustCompile(`<g class="edge taken" data-from="([^"]+)" data-to="([^"]+)">`).FindAllStringSubmatch(r.Body, -1) {
		taken = append(taken, m[1]+" -> "+m[2])
	}
	if diff := cmp.Diff([]string{"PENDING", "PACKED"}, visited); diff != "" {
		t.Errorf("visited states (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"PENDING -> PACKED"}, taken); diff != "" {
		t.Errorf("taken rows (-want +got):\n%s", diff)
	}
	var rows [][]string
	for _, m := range historyRowE.FindAllStringSubmatch(r.Body, -1) {
		rows = append(rows, m[1:])
	}
	want := [][]string{
		{"created", "1", "start", "", "PENDING"},
		{"step", "1", "operator_signal", "PENDING", "PENDING"},
		{"transition", "1", "Pay", "PENDING", "PACKED"},
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("history rows (kind, attempt, step, from, to) (-want +got):\n%s", diff)
	}
	// The payload is text: escaped, never markup.
	for _, bad := range []string{"<img src=x", "<script>window.__xss"} {
		if strings.Contains(r.Body, bad) {
			t.Errorf("the page holds the payload's %q unescaped", bad)
		}
	}
	if !strings.Contains(r.Body, `&lt;img src=x onerror=\&#34;window.__xss=1\&#34;&gt;&lt;script&gt;window.__xss=2&lt;/script&gt;`) {
		t.Errorf("the page does not show the payload escaped:\n%s", r.Body)
	}
	if !strings.Contains(r.Body, `input of page`) {
		t.Errorf("the page does not show the run's input")
	}
	// Read-only: no form, no token.
	if strings.Contains(r.Body, "<form method=\"post\"") || strings.Contains(r.Body, `name="csrf"`) {
		t.Errorf("a read-only console offers actions")
	}
}

func TestRunPageOfAParkedRunShowsItsError(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	p := v.parked(t, "parked")
	ts, client := v.serve(t, console.Config{})
	r := get(t, client, ts.URL+"/runs/"+p.ID)
	for _, want := range []string{
		`<span class="badge parked">parked since`,
		`<p class="error banner" id="last-error"><strong>Last error</strong> BOOM: `,
		`the &lt;b&gt;worker&lt;/b&gt; fell over`,
	} {
		if !strings.Contains(r.Body, want) {
			t.Errorf("the page lacks %q:\n%s", want, r.Body)
		}
	}
	// The error is above the fold: before the facts and the diagram.
	if e, facts := strings.Index(r.Body, `id="last-error"`), strings.Index(r.Body, `<dl class="facts">`); e < 0 || e > facts {
		t.Errorf("the error is at %d, the facts at %d: want the error first", e, facts)
	}
}

func TestRunPageErrors(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ts, client := v.serve(t, console.Config{})
	tests := []struct {
		path   string
		status int
		msg    string
	}{
		{"/runs/not-a-uuid", http.StatusBadRequest, `run "not-a-uuid": malformed id: want a UUID`},
		{"/runs/0b7c1d2e-3f40-4a51-8b62-7c83d94ea5f6", http.StatusNotFound, "run 0b7c1d2e-3f40-4a51-8b62-7c83d94ea5f6: not found"},
		{"/machines/parcel/x", http.StatusBadRequest, `version "x": want a number from 1`},
		{"/machines/parcel/9", http.StatusNotFound, "machine parcel v9: not registered"},
		{"/nowhere", http.StatusNotFound, "no such page: /nowhere"},
	}
	for _, tc := range tests {
		r := get(t, client, ts.URL+tc.path)
		if r.Status != tc.status || errorMessage(r.Body) != tc.msg {
			t.Errorf("GET %s: %d %q, want %d %q", tc.path, r.Status, errorMessage(r.Body), tc.status, tc.msg)
		}
	}
}

func TestSecurityHeadersAndHosts(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ts, client := v.serve(t, console.Config{Hosts: []string{"127.0.0.1"}})
	for _, path := range []string{"/runs", "/machines", "/static/console.js", "/nowhere"} {
		r := get(t, client, ts.URL+path)
		if got := r.Header.Get("Content-Security-Policy"); got != console.ContentSecurityPolicy {
			t.Errorf("GET %s: Content-Security-Policy %q", path, got)
		}
		if r.Header.Get("X-Content-Type-Options") != "nosniff" || r.Header.Get("X-Frame-Options") != "DENY" || r.Header.Get("Referrer-Policy") != "same-origin" {
			t.Errorf("GET %s: headers %v", path, r.Header)
		}
	}
	if !strings.Contains(console.ContentSecurityPolicy, "script-src 'self';") || strings.Contains(console.ContentSecurityPolicy, "unsafe") {
		t.Errorf("the policy allows inline script: %s", console.ContentSecurityPolicy)
	}
	req, _ := http.NewRequest(http.MethodGet, ts.URL+"/runs", nil)
	req.Host = "evil.example:80"
	if r := do(t, client, req); r.Status != http.StatusMisdirectedRequest {
		t.Errorf("GET with Host evil.example: %d, want 421", r.Status)
	}
}

func TestReadOnlyRefusesPosts(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	run := v.start(t, "parcel", "ro", "acme")
	p := v.parked(t, "ro-parked")
	ts, client := v.serve(t, console.Config{})
	for _, tc := range []struct {
		path string
		form url.Values
	}{
		{"/runs/" + run.ID + "/signal", url.Values{"event": {"Pay"}, "payload": {`{}`}}},
		{"/runs/" + run.ID + "/cancel", url.Values{"reason": {"no"}}},
		{"/runs/" + p.ID + "/resume", nil},
		{"/runs", nil},
		{"/machines/parcel/1", nil},
	} {
		r := post(t, client, ts.URL+tc.path, tc.form)
		if r.Status != http.StatusForbidden {
			t.Errorf("POST %s: %d, want 403", tc.path, r.Status)
		}
		if got, want := errorMessage(r.Body), "this console is read-only: actions are off (start it with fsmctl serve -actions)"; got != want {
			t.Errorf("POST %s: message %q, want %q", tc.path, got, want)
		}
	}
	if got := v.get(t, run.ID); got.State != "PENDING" {
		t.Errorf("the run moved to %s", got.State)
	}
	if got := v.get(t, p.ID); got.ParkedAt.IsZero() {
		t.Errorf("the parked run was resumed")
	}
}

func TestActions(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ts, client := v.serve(t, console.Config{Actions: admin.New(v.st)})
	run := v.start(t, "parcel", "act", "acme")
	page := get(t, client, ts.URL+"/runs/"+run.ID)
	token := csrf(t, page.Body)
	for _, want := range []string{
		`id="signal-form"`, `<option value="Pay">Pay {ref string}</option>`, `id="cancel-form"`,
		`<option value="CANCELLED">CANCELLED on Cancel [UserOwnsRun], the guard not evaluated</option>`,
	} {
		if !strings.Contains(page.Body, want) {
			t.Errorf("the run page lacks %q", want)
		}
	}
	if strings.Contains(page.Body, `id="resume-form"`) {
		t.Errorf("a run that is not parked offers resume")
	}
	base := ts.URL + "/runs/" + run.ID

	refused := []struct {
		name   string
		form   url.Values
		header map[string]string
		path   string
		status int
		msg    string
	}{
		{"no token", url.Values{"event": {"Pay"}}, nil, "/signal", http.StatusForbidden,
			"invalid CSRF token: reload the run's page and try again"},
		{"wrong token", url.Values{"event": {"Pay"}, "csrf": {strings.Repeat("0", 64)}}, nil, "/signal", http.StatusForbidden,
			"invalid CSRF token: reload the run's page and try again"},
		{"cross-site", url.Values{"event": {"Pay"}, "csrf": {token}}, map[string]string{"Sec-Fetch-Site": "cross-site"}, "/signal", http.StatusForbidden,
			"cross-site request refused (Sec-Fetch-Site: cross-site)"},
		{"other origin", url.Values{"event": {"Pay"}, "csrf": {token}}, map[string]string{"Origin": "http://evil.example"}, "/signal", http.StatusForbidden,
			"cross-origin request refused (Origin http://evil.example)"},
		{"no event", url.Values{"csrf": {token}}, nil, "/signal", http.StatusBadRequest, "signal: no event"},
		{"unknown event", url.Values{"event": {"Fly"}, "csrf": {token}}, nil, "/signal", http.StatusBadRequest,
			`signal run ` + run.ID + `: unknown event: parcel v1 has no event "Fly" (its events: Pay, Ship, Deliver, Cancel)`},
		{"undeclared field", url.Values{"event": {"Pay"}, "payload": {`{"amount":3}`}, "csrf": {token}}, nil, "/signal", http.StatusBadRequest,
			`signal run ` + run.ID + `: payload does not fit the event: event Pay has no field "amount" (its fields: ref string)`},
		{"not an object", url.Values{"event": {"Pay"}, "payload": {`[1]`}, "csrf": {token}}, nil, "/signal", http.StatusBadRequest,
			`signal run ` + run.ID + `: payload does not fit the event: event Pay: want a JSON object of its fields, got an array`},
		{"illegal here", url.Values{"event": {"Ship"}, "csrf": {token}}, nil, "/signal", http.StatusConflict,
			`signal run ` + run.ID + `: no such transition: state PENDING of parcel v1 has no transition on Ship (it accepts Pay, Cancel)`},
		{"guarded", url.Values{"event": {"Cancel"}, "csrf": {token}}, nil, "/signal", http.StatusConflict,
			`signal run ` + run.ID + `: guarded transition: state PENDING of parcel v1 decides Cancel by guards, which only the machine's Go code evaluates (-> CANCELLED [UserOwnsRun]): name the target state to fire its row without its guard`},
		{"not parked", url.Values{"csrf": {token}}, nil, "/resume", http.StatusConflict,
			`resume run ` + run.ID + `: conflict: the run moved since it was read: the run is not parked`},
		{"no action", url.Values{"csrf": {token}}, nil, "/explode", http.StatusNotFound, `no action "explode": want signal, cancel, terminate, resume or retry`},
	}
	for _, tc := range refused {
		req, _ := http.NewRequest(http.MethodPost, base+tc.path, strings.NewReader(tc.form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, val := range tc.header {
			req.Header.Set(k, val)
		}
		r := do(t, client, req)
		if r.Status != tc.status || errorMessage(r.Body) != tc.msg {
			t.Errorf("%s: %d %q\nwant %d %q", tc.name, r.Status, errorMessage(r.Body), tc.status, tc.msg)
		}
	}
	if got := v.get(t, run.ID); got.State != "PENDING" {
		t.Fatalf("a refused action moved the run to %s", got.State)
	}

	// Signal with a payload and a reason, then cancel: each redirects to
	// the run's page, which says what was done.
	r := post(t, client, base+"/signal", url.Values{"event": {"Pay"}, "payload": {`{"ref":"r-1"}`}, "reason": {"paid by phone"}, "csrf": {token}})
	if r.Status != http.StatusSeeOther || !strings.HasPrefix(r.Location, "/runs/"+run.ID+"?did=signalled+Pay%3B+now+in+PACKED&sig=") {
		t.Fatalf("signal: %d to %q: %s", r.Status, r.Location, errorMessage(r.Body))
	}
	if p := get(t, client, ts.URL+r.Location); !strings.Contains(p.Body, `<p class="did" id="did">signalled Pay; now in PACKED</p>`) {
		t.Errorf("the run page does not say what was done")
	}
	r = post(t, client, base+"/cancel", url.Values{"reason": {"customer asked"}, "csrf": {token}})
	if r.Status != http.StatusSeeOther {
		t.Fatalf("cancel: %d: %s", r.Status, errorMessage(r.Body))
	}
	got := v.get(t, run.ID)
	if got.State != "CANCELLED" {
		t.Fatalf("the run is in %s, want CANCELLED", got.State)
	}
	steps, err := v.st.History(t.Context(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	var moves []string
	for _, s := range steps {
		moves = append(moves, s.Name+" "+string(s.Payload))
	}
	want := []string{
		"start ",
		`operator_signal {"to": "PACKED", "event": "Pay", "reason": "paid by phone", "unchecked_guards": []}`,
		`Pay {"ref": "r-1"}`,
		`operator_cancel {"to": "CANCELLED", "event": "Cancel", "reason": "customer asked", "unchecked_guards": []}`,
		`Cancel {}`,
	}
	if diff := cmp.Diff(want, moves); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	r = post(t, client, base+"/signal", url.Values{"event": {"Ship"}, "csrf": {token}})
	if r.Status != http.StatusConflict || !strings.Contains(errorMessage(r.Body), "run is finished") {
		t.Errorf("signal of a finished run: %d %q", r.Status, errorMessage(r.Body))
	}

	// A guarded row, fired by naming its target.
	g := v.start(t, "parcel", "act-guarded", "acme")
	r = post(t, client, ts.URL+"/runs/"+g.ID+"/signal", url.Values{"event": {"Cancel"}, "to": {"CANCELLED"}, "csrf": {token}})
	if r.Status != http.StatusSeeOther {
		t.Fatalf("signal Cancel to CANCELLED: %d: %s", r.Status, errorMessage(r.Body))
	}
	if got := v.get(t, g.ID); got.State != "CANCELLED" {
		t.Errorf("the guarded run is in %s, want CANCELLED", got.State)
	}

	// Resume a parked run.
	p := v.parked(t, "act-parked")
	page = get(t, client, ts.URL+"/runs/"+p.ID)
	if !strings.Contains(page.Body, `id="resume-form"`) {
		t.Fatalf("a parked run offers no resume")
	}
	r = post(t, client, ts.URL+"/runs/"+p.ID+"/resume", url.Values{"csrf": {csrf(t, page.Body)}})
	if r.Status != http.StatusSeeOther || !strings.HasPrefix(r.Location, "/runs/"+p.ID+"?did=resumed+in+WORKING&sig=") {
		t.Fatalf("resume: %d to %q: %s", r.Status, r.Location, errorMessage(r.Body))
	}
	if got := v.get(t, p.ID); !got.ParkedAt.IsZero() {
		t.Errorf("the run is still parked")
	}
}

func TestMachinePages(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	for _, k := range []string{"h1", "h2", "h3"} {
		v.start(t, "parcel", k, "acme")
	}
	paid := v.start(t, "parcel", "h4", "acme")
	v.signal(t, paid.ID, "Pay", `{}`)
	v.parked(t, "hp")
	ts, client := v.serve(t, console.Config{})

	r := get(t, client, ts.URL+"/machines")
	for _, want := range []string{`<a href="/machines/parcel/1">parcel</a>`, `<a href="/machines/job/1">job</a>`} {
		if !strings.Contains(r.Body, want) {
			t.Errorf("/machines lacks %q:\n%s", want, r.Body)
		}
	}

	r = get(t, client, ts.URL+"/machines/parcel/1")
	if r.Status != http.StatusOK {
		t.Fatalf("GET /machines/parcel/1: %d\n%s", r.Status, r.Body)
	}
	// The events and the transition table, as fsmctl definitions show
	// prints them.
	cells := func(table string) [][]string {
		m := regexp.MustCompile(`(?s)<table id="` + table + `">.*?</table>`).FindString(r.Body)
		var out [][]string
		for _, row := range regexp.MustCompile(`(?s)<tr><td>(.*?)</td></tr>`).FindAllStringSubmatch(m, -1) {
			out = append(out, strings.Split(row[1], "</td><td>"))
		}
		return out
	}
	if diff := cmp.Diff([][]string{{"Pay", "ref string"}, {"Ship", "carrier string"}, {"Deliver", "–"}, {"Cancel", "userID string"}}, cells("events")); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	wantRows := [][]string{
		{"PENDING", "Pay", "–", "PACKED", "–"},
		{"PENDING", "Cancel", "[UserOwnsRun]", "CANCELLED", "–"},
		{"PACKED", "Ship", "–", "SHIPPED", "–"},
		{"PACKED", "Cancel", "–", "CANCELLED", "–"},
		{"SHIPPED", "Deliver", "–", "DELIVERED", "–"},
	}
	if diff := cmp.Diff(wantRows, cells("transitions")); diff != "" {
		t.Errorf("transitions (-want +got):\n%s", diff)
	}
	classes := map[string]string{}
	for _, m := range regexp.MustCompile(`<g class="([^"]*)" data-state="([^"]*)">`).FindAllStringSubmatch(r.Body, -1) {
		classes[m[2]] = m[1]
	}
	wantClasses := map[string]string{
		"PENDING": "state initial waits heat-5", "PACKED": "state waits heat-2", "SHIPPED": "state waits heat-0",
		"DELIVERED": "state terminal status-succeeded heat-0", "CANCELLED": "state terminal status-cancelled heat-0",
	}
	if diff := cmp.Diff(wantClasses, classes); diff != "" {
		t.Errorf("heatmap classes (-want +got):\n%s", diff)
	}
	for _, want := range []string{">3 runs<", ">1 run<", `href="/runs?state=PACKED&amp;type=parcel"`} {
		if !strings.Contains(r.Body, want) {
			t.Errorf("the heatmap lacks %q", want)
		}
	}
	heat := heatJSON(t, client, ts.URL+"/machines/parcel/1/heat.json")
	got := map[string][]any{}
	for s, h := range heat {
		got[s] = []any{h["runs"], h["level"], h["count"], h["stuck"]}
	}
	want := map[string][]any{
		"PENDING": {3.0, 5.0, "3 runs", false}, "PACKED": {1.0, 2.0, "1 run", false}, "SHIPPED": {0.0, 0.0, "0 runs", false},
		"DELIVERED": {0.0, 0.0, "0 runs", false}, "CANCELLED": {0.0, 0.0, "0 runs", false},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("heat.json (-want +got):\n%s", diff)
	}
	// One stay in PENDING ended (h4's): its median is measured, the others'
	// are not.
	if m := heat["PENDING"]["median"].(string); !strings.HasPrefix(m, "median ") || m == "median –" {
		t.Errorf("PENDING's median: %q", m)
	}
	if m := heat["PACKED"]["median"]; m != "median –" {
		t.Errorf("PACKED's median: %q, want none", m)
	}

	r = get(t, client, ts.URL+"/machines/job/1")
	if !regexp.MustCompile(`<tr><td><a class="mono" href="/runs/[0-9a-f-]+">[0-9a-f]{8}</a></td><td>WORKING</td><td>parked</td><td>[^<]+</td><td>BOOM: [^<]*the &lt;b&gt;worker&lt;/b&gt; fell over</td></tr>`).MatchString(r.Body) {
		t.Errorf("the job's heatmap does not list the parked run:\n%s", r.Body)
	}
	if heat := heatJSON(t, client, ts.URL+"/machines/job/1/heat.json"); heat["WORKING"]["stuck"] != true || heat["WORKING"]["count"] != "1 run, 1 parked" {
		t.Errorf("job heat.json WORKING: %v", heat["WORKING"])
	}
}

func TestStaticFilesAreServed(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ts, client := v.serve(t, console.Config{})
	for path, want := range map[string]string{"/static/console.js": "textContent", "/static/console.css": ".fsm-diagram"} {
		r := get(t, client, ts.URL+path)
		if r.Status != http.StatusOK || !strings.Contains(r.Body, want) {
			t.Errorf("GET %s: %d", path, r.Status)
		}
	}
	// The script never writes markup.
	js := get(t, client, ts.URL+"/static/console.js").Body
	for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("} {
		if strings.Contains(js, bad) {
			t.Errorf("console.js uses %s", bad)
		}
	}
	if !slices.Contains([]string{"text/javascript; charset=utf-8", "application/javascript"}, get(t, client, ts.URL+"/static/console.js").Header.Get("Content-Type")) {
		t.Errorf("console.js content type %q", get(t, client, ts.URL+"/static/console.js").Header.Get("Content-Type"))
	}
}

func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// TestHeatMedianOfStays measures the median time runs spent in a state
// from the rows that left it: five runs left PENDING after 10, 20, 30, 40
// and 500 seconds (median 30s), one left PACKED after a minute; a step
// row in a state does not end its stay.
func TestHeatMedianOfStays(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	clk := fsmtest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	st := store.New(v.pool, store.WithClock(clk.Now))
	adm := admin.New(st)
	for i, wait := range []time.Duration{40, 10, 500, 30, 20} {
		res, err := st.Start(context.Background(), runtime.StartRequest{Type: "parcel", Version: 1, IdempotencyKey: "m" + strconv.Itoa(i), Owner: runtime.Owner{TenantID: "acme"}})
		if err != nil {
			t.Fatal(err)
		}
		clk.Advance(wait * time.Second)
		if _, err := st.LogStep(context.Background(), res.Run.ID, "note", nil); err != nil {
			t.Fatal(err)
		}
		if _, err := adm.Signal(context.Background(), res.Run.ID, "Pay", json.RawMessage(`{}`), admin.SignalOptions{}); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			clk.Advance(time.Minute)
			if _, err := adm.Signal(context.Background(), res.Run.ID, "Ship", json.RawMessage(`{}`), admin.SignalOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	ts, client := v.serve(t, console.Config{})
	r := get(t, client, ts.URL+"/machines/parcel/1")
	got := map[string][]string{}
	for _, m := range regexp.MustCompile(`<tr data-state="([A-Z]+)">.*?</td><td>\d+</td><td>\d+</td><td>\d+</td>\s*<td>([^<]*)</td><td>(\d+)</td></tr>`).FindAllStringSubmatch(r.Body, -1) {
		got[m[1]] = m[2:]
	}
	want := map[string][]string{
		"PENDING": {"30.0s", "5"}, "PACKED": {"1m0s", "1"}, "SHIPPED": {"–", "0"}, "DELIVERED": {"–", "0"}, "CANCELLED": {"–", "0"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("median time in state, stays measured (-want +got):\n%s", diff)
	}
}
