package defdiagram

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fsmgen/fsmgen/runtime"
)

// statusColors are the fill, border and text colours of final states by
// generic status, as fsmgen draws them.
var statusColors = map[runtime.Status][3]string{
	runtime.StatusSucceeded: {"#d4edda", "#2e7d32", "#1b5e20"},
	runtime.StatusFailed:    {"#f8d7da", "#c62828", "#7f0000"},
	runtime.StatusCancelled: {"#e2e3e5", "#616161", "#212121"},
}

var finalStatuses = []runtime.Status{runtime.StatusSucceeded, runtime.StatusFailed, runtime.StatusCancelled}

// Duration writes d in its largest whole unit among d, h, m, s and ms
// (72h is 3d, 90s stays 90s), or as Go writes it when none fits.
func Duration(d time.Duration) string {
	units := []struct {
		u    time.Duration
		name string
	}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}, {time.Millisecond, "ms"}}
	for _, u := range units {
		if d != 0 && d%u.u == 0 {
			return strconv.FormatInt(int64(d/u.u), 10) + u.name
		}
	}
	return d.String()
}

// timerOf returns the timer of state from that fires event, if any.
func timerOf(def *runtime.Definition, from, event string) (runtime.Timer, bool) {
	st, _ := def.State(from)
	for _, tm := range st.Timers {
		if tm.Event == event {
			return tm, true
		}
	}
	return runtime.Timer{}, false
}

// GuardText is [G] or [!G], or "" for an unguarded row.
func GuardText(t runtime.TransitionSpec) string {
	switch {
	case t.Guard == "":
		return ""
	case t.Negated:
		return "[!" + t.Guard + "]"
	}
	return "[" + t.Guard + "]"
}

// rowLabel is one row's edge label.
func rowLabel(def *runtime.Definition, t runtime.TransitionSpec) string {
	parts := []string{t.Event}
	if tm, ok := timerOf(def, t.From, t.Event); ok {
		parts = append(parts, "(after "+Duration(tm.After)+")")
	}
	if g := GuardText(t); g != "" {
		parts = append(parts, g)
	}
	to, _ := def.State(t.To)
	if t.Outcome != "" && t.Outcome != to.Outcome {
		parts = append(parts, "/ "+t.Outcome)
	}
	return strings.Join(parts, " ")
}

// finalText describes a final state's status and outcome, or "" when the
// name says all of it.
func finalText(s runtime.StateSpec) string {
	txt := string(s.Status)
	if s.Outcome != "" {
		return txt + " (" + s.Outcome + ")"
	}
	if strings.EqualFold(s.Name, txt) {
		return ""
	}
	return txt
}

// Mermaid returns def as a Mermaid stateDiagram-v2.
// A nested machine is drawn by fsmgen's own Mermaid (see [Machine]).
func Mermaid(def runtime.Definition) []byte {
	if len(def.Composites) > 0 {
		return nestedMermaid(def)
	}
	var b bytes.Buffer
	ids := mermaidIDs(def)
	b.WriteString("stateDiagram-v2\n")
	fmt.Fprintf(&b, "    %%%% Drawn from the registered definition of %s v%d.\n", mermaidText(def.Type), def.Version)
	fmt.Fprintf(&b, "    %%%% %s: type %s, version %d.\n", mermaidText(def.Machine), mermaidText(def.Type), def.Version)
	for _, s := range def.States {
		label := s.Name
		switch {
		case s.Wait:
			label += "<br/>wait"
		case s.Terminal():
			if txt := finalText(s); txt != "" {
				label += "<br/>" + mermaidText(txt)
			}
		}
		if label != ids[s.Name] {
			fmt.Fprintf(&b, "    %s : %s\n", ids[s.Name], label)
		}
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "    [*] --> %s\n", ids[def.Initial])
	type key struct{ from, to string }
	var order []key
	labels := map[key][]string{}
	for _, t := range def.Transitions {
		k := key{t.From, t.To}
		if _, ok := labels[k]; !ok {
			order = append(order, k)
		}
		labels[k] = append(labels[k], mermaidText(rowLabel(&def, t)))
	}
	for _, k := range order {
		fmt.Fprintf(&b, "    %s --> %s : %s\n", ids[k.from], ids[k.to], strings.Join(labels[k], "<br/>"))
	}
	for _, s := range def.States {
		if s.Terminal() {
			fmt.Fprintf(&b, "    %s --> [*]\n", ids[s.Name])
		}
	}
	var classes bytes.Buffer
	for _, st := range finalStatuses {
		var members []string
		for _, s := range def.States {
			if s.Status == st {
				members = append(members, ids[s.Name])
			}
		}
		if len(members) > 0 {
			c := statusColors[st]
			fmt.Fprintf(&classes, "    classDef %s fill:%s,stroke:%s,color:%s,stroke-width:2px\n", st, c[0], c[1], c[2])
			fmt.Fprintf(&classes, "    class %s %s\n", strings.Join(members, ","), st)
		}
	}
	var waits []string
	for _, s := range def.States {
		if s.Wait {
			waits = append(waits, ids[s.Name])
		}
	}
	if len(waits) > 0 {
		classes.WriteString("    classDef wait stroke-dasharray:5 5\n")
		fmt.Fprintf(&classes, "    class %s wait\n", strings.Join(waits, ","))
	}
	if classes.Len() > 0 {
		b.WriteString("\n")
		b.Write(classes.Bytes())
	}
	return b.Bytes()
}

