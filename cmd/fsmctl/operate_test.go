package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fsmgen/fsmgen/db"
	"github.com/fsmgen/fsmgen/internal/cliout"
	rog "github.com/fsmgen/fsmgen/machines/problems/retrieveorgenerate"
	"github.com/fsmgen/fsmgen/machines/shop/order"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// opsFixture is a database with the shop's order machine and
// RetrieveOrGenerate registered by their processes' store, which fsmctl
// then operates without their code.
type opsFixture struct {
	// url is the database as an operator role (db.RoleOperator), which
	// fsmctl runs as.
	url string
	st  *store.Store
}

func newOpsFixture(t *testing.T) *opsFixture {
	t.Helper()
	url := pgtest.NewDatabase(t)
	st := store.New(openPool(t, url))
	for _, def := range []runtime.Definition{order.Definition(), rog.Definition()} {
		if err := st.Register(context.Background(), def); err != nil {
			t.Fatal(err)
		}
	}
	return &opsFixture{url: pgtest.RoleDSN(t, url, db.RoleOperator), st: st}
}

// start starts a run of typ with key and returns it.
func (f *opsFixture) start(t *testing.T, typ, key string) runtime.Run {
	t.Helper()
	res, err := f.st.Start(context.Background(), runtime.StartRequest{Type: typ, Version: 1, IdempotencyKey: key, Owner: runtime.Owner{TenantID: "acme"}})
	if err != nil {
		t.Fatal(err)
	}
	return res.Run
}

