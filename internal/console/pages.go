package console

import (
	"bytes"
	"context"
	"crypto/hmac"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fsmgen/fsmgen/internal/defdiagram"
	"github.com/fsmgen/fsmgen/internal/statesvg"
	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/admin"
	"github.com/fsmgen/fsmgen/runtime/evidence"
	"github.com/fsmgen/fsmgen/runtime/store"
)

var funcs = template.FuncMap{
	"when": func(t time.Time) string {
		if t.IsZero() {
			return "–"
		}
		return t.UTC().Format("2006-01-02 15:04:05.000Z")
	},
	"short": func(id string) string {
		if len(id) > 8 {
			return id[:8]
		}
		return id
	},
	"dur":    statesvg.Duration,
	"pretty": pretty,
	"orDash": func(s string) string {
		if s == "" {
			return "–"
		}
		return s
	},
}

// pretty indents JSON; other text is returned as is.
func pretty(raw []byte) string {
	if len(raw) == 0 {
		return ""
	}
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return string(raw)
	}
	return b.String()
}

// page is what every template gets.
type page struct {
	Title    string
	Nav      string // runs or machines
	ReadOnly bool
	Data     any
}

func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name, title string, data any) {
	var b bytes.Buffer
	p := page{Title: title, Nav: name, ReadOnly: s.ReadOnly(), Data: data}
	if err := s.pages[name].ExecuteTemplate(&b, "layout.html", p); err != nil {
		slog.Error("console: render", "page", name, "err", err)
		http.Error(w, "internal error rendering the page", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(b.Bytes())
	}
}

type errorData struct {
	Status  int
	Text    string
	Message string
	Back    string
}

func (s *Server) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	s.failBack(w, r, status, msg, "")
}

func (s *Server) failBack(w http.ResponseWriter, r *http.Request, status int, msg, back string) {
	s.render(w, r, status, "error", http.StatusText(status), errorData{Status: status, Text: http.StatusText(status), Message: msg, Back: back})
}

// statuses are the generic statuses, for the status filter.
var statuses = []string{string(runtime.StatusRunning), string(runtime.StatusSucceeded), string(runtime.StatusFailed), string(runtime.StatusCancelled)}

type runsData struct {
	Filter   url.Values
	Types    []string
	Statuses []string
	Runs     []listedRun
	// Total is the number of runs that match, over all pages.
	Total int64
	// Older and Newer are the addresses of the next (older runs) and the
	// previous (newer runs) page, "" when none.
	Older, Newer string
	// BulkCancel, BulkTerminate, BulkResume and BulkRetry are the addresses of the
	// confirmation pages of the bulk actions on the filtered runs, ""
	// when the console is read-only.
	BulkCancel, BulkTerminate, BulkResume, BulkRetry string
}

// listedRun is a run as the list shows it: with how long it ran (until
// now when it is still running) and its last error.
type listedRun struct {
	runtime.Run
	Duration time.Duration
	Error    string
}

// parseAge parses an age: a Go duration (90s, 1h30m) or a number of days
// (3d).
func parseAge(s string) (time.Duration, error) {
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseFloat(d, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%q is not an age: want a duration such as 90s, 2h or 3d", s)
		}
		return time.Duration(n * float64(24*time.Hour)), nil
	}
	v, err := time.ParseDuration(s)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%q is not an age: want a duration such as 90s, 2h or 3d", s)
	}
	return v, nil
}

