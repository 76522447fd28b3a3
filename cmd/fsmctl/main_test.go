package main

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/db"
	"github.com/fsmgen/fsmgen/machines/compliance/fcha"
	rog "github.com/fsmgen/fsmgen/machines/problems/retrieveorgenerate"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// result is what one fsmctl invocation did.
type result struct {
	Code           int
	Stdout, Stderr string
}

// fsmctl runs the command line args with env as its environment.
func fsmctl(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	c := &cli{stdout: &out, stderr: &errOut, getenv: func(k string) string { return env[k] }}
	code := c.main(context.Background(), args)
	return result{code, out.String(), errOut.String()}
}

// withDB runs fsmctl with DATABASE_URL set to url.
func withDB(t *testing.T, url string, args ...string) result {
	t.Helper()
	return fsmctl(t, map[string]string{EnvDatabaseURL: url}, args...)
}

// t0 is the stubbed clock's start.
var t0 = time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC)

// stepClock is a clock for store.WithClock that moves on by a second at
// every reading, so that the times a store writes are known.
type stepClock struct {
	mu sync.Mutex
	n  int
}

func (c *stepClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return t0.Add(time.Duration(c.n-1) * time.Second)
}

func (c *stepClock) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n = 0
}

// openPool opens a pool on url for a test's own writes.
func openPool(t *testing.T, url string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func TestUsageErrorsExit2(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args   []string
		stderr string // the first line
	}{
		{nil, "fsmctl operates the runs of fsmgen workflows stored in PostgreSQL."},
		{[]string{"frobnicate"}, `fsmctl: unknown command "frobnicate"`},
		{[]string{"runs"}, "fsmctl: runs needs a subcommand: list, show, signal, cancel, terminate, resume or retry"},
		{[]string{"runs", "delete"}, `fsmctl: unknown command "runs delete": runs has list, show, signal, cancel, terminate, resume and retry`},
		{[]string{"definitions"}, "fsmctl: definitions needs a subcommand: list or show"},
		{[]string{"runs", "signal"}, "fsmctl runs signal: want RUN EVENT [JSON], got 0 arguments"},
		{[]string{"runs", "signal", "x", "Pay"}, `fsmctl runs signal: run "x": malformed id: want a UUID such as 1b4e28ba-2fa1-4d2b-883f-0016d3cca427`},
		{[]string{"runs", "signal", "1b4e28ba-2fa1-4d2b-883f-0016d3cca427", "Pay", "{paymentRef"}, "fsmctl runs signal: payload is not JSON: invalid character 'p' looking for beginning of object key string"},
		{[]string{"runs", "cancel"}, "fsmctl runs cancel: missing run id"},
		{[]string{"runs", "terminate", "1b4e28ba-2fa1-4d2b-883f-0016d3cca427"}, "fsmctl runs terminate: missing -reason: say why the run is terminated"},
		{[]string{"outbox", "requeue"}, "fsmctl outbox requeue: missing dead letter ids, or all"},
		{[]string{"outbox", "requeue", "7", "x"}, `fsmctl outbox requeue: "x" is not an outbox message id (a positive number) nor all`},
		{[]string{"runs", "resume", "a", "b"}, "fsmctl runs resume: want one run id, got 2 arguments"},
		{[]string{"runs", "retry", "12"}, `fsmctl runs retry: run "12": malformed id: want a UUID such as 1b4e28ba-2fa1-4d2b-883f-0016d3cca427`},
		{[]string{"runs", "list", "-o", "yaml"}, `invalid value "yaml" for flag -o: want text or json`},
		{[]string{"definitions", "show"}, "fsmctl definitions show: want TYPE [VERSION], got 0 arguments"},
		{[]string{"definitions", "show", "shop_order", "v1"}, `fsmctl definitions show: version "v1" is not a number from 1`},
		{[]string{"definitions", "list", "x"}, `fsmctl definitions list: unexpected arguments ["x"]`},
		{[]string{"cleanup", "now"}, `fsmctl cleanup: unexpected arguments ["now"]`},
		{[]string{"cleanup", "-batch", "0"}, "fsmctl cleanup: -batch 0: want 1 or more"},
		{[]string{"cleanup", "-dry-run=maybe"}, `invalid boolean value "maybe" for -dry-run: parse error`},
		{[]string{"retention", "set", "shop_order"}, "fsmctl retention set: want TYPE DAYS, got 1 arguments"},
		{[]string{"retention", "set", "shop_order", "a week"}, `fsmctl retention set: days "a week" is not a whole number from 0`},
		{[]string{"retention", "clear"}, "fsmctl retention clear: want TYPE, got 0 arguments"},
		{[]string{"retention"}, "fsmctl: retention needs a subcommand: list, set or clear"},
		{[]string{"runs", "show"}, "fsmctl runs show: missing run id"},
		{[]string{"runs", "show", "a", "b"}, "fsmctl runs show: want one run id, got 2 arguments"},
		{[]string{"runs", "show", "not-a-uuid"}, `fsmctl runs show: run "not-a-uuid": malformed id: want a UUID such as 1b4e28ba-2fa1-4d2b-883f-0016d3cca427`},
		{[]string{"runs", "list", "-limit", "0"}, "fsmctl runs list: -limit 0 is not in 1..10000"},
		{[]string{"runs", "list", "-limit", "many"}, `invalid value "many" for flag -limit: parse error`},
		{[]string{"runs", "list", "-status", "done"}, `fsmctl runs list: -status "done" is not one of running, succeeded, failed, cancelled`},
		{[]string{"runs", "list", "-after", "12"}, `fsmctl runs list: -after: run "12": malformed id: want a UUID such as 1b4e28ba-2fa1-4d2b-883f-0016d3cca427`},
		{[]string{"runs", "list", "extra"}, `fsmctl runs list: unexpected arguments ["extra"]`},
		{[]string{"migrate", "now"}, `fsmctl migrate: unexpected arguments ["now"]`},
		{[]string{"migrate", "-verbose"}, "flag provided but not defined: -verbose"},
		{[]string{"help", "nothing"}, `fsmctl: unknown command "nothing"`},
		{[]string{"demo"}, `fsmctl: unknown command "demo"`},
	}
	for _, tt := range tests {
		// No database is set: every one of these must fail before connecting.
		got := fsmctl(t, nil, tt.args...)
		first, _, _ := strings.Cut(got.Stderr, "\n")
		if diff := cmp.Diff(result{Code: exitUsage, Stderr: tt.stderr}, result{Code: got.Code, Stdout: got.Stdout, Stderr: first}); diff != "" {
			t.Errorf("fsmctl %s (-want +got):\n%s", strings.Join(tt.args, " "), diff)
		}
	}
}

