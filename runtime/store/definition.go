package store

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/internal/pgstore"
)

// maxDifferences bounds the differences a conflict names.
const maxDifferences = 5

// differences names what differs between the registered definition (have,
// "in the database") and the one given (want, "here"), in the order of the
// canonical form.
func differences(have, want runtime.Definition) []string {
	h, w := pgstore.CanonicalOf(have), pgstore.CanonicalOf(want)
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	pair := func(what, a, b string) {
		if a != b {
			add("%s %s in the database, %s here", what, orNone(a), orNone(b))
		}
	}
	pair("initial state", h.Initial, w.Initial)
	pair("cancel event", h.Cancel, w.Cancel)

	hs := indexBy(h.States, func(s runtime.StateSpec) string { return s.Name })
	ws := indexBy(w.States, func(s runtime.StateSpec) string { return s.Name })
	for _, name := range unionNames(hs, ws) {
		a, inH := hs[name]
		b, inW := ws[name]
		switch {
		case !inW:
			add("state %s: in the database, not here", name)
		case !inH:
			add("state %s: here, not in the database", name)
		default:
			what := "state " + name + ":"
			pair(what+" status", string(a.Status), string(b.Status))
			pair(what+" outcome", a.Outcome, b.Outcome)
			if a.Wait != b.Wait {
				add("%s wait %t in the database, %t here", what, a.Wait, b.Wait)
			}
			if ra, rb := describeRetry(a.Retry), describeRetry(b.Retry); ra != rb {
				if sa, sb := shortRetry(a.Retry), shortRetry(b.Retry); sa != sb {
					ra, rb = sa, sb
				}
				add("%s %s in the database, %s here", what, ra, rb)
			}
			pair(what+" exhausted event", a.OnExhausted, b.OnExhausted)
			pair(what+" timers", describeTimers(a.Timers), describeTimers(b.Timers))
			pair(what+" parent", a.Parent, b.Parent)
			pair(what+" entry", strings.Join(a.Entry, " "), strings.Join(b.Entry, " "))
			pair(what+" exit", strings.Join(a.Exit, " "), strings.Join(b.Exit, " "))
		}
	}

	hc := indexBy(h.Composites, func(c runtime.CompositeSpec) string { return c.Name })
	wc := indexBy(w.Composites, func(c runtime.CompositeSpec) string { return c.Name })
	for _, name := range unionNames(hc, wc) {
		a, inH := hc[name]
		b, inW := wc[name]
		switch {
		case !inW:
			add("composite state %s: in the database, not here", name)
		case !inH:
			add("composite state %s: here, not in the database", name)
		default:
			what := "composite state " + name + ":"
			pair(what+" parent", a.Parent, b.Parent)
			pair(what+" initial", a.Initial, b.Initial)
			if a.Parallel != b.Parallel {
				add("%s parallel %t in the database, %t here", what, a.Parallel, b.Parallel)
			}
			pair(what+" timers", describeTimers(a.Timers), describeTimers(b.Timers))
			pair(what+" history", describeHistory(a.History), describeHistory(b.History))
			pair(what+" entry", strings.Join(a.Entry, " "), strings.Join(b.Entry, " "))
			pair(what+" exit", strings.Join(a.Exit, " "), strings.Join(b.Exit, " "))
		}
	}

	he := indexBy(h.Events, func(e runtime.EventSpec) string { return e.Name })
	we := indexBy(w.Events, func(e runtime.EventSpec) string { return e.Name })
	for _, name := range unionNames(he, we) {
		a, inH := he[name]
		b, inW := we[name]
		switch {
		case !inW:
			add("event %s: in the database, not here", name)
		case !inH:
			add("event %s: here, not in the database", name)
		default:
			pair("event "+name+": fields", describeFields(a.Fields), describeFields(b.Fields))
			if a.External != b.External {
				add("event %s: external %t in the database, %t here", name, a.External, b.External)
			}
		}
	}

	group := func(ts []runtime.TransitionSpec) map[string][]string {
		g := map[string][]string{}
		for _, t := range ts {
			k := t.From + " on " + t.Event
			g[k] = append(g[k], describeRow(t))
		}
		return g
	}
	hg, wg := group(h.Transitions), group(w.Transitions)
	for _, k := range unionNames(hg, wg) {
		a, b := hg[k], wg[k]
		if !slices.Equal(a, b) {
			add("transitions from %s: [%s] in the database, [%s] here", k, strings.Join(a, ", "), strings.Join(b, ", "))
		}
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func indexBy[T any](xs []T, key func(T) string) map[string]T {
	m := make(map[string]T, len(xs))
	for _, x := range xs {
		m[key(x)] = x
	}
	return m
}

func unionNames[A, B any](a map[string]A, b map[string]B) []string {
	var names []string
	for k := range a {
		names = append(names, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	return names
}

func shortRetry(p *runtime.RetryPolicy) string {
	if p == nil {
		return "no retry"
	}
	return "retry " + strconv.Itoa(p.MaxAttempts)
}

func describeRetry(p *runtime.RetryPolicy) string {
	if p == nil {
		return "no retry"
	}
	s := fmt.Sprintf("retry %d backoff %s x%s max %s jitter %s", p.MaxAttempts, p.InitialInterval,
		strconv.FormatFloat(p.Coefficient, 'g', -1, 64), p.MaxInterval, strconv.FormatFloat(p.Jitter, 'g', -1, 64))
	if p.Name != "" {
		s = "retry " + p.Name + " (" + strings.TrimPrefix(s, "retry ") + ")"
	}
	if len(p.NonRetryable) > 0 {
		s += " nonretryable " + strings.Join(p.NonRetryable, " ")
	}
	return s
}

func describeTimers(ts []runtime.Timer) string {
	if len(ts) == 0 {
		return ""
	}
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = "after " + t.After.String() + " " + t.Event
		if t.Field != "" {
			parts[i] = "after " + t.Field + " min " + t.Min.String() + " max " + t.Max.String() + " " + t.Event
		}
	}
	return strings.Join(parts, ", ")
}

func describeHistory(hs []runtime.HistorySpec) string {
	parts := make([]string, len(hs))
	for i, h := range hs {
		parts[i] = "history " + h.Name
		if h.Deep {
			parts[i] = "deep " + parts[i]
		}
	}
	return strings.Join(parts, ", ")
}

func describeFields(fs []runtime.FieldSpec) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = f.Name + " " + f.Type
	}
	return "{" + strings.Join(parts, "; ") + "}"
}

func describeRow(t runtime.TransitionSpec) string {
	on := " on " + t.Event
	if t.Event == "" {
		on = " (eventless)"
	}
	s := t.From + " -> " + t.To + on
	if t.Guard != "" {
		if t.Negated {
			s += " unless " + t.Guard
		} else {
			s += " when " + t.Guard
		}
	}
	if t.Outcome != "" {
		s += " outcome " + strconv.Quote(t.Outcome)
	}
	if t.Internal {
		s += " internal"
	}
	if t.History != "" {
		s += " via history " + t.History
	}
	if t.Done {
		s += " done"
	}
	if len(t.Exit)+len(t.Enter) > 0 {
		s += " exits [" + strings.Join(t.Exit, " ") + "] enters [" + strings.Join(t.Enter, " ") + "]"
	}
	return s
}

// conflict is the error of a registration that differs from the registered
// definition of the same type and version.
func conflict(have, want runtime.Definition) error {
	diffs := differences(have, want)
	if len(diffs) == 0 { // the digests differ, the canonical forms do not: cannot happen
		diffs = []string{"the canonical forms differ"}
	}
	if len(diffs) > maxDifferences {
		diffs = append(diffs[:maxDifferences], fmt.Sprintf("and %d more differences", len(diffs)-maxDifferences))
	}
	return fmt.Errorf("%w: %s; %s", runtime.ErrDefinitionConflict, strings.Join(diffs, "; "), bumpHint(want))
}

// bumpHint says what to do about a changed definition registered under a
// registered version.
func bumpHint(def runtime.Definition) string {
	return fmt.Sprintf("bump the version (version %d in the .fsm file) and keep version %d's machine beside it, registered while its runs live; then upgrade or drain them (see docs/changing-a-machine.md)",
		def.Version+1, def.Version)
}