// filterOf reads the list's filters from the query: q (a run id, or the
// first characters of one, or an idempotency key), type, state (a list
// separated by commas, matched without case against the states of the
// registered machines), status, tenant, older and newer (ages: created at
// least older ago, less than newer ago), and after and before (the last id
// of the previous page, the first of the next). The list is newest first.
func (s *Server) filterOf(ctx context.Context, q url.Values, ms []machine) (store.Filter, error) {
	f := store.Filter{Filter: runtime.Filter{Type: strings.TrimSpace(q.Get("type")), TenantID: q.Get("tenant")},
		Search: strings.TrimSpace(q.Get("q")), Newest: true}
	for _, st := range strings.Split(q.Get("state"), ",") {
		if st = strings.TrimSpace(st); st != "" {
			f.States = append(f.States, foldState(st, f.Type, ms)...)
		}
	}
	if v := q.Get("status"); v != "" {
		if !slices.Contains(statuses, v) {
			return f, fmt.Errorf("status %q is not one of %s", v, strings.Join(statuses, ", "))
		}
		f.Status = runtime.Status(v)
	}
	if v := q.Get("after"); v != "" {
		if err := checkID(v); err != nil {
			return f, fmt.Errorf("after: %w", err)
		}
		f.After = v
	}
	if v := q.Get("before"); v != "" {
		if err := checkID(v); err != nil {
			return f, fmt.Errorf("before: %w", err)
		}
		if f.After != "" {
			return f, errors.New("after and before: want one of them")
		}
		f.Before = v
	}
	older, newer := q.Get("older"), q.Get("newer")
	if older == "" && newer == "" {
		return f, nil
	}
	now, err := s.st.Now(ctx)
	if err != nil {
		return f, err
	}
	if older != "" {
		d, err := parseAge(older)
		if err != nil {
			return f, fmt.Errorf("older: %w", err)
		}
		f.CreatedTo = now.Add(-d)
	}
	if newer != "" {
		d, err := parseAge(newer)
		if err != nil {
			return f, fmt.Errorf("newer: %w", err)
		}
		f.CreatedFrom = now.Add(-d)
	}
	return f, nil
}

// foldState returns the states of the registered machines (of type typ,
// when not empty) whose name is state without regard to case: the name as
// typed when one is exactly that, or when none matches.
func foldState(state, typ string, ms []machine) []string {
	var out []string
	for _, m := range ms {
		if typ != "" && m.Type != typ {
			continue
		}
		for _, st := range m.Def.States {
			if st.Name == state {
				return []string{state}
			}
			if strings.EqualFold(st.Name, state) && !slices.Contains(out, st.Name) {
				out = append(out, st.Name)
			}
		}
	}
	if len(out) == 0 {
		return []string{state}
	}
	return out
}

// checkID reports a run id that is not a UUID.
func checkID(id string) error {
	if len(id) != 36 || strings.Trim(strings.ToLower(id), "0123456789abcdef-") != "" ||
		id[8] != '-' || id[13] != '-' || id[18] != '-' || id[23] != '-' {
		return fmt.Errorf("run %q: malformed id: want a UUID", id)
	}
	return nil
}

func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := r.URL.Query()
	ms, err := s.machines(ctx)
	if err != nil {
		s.storeError(w, r, "list runs", err)
		return
	}
	f, err := s.filterOf(ctx, q, ms)
	if err != nil {
		s.failBack(w, r, http.StatusBadRequest, err.Error(), "/runs")
		return
	}
	// One run more than the page shows says whether there is another
	// page that way: after the page, or before it when read back from
	// before.
	f.Limit = s.cfg.PageSize + 1
	runs, err := s.st.List(ctx, f)
	if err != nil {
		s.storeError(w, r, "list runs", err)
		return
	}
	more := len(runs) > s.cfg.PageSize
	if more && f.Before != "" {
		runs = runs[1:]
	} else if more {
		runs = runs[:s.cfg.PageSize]
	}
	d := runsData{Filter: q, Statuses: statuses}
	if d.Total, err = s.st.Count(ctx, f); err != nil {
		s.storeError(w, r, "list runs", err)
		return
	}
	now, err := s.st.Now(ctx)
	if err != nil {
		s.storeError(w, r, "list runs", err)
		return
	}
	for _, m := range ms {
		if !slices.Contains(d.Types, m.Type) {
			d.Types = append(d.Types, m.Type)
		}
	}
	for _, run := range runs {
		end := run.FinishedAt
		if end.IsZero() {
			end = now
		}
		lr := listedRun{Run: run, Duration: end.Sub(run.CreatedAt)}
		if run.LastErrorCode != "" || run.LastError != "" {
			lr.Error = strings.TrimPrefix(run.LastErrorCode+": "+run.LastError, ": ")
		}
		d.Runs = append(d.Runs, lr)
	}
	// A page read from a cursor has runs on the cursor's side.
	if len(runs) > 0 {
		if more && f.Before == "" || f.Before != "" {
			d.Older = listURL(q, "after", runs[len(runs)-1].ID)
		}
		if f.After != "" || more && f.Before != "" {
			d.Newer = listURL(q, "before", runs[0].ID)
		}
	}
	if !s.ReadOnly() && d.Total > 0 {
		d.BulkCancel, d.BulkTerminate, d.BulkResume, d.BulkRetry = bulkURL(q, "cancel"), bulkURL(q, "terminate"), bulkURL(q, "resume"), bulkURL(q, "retry")
	}
	s.render(w, r, http.StatusOK, "runs", "Runs", d)
}