// get reads run id back.
func (f *opsFixture) get(t *testing.T, id string) runtime.Run {
	t.Helper()
	run, err := f.st.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// lastSteps returns the last n rows of run id's log as
// "kind name from->to payload".
func (f *opsFixture) lastSteps(t *testing.T, id string, n int) []string {
	t.Helper()
	steps, err := f.st.History(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range steps[len(steps)-n:] {
		out = append(out, fmt.Sprintf("%s %s %s->%s %s", s.Kind, s.Name, s.From, s.To, compactJSON(s.Payload)))
	}
	return out
}

func TestRunsSignal(t *testing.T) {
	t.Parallel()
	f := newOpsFixture(t)
	run := f.start(t, order.Type, "o-1")
	got := withDB(t, f.url, "runs", "signal", "-reason", "paid by phone", run.ID, "Pay", `{"paymentRef": "p-1"}`)
	want := result{Code: exitOK, Stdout: "run " + run.ID + " signalled Pay: PENDING_PAYMENT -> PACKING (running, attempt 1)\n"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	wantSteps := []string{
		`step operator_signal PENDING_PAYMENT->PENDING_PAYMENT {"to":"PACKING","event":"Pay","reason":"paid by phone","unchecked_guards":[]}`,
		`transition Pay PENDING_PAYMENT->PACKING {"paymentRef":"p-1"}`,
	}
	if diff := cmp.Diff(wantSteps, f.lastSteps(t, run.ID, 2)); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	// PACKING has a handler: the run is due for a worker.
	if after := f.get(t, run.ID); after.NextRunAt.IsZero() {
		t.Errorf("the run in PACKING is not due: %+v", after)
	}
}

func TestRunsSignalRefusals(t *testing.T) {
	t.Parallel()
	f := newOpsFixture(t)
	o := f.start(t, order.Type, "o-1")
	g := f.start(t, rog.Type, "g-1")
	const unknownID = "1b4e28ba-2fa1-4d2b-883f-0016d3cca427"
	tests := []struct {
		args   []string
		stderr string
	}{
		{[]string{o.ID, "Pay", `{"paymentRef": 5}`},
			"fsmctl: run " + o.ID + ": payload does not fit the event: event Pay: field paymentRef (string): want a string, got the number 5\n"},
		{[]string{o.ID, "Pay", `{"paymentref": "p"}`},
			"fsmctl: run " + o.ID + `: payload does not fit the event: event Pay has no field "paymentref" (its fields: paymentRef string)` + "\n"},
		{[]string{o.ID, "Pay", `["p"]`},
			"fsmctl: run " + o.ID + ": payload does not fit the event: event Pay: want a JSON object of its fields, got an array\n"},
		{[]string{o.ID, "Paid"},
			"fsmctl: run " + o.ID + `: unknown event: shop_order v1 has no event "Paid" (its events: Pay, PaymentExpired, Packed, Delivered, Lost, Returned, ReturnWindowClosed, Refunded, Cancel)` + "\n"},
		{[]string{o.ID, "PaymentExpired"},
			"fsmctl: run " + o.ID + ": callers may not send the event: shop_order v1 in state PENDING_PAYMENT: PaymentExpired is fired by the timer of PENDING_PAYMENT; declare it external to let callers send it\n"},
		{[]string{o.ID, "Packed", `{"parcelID": "x"}`},
			"fsmctl: run " + o.ID + ": callers may not send the event: shop_order v1 in state PENDING_PAYMENT: Packed is returned by the handler of PACKING; declare it external to let callers send it\n"},
		{[]string{g.ID, "Start"},
			"fsmctl: run " + g.ID + ": callers may not send the event: retrieve_or_generate v1 in state INITIATED: Start is returned by the handler of INITIATED; declare it external to let callers send it\n"},
		{[]string{o.ID, "Lost"},
			"fsmctl: run " + o.ID + ": no such transition: state PENDING_PAYMENT of shop_order v1 has no transition on Lost (it accepts Pay, PaymentExpired, Cancel)\n"},
		{[]string{"-to", "COMPLETED", o.ID, "Pay"},
			"fsmctl: run " + o.ID + ": no such transition: state PENDING_PAYMENT of shop_order v1 has no transition to COMPLETED on Pay (-> PACKING)\n"},
		{[]string{g.ID, "Cancel"},
			"fsmctl: run " + g.ID + ": guarded transition: state INITIATED of retrieve_or_generate v1 decides Cancel by guards, which only the machine's Go code evaluates (-> CANCELLED [UserOwnsRun]): name the target state to fire its row without its guard; pass -to STATE\n"},
		{[]string{unknownID, "Pay"}, "fsmctl: run " + unknownID + ": not found\n"},
	}
	for _, tt := range tests {
		got := withDB(t, f.url, append([]string{"runs", "signal"}, tt.args...)...)
		if diff := cmp.Diff(result{Code: exitFailure, Stderr: tt.stderr}, got); diff != "" {
			t.Errorf("runs signal %s (-want +got):\n%s", strings.Join(tt.args, " "), diff)
		}
	}
	// Nothing moved.
	for _, id := range []string{o.ID, g.ID} {
		if run := f.get(t, id); run.RowVersion != 1 {
			t.Errorf("run %s moved: %+v", id, run)
		}
	}
	// The guarded row, named with -to, is fired without its guard.
	got := withDB(t, f.url, "runs", "signal", "-to", "CANCELLED", g.ID, "Cancel", `{"userID": "ops"}`)
	if diff := cmp.Diff(result{Code: exitOK, Stdout: "run " + g.ID + " signalled Cancel: INITIATED -> CANCELLED (cancelled, attempt 1)\n"}, got); diff != "" {
		t.Errorf("-to CANCELLED (-want +got):\n%s", diff)
	}
	wantSteps := []string{
		`step operator_signal INITIATED->INITIATED {"to":"CANCELLED","event":"Cancel","unchecked_guards":["[UserOwnsRun]"]}`,
		`transition Cancel INITIATED->CANCELLED {"userID":"ops"}`,
	}
	if diff := cmp.Diff(wantSteps, f.lastSteps(t, g.ID, 2)); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
}

func TestRunsSignalJSON(t *testing.T) {
	t.Parallel()
	f := newOpsFixture(t)
	run := f.start(t, order.Type, "o-1")
	got := withDB(t, f.url, "runs", "signal", "-o", "json", run.ID, "Pay", `{"paymentRef":"p-1"}`)
	var want strings.Builder
	if err := cliout.WriteJSON(&want, toJSONRun(f.get(t, run.ID))); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(result{Code: exitOK, Stdout: want.String()}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if !strings.Contains(got.Stdout, `"state": "PACKING"`) {
		t.Errorf("the run is not in PACKING:\n%s", got.Stdout)
	}
}

func TestRunsCancel(t *testing.T) {
	t.Parallel()
	f := newOpsFixture(t)
	pending := f.start(t, order.Type, "o-1")
	packing := f.start(t, order.Type, "o-2")
	if _, err := f.st.Record(context.Background(), packing.ID, packing.RowVersion, runtime.Transition{
		Machine: order.Type, Version: 1, From: "PENDING_PAYMENT", To: "PACKING", Event: "Pay", Payload: order.Pay{PaymentRef: "p"}, Status: runtime.StatusRunning,
	}); err != nil {
		t.Fatal(err)
	}
	// Before the payment the order ends at once, with the operator's reason.
	got := withDB(t, f.url, "runs", "cancel", "-reason", "duplicate", pending.ID)
	if diff := cmp.Diff(result{Code: exitOK, Stdout: "run " + pending.ID + " cancelled: PENDING_PAYMENT -> CANCELLED (cancelled, attempt 1)\n"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	res := f.get(t, pending.ID).Result
	if res == nil || res.ErrorCode != "CANCELLED" || res.ErrorDetail != "cancelled by an operator: duplicate" || res.Status != runtime.StatusCancelled {
		t.Errorf("result %+v", res)
	}
	// While packed it is refunded first: the owner's guard is not asked.
	got = withDB(t, f.url, "runs", "cancel", packing.ID)
	if diff := cmp.Diff(result{Code: exitOK, Stdout: "run " + packing.ID + " cancelled: PACKING -> REFUNDING (running, attempt 1)\n"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	wantSteps := []string{
		`step operator_cancel PACKING->PACKING {"to":"REFUNDING","event":"Cancel","unchecked_guards":["[UserOwnsRun]"]}`,
		`transition Cancel PACKING->REFUNDING {}`,
	}
	if diff := cmp.Diff(wantSteps, f.lastSteps(t, packing.ID, 2)); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	// A finished run, and a state without a cancel row, are refused.
	got = withDB(t, f.url, "runs", "cancel", pending.ID)
	if diff := cmp.Diff(result{Code: exitFailure, Stderr: "fsmctl: run " + pending.ID + ": run is finished: it is cancelled in CANCELLED\n"}, got); diff != "" {
		t.Errorf("finished (-want +got):\n%s", diff)
	}
	got = withDB(t, f.url, "runs", "cancel", packing.ID)
	if diff := cmp.Diff(result{Code: exitFailure, Stderr: "fsmctl: run " + packing.ID + ": cannot be cancelled in its state: state REFUNDING of shop_order v1 has no transition on the cancel event Cancel\n"}, got); diff != "" {
		t.Errorf("REFUNDING (-want +got):\n%s", diff)
	}
}

func TestRunsRetry(t *testing.T) {
	t.Parallel()
	f := newOpsFixture(t)
	ctx := context.Background()
	run := f.start(t, rog.Type, "g-1")
	rv := run.RowVersion
	for _, tr := range []runtime.Transition{
		{From: "INITIATED", To: "INGESTING", Event: "Start", Payload: rog.Start{}, Status: runtime.StatusRunning},
		{From: "INGESTING", To: "FAILED", Event: "MediaRejected", Payload: rog.MediaRejected{Reason: "blurred"}, Status: runtime.StatusFailed},
	} {
		tr.Machine, tr.Version = rog.Type, 1
		rec, err := f.st.Record(ctx, run.ID, rv, tr)
		if err != nil {
			t.Fatal(err)
		}
		rv = rec.RowVersion
	}
	got := withDB(t, f.url, "runs", "retry", run.ID)
	if diff := cmp.Diff(result{Code: exitOK, Stdout: "run " + run.ID + " retried: FAILED -> INITIATED (running, attempt 2)\n"}, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	after := f.get(t, run.ID)
	if after.ID != run.ID || after.Attempt != 2 || after.State != "INITIATED" || after.Result != nil || !after.FinishedAt.IsZero() || after.NextRunAt.IsZero() {
		t.Errorf("after retry: %+v", after)
	}
	if diff := cmp.Diff([]string{"restarted restart FAILED->INITIATED -"}, f.lastSteps(t, run.ID, 1)); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	got = withDB(t, f.url, "runs", "retry", run.ID)
	want := result{Code: exitFailure, Stderr: "fsmctl: run " + run.ID + ": conflict: the run moved since it was read: only a failed run is retried, and it is running in INITIATED\n"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("retry of a running run (-want +got):\n%s", diff)
	}
}

func TestRunsResume(t *testing.T) {
	t.Parallel()
	f := newOpsFixture(t)
	run := f.start(t, order.Type, "o-1")
	got := withDB(t, f.url, "runs", "resume", run.ID)
	want := result{Code: exitFailure, Stderr: "fsmctl: run " + run.ID + ": conflict: the run moved since it was read: the run is not parked\n"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("not parked (-want +got):\n%s", diff)
	}
	// Park it as the engine does when a state's retries give up.
	if _, err := f.st.Pool().Exec(context.Background(),
		`UPDATE workflow_runs SET parked_at = now(), next_run_at = NULL, step_attempt = 4, last_error = 'boom' WHERE id = $1`, run.ID); err != nil {
		t.Fatal(err)
	}
	got = withDB(t, f.url, "runs", "resume", "-o", "json", run.ID)
	var out jsonRun
	if err := json.Unmarshal([]byte(got.Stdout), &out); err != nil || got.Code != exitOK {
		t.Fatalf("exit %d, %v: %s%s", got.Code, err, got.Stdout, got.Stderr)
	}
	if out.ParkedAt != nil || out.NextRunAt == nil || out.StepAttempt != 1 || out.State != "PENDING_PAYMENT" {
		t.Errorf("after resume: %+v", out)
	}
	if diff := cmp.Diff([]string{"step resumed PENDING_PAYMENT->PENDING_PAYMENT -"}, f.lastSteps(t, run.ID, 1)); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
}

func TestDefinitions(t *testing.T) {
	t.Parallel()
	f := newOpsFixture(t)
	var at [2]string
	rows, err := f.st.Pool().Query(context.Background(), `SELECT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') FROM workflow_definitions ORDER BY workflow_type`)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; rows.Next(); i++ {
		if err := rows.Scan(&at[i]); err != nil {
			t.Fatal(err)
		}
	}
	got := withDB(t, f.url, "definitions", "list")
	want := result{Code: exitOK, Stdout: `TYPE                  VERSION  MACHINE             INITIAL          STATES  EVENTS  TRANSITIONS  REGISTERED
retrieve_or_generate  1        RetrieveOrGenerate  INITIATED        9       15      21           ` + at[0] + `
shop_order            1        Order               PENDING_PAYMENT  8       9       10           ` + at[1] + `
`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("definitions list (-want +got):\n%s", diff)
	}
	got = withDB(t, f.url, "definitions", "show", "-mermaid", "shop_order")
	mmd := strings.Replace(readFile(t, "../../machines/shop/order/diagram.mmd"),
		"%% Code generated by fsmgen from shop.fsm. DO NOT EDIT.", "%% Drawn from the registered definition of shop_order v1.", 1)
	if diff := cmp.Diff(result{Code: exitOK, Stdout: mmd}, got); diff != "" {
		t.Errorf("definitions show -mermaid (-want +got):\n%s", diff)
	}
	got = withDB(t, f.url, "definitions", "show", "shop_order", "1")
	wantHead := `type     shop_order v1
machine  Order
initial  PENDING_PAYMENT
cancel   Cancel

STATE            STATUS     OUTCOME   KIND           RETRY               TIMERS
PENDING_PAYMENT  running    -         initial, wait  -                   PaymentExpired after 20s
PACKING          running    -         handler        3 tries from 1s x2  -
IN_TRANSIT       running    -         wait           -                   Lost after 3d
DELIVERED        running    -         wait           -                   ReturnWindowClosed after 14d
REFUNDING        running    -         handler        5 tries from 1s x2  -
COMPLETED        succeeded  -         final          -                   -
CANCELLED        cancelled  -         final          -                   -
REFUNDED         cancelled  refunded  final          -                   -

EVENT               FIELDS
Pay                 paymentRef string
PaymentExpired      -
Packed              parcelID string
Delivered           -
Lost (external)     -
Returned            -
ReturnWindowClosed  -
Refunded            refundRef string
Cancel              userID string

FROM             EVENT                           GUARD          TO          OUTCOME
`
	if got.Code != exitOK || !strings.HasPrefix(got.Stdout, wantHead) || !strings.HasSuffix(got.Stdout, "```mermaid\n"+mmd+"```\n") {
		t.Errorf("definitions show: exit %d, stderr %q, head (-want +got):\n%s", got.Code, got.Stderr, cmp.Diff(wantHead, got.Stdout[:min(len(got.Stdout), len(wantHead))]))
	}
	got = withDB(t, f.url, "definitions", "show", "shop_order", "2")
	if diff := cmp.Diff(result{Code: exitFailure, Stderr: "fsmctl: definition shop_order: unknown definition: shop_order v2 is not registered\n"}, got); diff != "" {
		t.Errorf("unknown version (-want +got):\n%s", diff)
	}
	got = withDB(t, f.url, "definitions", "show", "nothing")
	if diff := cmp.Diff(result{Code: exitFailure, Stderr: "fsmctl: definition nothing: unknown definition: no version of nothing is registered\n"}, got); diff != "" {
		t.Errorf("unknown type (-want +got):\n%s", diff)
	}
	got = withDB(t, f.url, "definitions", "show", "-o", "json", "shop_order")
	var out struct {
		Type       string
		Version    int
		Definition runtime.Definition
		Mermaid    string
	}
	if err := json.Unmarshal([]byte(got.Stdout), &out); err != nil {
		t.Fatal(err, got)
	}
	if diff := cmp.Diff(order.Definition(), out.Definition); diff != "" || out.Mermaid != mmd || out.Type != "shop_order" || out.Version != 1 {
		t.Errorf("-o json: definition (-want +got):\n%s", diff)
	}
}

func TestRunsListJSON(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	got := withDB(t, f.url, "runs", "list", "-o", "json", "-status", "succeeded")
	a, _ := f.st.Get(context.Background(), f.ids["a"])
	var want strings.Builder
	if err := cliout.WriteJSON(&want, []jsonRun{toJSONRun(a)}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(result{Code: exitOK, Stdout: want.String()}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if !strings.Contains(got.Stdout, `"asset_version_id": "av-1"`) || !strings.Contains(got.Stdout, `"created_at": "2026-03-14T09:26:53Z"`) {
		t.Errorf("the JSON lacks the result's output or the creation time:\n%s", got.Stdout)
	}
	got = withDB(t, f.url, "runs", "list", "-o", "json", "-tenant", "nobody")
	if diff := cmp.Diff(result{Code: exitOK, Stdout: "[]\n"}, got); diff != "" {
		t.Errorf("no runs (-want +got):\n%s", diff)
	}
	got = withDB(t, f.url, "runs", "show", "-o", "json", f.ids["a"])
	var show struct {
		Run     jsonRun
		History []jsonStep
	}
	if err := json.Unmarshal([]byte(got.Stdout), &show); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range show.History {
		names = append(names, fmt.Sprintf("%d %s %s", s.Seq, s.Kind, s.Name))
	}
	wantNames := []string{"1 created start", "2 step policy_applied", "3 transition Start", "4 transition MediaNormalized", "5 transition RetrievalHit"}
	if diff := cmp.Diff(wantNames, names); diff != "" || show.Run.ID != f.ids["a"] {
		t.Errorf("runs show -o json: history (-want +got):\n%s", diff)
	}
}

// TestMigratePrint applies what migrate -print prints, as another
// migration tool would, to an empty database, and finds the runtime's
// schema there: a run can be started on it.
func TestMigratePrint(t *testing.T) {
	t.Parallel()
	got := fsmctl(t, nil, "migrate", "-print")
	ms, err := db.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	if got.Code != exitOK || got.Stderr != "" || !strings.HasPrefix(got.Stdout, "-- fsmgen migration 0001_runs.sql\n-- Runs, their") {
		t.Fatalf("migrate -print: exit %d, stderr %q, stdout starts %q", got.Code, got.Stderr, got.Stdout[:min(80, len(got.Stdout))])
	}
	for _, m := range ms {
		if !strings.Contains(got.Stdout, fmt.Sprintf("-- fsmgen migration %04d_%s.sql\n%s", m.Version, m.Name, m.SQL)) {
			t.Errorf("the output lacks migration %04d_%s", m.Version, m.Name)
		}
	}
	url := pgtest.NewDatabase(t, pgtest.Empty())
	pool := openPool(t, url)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, got.Stdout); err != nil {
		t.Fatalf("apply the printed SQL: %v", err)
	}
	st := store.New(pool)
	if err := st.Register(ctx, order.Definition()); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Start(ctx, runtime.StartRequest{Type: order.Type, Version: 1, IdempotencyKey: "k", Owner: runtime.Owner{TenantID: "t"}}); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE tablename = 'fsmgen_migrations'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("fsmgen_migrations: %d tables, %v; want none", n, err)
	}
}

// TestPGEnvironment connects with the libpq variables when neither
// -database nor DATABASE_URL is given, and DATABASE_URL wins over them.
func TestPGEnvironment(t *testing.T) {
	t.Parallel()
	f := newOpsFixture(t)
	cfg, err := pgconn.ParseConfig(f.url)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"PGHOST": cfg.Host, "PGPORT": strconv.Itoa(int(cfg.Port)), "PGUSER": cfg.User, "PGPASSWORD": cfg.Password,
		"PGDATABASE": cfg.Database, "PGSSLMODE": "disable",
	}
	got := fsmctl(t, env, "definitions", "list", "-o", "json")
	var defs []jsonDefinition
	if err := json.Unmarshal([]byte(got.Stdout), &defs); err != nil || got.Code != exitOK || len(defs) != 2 {
		t.Fatalf("with PG* only: exit %d, %v: %s%s", got.Code, err, got.Stdout, got.Stderr)
	}
	// DATABASE_URL comes first: an unreachable one is used, and fails.
	env[EnvDatabaseURL] = "postgres://alice@127.0.0.1:1/app?sslmode=disable&connect_timeout=5"
	got = fsmctl(t, env, "definitions", "list")
	if prefix := `fsmctl: connect to the database "app" on 127.0.0.1 port 1 as user "alice" that DATABASE_URL names: `; got.Code != exitFailure || !strings.HasPrefix(got.Stderr, prefix) {
		t.Errorf("DATABASE_URL over PG*: %+v", got)
	}
	// An error in a PG* variable names the variables.
	got = fsmctl(t, map[string]string{"PGHOST": "127.0.0.1", "PGPORT": "fifty"}, "runs", "list")
	if diff := cmp.Diff(result{Code: exitFailure, Stderr: "fsmctl: PGHOST, PGPORT: invalid port\n"}, got); diff != "" {
		t.Errorf("bad PGPORT (-want +got):\n%s", diff)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// runs cancel and runs terminate on a run whose row another transaction
// holds wait at most -lock-timeout, then say which run and why, and leave
// it as it was.
func TestRunsCancelOnALockedRow(t *testing.T) {
	t.Parallel()
	f := newOpsFixture(t)
	ctx := context.Background()
	for _, tt := range []struct {
		args  []string
		after string // what the command says once the lock is gone
	}{
		{[]string{"runs", "cancel"}, " cancelled: PENDING_PAYMENT -> CANCELLED (cancelled, attempt 1)\n"},
		{[]string{"runs", "terminate", "-reason", "stuck", "-by", "oncall"}, " terminated in PENDING_PAYMENT (cancelled, attempt 1)\n"},
	} {
		run := f.start(t, order.Type, tt.args[1])
		tx, err := f.st.Pool().Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx) //nolint:errcheck // rolled back below; this one is for a failed test
		if _, err := tx.Exec(ctx, `SELECT 1 FROM workflow_runs WHERE id = $1 FOR UPDATE`, run.ID); err != nil {
			t.Fatal(err)
		}
		// Before the bound, the command blocked for as long as the lock was
		// held: the test's own deadline stops it then.
		tctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		var out, errOut bytes.Buffer
		c := &cli{stdout: &out, stderr: &errOut, getenv: func(k string) string { return map[string]string{EnvDatabaseURL: f.url}[k] }}
		code := c.main(tctx, append(slices.Clone(tt.args), run.ID, "-lock-timeout", "300ms"))
		want := result{Code: exitFailure, Stderr: "fsmctl: run " + run.ID + ": another transaction holds the run's row: gave up after waiting 300ms (-lock-timeout); try again once it ends\n"}
		if diff := cmp.Diff(want, result{code, out.String(), errOut.String()}); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.args[1], diff)
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		if got := f.get(t, run.ID); got.State != "PENDING_PAYMENT" || got.RowVersion != run.RowVersion {
			t.Errorf("after the refused %s: %s row version %d, want PENDING_PAYMENT %d", tt.args[1], got.State, got.RowVersion, run.RowVersion)
		}
		// With the lock gone the same command acts.
		got := withDB(t, f.url, append(slices.Clone(tt.args), run.ID)...)
		if diff := cmp.Diff(result{Code: exitOK, Stdout: "run " + run.ID + tt.after}, got); diff != "" {
			t.Errorf("%s after the lock (-want +got):\n%s", tt.args[1], diff)
		}
	}
}

// runs show says why a try failed without -payloads: the error code and
// message of each failed try (the engine's attempt_failed and parked
// steps) in an ERROR column, after the run has moved on too.
func TestRunsShowPrintsFailedTriesErrors(t *testing.T) {
	t.Parallel()
	f := newOpsFixture(t)
	ctx := context.Background()
	run := f.start(t, order.Type, "o-1")
	// The steps the engine logs when a try fails and is retried, then
	// when the retries give up (db/queries/engine.sql: ScheduleRetry,
	// ParkRun).
	for _, s := range []struct {
		name    string
		payload map[string]any
	}{
		{"attempt_failed", map[string]any{"step_attempt": 1, "error_code": "UPSTREAM_5XX", "error": "payment gateway: 503 Service Unavailable", "delay_ms": 1000, "retry": true}},
		{"parked", map[string]any{"step_attempt": 2, "error_code": nil, "error": "payment gateway: timeout", "retry": false}},
	} {
		if _, err := f.st.LogStep(ctx, run.ID, s.name, s.payload); err != nil {
			t.Fatal(err)
		}
	}
	if got := withDB(t, f.url, "runs", "cancel", run.ID); got.Code != exitOK {
		t.Fatalf("cancel: %+v", got)
	}
	got := withDB(t, f.url, "runs", "show", run.ID)
	_, history, _ := strings.Cut(got.Stdout, "\n\n")
	var lines []string
	for _, l := range strings.Split(strings.TrimSuffix(history, "\n"), "\n") {
		cells := regexp.MustCompile(`\s{2,}`).Split(l, -1)
		lines = append(lines, strings.Join(append(cells[:1:1], cells[2:]...), " | ")) // without the time
	}
	want := []string{
		"SEQ | KIND | STEP/EVENT | STATE | ATTEMPT | ERROR",
		"1 | created | start | → PENDING_PAYMENT | 1 | -",
		"2 | step | attempt_failed | PENDING_PAYMENT | 1 | UPSTREAM_5XX: payment gateway: 503 Service Unavailable",
		"3 | step | parked | PENDING_PAYMENT | 1 | payment gateway: timeout",
		"4 | step | operator_cancel | PENDING_PAYMENT | 1 | -",
		"5 | transition | Cancel | PENDING_PAYMENT → CANCELLED | 1 | -",
	}
	if diff := cmp.Diff(want, lines); diff != "" || got.Code != exitOK {
		t.Errorf("runs show: exit %d, history (-want +got):\n%s\n%s", got.Code, diff, got.Stdout)
	}
}

// runs terminate ends a run where it is, with its flags after the run id;
// a second terminate finds it finished, and so does a signal.
func TestRunsTerminate(t *testing.T) {
	t.Parallel()
	f := newOpsFixture(t)
	run := f.start(t, order.Type, "o-1")
	got := withDB(t, f.url, "runs", "terminate", run.ID, "-reason", "customer vanished", "-by", "oncall")
	want := result{Code: exitOK, Stdout: "run " + run.ID + " terminated in PENDING_PAYMENT (cancelled, attempt 1)\n"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	after := f.get(t, run.ID)
	if after.Result == nil || after.Result.ErrorCode != "TERMINATED" || after.Result.ErrorDetail != "terminated by oncall: customer vanished" {
		t.Errorf("result: %+v", after.Result)
	}
	steps := f.lastSteps(t, run.ID, 1)
	if len(steps) != 1 || !strings.HasPrefix(steps[0], `terminated terminate PENDING_PAYMENT->PENDING_PAYMENT {"by":"oncall",`) {
		t.Errorf("history: %q", steps)
	}
	got = withDB(t, f.url, "runs", "terminate", "-reason", "again", run.ID)
	want = result{Code: exitFailure, Stderr: "fsmctl: run " + run.ID + ": run is finished: it is cancelled in PENDING_PAYMENT\n"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("second terminate (-want +got):\n%s", diff)
	}
	got = withDB(t, f.url, "runs", "signal", run.ID, "Pay", `{"paymentRef": "p-1"}`)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("signal after the terminate (-want +got):\n%s", diff)
	}
}

// Completion lists from the database the runs a runs command acts on,
// those starting with the word typed, and the dead letters of outbox
// requeue; -database on the line names the database.
func TestCompletionsFromTheDatabase(t *testing.T) {
	t.Parallel()
	f := newOpsFixture(t)
	live := f.start(t, order.Type, "o-1")
	gone := f.start(t, order.Type, "o-2")
	if got := withDB(t, f.url, "runs", "terminate", gone.ID, "-reason", "test"); got.Code != exitOK {
		t.Fatalf("terminate: %+v", got)
	}
	ids := []string{live.ID, gone.ID}
	slices.Sort(ids)
	for _, tt := range []struct {
		words []string
		want  []string
	}{
		{[]string{"runs", "terminate", ""}, []string{live.ID}},
		{[]string{"runs", "show", ""}, ids},
		{[]string{"runs", "show", live.ID[:8]}, []string{live.ID}},
		{[]string{"runs", "retry", ""}, nil},
		{[]string{"runs", "terminate", live.ID, ""}, nil}, // one run id
		{[]string{"runs", "list", ""}, nil},
		{[]string{"outbox", "requeue", ""}, []string{"all"}},
	} {
		got := withDB(t, f.url, append([]string{completeCommand}, tt.words...)...)
		want := result{Code: exitOK}
		if tt.want != nil {
			want.Stdout = strings.Join(tt.want, "\n") + "\n"
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("complete %q (-want +got):\n%s", tt.words, diff)
		}
	}
	got := fsmctl(t, nil, completeCommand, "runs", "cancel", "-database", f.url, "")
	if diff := cmp.Diff(result{Code: exitOK, Stdout: live.ID + "\n"}, got); diff != "" {
		t.Errorf("complete with -database (-want +got):\n%s", diff)
	}
}
