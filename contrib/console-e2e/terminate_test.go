package consolee2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// acceptDialogs accepts every confirmation the tab's pages ask, and
// returns what they asked, so far, when called.
func acceptDialogs(t *testing.T, b *browser) func() []string {
	t.Helper()
	var mu sync.Mutex
	var asked []string
	dialogs := chromedp.Events(b.ctx, page.JavascriptDialogOpening)
	go func() {
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			mu.Lock()
			asked = append(asked, ev.Message)
			mu.Unlock()
			if _, err := chromedp.Call(b.ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true}); err != nil {
				return
			}
		}
	}()
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), asked...)
	}
}

// TestTerminateInChromium terminates a run from its page, after the
// browser's confirmation, and the running runs of a filter in bulk,
// through the confirmation page that states their number.
func TestTerminateInChromium(t *testing.T) {
	t.Parallel()
	o := newOrders(t)
	one := o.start(t, "term-1", "acme")
	var ids []string
	for i := 1; i <= 3; i++ {
		ids = append(ids, o.start(t, fmt.Sprintf("term-bulk-%d", i), "bulk").ID)
	}
	other := o.start(t, "other", "acme")
	base := serve(t, o.url, "-actions")
	b := newBrowser(t)
	asked := acceptDialogs(t, b)

	b.do(t, chromedp.Navigate(base+"/runs/"+one.ID), chromedp.WaitVisible(chromedp.CSS("#terminate-form")),
		chromedp.SendKeys(chromedp.CSS(`#terminate-form input[name="reason"]`), "customer vanished"))
	screenshot(t, b, "terminate-run-page")
	b.do(t, chromedp.Click(chromedp.CSS(`#terminate-form button[type="submit"]`)))
	waitDone(t, b, "did", "terminate-refused")
	want := []string{"Terminate this run? It ends now, in PENDING_PAYMENT, without its machine's transitions or handlers, with its live child runs."}
	if diff := cmp.Diff(want, asked()); diff != "" {
		t.Errorf("the browser asked (-want +got):\n%s", diff)
	}
	if got := eval[string](t, b, `document.getElementById("did").textContent`); got != "terminated in PENDING_PAYMENT" {
		t.Errorf("the run's page says %q", got)
	}
	if n := eval[int](t, b, `document.querySelectorAll("#terminate-form").length`); n != 0 {
		t.Errorf("the terminated run's page still offers to terminate it")
	}
	kinds := eval[[]string](t, b, `Array.from(document.querySelectorAll("#history tbody tr td:nth-child(4)")).map(td => td.textContent)`)
	if len(kinds) == 0 || kinds[len(kinds)-1] != "terminated" {
		t.Errorf("history kinds %q, want a terminated row last", kinds)
	}
	screenshot(t, b, "terminate-done")

	b.do(t, chromedp.Navigate(base+"/runs?tenant=bulk"), chromedp.WaitVisible(chromedp.CSS("#bulk-terminate")),
		chromedp.Click(chromedp.CSS("#bulk-terminate")), chromedp.WaitVisible(chromedp.CSS("#bulk-count")))
	if got := eval[string](t, b, `document.getElementById("bulk-count").textContent`); got != "This will terminate 3 runs." {
		t.Errorf("the confirmation says %q", got)
	}
	b.do(t, chromedp.SendKeys(chromedp.CSS(`#bulk-form input[name="reason"]`), "supplier gone"))
	screenshot(t, b, "terminate-bulk-confirm")
	b.do(t, chromedp.Click(chromedp.CSS("#bulk-confirm")))
	waitDone(t, b, "bulk-done", "terminate-bulk-refused")
	if got := eval[string](t, b, `document.getElementById("bulk-done").textContent`); got != "3 of 3 running runs done." {
		t.Errorf("the result says %q", got)
	}
	screenshot(t, b, "terminate-bulk-done")

	st := store.New(o.pool)
	type end struct {
		Status runtime.Status
		Detail string
	}
	got := map[string]end{}
	for _, id := range append(ids, one.ID, other.ID) {
		run, err := st.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		e := end{Status: run.Status}
		if run.Result != nil {
			e.Detail = run.Result.ErrorDetail
		}
		got[id] = e
	}
	bulk := end{runtime.StatusCancelled, "terminated by the console: supplier gone"}
	wantEnds := map[string]end{ids[0]: bulk, ids[1]: bulk, ids[2]: bulk,
		one.ID: {runtime.StatusCancelled, "terminated by the console: customer vanished"}, other.ID: {Status: runtime.StatusRunning}}
	if diff := cmp.Diff(wantEnds, got); diff != "" {
		t.Errorf("runs after the terminates (-want +got):\n%s", diff)
	}
	if strings.Contains(strings.Join(asked(), "\n"), "bulk") {
		t.Errorf("the bulk terminate asked the browser too: %q", asked())
	}
	b.check(t)
}