// mermaidKeywords are words Mermaid's state diagram lexer, which ignores
// case, reads as keywords where a state id stands.
var mermaidKeywords = []string{"default", "state", "note", "class", "classdef", "scale", "style",
	"direction", "acctitle", "accdescr", "statediagram", "statediagram-v2", "hide", "end"}

// mermaidIDs returns the id of each state: its name, unless Mermaid would
// read it as a keyword, then an alias whose label is the name.
func mermaidIDs(def runtime.Definition) map[string]string {
	taken := map[string]bool{}
	for _, s := range def.States {
		taken[strings.ToLower(s.Name)] = true
	}
	ids := make(map[string]string, len(def.States))
	for _, s := range def.States {
		low := strings.ToLower(s.Name)
		if !slices.Contains(mermaidKeywords, low) {
			ids[s.Name] = s.Name
			continue
		}
		id := "state_" + s.Name
		for taken[strings.ToLower(id)] {
			id += "_"
		}
		taken[strings.ToLower(id)] = true
		ids[s.Name] = id
	}
	return ids
}

// mermaidText makes free text safe in a Mermaid label.
var mermaidText = strings.NewReplacer(
	":", "\u02d0",
	";", ",",
	"\n", " ",
	"\r", " ",
	"%%", "% %",
	"<", "\u2039",
	">", "\u203a",
	"&", "+",
	"#", "\u266f",
	`"`, "'",
).Replace

// Table prints def's transition table, one row per line in the order the
// machine tries them: FROM, EVENT, GUARD, TO and the row's outcome.
func Table(w io.Writer, def runtime.Definition) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "FROM\tEVENT\tGUARD\tTO\tOUTCOME")
	for _, r := range Rows(def) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.From, r.Event, dash(r.Guard), r.To, dash(r.Outcome))
	}
	return tw.Flush()
}

// Row is a row of a definition's transition table as fsmctl definitions
// show and the console's machine page show it: Event says the timer that
// fires it ("Expire (after 30m)"), Guard is GuardText's, empty for none.
type Row struct {
	From, Event, Guard, To, Outcome string
}

// Rows returns def's transition table, in the order the machine tries
// the rows.
func Rows(def runtime.Definition) []Row {
	out := make([]Row, len(def.Transitions))
	for i, t := range def.Transitions {
		ev := t.Event
		if tm, ok := timerOf(&def, t.From, t.Event); ok {
			ev += " (after " + Duration(tm.After) + ")"
		}
		out[i] = Row{From: t.From, Event: ev, Guard: GuardText(t), To: t.To, Outcome: t.Outcome}
	}
	return out
}

// Event is an event of a definition as fsmctl definitions show and the
// console's machine page show it: its name, marked "(external)" when
// callers may send it, and its payload's fields ("ref string, amount
// int"), empty for none.
type Event struct {
	Name, Fields string
}

// Events returns def's events in declaration order.
func Events(def runtime.Definition) []Event {
	out := make([]Event, len(def.Events))
	for i, e := range def.Events {
		var fields []string
		for _, f := range e.Fields {
			fields = append(fields, f.Name+" "+f.Type)
		}
		out[i] = Event{Name: e.Name, Fields: strings.Join(fields, ", ")}
		if e.External {
			out[i].Name += " (external)"
		}
	}
	return out
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