// listURL is the address of the list with q's filters and the page cursor
// name (after or before) set to id.
func listURL(q url.Values, name, id string) string {
	next := url.Values{}
	for k, v := range q {
		if k != "after" && k != "before" {
			next[k] = v
		}
	}
	next.Set(name, id)
	return "/runs?" + next.Encode()
}

// historyRow is a log row as the run page shows it.
type historyRow struct {
	store.Step
	// Seq numbers the run's rows from 1, as fsmctl runs show does.
	Seq     int64
	Payload string
}

type runData struct {
	Run      runtime.Run
	Result   string // the result's output
	Input    string
	Policy   string
	Def      *runtime.Definition
	DefError string
	Diagram  template.HTML
	// Regions are the active leaf of each region when the run is in a
	// configuration of a parallel state, in region order; nil otherwise.
	Regions    []regionLeaf
	History    []historyRow
	Outbox     []store.Message
	Children   []child
	Activities []activity
	// NextHistory and FirstHistory are the addresses of the next and the
	// first page of the history, "" when the page is the last or first.
	NextHistory, FirstHistory string
	Evidence                  []evidence.Record
	// EvidenceCount is the number of the run's records; NextEvidence and
	// FirstEvidence page through them as the history's links do.
	EvidenceCount               int
	NextEvidence, FirstEvidence string
	Break                       *evidence.Break
	Did                         string // what the last action did, from a redirect the console signed
	CSRF                        string
	// Events are the events the run's state has rows on, for the signal
	// form; Cancel the machine's cancel event when the state has a row on it.
	Events     []runtime.EventSpec
	Cancel     string
	Targets    []target
	CanResume  bool
	CanActions bool
	// CanRetry offers to restart a failed run.
	CanRetry bool
}

