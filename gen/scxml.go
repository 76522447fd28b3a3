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
//     of <scxml>; a composite state is a <state> with an initial attribute
//     and its children, then its history pseudostates as
//     <history type="shallow|deep"> whose default transition enters the
//     composite's initial child (shallow) or leaf (deep). A parallel
//     state is a <parallel>, its regions its child <state>s; its "on
//     done" rows take done.state.P, which SCXML raises once every region
//     is in a final child. A final child
//     without status is a <final>, whose entry raises done.state.PARENT; a
//     final child with a status, which ends the run and completes nothing,
//     is a <state> with fsmgen:status, whose transitions without target
//     refuse the events its ancestors take;
//   - each row of the table is a <transition event="EVENT" target="TO">
//     in the state it was written on, in the order the machine tries them
//     (SCXML takes the first enabled transition in document order, from
//     the atomic state up). An eventless row has no event, a completion
//     row the event done.state.SOURCE. A guarded one has
//     cond="guards.NAME(_event)", negated cond="!guards.NAME(_event)", and
//     In(S) is cond="In('S')" (SCXML's own predicate), negated "!In('S')": the
//     host puts an object guards, with one function per guard taking the
//     event, in the interpreter's global scope (SCION: model.prepare(callback,
//     {guards})). A row is external, SCXML's default: it leaves and
//     re-enters its source when it targets it, which restarts the state's
//     timers as the runtime does; an internal row to its own source has no
//     target (SCXML exits nothing), one into its source is of
//     type="internal";
//   - a timer (after D EVENT) is a delayed <send event="EVENT"
//     delay="Nms"> in the state's <onentry>, cancelled in its <onexit>;
//     an entry or exit action is a <log label="entry NAME"> (exit NAME)
//     there, a placeholder that every interpreter runs;
//   - docs are XML comments before their element, and what SCXML has no
//     word for is in the fsmgen namespace ([SCXMLNamespace]): type, version,
//     package and cancel event as attributes of <scxml>, the events with
//     their payload fields, the guards and the actions as <fsmgen:event>,
//     <fsmgen:guard> and <fsmgen:action> children of <scxml>, the wait flag
//     and retry policy (as the .fsm file writes it) of a state, the status
//     and outcome of a final state, a row's own outcome.
func SCXML(m *dsl.Machine) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	fmt.Fprintf(&b, "<!-- %s -->\n", exportMarker(m))
	xmlComment(&b, "", m.Doc)
	fmt.Fprintf(&b, `<scxml xmlns="http://www.w3.org/2005/07/scxml" xmlns:fsmgen=%s version="1.0" datamodel="ecmascript" name=%s initial=%s`,
		attr(SCXMLNamespace), attr(m.Name), attr(topInitial(m).Name))
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
	for _, a := range m.Actions {
		xmlComment(&b, "  ", a.Doc)
		fmt.Fprintf(&b, "  <fsmgen:action name=%s/>\n", attr(a.Name))
	}
	written := writtenRows(m)
	var state func(indent string, s *dsl.State) error
	state = func(indent string, s *dsl.State) error {
		xmlComment(&b, indent, s.Doc)
		if s.Terminal() && s.Parent == nil || s.Done {
			// A final child without status completes its parent: SCXML
			// raises done.state.PARENT when it is entered.
			fmt.Fprintf(&b, "%s<final id=%s", indent, attr(s.Name))
			if s.Terminal() {
				fmt.Fprintf(&b, " fsmgen:status=%s", attr(s.Status))
			}
			if s.Outcome != "" {
				fmt.Fprintf(&b, " fsmgen:outcome=%s", attr(s.Outcome))
			}
			b.WriteString("/>\n")
			return nil
		}
		elem := "state"
		if s.Parallel {
			elem = "parallel"
		}
		fmt.Fprintf(&b, "%s<%s id=%s", indent, elem, attr(s.Name))
		if s.Composite() && !s.Parallel {
			fmt.Fprintf(&b, " initial=%s", attr(s.InitialChild.Name))
		}
		if s.Terminal() {
			// A final child with a status ends the run; it does not
			// complete its parent, so it is no <final> of SCXML, which
			// would.
			fmt.Fprintf(&b, " fsmgen:status=%s", attr(s.Status))
			if s.Outcome != "" {
				fmt.Fprintf(&b, " fsmgen:outcome=%s", attr(s.Outcome))
			}
		}
		if s.Wait {
			b.WriteString(` fsmgen:wait="true"`)
		}
		if s.Retry != nil {
			fmt.Fprintf(&b, " fsmgen:retry=%s", attr(RetrySource(s.Retry)))
		}
		b.WriteString(">\n")
		in := indent + "  "
		if len(s.Timers) > 0 || len(s.Entry) > 0 {
			fmt.Fprintf(&b, "%s<onentry>\n", in)
			for _, tm := range s.Timers {
				if tm.After%1e6 != 0 {
					return fmt.Errorf("machine %s: state %s: timer after %s: SCXML delays are written in whole milliseconds here", m.Name, s.Name, tm.Text)
				}
				fmt.Fprintf(&b, "%s  <send event=%s delay=%s id=%s", in, attr(tm.Event.Name), attr(strconv.FormatInt(tm.After.Milliseconds(), 10)+"ms"), attr(timerID(s, tm)))
				if tm.Field != nil {
					fmt.Fprintf(&b, " fsmgen:after=%s", attr(tm.Text))
				}
				b.WriteString("/>\n")
			}
			for _, a := range s.Entry {
				fmt.Fprintf(&b, "%s  <log label=%s/>\n", in, attr("entry "+a.Name))
			}
			fmt.Fprintf(&b, "%s</onentry>\n", in)
		}
		if len(s.Timers) > 0 || len(s.Exit) > 0 {
			fmt.Fprintf(&b, "%s<onexit>\n", in)
			for _, tm := range s.Timers {
				fmt.Fprintf(&b, "%s  <cancel sendid=%s/>\n", in, attr(timerID(s, tm)))
			}
			for _, a := range s.Exit {
				fmt.Fprintf(&b, "%s  <log label=%s/>\n", in, attr("exit "+a.Name))
			}
			fmt.Fprintf(&b, "%s</onexit>\n", in)
		}
		for _, t := range written {
			if rowSource(t) != s {
				continue
			}
			xmlComment(&b, in, t.Doc)
			b.WriteString(in + "<transition")
			switch {
			case t.Done:
				fmt.Fprintf(&b, " event=%s", attr("done.state."+s.Name))
			case t.Event != nil:
				fmt.Fprintf(&b, " event=%s", attr(t.Event.Name))
			}
			if cond := scxmlCond(t); cond != "" {
				fmt.Fprintf(&b, " cond=%s", attr(cond))
			}
			// An internal row to its own source has no target: SCXML
			// then exits and enters nothing. One into its source is of
			// type internal.
			switch target := rowTarget(t); {
			case t.Internal && target == s.Name:
			case t.Internal:
				fmt.Fprintf(&b, " type=\"internal\" target=%s", attr(target))
			default:
				fmt.Fprintf(&b, " target=%s", attr(target))
			}
			if t.Outcome != "" && t.Outcome != t.To.Outcome {
				fmt.Fprintf(&b, " fsmgen:outcome=%s", attr(t.Outcome))
			}
			b.WriteString("/>\n")
		}
		if s.Terminal() {
			// The run ends in a final child with a status: a transition
			// without target refuses the events its ancestors take.
			for _, e := range ancestorEvents(written, s) {
				fmt.Fprintf(&b, "%s<transition event=%s/>\n", in, attr(e.Name))
			}
		}
		for _, c := range s.Children {
			if err := state(in, c); err != nil {
				return err
			}
		}
		for _, h := range s.History {
			xmlComment(&b, in, h.Doc)
			typ, def := "shallow", s.InitialChild
			if h.Deep {
				typ, def = "deep", s.InitialLeaf()
			}
			fmt.Fprintf(&b, "%s<history id=%s type=%q>\n%s  <transition target=%s/>\n%s</history>\n", in, attr(h.Name), typ, in, attr(def.Name), in)
		}
		fmt.Fprintf(&b, "%s</%s>\n", indent, elem)
		return nil
	}
	for _, s := range roots(m) {
		if err := state("  ", s); err != nil {
			return nil, err
		}
	}
	b.WriteString("</scxml>\n")
	return b.Bytes(), nil
}

// scxmlCond is the cond of a row's transition, "" for an unguarded row:
// guards.NAME(_event), or In('S') for a guard on the configuration,
// with ! before when negated.
func scxmlCond(t *dsl.Transition) string {
	var cond string
	switch {
	case t.In != nil:
		cond = "In('" + t.In.Name + "')"
	case t.Guard != nil:
		cond = "guards." + t.Guard.Name + "(_event)"
	default:
		return ""
	}
	if t.Negated {
		return "!" + cond
	}
	return cond
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