func TestUsageErrorNamesTheCommandsSynopsis(t *testing.T) {
	t.Parallel()
	got := fsmctl(t, nil, "runs", "show")
	want := result{Code: exitUsage, Stderr: `fsmctl runs show: missing run id
usage: fsmctl runs show [-database URL] [-payloads] [-o json] ID
Run 'fsmctl help runs show' for details.
`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestHelp(t *testing.T) {
	t.Parallel()
	got := fsmctl(t, nil, "help")
	if got.Code != exitOK || got.Stderr != "" {
		t.Fatalf("help: %+v", got)
	}
	for _, want := range []string{"  migrate    ", "  runs list  ", "  runs show  ", "DATABASE_URL", "make demo"} {
		if !strings.Contains(got.Stdout, want) {
			t.Errorf("help lacks %q:\n%s", want, got.Stdout)
		}
	}
	got = fsmctl(t, nil, "help", "runs", "show")
	wantShow := "usage: fsmctl runs show [-database URL] [-payloads] [-o json] ID\n"
	if got.Code != exitOK || !strings.HasPrefix(got.Stdout, wantShow) || !strings.Contains(got.Stdout, "-payloads") {
		t.Errorf("help runs show: %+v", got)
	}
	got = fsmctl(t, nil, "runs", "list", "-h")
	if got.Code != exitOK || !strings.HasPrefix(got.Stdout, "usage: fsmctl runs list ") || got.Stderr != "" {
		t.Errorf("runs list -h: %+v", got)
	}
}

func TestNoDatabase(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"migrate"}, {"runs", "list"}, {"runs", "show", "1b4e28ba-2fa1-4d2b-883f-0016d3cca427"}} {
		got := fsmctl(t, nil, args...)
		want := result{Code: exitFailure, Stderr: "fsmctl: no database: pass -database, set DATABASE_URL (for example postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable), or set PGHOST, PGUSER, PGDATABASE and the other PG* variables\n"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("fsmctl %s (-want +got):\n%s", strings.Join(args, " "), diff)
		}
	}
}