func (s *Server) showRun(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("id")
	if err := checkID(id); err != nil {
		s.failBack(w, r, http.StatusBadRequest, err.Error(), "/runs")
		return
	}
	run, err := s.st.Get(ctx, id)
	if err != nil {
		s.storeError(w, r, "run "+id, err)
		return
	}
	q := r.URL.Query()
	d := runData{Run: run, Input: pretty(run.Input), Policy: pretty(run.Policy)}
	if did := q.Get("did"); did != "" && hmac.Equal([]byte(q.Get("sig")), []byte(s.sign("did", id, did))) {
		d.Did = did
	}
	after, err := pageParam(q, "after")
	if err != nil {
		s.failBack(w, r, http.StatusBadRequest, err.Error(), "/runs/"+id)
		return
	}
	evFrom, err := pageParam(q, "evidence")
	if err != nil {
		s.failBack(w, r, http.StatusBadRequest, err.Error(), "/runs/"+id)
		return
	}
	if run.Result != nil {
		d.Result = pretty(run.Result.Output)
	}
	def, err := s.st.Definition(ctx, run.Type, run.Version)
	if err != nil {
		d.DefError = err.Error()
	} else {
		d.Def = &def
		visited, taken, err := s.path(ctx, id)
		if err != nil {
			s.storeError(w, r, "run "+id, err)
			return
		}
		d.Diagram = template.HTML(statesvg.Render(def, statesvg.Marks{Current: run.State, Visited: visited, Taken: taken}))
	}
	d.Regions = regionLeaves(d.Def, run.State)
	steps, before, err := s.history(ctx, id, after, s.cfg.HistoryPageSize+1)
	if err != nil {
		s.storeError(w, r, "run "+id, err)
		return
	}
	if len(steps) > s.cfg.HistoryPageSize {
		steps = steps[:s.cfg.HistoryPageSize]
		d.NextHistory = pageURL(id, q, "after", steps[len(steps)-1].ID)
	}
	if after > 0 {
		d.FirstHistory = pageURL(id, q, "after", 0)
	}
	for i, st := range steps {
		d.History = append(d.History, historyRow{Step: st, Seq: before + int64(i) + 1, Payload: pretty(st.Payload)})
	}
	if d.Outbox, err = s.st.Outbox(ctx, id); err != nil {
		s.storeError(w, r, "run "+id, err)
		return
	}
	if d.Children, err = s.children(ctx, id); err != nil {
		s.storeError(w, r, "run "+id, err)
		return
	}
	if d.Activities, err = s.activities(ctx, id); err != nil {
		s.storeError(w, r, "run "+id, err)
		return
	}
	if d.Evidence, d.Break, err = s.evidenceOf(ctx, id); err != nil {
		s.storeError(w, r, "run "+id, err)
		return
	}
	d.EvidenceCount = len(d.Evidence)
	if evFrom > int64(len(d.Evidence)) {
		evFrom = int64(len(d.Evidence))
	}
	d.Evidence = d.Evidence[evFrom:]
	if len(d.Evidence) > s.cfg.HistoryPageSize {
		d.Evidence = d.Evidence[:s.cfg.HistoryPageSize]
		d.NextEvidence = pageURL(id, q, "evidence", evFrom+int64(s.cfg.HistoryPageSize))
	}
	if evFrom > 0 {
		d.FirstEvidence = pageURL(id, q, "evidence", 0)
	}
	if !s.ReadOnly() && run.Status == runtime.StatusFailed {
		d.CanRetry = true
		d.CSRF = s.csrfToken(w, r)
	}
	if !s.ReadOnly() && !run.Terminal() {
		d.CanActions = true
		d.CSRF = s.csrfToken(w, r)
		d.CanResume = !run.ParkedAt.IsZero()
		if d.Def != nil {
			for _, ev := range d.Def.Events {
				if hasRow(d.Def, run.State, ev.Name) {
					if ev.Name == d.Def.Cancel {
						d.Cancel = ev.Name
						continue
					}
					d.Events = append(d.Events, ev)
				}
			}
			from := sources(d.Def, run.State)
			for _, t := range d.Def.Transitions {
				if !slices.Contains(from, t.From) {
					continue
				}
				label := t.To + " on " + t.Event
				if t.Guard != "" {
					g := t.Guard
					if t.Negated {
						g = "!" + g
					}
					label += " [" + g + "], the guard not evaluated"
				}
				d.Targets = append(d.Targets, target{State: t.To, Label: label})
			}
		}
	}
	s.render(w, r, http.StatusOK, "run", "Run "+run.ID, d)
}

// target is a row of the run's state, for the "to" field of the forms.
type target struct {
	State, Label string
}

func hasRow(def *runtime.Definition, state, event string) bool {
	from := sources(def, state)
	for _, t := range def.Transitions {
		if slices.Contains(from, t.From) && t.Event == event {
			return true
		}
	}
	return false
}

