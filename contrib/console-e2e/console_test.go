package consolee2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/log"
	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsmgen/fsmgen/machines/shop"
	"github.com/fsmgen/fsmgen/machines/shop/order"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/engine"
	"github.com/fsmgen/fsmgen/runtime/pgtest"
	"github.com/fsmgen/fsmgen/runtime/store"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// xss is what a customer puts in an event's field: it must reach the page
// as text. Run as markup, it would set window.__xss.
const xss = `<img src=x onerror="window.__xss='img'"><script>window.__xss='script'</script>`

// alice owns the orders.
const alice = "6f1c2a3e-58d1-4c1e-9d5e-0b6a1f0c2d3e"

// warehouse packs every parcel under a hostile parcel id.
type warehouse struct{}

func (warehouse) Pack(context.Context, string, []string) (string, error) { return "P-1 " + xss, nil }

type payments struct{}

func (payments) Refund(context.Context, string, int64) (string, error) { return "R-1", nil }

// orders starts shop orders on a fresh database, with the shop's own
// workflow on the engine.
type orders struct {
	url  string
	pool *pgxpool.Pool
	e    *engine.Engine
}

func newOrders(t *testing.T) *orders {
	t.Helper()
	url := pgtest.NewDatabase(t)
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	e, err := engine.New(store.New(pool), engine.Config{WorkerID: "console-e2e"})
	if err != nil {
		t.Fatal(err)
	}
	w := &shop.Workflow{Warehouse: warehouse{}, Payments: payments{}}
	if err := e.Register(context.Background(), w.Driver()); err != nil {
		t.Fatal(err)
	}
	return &orders{url: url, pool: pool, e: e}
}

func (o *orders) start(t *testing.T, key, tenant string) runtime.Run {
	t.Helper()
	res, err := o.e.Start(context.Background(), runtime.StartRequest{Type: order.Type, IdempotencyKey: key, Owner: runtime.Owner{TenantID: tenant, UserID: alice},
		Input: shop.Input{Items: []string{"book"}, TotalCents: 1200}})
	if err != nil {
		t.Fatal(err)
	}
	return res.Run
}

var (
	buildOnce sync.Once
	fsmctlBin string
	buildErr  error
)

// fsmctl builds cmd/fsmctl of this repository, once.
func fsmctl(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "console-e2e-")
		if err != nil {
			buildErr = err
			return
		}
		fsmctlBin = filepath.Join(dir, "fsmctl")
		// Built in the main module (two directories up), whose go.mod and
		// go.sum list fsmctl's dependencies; this module lists only what its
		// own tests import.
		build := exec.Command("go", "build", "-o", fsmctlBin, "./cmd/fsmctl")
		build.Dir = filepath.Join("..", "..")
		out, err := build.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build fsmctl: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return fsmctlBin
}

// serve starts fsmctl serve on a free port of the loopback, on the
// database url, and returns the console's address.
func serve(t *testing.T, url string, args ...string) string {
	t.Helper()
	cmd := exec.Command(fsmctl(t), append([]string{"serve", "-addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+url)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	if !lines.Scan() {
		_ = cmd.Wait()
		t.Fatalf("fsmctl serve printed nothing: %s", stderr.String())
	}
	m := regexp.MustCompile(`^fsmctl serve: console on (http://127\.0\.0\.1:\d+)/ `).FindStringSubmatch(lines.Text())
	if m == nil {
		t.Fatalf("fsmctl serve: %q", lines.Text())
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		if err := cmd.Wait(); err != nil {
			t.Errorf("fsmctl serve: %v\n%s", err, stderr.String())
		}
	})
	return m[1]
}

// chromium returns the path of the Chromium to drive: $CHROMIUM, else
// Debian's.
func chromium(t *testing.T) string {
	t.Helper()
	path := os.Getenv("CHROMIUM")
	if path == "" {
		path = "/usr/bin/chromium"
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("no Chromium at %s (%v): install Debian's (apt-get install -y chromium) or set CHROMIUM to a Chromium binary", path, err)
	}
	return path
}

// browser is a headless Chromium tab, and what went wrong in it: script
// exceptions and console or log errors (a Content-Security-Policy
// violation is one).
type browser struct {
	ctx context.Context

	mu       sync.Mutex
	problems []string
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium(t)),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true), // the tests run as root
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	b := &browser{ctx: ctx}
	if err := chromedp.Listen(ctx, func(ev any) {
		var problem string
		switch ev := ev.(type) {
		case *cdpruntime.EventExceptionThrown:
			problem = "exception: " + ev.ExceptionDetails.Text
			if ex := ev.ExceptionDetails.Exception; ex != nil {
				problem += " " + ex.Description
			}
		case *cdpruntime.EventConsoleAPICalled:
			if ev.Type == "error" {
				problem = "console.error"
			}
		case *log.EventEntryAdded:
			if ev.Entry.Level == log.EntryLevelError || ev.Entry.Level == log.EntryLevelWarning {
				problem = string(ev.Entry.Source) + ": " + ev.Entry.Text
			}
		}
		if problem != "" {
			b.mu.Lock()
			b.problems = append(b.problems, problem)
			b.mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	return b
}

func (b *browser) check(t *testing.T) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.problems) > 0 {
		t.Errorf("the browser reported:\n%s", strings.Join(b.problems, "\n"))
	}
}

