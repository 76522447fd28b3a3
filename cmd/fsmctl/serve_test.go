package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/db"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
)

func TestServeUsageErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	passwdFile, badPasswdFile := filepath.Join(dir, "passwd"), filepath.Join(dir, "bad")
	if err := os.WriteFile(passwdFile, []byte("alice:$2y$05$abcdefghijklmnopqrstuu5s2v8.iXieOjg/.AySBTTZIIVFJeBui\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(badPasswdFile, []byte("alice\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args   []string
		stderr string
	}{
		{[]string{"serve", "-addr", "8080"}, `fsmctl serve: -addr "8080": want host:port, such as 127.0.0.1:8080`},
		{[]string{"serve", "-refresh", "1ms"}, "fsmctl serve: -refresh 1ms: want at least 100ms"},
		{[]string{"serve", "-stuck-after", "0s"}, "fsmctl serve: -stuck-after 0s: want a positive duration"},
		{[]string{"serve", "now"}, `fsmctl serve: unexpected arguments ["now"]`},
		{[]string{"serve", "-addr", "0.0.0.0:8080", "-actions"}, "fsmctl serve: -actions on 0.0.0.0:8080, beyond the loopback, needs -hosts and -password-file"},
		{[]string{"serve", "-addr", ":8080", "-actions", "-hosts", "console.example"}, "fsmctl serve: -actions on :8080, beyond the loopback, needs -hosts and -password-file"},
		{[]string{"serve", "-addr", "[::]:8080", "-actions", "-password-file", passwdFile}, "fsmctl serve: -actions on [::]:8080, beyond the loopback, needs -hosts and -password-file"},
		{[]string{"serve", "-password-file", "/dev/zero"}, "fsmctl serve: -password-file: read /dev/zero: not a regular file"},
		{[]string{"serve", "-password-file", badPasswdFile}, "fsmctl serve: -password-file " + badPasswdFile + ": console: password file: line 1: want user:bcrypt-hash"},
	}
	for _, tt := range tests {
		got := fsmctl(t, nil, tt.args...)
		first, _, _ := strings.Cut(got.Stderr, "\n")
		if diff := cmp.Diff(result{Code: exitUsage, Stderr: tt.stderr}, result{Code: got.Code, Stdout: got.Stdout, Stderr: first}); diff != "" {
			t.Errorf("fsmctl %s (-want +got):\n%s", strings.Join(tt.args, " "), diff)
		}
	}
}

// serveConsole runs fsmctl serve with args on a free port of the loopback
// until the test ends, and returns the console's address.
func serveConsole(t *testing.T, dbURL string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	outR, outW := io.Pipe()
	var errOut strings.Builder
	done := make(chan int, 1)
	go func() {
		c := &cli{stdout: outW, stderr: &errOut, getenv: func(string) string { return dbURL }}
		code := c.main(ctx, append([]string{"serve", "-addr", "127.0.0.1:0"}, args...))
		outW.Close()
		done <- code
	}()
	lines := bufio.NewScanner(outR)
	if !lines.Scan() {
		t.Fatalf("fsmctl serve printed nothing; stderr: %s (exit %d)", errOut.String(), <-done)
	}
	m := regexp.MustCompile(`^fsmctl serve: console on (http://127\.0\.0\.1:\d+)/ \((read-only|actions on)\); interrupt to stop$`).FindStringSubmatch(lines.Text())
	if m == nil {
		t.Fatalf("first line: %q", lines.Text())
	}
	rest := make(chan string, 1)
	go func() {
		var b strings.Builder
		for lines.Scan() {
			b.WriteString(lines.Text() + "\n")
		}
		rest <- b.String()
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != exitOK {
			t.Errorf("fsmctl serve exited %d: %s", code, errOut.String())
		}
		if got := <-rest; got != "fsmctl serve: stopped\n" {
			t.Errorf("fsmctl serve printed %q after its address", got)
		}
	})
	return m[1]
}

func TestServeReadOnly(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	// The read-only console runs as a reader role (db.RoleReader).
	base := serveConsole(t, pgtest.RoleDSN(t, f.owner, db.RoleReader))
	resp, err := http.Get(base + "/runs/" + f.ids["b"])
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !regexp.MustCompile(`<g class="state[^"]* current[^"]*" data-state="INGESTING">`).Match(body) {
		t.Fatalf("run page: %d\n%s", resp.StatusCode, body)
	}
	if strings.Contains(string(body), `name="csrf"`) {
		t.Errorf("the read-only console offers actions")
	}
	resp, err = http.PostForm(base+"/runs/"+f.ids["b"]+"/signal", url.Values{"event": {"MediaRejected"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("POST to the read-only console: %d, want 403", resp.StatusCode)
	}
	// On the loopback it answers to the loopback's names only.
	req, _ := http.NewRequest(http.MethodGet, base+"/runs", nil)
	req.Host = "rebound.example.com"
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("GET with Host rebound.example.com: %d, want 421", resp.StatusCode)
	}
}

func TestServeActionsSignalAlongTheTable(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	base := serveConsole(t, f.url, "-actions")
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	// A machine fsmctl knows only from the database: a door that waits to
	// be opened.
	door := runtime.Definition{
		Machine: "Door", Type: "door", Version: 1, Initial: "CLOSED",
		States: []runtime.StateSpec{
			{Name: "CLOSED", Initial: true, Status: runtime.StatusRunning, Wait: true},
			{Name: "OPEN", Status: runtime.StatusSucceeded},
		},
		Events:      []runtime.EventSpec{{Name: "Open", Fields: []runtime.FieldSpec{{Name: "by", Type: "string"}}}},
		Transitions: []runtime.TransitionSpec{{From: "CLOSED", To: "OPEN", Event: "Open"}},
	}
	ctx := context.Background()
	if err := f.st.Register(ctx, door); err != nil {
		t.Fatal(err)
	}
	res, err := f.st.Start(ctx, runtime.StartRequest{Type: "door", Version: 1, IdempotencyKey: "front", Owner: runtime.Owner{TenantID: "acme"}})
	if err != nil {
		t.Fatal(err)
	}
	id := res.Run.ID
	resp, err := client.Get(base + "/runs/" + id)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindSubmatch(body)
	if m == nil {
		t.Fatalf("no CSRF token on the run page:\n%s", body)
	}
	resp, err = client.PostForm(base+"/runs/"+id+"/signal", url.Values{"event": {"Open"}, "payload": {`{"by":"ops"}`}, "csrf": {string(m[1])}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("signal Open: %d", resp.StatusCode)
	}
	run, err := f.st.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if run.State != "OPEN" || run.Status != runtime.StatusSucceeded {
		t.Errorf("the run is %s in %s, want succeeded in OPEN", run.Status, run.State)
	}
	steps, err := f.st.History(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if last := steps[len(steps)-1]; last.Event != "Open" || string(last.Payload) != `{"by": "ops"}` {
		t.Errorf("last log row: %s %s", last.Event, last.Payload)
	}
}

func TestServeTimesOutSlowClients(t *testing.T) {
	t.Parallel()
	hs := newHTTPServer(http.NotFoundHandler())
	got := []time.Duration{hs.ReadHeaderTimeout, hs.ReadTimeout, hs.WriteTimeout, hs.IdleTimeout}
	for i, d := range got {
		if d <= 0 {
			t.Errorf("timeout %d of (ReadHeader, Read, Write, Idle) is %s: a slow client holds the connection", i, d)
		}
	}
}