// sources are the states whose rows apply to a run in state: the state,
// or for a configuration of a parallel state, each of its leaves and the
// composites that hold them (the definition lists a parallel state's own
// rows from it).
func sources(def *runtime.Definition, state string) []string {
	leaves := def.Configuration(state)
	if len(leaves) == 1 {
		return leaves
	}
	out := slices.Clone(leaves)
	for _, l := range leaves {
		for _, a := range def.Ancestors(l) {
			if !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	return out
}

// regionLeaf is a region of a parallel state and its active leaf, for a
// run's page.
type regionLeaf struct {
	Region, Leaf string
}

// regionLeaves returns the active leaf of each region of a run in a
// configuration (state "A|B"), in region order, each region named by def
// when it is known, else by its number; nil for a run in one leaf.
func regionLeaves(def *runtime.Definition, state string) []regionLeaf {
	leaves := strings.Split(state, runtime.ConfigurationSeparator)
	if len(leaves) == 1 {
		return nil
	}
	out := make([]regionLeaf, len(leaves))
	for i, l := range leaves {
		out[i] = regionLeaf{Region: strconv.Itoa(i + 1), Leaf: l}
		if def == nil {
			continue
		}
		// The region is the ancestor of the leaf whose parent is a
		// parallel state.
		child := l
		for _, a := range def.Ancestors(l) {
			if c, _ := def.Composite(a); c.Parallel {
				out[i].Region = child
				break
			}
			child = a
		}
	}
	return out
}

// act performs a POSTed action: signal (event, payload), cancel,
// terminate (reason), resume or retry.
func (s *Server) act(w http.ResponseWriter, r *http.Request) {
	if s.ReadOnly() {
		s.fail(w, r, http.StatusForbidden, readOnlyMessage)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
	id, action := r.PathValue("id"), r.PathValue("action")
	back := "/runs/" + id
	if err := checkID(id); err != nil {
		s.failBack(w, r, http.StatusBadRequest, err.Error(), "/runs")
		return
	}
	if why := s.checkCSRF(r); why != "" {
		s.failBack(w, r, http.StatusForbidden, why, back)
		return
	}
	ctx := r.Context()
	opts := admin.SignalOptions{To: strings.TrimSpace(r.PostFormValue("to")), Reason: strings.TrimSpace(r.PostFormValue("reason"))}
	var run runtime.Run
	var err error
	var did string
	switch action {
	case "signal":
		event := strings.TrimSpace(r.PostFormValue("event"))
		if event == "" {
			s.failBack(w, r, http.StatusBadRequest, "signal: no event", back)
			return
		}
		run, err = s.cfg.Actions.Signal(ctx, id, event, json.RawMessage(r.PostFormValue("payload")), opts)
		did = "signalled " + event + "; now in " + run.State
	case "cancel":
		run, err = s.cfg.Actions.Cancel(ctx, id, opts)
		did = "cancelled; now in " + run.State
	case "resume":
		run, err = s.cfg.Actions.Resume(ctx, id)
		did = "resumed in " + run.State
	case "retry":
		run, err = s.cfg.Actions.Retry(ctx, id)
		did = "retried: attempt " + strconv.Itoa(run.Attempt) + " in " + run.State
	case "terminate":
		if opts.Reason == "" {
			s.failBack(w, r, http.StatusBadRequest, "terminate: no reason given", back)
			return
		}
		var t admin.Terminated
		t, err = s.cfg.Actions.Terminate(ctx, id, admin.TerminateOptions{Reason: opts.Reason, By: s.operator(r)})
		run = t.Run
		did = "terminated in " + run.State
		if n := len(t.Descendants); n > 0 {
			did += fmt.Sprintf(", with %d live descendants", n)
		}
	default:
		s.fail(w, r, http.StatusNotFound, "no action "+strconv.Quote(action)+": want signal, cancel, terminate, resume or retry")
		return
	}
	if err != nil {
		// The page says what and which run; the runtime's own prefix
		// (component, operation, run) would say it again.
		msg := err.Error()
		var re *runtime.RunError
		if errors.As(err, &re) {
			msg = re.Err.Error()
		}
		s.failBack(w, r, actionStatus(err), action+" run "+id+": "+msg, back)
		return
	}
	http.Redirect(w, r, back+"?"+url.Values{"did": {did}, "sig": {s.sign("did", id, did)}}.Encode(), http.StatusSeeOther)
}

// pageParam reads a page parameter of a run's page: a number from 0,
// 0 when absent.
func pageParam(q url.Values, name string) (int64, error) {
	v := q.Get(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s %q: want a number from 0", name, v)
	}
	return n, nil
}

// pageURL is the address of run id's page with q's parameters, name set
// to n (removed when 0), and no action banner.
func pageURL(id string, q url.Values, name string, n int64) string {
	next := url.Values{}
	for k, v := range q {
		if k != "did" && k != "sig" {
			next[k] = v
		}
	}
	next.Del(name)
	if n > 0 {
		next.Set(name, strconv.FormatInt(n, 10))
	}
	if len(next) == 0 {
		return "/runs/" + id
	}
	return "/runs/" + id + "?" + next.Encode()
}

// actionStatus is the HTTP status of an action's error.
func actionStatus(err error) int {
	switch {
	case errors.Is(err, runtime.ErrRunNotFound):
		return http.StatusNotFound
	case errors.Is(err, runtime.ErrInvalidInput), errors.Is(err, runtime.ErrPayload), errors.Is(err, admin.ErrPayload),
		errors.Is(err, runtime.ErrInvalidID), errors.Is(err, runtime.ErrUnknownEvent):
		return http.StatusBadRequest
	case errors.Is(err, runtime.ErrNotOwner):
		return http.StatusForbidden
	case errors.Is(err, runtime.ErrRunFinished), errors.Is(err, runtime.ErrIllegalTransition),
		errors.Is(err, runtime.ErrGuardRejected), errors.Is(err, runtime.ErrConflict), errors.Is(err, runtime.ErrNotCancellable),
		errors.Is(err, runtime.ErrNoCancelEvent), errors.Is(err, runtime.ErrNotCallerEvent), errors.Is(err, admin.ErrGuarded),
		errors.Is(err, admin.ErrNoTransition), errors.Is(err, runtime.ErrTransitionRefused):
		return http.StatusConflict
	}
	return http.StatusInternalServerError
}

func (s *Server) storeError(w http.ResponseWriter, r *http.Request, what string, err error) {
	switch {
	case errors.Is(err, runtime.ErrRunNotFound):
		s.failBack(w, r, http.StatusNotFound, what+": not found", "/runs")
	case errors.Is(err, runtime.ErrInvalidID), errors.Is(err, runtime.ErrInvalidInput):
		s.failBack(w, r, http.StatusBadRequest, what+": "+err.Error(), "/runs")
	default:
		slog.Error("console", "what", what, "err", err)
		s.fail(w, r, http.StatusInternalServerError, what+": "+err.Error())
	}
}

type machinesData struct {
	Machines []machine
}

func (s *Server) listMachines(w http.ResponseWriter, r *http.Request) {
	ms, err := s.machines(r.Context())
	if err != nil {
		s.storeError(w, r, "machines", err)
		return
	}
	s.render(w, r, http.StatusOK, "machines", "Machines", machinesData{Machines: ms})
}

type machineData struct {
	Def runtime.Definition
	// Events and Rows are the machine's events and transition table as
	// fsmctl definitions show prints them.
	Events     []defdiagram.Event
	Rows       []defdiagram.Row
	Diagram    template.HTML
	Heat       []heat
	Stuck      []stuckRun
	StuckAfter time.Duration
	HeatURL    string
	RefreshMS  int64
}

// machineOf reads the definition the path names.
func (s *Server) machineOf(w http.ResponseWriter, r *http.Request) (runtime.Definition, map[string]heat, bool) {
	typ, v := r.PathValue("type"), r.PathValue("version")
	version, err := strconv.Atoi(v)
	if err != nil || version < 1 {
		s.failBack(w, r, http.StatusBadRequest, fmt.Sprintf("version %q: want a number from 1", v), "/machines")
		return runtime.Definition{}, nil, false
	}
	def, err := s.st.Definition(r.Context(), typ, version)
	if errors.Is(err, runtime.ErrUnknownDefinition) {
		s.failBack(w, r, http.StatusNotFound, fmt.Sprintf("machine %s v%d: not registered", typ, version), "/machines")
		return def, nil, false
	}
	if err != nil {
		s.storeError(w, r, "machine "+typ, err)
		return def, nil, false
	}
	states := make([]string, len(def.States))
	for i, st := range def.States {
		states[i] = st.Name
	}
	h, err := s.heatOf(r.Context(), typ, version, states, s.cfg.StuckAfter)
	if err != nil {
		s.storeError(w, r, "machine "+typ, err)
		return def, nil, false
	}
	return def, leafHeat(h), true
}

// leafHeat counts the runs in a configuration of a parallel state ("A|B")
// in each of its leaves, as their own runs: a leaf's figures are those of
// the runs that have it active.
func leafHeat(h map[string]heat) map[string]heat {
	out := make(map[string]heat, len(h))
	for name, x := range h {
		if !strings.Contains(name, runtime.ConfigurationSeparator) {
			out[name] = x
		}
	}
	for name, x := range h {
		if !strings.Contains(name, runtime.ConfigurationSeparator) {
			continue
		}
		for _, l := range strings.Split(name, runtime.ConfigurationSeparator) {
			y := out[l]
			y.State = l
			y.Runs, y.Stuck, y.Parked = y.Runs+x.Runs, y.Stuck+x.Stuck, y.Parked+x.Parked
			out[l] = y
		}
	}
	return out
}

func marksOf(def runtime.Definition, h map[string]heat) map[string]statesvg.Heat {
	out := map[string]statesvg.Heat{}
	for _, st := range def.States {
		x := h[st.Name]
		out[st.Name] = statesvg.Heat{Runs: x.Runs, Median: x.Median, HasMedian: x.Left > 0, Stuck: x.Stuck, Parked: x.Parked}
	}
	return out
}

func (s *Server) showMachine(w http.ResponseWriter, r *http.Request) {
	def, h, ok := s.machineOf(w, r)
	if !ok {
		return
	}
	stuck, err := s.stuckRuns(r.Context(), def.Type, def.Version, s.cfg.StuckAfter, 100)
	if err != nil {
		s.storeError(w, r, "machine "+def.Type, err)
		return
	}
	base := "/machines/" + url.PathEscape(def.Type) + "/" + strconv.Itoa(def.Version)
	d := machineData{Def: def, Events: defdiagram.Events(def), Rows: defdiagram.Rows(def), Stuck: stuck, StuckAfter: s.cfg.StuckAfter, HeatURL: base + "/heat.json", RefreshMS: s.cfg.Refresh.Milliseconds()}
	d.Diagram = template.HTML(statesvg.Render(def, statesvg.Marks{Heat: marksOf(def, h), Link: func(state string) string {
		return "/runs?" + url.Values{"type": {def.Type}, "state": {state}}.Encode()
	}}))
	for _, st := range def.States {
		x := h[st.Name]
		x.State = st.Name
		d.Heat = append(d.Heat, x)
	}
	s.render(w, r, http.StatusOK, "machine", def.Type+" v"+strconv.Itoa(def.Version), d)
}

// heatState is a state of heat.json: what the page's script updates.
type heatState struct {
	Runs   int    `json:"runs"`
	Stuck  int    `json:"stuckRuns"`
	Parked int    `json:"parkedRuns"`
	Level  int    `json:"level"`
	Marked bool   `json:"stuck"`
	Count  string `json:"count"`
	Median string `json:"median"`
}

func (s *Server) heatJSON(w http.ResponseWriter, r *http.Request) {
	def, h, ok := s.machineOf(w, r)
	if !ok {
		return
	}
	marks := marksOf(def, h)
	maxRuns := 0
	for _, m := range marks {
		maxRuns = max(maxRuns, m.Runs)
	}
	out := struct {
		At     time.Time            `json:"at"`
		States map[string]heatState `json:"states"`
	}{At: time.Now().UTC(), States: map[string]heatState{}}
	for name, m := range marks {
		count, median := m.Lines()
		out.States[name] = heatState{Runs: m.Runs, Stuck: m.Stuck, Parked: m.Parked, Level: statesvg.Level(m.Runs, maxRuns),
			Marked: m.Stuck+m.Parked > 0, Count: count, Median: median}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}
