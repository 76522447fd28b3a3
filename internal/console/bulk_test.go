package console_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/internal/console"
	"github.com/fsmgen/fsmgen/runtime/admin"
)

// TestBulkActions cancels, resumes and retries the runs a filter selects,
// after a confirmation page that states their number; a POST whose count
// is not the filter's now does nothing.
func TestBulkActions(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	a1 := v.start(t, "parcel", "b1", "acme")
	a2 := v.start(t, "parcel", "b2", "acme")
	a3 := v.start(t, "parcel", "b3", "acme")
	g := v.start(t, "parcel", "b4", "globex")
	p1 := v.parked(t, "bp1")
	p2 := v.parked(t, "bp2")
	ts, client := v.serve(t, console.Config{Actions: admin.New(v.st)})

	list := get(t, client, ts.URL+"/runs?type=parcel&tenant=acme")
	link := regexp.MustCompile(`<a href="([^"]+)" id="bulk-cancel">`).FindStringSubmatch(list.Body)
	if link == nil {
		t.Fatalf("the list offers no bulk cancel:\n%s", list.Body)
	}
	confirm := get(t, client, ts.URL+strings.ReplaceAll(link[1], "&amp;", "&"))
	if confirm.Status != http.StatusOK {
		t.Fatalf("GET %s: %d\n%s", link[1], confirm.Status, confirm.Body)
	}
	for _, want := range []string{
		`<p id="bulk-filter">Runs with type parcel, tenant acme: the running runs among them.</p>`,
		`<p id="bulk-count">This will cancel <strong>3</strong> runs.</p>`,
		`<input type="hidden" name="count" value="3">`,
	} {
		if !strings.Contains(confirm.Body, want) {
			t.Errorf("the confirmation lacks %q:\n%s", want, confirm.Body)
		}
	}
	token := csrf(t, confirm.Body)
	form := url.Values{"csrf": {token}, "type": {"parcel"}, "tenant": {"acme"}, "reason": {"bulk test"}}

	refused := []struct {
		name   string
		form   url.Values
		status int
		msg    string
	}{
		{"no token", url.Values{"type": {"parcel"}, "count": {"3"}}, http.StatusForbidden, "invalid CSRF token: reload the run's page and try again"},
		{"another count", with(form, "count", "2"), http.StatusConflict,
			"cancel: the filter now selects 3 running runs, not the 2 confirmed: nothing was done; confirm again"},
		{"no count", form, http.StatusBadRequest, `count "": want the number of runs confirmed`},
	}
	for _, tc := range refused {
		r := post(t, client, ts.URL+"/runs/bulk/cancel", tc.form)
		if r.Status != tc.status || errorMessage(r.Body) != tc.msg {
			t.Errorf("%s: %d %q, want %d %q", tc.name, r.Status, errorMessage(r.Body), tc.status, tc.msg)
		}
	}
	for _, id := range []string{a1.ID, a2.ID, a3.ID} {
		if got := v.get(t, id); got.State != "PENDING" {
			t.Fatalf("a refused bulk cancel moved run %s to %s", id, got.State)
		}
	}

	done := post(t, client, ts.URL+"/runs/bulk/cancel", with(form, "count", "3"))
	if done.Status != http.StatusOK || !strings.Contains(done.Body, `<p id="bulk-done">3 of 3 running runs done.</p>`) {
		t.Fatalf("bulk cancel: %d\n%s", done.Status, done.Body)
	}
	states := map[string]string{}
	for _, id := range []string{a1.ID, a2.ID, a3.ID, g.ID} {
		states[id] = v.get(t, id).State
	}
	want := map[string]string{a1.ID: "CANCELLED", a2.ID: "CANCELLED", a3.ID: "CANCELLED", g.ID: "PENDING"}
	if diff := cmp.Diff(want, states); diff != "" {
		t.Errorf("states after the bulk cancel (-want +got):\n%s", diff)
	}

	// Resume acts on the parked runs only.
	confirm = get(t, client, ts.URL+"/runs/bulk/resume")
	if !strings.Contains(confirm.Body, `<p id="bulk-count">This will resume <strong>2</strong> runs.</p>`) {
		t.Errorf("the resume confirmation:\n%s", confirm.Body)
	}
	done = post(t, client, ts.URL+"/runs/bulk/resume", url.Values{"csrf": {token}, "count": {"2"}})
	if !strings.Contains(done.Body, `<p id="bulk-done">2 of 2 parked runs done.</p>`) {
		t.Errorf("bulk resume: %d\n%s", done.Status, done.Body)
	}
	for _, id := range []string{p1.ID, p2.ID} {
		if got := v.get(t, id); !got.ParkedAt.IsZero() {
			t.Errorf("run %s is still parked", id)
		}
	}

	// Nothing to retry: no form.
	confirm = get(t, client, ts.URL+"/runs/bulk/retry?type=parcel")
	if !strings.Contains(confirm.Body, `<p id="bulk-count">No failed runs match: there is nothing to retry.</p>`) || strings.Contains(confirm.Body, `id="bulk-form"`) {
		t.Errorf("the retry confirmation with no failed run:\n%s", confirm.Body)
	}
	if r := get(t, client, ts.URL+"/runs/bulk/explode"); r.Status != http.StatusNotFound ||
		errorMessage(r.Body) != `no bulk action "explode": want cancel, terminate, resume or retry` {
		t.Errorf("unknown bulk action: %d %q", r.Status, errorMessage(r.Body))
	}

	// A read-only console offers none and refuses them.
	ts2, client2 := v.serve(t, console.Config{})
	if r := get(t, client2, ts2.URL+"/runs"); strings.Contains(r.Body, `id="bulk"`) {
		t.Errorf("a read-only console offers bulk actions")
	}
	if r := get(t, client2, ts2.URL+"/runs/bulk/cancel"); r.Status != http.StatusForbidden {
		t.Errorf("GET bulk cancel on a read-only console: %d, want 403", r.Status)
	}
}

