package gen

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strconv"
	"strings"

	"github.com/fsmgen/fsmgen/dsl"
)

// SCXMLNamespace is the namespace of the attributes and elements an SCXML
// export carries what SCXML has no word for in (see [SCXML]).
const SCXMLNamespace = "https://github.com/fsmgen/fsmgen/scxml"

// SCXML renders machine m as a W3C SCXML document (State Chart XML,
// https://www.w3.org/TR/scxml/) with the ECMAScript data model:
//
//   - one <state> per non-terminal state and one <final> per final state,
//     in declaration order, the initial one named by the initial attribute
//     of <scxml>;
//   - each row of the table is a <transition event="EVENT" target="TO">
//     in each state it leaves, in the order the machine tries them (SCXML
//     takes the first enabled transition in document order). A guarded one
//     has cond="guards.NAME(_event)", negated
//     cond="!guards.NAME(_event)": the host puts an object guards, with one
//     function per guard taking the event, in the interpreter's global
//     scope (SCION: model.prepare(callback, {guards})). A self-transition is
//     external, SCXML's default: it leaves and re-enters its state, which
//     restarts the state's timers as the runtime does;
//   - a timer (after D EVENT) is a delayed <send event="EVENT"
//     delay="Nms"> in the state's <onentry>, cancelled in its <onexit>;
//   - docs are XML comments before their element, and what SCXML has no
//     word for is in the fsmgen namespace ([SCXMLNamespace]): type, version,
//     package and cancel event as attributes of <scxml>, the events with
//     their payload fields and the guards as <fsmgen:event> and
//     <fsmgen:guard> children of <scxml>, the wait flag and retry policy
//     (as the .fsm file writes it) of a state, the status and outcome of a
//     final state, a row's own outcome.
func SCXML(m *dsl.Machine) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	fmt.Fprintf(&b, "<!-- %s -->\n", exportMarker(m))
	xmlComment(&b, "", m.Doc)
	fmt.Fprintf(&b, `<scxml xmlns="http://www.w3.org/2005/07/scxml" xmlns:fsmgen=%s version="1.0" datamodel="ecmascript" name=%s initial=%s`,
		attr(SCXMLNamespace), attr(m.Name), attr(m.Initial.Name))
	fmt.Fprintf(&b, "\n       fsmgen:type=%s fsmgen:version=%s fsmgen:package=%s", attr(m.Type), attr(strconv.Itoa(m.Version)), attr(m.Package))
	if m.Cancel != nil {
		fmt.Fprintf(&b, " fsmgen:cancel=%s", attr(m.Cancel.Name))
	}
	b.WriteString(">\n")
	for _, e := range m.Events {
		xmlComment(&b, "  ", e.Doc)
		fmt.Fprintf(&b, "  <fsmgen:event name=%s", attr(e.Name))
		if e.External {
			b.WriteString(` external="true"`)
		}
		if len(e.Fields) == 0 {
			b.WriteString("/>\n")
			continue
		}
		b.WriteString(">\n")
		for _, f := range e.Fields {
			fmt.Fprintf(&b, "    <fsmgen:field name=%s type=%s/>\n", attr(f.Name), attr(FieldType(f.Type)))
		}
		b.WriteString("  </fsmgen:event>\n")
	}
	for _, g := range m.Guards {
		xmlComment(&b, "  ", g.Doc)
		fmt.Fprintf(&b, "  <fsmgen:guard name=%s/>\n", attr(g.Name))
	}
	for _, s := range m.States {
		xmlComment(&b, "  ", s.Doc)
		if s.Terminal() {
			fmt.Fprintf(&b, "  <final id=%s fsmgen:status=%s", attr(s.Name), attr(s.Status))
			if s.Outcome != "" {
				fmt.Fprintf(&b, " fsmgen:outcome=%s", attr(s.Outcome))
			}
			b.WriteString("/>\n")
			continue
		}
		fmt.Fprintf(&b, "  <state id=%s", attr(s.Name))
		if s.Wait {
			b.WriteString(` fsmgen:wait="true"`)
		}
		if s.Retry != nil {
			fmt.Fprintf(&b, " fsmgen:retry=%s", attr(RetrySource(s.Retry)))
		}
		b.WriteString(">\n")
		if len(s.Timers) > 0 {
			b.WriteString("    <onentry>\n")
			for _, tm := range s.Timers {
				if tm.After%1e6 != 0 {
					return nil, fmt.Errorf("machine %s: state %s: timer after %s: SCXML delays are written in whole milliseconds here", m.Name, s.Name, tm.Text)
				}
				fmt.Fprintf(&b, "      <send event=%s delay=%s id=%s/>\n", attr(tm.Event.Name), attr(strconv.FormatInt(tm.After.Milliseconds(), 10)+"ms"), attr(timerID(s, tm)))
			}
			b.WriteString("    </onentry>\n    <onexit>\n")
			for _, tm := range s.Timers {
				fmt.Fprintf(&b, "      <cancel sendid=%s/>\n", attr(timerID(s, tm)))
			}
			b.WriteString("    </onexit>\n")
		}
		for _, t := range m.Transitions {
			if t.From != s {
				continue
			}
			xmlComment(&b, "    ", t.Doc)
			fmt.Fprintf(&b, "    <transition event=%s", attr(t.Event.Name))
			if t.Guard != nil {
				cond := "guards." + t.Guard.Name + "(_event)"
				if t.Negated {
					cond = "!" + cond
				}
				fmt.Fprintf(&b, " cond=%s", attr(cond))
			}
			fmt.Fprintf(&b, " target=%s", attr(t.To.Name))
			if t.Outcome != "" && t.Outcome != t.To.Outcome {
				fmt.Fprintf(&b, " fsmgen:outcome=%s", attr(t.Outcome))
			}
			b.WriteString("/>\n")
		}
		b.WriteString("  </state>\n")
	}
	b.WriteString("</scxml>\n")
	return b.Bytes(), nil
}

