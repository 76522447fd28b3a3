package console_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/internal/console"
	"github.com/fsmgen/fsmgen/runtime/evidence"
)

func TestPasswordsAdmitOnlyTheirUsers(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	pw, err := console.ParsePasswords([]byte("# operators\n\nalice:" + string(hash) + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	ts, client := v.serve(t, console.Config{Passwords: pw, Actions: v.adm})
	for _, tc := range []struct {
		user, pass string
		want       int
	}{
		{"", "", http.StatusUnauthorized},
		{"alice", "wrong", http.StatusUnauthorized},
		{"bob", "s3cret", http.StatusUnauthorized},
		{"alice", "s3cret", http.StatusOK},
		{"alice", "s3cret", http.StatusOK}, // from the cache of checked passwords
		{"alice", "s3cre", http.StatusUnauthorized},
	} {
		req, _ := http.NewRequest(http.MethodGet, ts.URL+"/runs", nil)
		if tc.user != "" {
			req.SetBasicAuth(tc.user, tc.pass)
		}
		r := do(t, client, req)
		if r.Status != tc.want {
			t.Errorf("GET /runs as %s/%s: %d, want %d", tc.user, tc.pass, r.Status, tc.want)
		}
		if tc.want == http.StatusUnauthorized && r.Header.Get("WWW-Authenticate") != `Basic realm="fsmctl console", charset="UTF-8"` {
			t.Errorf("401 without the Basic challenge: %v", r.Header)
		}
	}
}

func TestParsePasswordsRefusesBadFiles(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ file, want string }{
		{"", "console: password file: no user"},
		{"alice", "console: password file: line 1: want user:bcrypt-hash"},
		{"alice:plain", `console: password file: line 1: user "alice": not a bcrypt hash (make one with htpasswd -nB alice)`},
		{"alice:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=", `console: password file: line 1: user "alice": not a bcrypt hash (make one with htpasswd -nB alice)`},
		{"alice:$2y$05$abcdefghijklmnopqrstuu5s2v8.iXieOjg/.AySBTTZIIVFJeBui\nalice:$2y$05$abcdefghijklmnopqrstuu5s2v8.iXieOjg/.AySBTTZIIVFJeBui", `console: password file: line 2: user "alice" twice`},
	} {
		_, err := console.ParsePasswords([]byte(tc.file))
		if err == nil || err.Error() != tc.want {
			t.Errorf("ParsePasswords(%q) = %v, want %s", tc.file, err, tc.want)
		}
	}
}

func TestActionBannerCannotBeForged(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	run := v.start(t, "parcel", "forged-did", "acme")
	ts, client := v.serve(t, console.Config{Actions: v.adm})
	for _, q := range []string{"?did=refund+of+10000+EUR+approved", "?did=resumed+in+PENDING&sig=00"} {
		r := get(t, client, ts.URL+"/runs/"+run.ID+q)
		if r.Status != http.StatusOK || strings.Contains(r.Body, `id="did"`) {
			t.Errorf("GET %s: %d, shows a banner it did not sign", q, r.Status)
		}
	}
	// The console's own redirect after an action shows its banner.
	page := get(t, client, ts.URL+"/runs/"+run.ID)
	r := post(t, client, ts.URL+"/runs/"+run.ID+"/signal", map[string][]string{"csrf": {csrf(t, page.Body)}, "event": {"Pay"}, "payload": {`{"ref":"r"}`}})
	if r.Status != http.StatusSeeOther {
		t.Fatalf("signal: %d\n%s", r.Status, r.Body)
	}
	if p := get(t, client, ts.URL+r.Location); !strings.Contains(p.Body, `<p class="did" id="did">signalled Pay; now in PACKED</p>`) {
		t.Errorf("the signed banner is not shown:\n%s", p.Body)
	}
	// A signature is for its run only.
	other := v.start(t, "parcel", "forged-did-2", "acme")
	_, query, _ := strings.Cut(r.Location, "?")
	if p := get(t, client, ts.URL+"/runs/"+other.ID+"?"+query); strings.Contains(p.Body, `id="did"`) {
		t.Errorf("another run's signed banner is shown")
	}
}

var historyRowsRE = regexp.MustCompile(`<tr class="kind-[a-z]+">\s*<td>(\d+)</td>`)

func TestRunHistoryIsPaged(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	if err := evidence.Enable(ctx, v.pool, "parcel"); err != nil {
		t.Fatal(err)
	}
	run := v.start(t, "parcel", "paged", "acme")
	v.signal(t, run.ID, "Pay", `{"ref":"r"}`)
	v.signal(t, run.ID, "Ship", `{"carrier":"c"}`)
	ts, client := v.serve(t, console.Config{HistoryPageSize: 2})
	var versions []string
	var evidenceSeqs int
	next := "/runs/" + run.ID
	for pages := 0; next != ""; pages++ {
		if pages > 5 {
			t.Fatal("the pages do not end")
		}
		r := get(t, client, ts.URL+next)
		if r.Status != http.StatusOK {
			t.Fatalf("GET %s: %d\n%s", next, r.Status, r.Body)
		}
		rows := historyRowsRE.FindAllStringSubmatch(r.Body, -1)
		if len(rows) > 2 {
			t.Errorf("GET %s: %d history rows, want at most 2", next, len(rows))
		}
		for _, m := range rows {
			versions = append(versions, m[1])
		}
		if pages == 0 {
			evidenceSeqs = strings.Count(r.Body, `<td class="mono" title=`)
		}
		next = ""
		if m := regexp.MustCompile(`<a href="([^"]+)" id="history-next">`).FindStringSubmatch(r.Body); m != nil {
			next = strings.ReplaceAll(m[1], "&amp;", "&")
		}
		if !strings.Contains(r.Body, "3 records, chain verified") {
			t.Errorf("GET %s: the evidence status is not the whole chain's", next)
		}
	}
	steps, err := v.st.History(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 5 {
		t.Fatalf("the run has %d log rows, want 5", len(steps))
	}
	// The rows are numbered 1 to 5 over the pages, as fsmctl runs show
	// numbers them, not by row version (a step row shares its state's).
	if diff := cmp.Diff([]string{"1", "2", "3", "4", "5"}, versions); diff != "" {
		t.Errorf("row numbers over the pages (-want +got):\n%s", diff)
	}
	if evidenceSeqs != 2 {
		t.Errorf("the first page shows %d evidence records, want 2", evidenceSeqs)
	}
	if r := get(t, client, ts.URL+"/runs/"+run.ID+"?after=x"); r.Status != http.StatusBadRequest || errorMessage(r.Body) != `after "x": want a number from 0` {
		t.Errorf("after=x: %d %q", r.Status, errorMessage(r.Body))
	}
}

func TestRunPageShowsWhereTheChainBreaks(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	ctx := context.Background()
	if err := evidence.Enable(ctx, v.pool, "parcel"); err != nil {
		t.Fatal(err)
	}
	run := v.start(t, "parcel", "broken", "acme")
	v.signal(t, run.ID, "Pay", `{"ref":"r"}`)
	if _, err := v.pool.Exec(ctx, `ALTER TABLE evidence_records DISABLE TRIGGER evidence_records_append_only`); err != nil {
		t.Fatal(err)
	}
	if _, err := v.pool.Exec(ctx, `UPDATE evidence_records SET prev_hash = 'forged' WHERE workflow_run_id = $1 AND seq = 2`, run.ID); err != nil {
		t.Fatal(err)
	}
	ts, client := v.serve(t, console.Config{})
	r := get(t, client, ts.URL+"/runs/"+run.ID)
	if r.Status != http.StatusOK {
		t.Fatalf("run page of a broken chain: %d\n%s", r.Status, r.Body)
	}
	m := regexp.MustCompile(`<p id="evidence-status" class="error">chain broken at record 2 \(id \d+\): ([^<]*)</p>`).FindStringSubmatch(r.Body)
	if m == nil || !strings.Contains(m[1], "forged") {
		t.Errorf("the page does not say where the chain breaks:\n%s", r.Body)
	}
}

func TestRunsListSurvivesAnUndecodableDefinition(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	run := v.start(t, "parcel", "listed", "acme")
	if _, err := v.pool.Exec(context.Background(), `INSERT INTO workflow_definitions (workflow_type, version, initial_state, digest, definition)
VALUES ('broken', 1, 'A', 'x', '{"states": "not a list"}')`); err != nil {
		t.Fatal(err)
	}
	ts, client := v.serve(t, console.Config{})
	r := get(t, client, ts.URL+"/runs")
	if r.Status != http.StatusOK || !cmp.Equal(runIDs(r.Body), []string{run.ID}) {
		t.Fatalf("runs list: %d %v\n%s", r.Status, runIDs(r.Body), r.Body)
	}
	r = get(t, client, ts.URL+"/machines")
	if r.Status != http.StatusOK || !strings.Contains(r.Body, `<span class="error">the definition does not decode: json: cannot unmarshal string into Go struct field Definition.States of type []runtime.StateSpec</span>`) {
		t.Errorf("machines list: %d\n%s", r.Status, r.Body)
	}
}