func (b *browser) do(t *testing.T, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		t.Fatal(err)
	}
}

func eval[T any](t *testing.T, b *browser, js string) T {
	t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return v
}

// screenshotDir returns the directory the test's screenshots go to:
// $FSMGEN_E2E_SCREENSHOTS, else tmp/console-e2e/TEST under the
// repository's root (tmp/ is ignored by git). The directory is removed
// when the test passes, unless $FSMGEN_E2E_SCREENSHOTS is set: a failed
// test's screenshots are kept.
func screenshotDir(t *testing.T) string {
	t.Helper()
	if dir := os.Getenv("FSMGEN_E2E_SCREENSHOTS"); dir != "" {
		return dir
	}
	dir, err := filepath.Abs(filepath.Join("..", "..", "tmp", "console-e2e", t.Name()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			_ = os.RemoveAll(dir)
		}
	})
	return dir
}

// screenshot takes a screenshot of the whole page, checks that it is a
// PNG image, and writes it to screenshotDir.
func screenshot(t *testing.T, b *browser, name string) {
	t.Helper()
	img, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(img))
	if err != nil {
		t.Fatalf("the screenshot is not a PNG image: %v", err)
	}
	if cfg.Width < 800 || cfg.Height < 400 {
		t.Errorf("screenshot %s is %dx%d", name, cfg.Width, cfg.Height)
	}
	dir := screenshotDir(t)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, img, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%dx%d, %d bytes)", path, cfg.Width, cfg.Height, len(img))
}

// historyRow is a row of a run page's history as the browser shows it.
type historyRow struct {
	Seq, Kind, Step, From, To string
}