func TestBadDatabaseURL(t *testing.T) {
	t.Parallel()
	tests := []struct{ url, stderr string }{
		{"mysql://alice:s3cret@db.example.com/app", `fsmctl: DATABASE_URL: unsupported scheme "mysql": want postgres:// or postgresql://` + "\n"},
		{"postgres://alice:s3cret@db.example.com:54x2/app", `fsmctl: DATABASE_URL is not a valid URL: invalid port ":54x2" after host` + "\n"},
		{"postgres://alice:s3cret@db.example.com:99999/app", "fsmctl: DATABASE_URL: port 99999 is out of range 1..65535\n"},
		{"postgres://alice:s3cret@db.example.com:/app", `fsmctl: DATABASE_URL: empty port after host "db.example.com"` + "\n"},
		{"postgres://alice:s3cret@db.example.com/app/x", `fsmctl: DATABASE_URL: database name "app/x" has a slash: the path is one database name` + "\n"},
		{"postgres://alice:s3cret@db.example.com/app?sslmode=sometimes", `fsmctl: DATABASE_URL: sslmode "sometimes" is not one of disable, allow, prefer, require, verify-ca, verify-full` + "\n"},
		{"postgres://alice:s3%zzcret@db.example.com/app", `fsmctl: DATABASE_URL is not a valid URL: invalid URL escape "%zz"` + "\n"},
		{"host=db.example.com port=fifty password=s3cret", "fsmctl: DATABASE_URL: invalid port\n"},
	}
	for _, tt := range tests {
		got := withDB(t, tt.url, "runs", "list")
		if diff := cmp.Diff(result{Code: exitFailure, Stderr: tt.stderr}, got); diff != "" {
			t.Errorf("DATABASE_URL=%s (-want +got):\n%s", tt.url, diff)
		}
		if strings.Contains(got.Stderr, "s3cret") {
			t.Errorf("DATABASE_URL=%s: the error shows the password: %s", tt.url, got.Stderr)
		}
	}
	// The flag is named when the string came from it.
	got := fsmctl(t, nil, "migrate", "-database", "postgres://alice:s3cret@h:0/app")
	if diff := cmp.Diff(result{Code: exitFailure, Stderr: "fsmctl: -database: port 0 is out of range 1..65535\n"}, got); diff != "" {
		t.Errorf("-database (-want +got):\n%s", diff)
	}
}

func TestUnreachableDatabaseSaysWhichAndHidesThePassword(t *testing.T) {
	t.Parallel()
	got := withDB(t, "postgres://alice:s3cret@127.0.0.1:1/app?sslmode=disable&connect_timeout=5", "runs", "list")
	prefix := `fsmctl: connect to the database "app" on 127.0.0.1 port 1 as user "alice" that DATABASE_URL names: `
	if got.Code != exitFailure || !strings.HasPrefix(got.Stderr, prefix) || strings.Contains(got.Stderr, "s3cret") {
		t.Errorf("got %+v, want exit 1 and stderr starting %q, without the password", got, prefix)
	}
}

func TestMigrateTwice(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t, pgtest.Empty())
	n := migrationCount(t)
	want := result{Code: exitOK, Stdout: fmt.Sprintf("runtime schema: %d migrations, %d applied now\n", n, n)}
	if diff := cmp.Diff(want, withDB(t, url, "migrate")); diff != "" {
		t.Errorf("first migrate (-want +got):\n%s", diff)
	}
	want.Stdout = fmt.Sprintf("runtime schema: %d migrations, 0 applied now\n", n)
	if diff := cmp.Diff(want, withDB(t, url, "migrate")); diff != "" {
		t.Errorf("second migrate (-want +got):\n%s", diff)
	}
}