// timerID is the send id of a state's timer, for its <cancel>.
func timerID(s *dsl.State, tm *dsl.Timer) string {
	return s.Name + ".after." + tm.Event.Name
}

// attr is s as a quoted XML attribute value.
func attr(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	xml.EscapeText(&b, []byte(s)) //nolint:errcheck // a strings.Builder does not fail
	b.WriteByte('"')
	return strings.ReplaceAll(b.String(), "\n", "&#xA;")
}

// xmlComment writes doc lines as an XML comment, which may not hold "--".
func xmlComment(b *bytes.Buffer, indent string, doc []string) {
	if len(doc) == 0 {
		return
	}
	b.WriteString(indent + "<!--\n")
	for _, l := range doc {
		for strings.Contains(l, "--") {
			l = strings.ReplaceAll(l, "--", "- -")
		}
		l = strings.TrimSuffix(l, "-")
		fmt.Fprintf(b, "%s  %s\n", indent, l)
	}
	b.WriteString(indent + "-->\n")
}

// RetrySource is a retry policy as a .fsm file writes it, defaults left
// out: retry 4 backoff 1s factor 4 max 16s jitter 0.2 nonretryable "X"
// else E, or retry database.
func RetrySource(r *dsl.Retry) string {
	parts := []string{"retry"}
	if r.Preset != "" {
		parts = append(parts, r.Preset)
	} else {
		if r.FromPolicy {
			parts = append(parts, "up", "to")
		}
		parts = append(parts, strconv.Itoa(r.MaxAttempts))
		if r.Initial != 1e9 {
			parts = append(parts, "backoff", FormatDuration(r.Initial))
		}
		if r.Factor != 2 {
			parts = append(parts, "factor", strconv.FormatFloat(r.Factor, 'f', -1, 64))
		}
		if r.Max != 0 {
			parts = append(parts, "max", FormatDuration(r.Max))
		}
		if r.Jitter != 0 {
			parts = append(parts, "jitter", strconv.FormatFloat(r.Jitter, 'f', -1, 64))
		}
		if len(r.NonRetryable) > 0 {
			codes := make([]string, len(r.NonRetryable))
			for i, c := range r.NonRetryable {
				codes[i] = strconv.Quote(c)
			}
			parts = append(parts, "nonretryable", strings.Join(codes, ", "))
		}
	}
	if r.Exhausted != nil {
		parts = append(parts, "else", r.Exhausted.Name)
	}
	return strings.Join(parts, " ")
}
