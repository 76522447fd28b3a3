package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/admin"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// maxBulk is the most runs one bulk action acts on: a larger set is
// refused, to be narrowed by its filters.
const maxBulk = 1000

// bulkAction is an action on every run a filter of the list selects,
// restricted to the runs it applies to.
type bulkAction struct {
	Name  string // cancel, terminate, resume, retry
	Verb  string // what the pages say it does
	Which string // the runs it applies to
	// only restricts a filter to the runs the action applies to; it
	// reports false when the filter selects none of them.
	only func(f *store.Filter) bool
	do   func(ctx context.Context, a Actions, id, reason, by string) (runtime.Run, error)
	// NeedsReason: the action is refused without a reason.
	NeedsReason bool
}

// running restricts f to running runs.
func running(f *store.Filter) bool {
	if f.Status != "" && f.Status != runtime.StatusRunning {
		return false
	}
	f.Status = runtime.StatusRunning
	return true
}

var bulkActions = map[string]bulkAction{
	"cancel": {Name: "cancel", Verb: "Cancel", Which: "running runs", only: running,
		do: func(ctx context.Context, a Actions, id, reason, _ string) (runtime.Run, error) {
			return a.Cancel(ctx, id, admin.SignalOptions{Reason: reason})
		}},
	// A run terminated with its ancestor earlier in the same action is
	// reported as finished.
	"terminate": {Name: "terminate", Verb: "Terminate", Which: "running runs", only: running, NeedsReason: true,
		do: func(ctx context.Context, a Actions, id, reason, by string) (runtime.Run, error) {
			t, err := a.Terminate(ctx, id, admin.TerminateOptions{Reason: reason, By: by})
			return t.Run, err
		}},
	"resume": {Name: "resume", Verb: "Resume", Which: "parked runs", only: func(f *store.Filter) bool {
		if f.Status != "" && f.Status != runtime.StatusRunning {
			return false
		}
		f.Status, f.Parked = runtime.StatusRunning, true
		return true
	}, do: func(ctx context.Context, a Actions, id, _, _ string) (runtime.Run, error) {
		return a.Resume(ctx, id)
	}},
	"retry": {Name: "retry", Verb: "Retry", Which: "failed runs", only: func(f *store.Filter) bool {
		if f.Status != "" && f.Status != runtime.StatusFailed {
			return false
		}
		f.Status = runtime.StatusFailed
		return true
	}, do: func(ctx context.Context, a Actions, id, _, _ string) (runtime.Run, error) {
		return a.Retry(ctx, id)
	}},
}

// bulkURL is the address of the confirmation page of action on the runs
// the list's filters q select.
func bulkURL(q url.Values, action string) string {
	next := url.Values{}
	for k, v := range q {
		if k != "after" && k != "before" {
			next[k] = v
		}
	}
	if len(next) == 0 {
		return "/runs/bulk/" + action
	}
	return "/runs/bulk/" + action + "?" + next.Encode()
}

// bulkData is the confirmation page of a bulk action, and once done, what
// it did.
type bulkData struct {
	Action bulkAction
	// Filters are the list's filters, as hidden fields of the form, and
	// Described says them in words.
	Filters   url.Values
	Described []string
	Count     int64
	Back      string // the list the action was asked from
	CSRF      string
	TooMany   bool
	// Done, after the action: the runs it acted on, and those it could
	// not, with why.
	Done   bool
	Did    []runtime.Run
	Failed []bulkFailure
}

type bulkFailure struct {
	ID, Error string
}