// migrate -grant gives existing roles the privileges of their kind; with
// nothing to apply, migrate needs no more than those: the runtime and the
// reader roles run it. A role that owns the schema is refused.
func TestMigrateGrants(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t, pgtest.Empty())
	n := migrationCount(t)
	runtimeRole, runtimeURL := pgtest.LoginRole(t, url, "runtime")
	readerRole, readerURL := pgtest.LoginRole(t, url, "reader")
	want := result{Code: exitOK, Stdout: fmt.Sprintf("runtime schema: %d migrations, %d applied now\ngranted runtime to %s\ngranted reader to %s\n",
		n, n, runtimeRole, readerRole)}
	if diff := cmp.Diff(want, withDB(t, url, "migrate", "-grant", "runtime="+runtimeRole, "-grant", "reader="+readerRole)); diff != "" {
		t.Errorf("migrate -grant (-want +got):\n%s", diff)
	}
	for _, u := range []string{runtimeURL, readerURL} {
		want := result{Code: exitOK, Stdout: fmt.Sprintf("runtime schema: %d migrations, 0 applied now\n", n)}
		if diff := cmp.Diff(want, withDB(t, u, "migrate")); diff != "" {
			t.Errorf("migrate as a role without CREATE (-want +got):\n%s", diff)
		}
	}
	var owner string
	if err := openPool(t, url).QueryRow(context.Background(), `SELECT current_user`).Scan(&owner); err != nil {
		t.Fatal(err)
	}
	want = result{Code: exitFailure, Stdout: fmt.Sprintf("runtime schema: %d migrations, 0 applied now\n", n),
		Stderr: fmt.Sprintf("fsmctl: grant runtime to %s: role %q owns the schema or its tables: the database's guarantees hold only for roles that do not\n", owner, owner)}
	if diff := cmp.Diff(want, withDB(t, url, "migrate", "-grant", "runtime="+owner)); diff != "" {
		t.Errorf("migrate -grant to the owner (-want +got):\n%s", diff)
	}
	want = result{Code: exitUsage, Stderr: "invalid value \"admin=x\" for flag -grant: unknown role kind \"admin\": want one of runtime, operator, reader\n"}
	got := withDB(t, url, "migrate", "-grant", "admin=x")
	got.Stderr, _, _ = strings.Cut(got.Stderr, "usage:")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("migrate -grant admin=x (-want +got):\n%s", diff)
	}
}

func TestUnmigratedDatabaseSaysToMigrate(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t, pgtest.Empty())
	got := withDB(t, url, "runs", "list")
	want := result{Code: exitFailure,
		Stderr: `fsmctl: list runs: the database has no runtime schema (relation "workflow_runs" does not exist): run fsmctl migrate` + "\n"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("runs list (-want +got):\n%s", diff)
	}
	got = withDB(t, url, "runs", "show", "1b4e28ba-2fa1-4d2b-883f-0016d3cca427")
	want.Stderr = `fsmctl: run 1b4e28ba-2fa1-4d2b-883f-0016d3cca427: the database has no runtime schema (relation "workflow_runs" does not exist): run fsmctl migrate` + "\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("runs show (-want +got):\n%s", diff)
	}
}

// fixture starts runs through a store with a stepping clock: rog runs in
// the tenants acme and globex, and one FCHA run.
type fixture struct {
	// url is the database as an operator role (db.RoleOperator), which
	// fsmctl runs as; owner as the schema's owner.
	url, owner string
	st         *store.Store
	ids        map[string]string // name -> run id
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	clock := &stepClock{}
	st := store.New(openPool(t, url), store.WithClock(clock.now))
	for _, def := range []runtime.Definition{rog.Definition(), fcha.Definition()} {
		if err := st.Register(ctx, def); err != nil {
			t.Fatal(err)
		}
	}
	clock.reset() // the times below start at t0
	f := &fixture{url: pgtest.RoleDSN(t, url, db.RoleOperator), owner: url, st: st, ids: map[string]string{}}
	start := func(name, typ, tenant string) runtime.Run {
		res, err := st.Start(ctx, runtime.StartRequest{Type: typ, Version: 1, IdempotencyKey: name, Owner: runtime.Owner{TenantID: tenant}})
		if err != nil {
			t.Fatal(err)
		}
		f.ids[name] = res.Run.ID
		return res.Run
	}
	fire := func(run runtime.Run, rv int64, from, to, event string, payload any) int64 {
		def := rog.Definition()
		spec, _ := def.State(to)
		rec, err := f.st.Record(ctx, run.ID, rv, runtime.Transition{
			Machine: run.Type, Version: run.Version, From: from, To: to, Event: event, Payload: payload, Status: spec.Status,
		})
		if err != nil {
			t.Fatal(err)
		}
		return rec.RowVersion
	}
	// a: INITIATED -> INGESTING -> RETRIEVING -> SUCCEEDED (hit), with a step.
	a := start("a", rog.Type, "acme")
	if _, err := st.LogStep(ctx, a.ID, "policy_applied", map[string]any{"tier": "pro"}); err != nil {
		t.Fatal(err)
	}
	rv := fire(a, a.RowVersion, "INITIATED", "INGESTING", "Start", rog.Start{})
	rv = fire(a, rv, "INGESTING", "RETRIEVING", "MediaNormalized", rog.MediaNormalized{ProblemSignature: "sig-a", NormalizedText: "solve x=1"})
	def := rog.Definition()
	spec, _ := def.State("SUCCEEDED")
	if _, err := st.Finish(ctx, a.ID, rv, runtime.Transition{
		Machine: rog.Type, Version: rog.Version, From: "RETRIEVING", To: "SUCCEEDED", Event: "RetrievalHit",
		Payload: rog.RetrievalHit{AssetVersionID: "av-1", Confidence: 0.99, Method: "text_exact"},
		Status:  spec.Status, Outcome: "hit",
	}, runtime.Result{Output: []byte(`{"asset_version_id": "av-1"}`), CostUSD: 0.25}); err != nil {
		t.Fatal(err)
	}
	// b: INITIATED -> INGESTING, still running, tenant acme.
	b := start("b", rog.Type, "acme")
	fire(b, b.RowVersion, "INITIATED", "INGESTING", "Start", rog.Start{})
	// c: INITIATED, tenant globex.
	start("c", rog.Type, "globex")
	// d: an FCHA run, tenant acme.
	start("d", fcha.Type, "acme")
	return f
}

