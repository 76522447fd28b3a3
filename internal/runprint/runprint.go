package runprint

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/store"
)

// timeLayout is how times are printed: UTC, to the millisecond.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// Time formats t in UTC to the millisecond, or "-" for the zero time.
func Time(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(timeLayout)
}

// OrDash returns s escaped (Escape), or "-" when s is empty.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return Escape(s)
}

// Escape returns s with every character a terminal would act on rather
// than show written as a Go escape: C0 and C1 control characters (tab and
// newline included, which would break a table's layout), DEL, the
// bidirectional marks, embeddings, overrides and isolates, and bytes that
// are not UTF-8. A value read from the database (a tenant, an error, a
// payload) can then neither move the cursor, recolour or retitle the
// terminal, nor reorder what is printed around it.
func Escape(s string) string { return escape(s, false) }

func escape(s string, keepLayout bool) string {
	i := 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if unsafeRune(r, size, keepLayout) {
			break
		}
		i += size
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case !unsafeRune(r, size, keepLayout):
			b.WriteString(s[i : i+size])
		case r == utf8.RuneError:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += size
	}
	return b.String()
}

// unsafeRune reports whether a terminal could act on r (size bytes of
// input); keepLayout lets tab and newline through.
func unsafeRune(r rune, size int, keepLayout bool) bool {
	switch {
	case r == utf8.RuneError && size <= 1:
		return true
	case keepLayout && (r == '\t' || r == '\n'):
		return false
	case r < 0x20, r == 0x7f, 0x80 <= r && r <= 0x9f:
		return true
	case r == 0x200e, r == 0x200f, 0x202a <= r && r <= 0x202e, 0x2066 <= r && r <= 0x2069:
		return true
	}
	return false
}

// Table returns a tabwriter that aligns columns two spaces apart. What it
// prints is escaped as Escape does, tabs and newlines apart (they are the
// table's layout): a value that a caller forgot to escape still cannot
// reach the terminal as a control sequence.
func Table(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(safeWriter{w}, 0, 8, 2, ' ', 0)
}

// safeWriter escapes what it writes, tabs and newlines apart.
type safeWriter struct{ w io.Writer }

func (s safeWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(s.w, escape(string(p), true)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// RunTable prints runs as an aligned table, one line each.
func RunTable(w io.Writer, runs []runtime.Run) error {
	tw := Table(w)
	fmt.Fprintln(tw, "ID\tTYPE\tSTATE\tSTATUS\tOUTCOME\tTENANT\tATTEMPT\tCREATED\tUPDATED")
	for _, r := range runs {
		outcome := ""
		if r.Result != nil {
			outcome = r.Result.Outcome
		}
		fmt.Fprintf(tw, "%s\t%s v%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n",
			r.ID, Escape(r.Type), r.Version, Escape(r.State), r.Status, OrDash(outcome), OrDash(r.TenantID), r.Attempt,
			Time(r.CreatedAt), Time(r.UpdatedAt))
	}
	return tw.Flush()
}

// Run prints one run as a block of "field  value" lines: its identity,
// state (for a configuration of a parallel state, each region's leaf on a
// line of its own), result, times, while it runs its lease and schedule,
// and the error of its last failed try when the run keeps one.
func Run(w io.Writer, r runtime.Run) error {
	tw := Table(w)
	line := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, Escape(v)) }
	line("run", r.ID)
	line("type", fmt.Sprintf("%s v%d", r.Type, r.Version))
	line("state", r.State)
	if leaves := strings.Split(r.State, runtime.ConfigurationSeparator); len(leaves) > 1 {
		for i, l := range leaves {
			line(fmt.Sprintf("  region %d", i+1), l)
		}
	}
	line("status", string(r.Status))
	if res := r.Result; res != nil {
		line("outcome", OrDash(res.Outcome))
	}
	line("tenant", r.TenantID)
	line("user", OrDash(r.UserID))
	line("key", r.IdempotencyKey)
	line("attempt", strconv.Itoa(r.Attempt))
	if res := r.Result; res != nil {
		line("output", CompactJSON(res.Output))
		line("cost", fmt.Sprintf("%.4f USD", res.CostUSD))
		line("duration", fmt.Sprintf("%d ms", res.DurationMS))
		if res.ErrorCode != "" || res.ErrorDetail != "" {
			line("error", joinError(res.ErrorCode, res.ErrorDetail))
		}
	}
	if r.ParentID != "" {
		line("parent", fmt.Sprintf("%s (fires %s when this run ends)", r.ParentID, r.ParentEvent))
	}
	line("created", Time(r.CreatedAt))
	line("updated", Time(r.UpdatedAt))
	if !r.FinishedAt.IsZero() {
		line("finished", Time(r.FinishedAt))
	}
	if !r.Terminal() {
		line("step try", strconv.Itoa(r.StepAttempt))
		if !r.NextRunAt.IsZero() {
			line("due", Time(r.NextRunAt))
		} else if r.ParkedAt.IsZero() {
			line("due", "- (waits for an event)")
		}
		if r.Lease.Owner != "" {
			line("lease", fmt.Sprintf("%s until %s (epoch %d)", r.Lease.Owner, Time(r.Lease.ExpiresAt), r.Lease.Epoch))
		}
		if !r.ParkedAt.IsZero() {
			line("parked", Time(r.ParkedAt))
		}
	}
	if r.LastErrorCode != "" || r.LastError != "" {
		// The last failed try's error, in whatever status the run is.
		line("last error", joinError(r.LastErrorCode, r.LastError))
	}
	return tw.Flush()
}