// with returns a copy of form with key set to value.
func with(form url.Values, key, value string) url.Values {
	out := url.Values{}
	for k, v := range form {
		out[k] = v
	}
	out.Set(key, value)
	return out
}

// TestTerminate ends a run from its page, and the running runs a filter
// selects in bulk, after a confirmation that states their number; both
// need a reason, recorded with who gave it.
func TestTerminate(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	one := v.start(t, "parcel", "t1", "acme")
	a1 := v.start(t, "parcel", "t2", "acme")
	a2 := v.start(t, "parcel", "t3", "acme")
	g := v.start(t, "parcel", "t4", "globex")
	ts, client := v.serve(t, console.Config{Actions: admin.New(v.st)})

	page := get(t, client, ts.URL+"/runs/"+one.ID)
	if !strings.Contains(page.Body, `<form method="post" action="/runs/`+one.ID+`/terminate" id="terminate-form"`) {
		t.Fatalf("the run's page offers no terminate:\n%s", page.Body)
	}
	token := csrf(t, page.Body)
	r := post(t, client, ts.URL+"/runs/"+one.ID+"/terminate", url.Values{"csrf": {token}})
	if r.Status != http.StatusBadRequest || errorMessage(r.Body) != "terminate: no reason given" {
		t.Errorf("terminate without a reason: %d %q", r.Status, errorMessage(r.Body))
	}
	r = post(t, client, ts.URL+"/runs/"+one.ID+"/terminate", url.Values{"csrf": {token}, "reason": {"stuck"}})
	if r.Status != http.StatusSeeOther {
		t.Fatalf("terminate: %d: %s", r.Status, errorMessage(r.Body))
	}
	if p := get(t, client, ts.URL+r.Location); !strings.Contains(p.Body, `<p class="did" id="did">terminated in PENDING</p>`) || strings.Contains(p.Body, `id="terminate-form"`) {
		t.Errorf("the run's page after the terminate:\n%s", p.Body)
	}
	if got := v.get(t, one.ID); got.Status != "cancelled" || got.Result == nil || got.Result.ErrorDetail != "terminated by the console: stuck" {
		t.Errorf("terminated run: %s %+v", got.Status, got.Result)
	}

	list := get(t, client, ts.URL+"/runs?tenant=acme")
	link := regexp.MustCompile(`<a href="([^"]+)" id="bulk-terminate">`).FindStringSubmatch(list.Body)
	if link == nil {
		t.Fatalf("the list offers no bulk terminate:\n%s", list.Body)
	}
	confirm := get(t, client, ts.URL+strings.ReplaceAll(link[1], "&amp;", "&"))
	if want := `<p id="bulk-count">This will terminate <strong>2</strong> runs.</p>`; !strings.Contains(confirm.Body, want) {
		t.Fatalf("the confirmation lacks %q:\n%s", want, confirm.Body)
	}
	form := url.Values{"csrf": {csrf(t, confirm.Body)}, "tenant": {"acme"}, "count": {"2"}}
	r = post(t, client, ts.URL+"/runs/bulk/terminate", form)
	if r.Status != http.StatusBadRequest || errorMessage(r.Body) != "terminate: no reason given: nothing was done" {
		t.Errorf("bulk terminate without a reason: %d %q", r.Status, errorMessage(r.Body))
	}
	done := post(t, client, ts.URL+"/runs/bulk/terminate", with(form, "reason", "supplier gone"))
	if !strings.Contains(done.Body, `<p id="bulk-done">2 of 2 running runs done.</p>`) {
		t.Fatalf("bulk terminate: %d\n%s", done.Status, done.Body)
	}
	statuses := map[string]string{}
	for _, id := range []string{a1.ID, a2.ID, g.ID} {
		statuses[id] = string(v.get(t, id).Status)
	}
	if diff := cmp.Diff(map[string]string{a1.ID: "cancelled", a2.ID: "cancelled", g.ID: "running"}, statuses); diff != "" {
		t.Errorf("statuses after the bulk terminate (-want +got):\n%s", diff)
	}
}