func TestRunsListFilters(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const head = "ID                                    TYPE                           STATE             STATUS     OUTCOME  TENANT  ATTEMPT  CREATED                   UPDATED\n"
	rows := map[string]string{
		"a": f.ids["a"] + "  retrieve_or_generate v1        SUCCEEDED         succeeded  hit      acme    1        2026-03-14T09:26:53.000Z  2026-03-14T09:26:57.000Z\n",
		"b": f.ids["b"] + "  retrieve_or_generate v1        INGESTING         running    -        acme    1        2026-03-14T09:26:58.000Z  2026-03-14T09:26:59.000Z\n",
		"c": f.ids["c"] + "  retrieve_or_generate v1        INITIATED         running    -        globex  1        2026-03-14T09:27:00.000Z  2026-03-14T09:27:00.000Z\n",
		"d": f.ids["d"] + "  nyc-application-compliance v1  PREQUALIFICATION  running    -        acme    1        2026-03-14T09:27:01.000Z  2026-03-14T09:27:01.000Z\n",
	}
	tests := []struct {
		args []string
		want []string // rows, or nil for none
		more bool     // the page is full
	}{
		{nil, []string{"a", "b", "c", "d"}, false},
		{[]string{"-type", rog.Type}, []string{"a", "b", "c"}, false},
		{[]string{"-type", fcha.Type}, []string{"d"}, false},
		{[]string{"-tenant", "acme"}, []string{"a", "b", "d"}, false},
		{[]string{"-tenant", "acme", "-type", rog.Type}, []string{"a", "b"}, false},
		{[]string{"-state", "INGESTING,INITIATED"}, []string{"b", "c"}, false},
		{[]string{"-state", "SUCCEEDED", "-tenant", "globex"}, nil, false},
		{[]string{"-status", "succeeded"}, []string{"a"}, false},
		{[]string{"-status", "running", "-limit", "2"}, []string{"b", "c"}, true},
		{[]string{"-after", f.ids["b"]}, []string{"c", "d"}, false},
	}
	for _, tt := range tests {
		got := withDB(t, f.url, append([]string{"runs", "list"}, tt.args...)...)
		want := result{Code: exitOK, Stdout: "no runs match\n"}
		if tt.want != nil {
			var sb strings.Builder
			sb.WriteString(head)
			for _, name := range tt.want {
				sb.WriteString(rows[name])
			}
			if tt.more {
				fmt.Fprintf(&sb, "(%d runs shown; more may match: add -after %s)\n", len(tt.want), f.ids[tt.want[len(tt.want)-1]])
			}
			want.Stdout = sb.String()
		}
		// Each column is as wide as its widest cell, and the expected rows
		// are laid out for the table of every run: compare the cells of each
		// line rather than its padding.
		if diff := cmp.Diff(cells(want.Stdout), cells(got.Stdout)); diff != "" || got.Code != exitOK || got.Stderr != "" {
			t.Errorf("runs list %s: exit %d, stderr %q, stdout (-want +got):\n%s", strings.Join(tt.args, " "), got.Code, got.Stderr, diff)
		}
		if len(tt.args) == 0 {
			// With every run listed, the layout is exact.
			if diff := cmp.Diff(want.Stdout, got.Stdout); diff != "" {
				t.Errorf("runs list %s: layout (-want +got):\n%s", strings.Join(tt.args, " "), diff)
			}
		}
	}
}

