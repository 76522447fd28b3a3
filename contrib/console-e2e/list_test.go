package consolee2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// listed is what the runs list shows in the browser: the ids of its rows,
// the count, and whether it links to older and newer runs.
type listed struct {
	IDs          []string
	Total        string
	Older, Newer bool
}

func readList(t *testing.T, b *browser) listed {
	t.Helper()
	return eval[listed](t, b, `({
		IDs: Array.from(document.querySelectorAll("#runs tbody tr")).map(tr => tr.getAttribute("data-run")),
		Total: document.getElementById("total").textContent,
		Older: document.querySelector("a.older") !== null,
		Newer: document.querySelector("a.newer") !== null,
	})`)
}

// TestRunsListInChromium pages through 53 runs newest first (a page is
// 50), with their count, and finds one by its idempotency key and by the
// first characters of its id.
func TestRunsListInChromium(t *testing.T) {
	t.Parallel()
	o := newOrders(t)
	var ids []string // oldest first
	for i := 1; i <= 53; i++ {
		ids = append(ids, o.start(t, fmt.Sprintf("ord-%02d", i), "acme").ID)
	}
	newest := slices.Clone(ids)
	slices.Reverse(newest)
	base := serve(t, o.url)
	b := newBrowser(t)

	b.do(t, chromedp.Navigate(base+"/runs"), chromedp.WaitVisible("#runs"))
	if diff := cmp.Diff(listed{IDs: newest[:50], Total: "53 runs match, newest first.", Older: true}, readList(t, b)); diff != "" {
		t.Errorf("first page (-want +got):\n%s", diff)
	}
	screenshot(t, b, "runs-first-page")
	b.do(t, chromedp.Click(chromedp.CSS("a.older")), chromedp.WaitVisible(chromedp.CSS("a.newer")))
	if diff := cmp.Diff(listed{IDs: newest[50:], Total: "53 runs match, newest first.", Newer: true}, readList(t, b)); diff != "" {
		t.Errorf("second page (-want +got):\n%s", diff)
	}
	screenshot(t, b, "runs-second-page")
	b.do(t, chromedp.Click(chromedp.CSS("a.newer")), chromedp.WaitNotPresent(chromedp.CSS("a.newer")))
	if diff := cmp.Diff(listed{IDs: newest[:50], Total: "53 runs match, newest first.", Older: true}, readList(t, b)); diff != "" {
		t.Errorf("back to the first page (-want +got):\n%s", diff)
	}

	// Search by idempotency key, then by the 8 characters the list shows
	// of an id, typed into the search box.
	for _, tc := range []struct{ query, want string }{{"ord-07", ids[6]}, {ids[41][:8], ids[41]}} {
		b.do(t, chromedp.Navigate(base+"/runs"), chromedp.WaitVisible("#search"),
			chromedp.SendKeys(chromedp.CSS("#search"), tc.query),
			chromedp.Submit(chromedp.CSS("#search")))
		waitFor(t, b, `document.getElementById("total") !== null && document.getElementById("total").textContent === "1 run matches, newest first."`, 30*time.Second)
		if diff := cmp.Diff(listed{IDs: []string{tc.want}, Total: "1 run matches, newest first."}, readList(t, b)); diff != "" {
			t.Errorf("search %q (-want +got):\n%s", tc.query, diff)
		}
	}
	screenshot(t, b, "runs-search")
	b.check(t)
}

// TestBulkCancelInChromium cancels the runs of a filter from the list,
// through the confirmation page that states their number.
func TestBulkCancelInChromium(t *testing.T) {
	t.Parallel()
	o := newOrders(t)
	var ids []string
	for i := 1; i <= 3; i++ {
		ids = append(ids, o.start(t, fmt.Sprintf("bulk-%d", i), "bulk").ID)
	}
	other := o.start(t, "other", "acme")
	base := serve(t, o.url, "-actions")
	b := newBrowser(t)
	b.do(t, chromedp.Navigate(base+"/runs?tenant=bulk"), chromedp.WaitVisible(chromedp.CSS("#bulk-cancel")),
		chromedp.Click(chromedp.CSS("#bulk-cancel")), chromedp.WaitVisible(chromedp.CSS("#bulk-count")))
	if got := eval[string](t, b, `document.getElementById("bulk-count").textContent`); got != "This will cancel 3 runs." {
		t.Errorf("the confirmation says %q", got)
	}
	screenshot(t, b, "bulk-confirm")
	b.do(t, chromedp.Click(chromedp.CSS("#bulk-confirm")))
	waitDone(t, b, "bulk-done", "bulk-refused")
	if got := eval[string](t, b, `document.getElementById("bulk-done").textContent`); got != "3 of 3 running runs done." {
		t.Errorf("the result says %q", got)
	}
	screenshot(t, b, "bulk-done")
	st := store.New(o.pool)
	states := map[string]runtime.Status{}
	for _, id := range append(ids, other.ID) {
		run, err := st.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		states[id] = run.Status
	}
	want := map[string]runtime.Status{ids[0]: runtime.StatusCancelled, ids[1]: runtime.StatusCancelled, ids[2]: runtime.StatusCancelled, other.ID: runtime.StatusRunning}
	if diff := cmp.Diff(want, states); diff != "" {
		t.Errorf("statuses after the bulk cancel (-want +got):\n%s", diff)
	}
	b.check(t)
}

// waitDone waits for the page an action leads to: the element of id
// done, or the console's error message, which fails the test after a
// screenshot named refused.
func waitDone(t *testing.T, b *browser, done, refused string) {
	t.Helper()
	waitFor(t, b, `document.getElementById("`+done+`") !== null || document.getElementById("error-message") !== null`, 30*time.Second)
	if msg := eval[string](t, b, `(document.getElementById("error-message") || {}).textContent || ""`); msg != "" {
		screenshot(t, b, refused)
		t.Fatalf("refused: %s", msg)
	}
}

// waitFor waits until js is true on the tab's page, through the page
// navigations a click starts (the polling of a page that navigates away
// fails, and is done again on the next page), for at most timeout.
func waitFor(t *testing.T, b *browser, js string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		_, err := chromedp.Run(b.ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(time.Until(deadline))))
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: %v", js, err)
		}
	}
}