// bulkOf reads the action and the filter of a bulk request (the query of
// a GET, the form of a POST) and counts the runs it acts on.
func (s *Server) bulkOf(w http.ResponseWriter, r *http.Request, q url.Values) (bulkData, store.Filter, bool) {
	if s.ReadOnly() {
		s.fail(w, r, http.StatusForbidden, readOnlyMessage)
		return bulkData{}, store.Filter{}, false
	}
	action, ok := bulkActions[r.PathValue("action")]
	if !ok {
		s.fail(w, r, http.StatusNotFound, "no bulk action "+strconv.Quote(r.PathValue("action"))+": want cancel, terminate, resume or retry")
		return bulkData{}, store.Filter{}, false
	}
	filters := url.Values{}
	for _, k := range []string{"q", "type", "state", "status", "tenant", "older", "newer"} {
		if v := strings.TrimSpace(q.Get(k)); v != "" {
			filters.Set(k, v)
		}
	}
	back := "/runs"
	if len(filters) > 0 {
		back += "?" + filters.Encode()
	}
	ms, err := s.machines(r.Context())
	if err != nil {
		s.storeError(w, r, "bulk "+action.Name, err)
		return bulkData{}, store.Filter{}, false
	}
	f, err := s.filterOf(r.Context(), filters, ms)
	if err != nil {
		s.failBack(w, r, http.StatusBadRequest, err.Error(), back)
		return bulkData{}, store.Filter{}, false
	}
	d := bulkData{Action: action, Filters: filters, Back: back}
	for _, k := range []string{"q", "type", "state", "status", "tenant", "older", "newer"} {
		if v := filters.Get(k); v != "" {
			d.Described = append(d.Described, filterWords[k]+" "+v)
		}
	}
	if action.only(&f) {
		if d.Count, err = s.st.Count(r.Context(), f); err != nil {
			s.storeError(w, r, "bulk "+action.Name, err)
			return bulkData{}, store.Filter{}, false
		}
	}
	d.TooMany = d.Count > maxBulk
	return d, f, true
}

// filterWords say the list's filters in words.
var filterWords = map[string]string{
	"q": "id or key", "type": "type", "state": "state", "status": "status", "tenant": "tenant",
	"older": "older than", "newer": "newer than",
}

// confirmBulk shows what a bulk action would do: the number of runs it
// acts on, and the form that does it.
func (s *Server) confirmBulk(w http.ResponseWriter, r *http.Request) {
	d, _, ok := s.bulkOf(w, r, r.URL.Query())
	if !ok {
		return
	}
	d.CSRF = s.csrfToken(w, r)
	s.render(w, r, http.StatusOK, "bulk", d.Action.Verb+" runs", d)
}

// doBulk performs a confirmed bulk action: the filter must still select
// the number of runs the operator confirmed, else nothing is done.
func (s *Server) doBulk(w http.ResponseWriter, r *http.Request) {
	if s.ReadOnly() {
		s.fail(w, r, http.StatusForbidden, readOnlyMessage)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
	if why := s.checkCSRF(r); why != "" {
		s.failBack(w, r, http.StatusForbidden, why, "/runs")
		return
	}
	d, f, ok := s.bulkOf(w, r, r.PostForm)
	if !ok {
		return
	}
	confirmed, err := strconv.ParseInt(r.PostFormValue("count"), 10, 64)
	if err != nil {
		s.failBack(w, r, http.StatusBadRequest, fmt.Sprintf("count %q: want the number of runs confirmed", r.PostFormValue("count")), d.Back)
		return
	}
	if confirmed != d.Count {
		s.failBack(w, r, http.StatusConflict, fmt.Sprintf("%s: the filter now selects %d %s, not the %d confirmed: nothing was done; confirm again",
			strings.ToLower(d.Action.Verb), d.Count, d.Action.Which, confirmed), bulkURL(d.Filters, d.Action.Name))
		return
	}
	if d.TooMany {
		s.failBack(w, r, http.StatusBadRequest, fmt.Sprintf("%s: %d runs, more than %d at once: narrow the filter",
			strings.ToLower(d.Action.Verb), d.Count, maxBulk), d.Back)
		return
	}
	reason := strings.TrimSpace(r.PostFormValue("reason"))
	if d.Action.NeedsReason && reason == "" {
		s.failBack(w, r, http.StatusBadRequest, strings.ToLower(d.Action.Verb)+": no reason given: nothing was done", bulkURL(d.Filters, d.Action.Name))
		return
	}
	f.Limit, f.Newest = maxBulk, false
	runs, err := s.st.List(r.Context(), f)
	if err != nil {
		s.storeError(w, r, "bulk "+d.Action.Name, err)
		return
	}
	for _, run := range runs {
		got, err := d.Action.do(r.Context(), s.cfg.Actions, run.ID, reason, s.operator(r))
		if err != nil {
			msg := err.Error()
			var re *runtime.RunError
			if errors.As(err, &re) {
				msg = re.Err.Error()
			}
			d.Failed = append(d.Failed, bulkFailure{ID: run.ID, Error: msg})
			continue
		}
		d.Did = append(d.Did, got)
	}
	d.Done = true
	s.render(w, r, http.StatusOK, "bulk", d.Action.Verb+" runs", d)
}