// cells splits a table into the cells of each line.
func cells(s string) [][]string {
	var out [][]string
	for _, line := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		out = append(out, regexp.MustCompile(`\s{2,}`).Split(line, -1))
	}
	return out
}

func TestRunsShowPrintsTheRunAndItsHistory(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.ids["a"]
	got := withDB(t, f.url, "runs", "show", id)
	want := result{Code: exitOK, Stdout: `run       ` + id + `
type      retrieve_or_generate v1
state     SUCCEEDED
status    succeeded
outcome   hit
tenant    acme
user      -
key       a
attempt   1
output    {"asset_version_id":"av-1"}
cost      0.2500 USD
duration  4000 ms
created   2026-03-14T09:26:53.000Z
updated   2026-03-14T09:26:57.000Z
finished  2026-03-14T09:26:57.000Z

SEQ  TIME                      KIND        STEP/EVENT       STATE                   ATTEMPT
1    2026-03-14T09:26:53.000Z  created     start            → INITIATED             1
2    2026-03-14T09:26:54.000Z  step        policy_applied   INITIATED               1
3    2026-03-14T09:26:55.000Z  transition  Start            INITIATED → INGESTING   1
4    2026-03-14T09:26:56.000Z  transition  MediaNormalized  INGESTING → RETRIEVING  1
5    2026-03-14T09:26:57.000Z  transition  RetrievalHit     RETRIEVING → SUCCEEDED  1
`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("runs show (-want +got):\n%s", diff)
	}

	got = withDB(t, f.url, "runs", "show", "-payloads", id)
	lines := strings.Split(got.Stdout, "\n")
	history := lines[len(lines)-7 : len(lines)-1]
	wantHistory := []string{
		"SEQ  TIME                      KIND        STEP/EVENT       STATE                   ATTEMPT  PAYLOAD",
		"1    2026-03-14T09:26:53.000Z  created     start            → INITIATED             1        -",
		`2    2026-03-14T09:26:54.000Z  step        policy_applied   INITIATED               1        {"tier":"pro"}`,
		"3    2026-03-14T09:26:55.000Z  transition  Start            INITIATED → INGESTING   1        {}",
		`4    2026-03-14T09:26:56.000Z  transition  MediaNormalized  INGESTING → RETRIEVING  1        {"phash":"","topicTags":null,"normalizedText":"solve x=1","problemSignature":"sig-a"}`,
		`5    2026-03-14T09:26:57.000Z  transition  RetrievalHit     RETRIEVING → SUCCEEDED  1        {"method":"text_exact","confidence":0.99,"assetVersionID":"av-1"}`,
	}
	if diff := cmp.Diff(wantHistory, history); diff != "" || got.Code != exitOK {
		t.Errorf("runs show -payloads: exit %d, history (-want +got):\n%s", got.Code, diff)
	}
}

func TestRunsShowOfARunningRun(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.ids["b"]
	got := withDB(t, f.url, "runs", "show", id)
	want := result{Code: exitOK, Stdout: `run       ` + id + `
type      retrieve_or_generate v1
state     INGESTING
status    running
tenant    acme
user      -
key       b
attempt   1
created   2026-03-14T09:26:58.000Z
updated   2026-03-14T09:26:59.000Z
step try  1
due       2026-03-14T09:26:58.000Z

SEQ  TIME                      KIND        STEP/EVENT  STATE                  ATTEMPT
1    2026-03-14T09:26:58.000Z  created     start       → INITIATED            1
2    2026-03-14T09:26:59.000Z  transition  Start       INITIATED → INGESTING  1
`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("runs show (-want +got):\n%s", diff)
	}
}

func TestRunsShowUnknownRun(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const id = "1b4e28ba-2fa1-4d2b-883f-0016d3cca427"
	got := withDB(t, f.url, "runs", "show", id)
	if diff := cmp.Diff(result{Code: exitFailure, Stderr: "fsmctl: run " + id + ": not found\n"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestInterrupted(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // as Ctrl-C does through signal.NotifyContext
	var out, errOut bytes.Buffer
	c := &cli{stdout: &out, stderr: &errOut, getenv: func(string) string { return "" }}
	code := c.main(ctx, []string{"migrate", "-database", url})
	if diff := cmp.Diff(result{Code: exitFailure, Stderr: "fsmctl: interrupted\n"}, result{Code: code, Stderr: errOut.String()}); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// migrationCount is the number of the runtime's embedded migrations.
func migrationCount(t *testing.T) int {
	t.Helper()
	ms, err := db.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	return len(ms)
}