// History prints a run's log as a table, oldest first: its sequence
// number in the run, time, kind, step or event, the states before and
// after, and the run's attempt; when a row is a failed try (the engine's
// attempt_failed and parked steps, any step whose payload has an "error"),
// an ERROR column with its error code and message; with payloads, each
// row's payload too.
func History(w io.Writer, steps []store.Step, payloads bool) error {
	errs := make([]string, len(steps))
	var anyErr bool
	for i, s := range steps {
		errs[i] = stepError(s)
		anyErr = anyErr || errs[i] != ""
	}
	tw := Table(w)
	head := "SEQ\tTIME\tKIND\tSTEP/EVENT\tSTATE\tATTEMPT"
	if anyErr {
		head += "\tERROR"
	}
	if payloads {
		head += "\tPAYLOAD"
	}
	fmt.Fprintln(tw, head)
	for i, s := range steps {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d", i+1, Time(s.At), Escape(string(s.Kind)), Escape(s.Name), Escape(stateChange(s)), s.Attempt)
		if anyErr {
			fmt.Fprintf(tw, "\t%s", OrDash(errs[i]))
		}
		if payloads {
			fmt.Fprintf(tw, "\t%s", Escape(CompactJSON(s.Payload)))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// stepError returns the error a logged step reports, "CODE: message" (or
// either alone), from the "error_code" and "error" fields of its payload;
// "" for a transition and for a step without an error.
func stepError(s store.Step) string {
	if s.Kind != store.KindStep || len(s.Payload) == 0 {
		return ""
	}
	var p struct {
		Code  *string `json:"error_code"`
		Error *string `json:"error"`
	}
	if json.Unmarshal(s.Payload, &p) != nil || p.Error == nil {
		return ""
	}
	return joinError(deref(p.Code), *p.Error)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// joinError is an error's code and detail as "CODE: detail", or either
// alone.
func joinError(code, detail string) string {
	return strings.TrimPrefix(strings.TrimSuffix(code+": "+detail, ": "), ": ")
}

// stateChange shows the states of a log row: "A → B" for a change, "A" for
// a step logged in a state.
func stateChange(s store.Step) string {
	switch {
	case s.Kind == store.KindStep || s.From == s.To:
		if s.To != "" {
			return s.To
		}
		return OrDash(s.From)
	case s.From == "":
		return "→ " + s.To
	}
	return s.From + " → " + s.To
}

// CompactJSON returns JSON as stored, without the spaces PostgreSQL puts in
// jsonb's text, or "-" when there is none.
func CompactJSON(b json.RawMessage) string {
	if len(b) == 0 || string(b) == "null" {
		return "-"
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return string(b)
	}
	return buf.String()
}