func TestRunPageInChromium(t *testing.T) {
	t.Parallel()
	o := newOrders(t)
	ctx := context.Background()
	run := o.start(t, "order-1", "acme")
	// The customer's payment reference, and the parcel id the handler
	// returns, carry markup.
	if _, err := o.e.Signal(ctx, run.ID, order.Pay{PaymentRef: xss}); err != nil {
		t.Fatal(err)
	}
	run, err := o.e.Drive(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if run.State != "IN_TRANSIT" {
		t.Fatalf("the order is in %s, want IN_TRANSIT", run.State)
	}
	base := serve(t, o.url)
	b := newBrowser(t)
	b.do(t, chromedp.Navigate(base+"/runs/"+run.ID), chromedp.WaitVisible("#history"))

	if got := eval[string](t, b, `document.querySelector("svg.fsm-diagram g.state.current").getAttribute("data-state")`); got != "IN_TRANSIT" {
		t.Errorf("highlighted state %q, want IN_TRANSIT", got)
	}
	if n := eval[int](t, b, `document.querySelectorAll("svg.fsm-diagram g.state.current").length`); n != 1 {
		t.Errorf("%d states highlighted, want 1", n)
	}
	// The highlight is the style sheet's: the current box is drawn thick.
	if w := eval[string](t, b, `getComputedStyle(document.querySelector("g.state.current rect.box")).strokeWidth`); w != "3px" {
		t.Errorf("the current state's stroke width is %q, want 3px", w)
	}
	rows := eval[[]historyRow](t, b, `Array.from(document.querySelectorAll("#history tbody tr")).map(tr => {
		const c = tr.querySelectorAll("td");
		return {Seq: c[0].textContent, Kind: c[3].textContent, Step: c[4].textContent, From: c[5].textContent, To: c[6].textContent};
	})`)
	want := []historyRow{
		{"1", "created", "start", "", "PENDING_PAYMENT"},
		{"2", "transition", "Pay", "PENDING_PAYMENT", "PACKING"},
		{"3", "transition", "Packed", "PACKING", "IN_TRANSIT"},
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	payloads := eval[[]string](t, b, `Array.from(document.querySelectorAll("#history pre.payload")).map(p => p.textContent)`)
	// The payloads as stored (jsonb keeps < and > as they are), indented,
	// as text: the markup in them is characters on the page.
	quoted := strings.ReplaceAll(xss, `"`, `\"`)
	wantPayloads := []string{
		"{\n  \"paymentRef\": \"" + quoted + "\"\n}",
		"{\n  \"parcelID\": \"P-1 " + quoted + "\"\n}",
	}
	if diff := cmp.Diff(wantPayloads, payloads); diff != "" {
		t.Errorf("payloads as the page shows them (-want +got):\n%s", diff)
	}
	if got := eval[string](t, b, `typeof window.__xss`); got != "undefined" {
		t.Errorf("the payload ran: window.__xss is %s", eval[string](t, b, `String(window.__xss)`))
	}
	if n := eval[int](t, b, `document.querySelectorAll("main img, main script, main [onerror]").length`); n != 0 {
		t.Errorf("the page has %d elements made from the payload", n)
	}
	if got := eval[string](t, b, `document.getElementById("state").textContent`); got != "IN_TRANSIT" {
		t.Errorf("state %q", got)
	}
	// The run's path on the diagram: the states it was in and the rows it
	// took, drawn in the path's colour.
	visited := eval[[]string](t, b, `Array.from(document.querySelectorAll("svg.fsm-diagram g.state.visited")).map(g => g.getAttribute("data-state"))`)
	if diff := cmp.Diff([]string{"PENDING_PAYMENT", "PACKING", "IN_TRANSIT"}, visited); diff != "" {
		t.Errorf("visited states (-want +got):\n%s", diff)
	}
	taken := eval[[]string](t, b, `Array.from(document.querySelectorAll("svg.fsm-diagram g.edge.taken")).map(g =>
		g.getAttribute("data-from") + " -> " + g.getAttribute("data-to") + " " + getComputedStyle(g.querySelector("path")).stroke)`)
	if diff := cmp.Diff([]string{"PENDING_PAYMENT -> PACKING rgb(211, 84, 0)", "PACKING -> IN_TRANSIT rgb(211, 84, 0)"}, taken); diff != "" {
		t.Errorf("taken rows (-want +got):\n%s", diff)
	}
	screenshot(t, b, "run")

	// The runs list shows the tenant, user data too, as text.
	evil := o.start(t, "order-2", `acme<script>window.__xss='tenant'</script>`)
	b.do(t, chromedp.Navigate(base+"/runs?tenant="+strings.ReplaceAll(evil.TenantID, "<", "%3C")), chromedp.WaitVisible("#runs"))
	cells := eval[[]string](t, b, `Array.from(document.querySelectorAll("#runs tbody tr td:nth-child(8)")).map(td => td.textContent)`)
	if diff := cmp.Diff([]string{evil.TenantID}, cells); diff != "" {
		t.Errorf("tenants listed (-want +got):\n%s", diff)
	}
	if got := eval[string](t, b, `typeof window.__xss`); got != "undefined" {
		t.Errorf("the tenant ran: window.__xss is %s", eval[string](t, b, `String(window.__xss)`))
	}
	b.check(t)
}

func TestHeatmapRefreshesItselfInChromium(t *testing.T) {
	t.Parallel()
	o := newOrders(t)
	o.start(t, "h-1", "acme")
	o.start(t, "h-2", "acme")
	base := serve(t, o.url, "-refresh", "200ms")
	b := newBrowser(t)
	b.do(t, chromedp.Navigate(base+"/machines/"+order.Type+"/1"), chromedp.WaitVisible("#diagram svg"))
	count := `document.querySelector('g.state[data-state="PENDING_PAYMENT"] text.count').textContent`
	if got := eval[string](t, b, count); got != "2 runs" {
		t.Errorf("PENDING_PAYMENT says %q, want 2 runs", got)
	}
	// A third order: the page's script fetches heat.json and updates the
	// count, which proves the script runs under the page's policy.
	o.start(t, "h-3", "acme")
	if _, err := chromedp.Run(b.ctx, chromedp.Poll[bool](count+` === "3 runs"`, chromedp.WithPollingTimeout(0))); err != nil {
		t.Fatal(err)
	}
	if got := eval[string](t, b, `document.querySelector('g.state[data-state="PENDING_PAYMENT"]').getAttribute("class")`); got != "state initial waits heat-5" {
		t.Errorf("PENDING_PAYMENT's classes %q", got)
	}
	if got := eval[string](t, b, `document.querySelector('#heat tr[data-state="PENDING_PAYMENT"] td:nth-child(2)').textContent`); got != "3" {
		t.Errorf("the table of states says %q runs in PENDING_PAYMENT, want 3", got)
	}
	if got := eval[string](t, b, `document.getElementById("heat-status").textContent`); !strings.HasPrefix(got, "live, updated ") {
		t.Errorf("heat status %q", got)
	}
	screenshot(t, b, "heatmap")
	b.check(t)
}
